"""The BLE benchmark (`make bench-ble`; not part of `make vm-test`): DEVICES heart-rate sensors
on the peer, each notifying at RATE_HZ, recorded by `healthgate record` for WINDOW_S seconds,
first through BlueZ (the guest's bluetoothd on /dev/vhci), then through HealthGate's own host
stack (a second external controller of the same peer, linked to the same peripherals, as H4 on a
Unix socket: `--also-listen`), one after the other in the same boot.

What is measured, per backend:
- notification to committed row: the peer logs the guest's CLOCK_REALTIME (`time.time()`) when
  each value went out (`--sent-log`: after Bumble handed it to the virtual link); `record
  --commit-log` logs the same clock when each batch's transaction committed, with the number of
  samples per device. The i-th value a device sent on that backend's link is the i-th sample
  stored for it (checked: the stored heart rates equal the sent ones, in order), so its latency
  is the commit time of the batch that held it minus its send time. Every value sent in the
  window counts; p50, p99 and the maximum are reported.
- CPU of the `healthgate record` process (the recorder and the store the daemon's `ble` driver
  runs): utime + stime from /proc/PID/stat over the window, as % of one core; for BlueZ also
  bluetoothd's, which does the link work there.
The window starts once every device is connected. At its end every peripheral is paused, the
database must then hold every value sent, and the recording is stopped with SIGINT. The guest is
emulated (TCG), so absolute CPU figures are inflated: the full run also measures calibration.py's
fixed workload with the same binary, and `make bench-ble` runs it on the host too
(Tests/vm/bench_ble_report.py), which gives each CPU figure at the host's speed."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import dbus

from calibration import calibration_cpu
from vmpeer import RESULTS, SAMPLES, SHARE, WORK, Peer, adapter_powered, step, stored, timings, wait_for

BIN = os.environ.get("HG_BIN", "")
H4_SOCKET = "/run/hg-peer-h4.sock"
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid: int) -> int:
    """utime + stime of a process, in clock ticks."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def latencies(sent: list[dict], commits: list[dict], window: tuple[float, float]) -> list[float]:
    """Per device: the i-th sent value is committed by the first batch whose running count of
    that device's samples exceeds i."""
    out: list[float] = []
    by_device: dict[str, list[float]] = {}
    for r in sent:
        by_device.setdefault(r["address"], []).append(r["t"])
    for address, times in by_device.items():
        running, k = 0, 0
        for i, t in enumerate(times):
            while running <= i and k < len(commits):
                running += commits[k]["samples"].get(address, 0)
                k += 1
            if running <= i:
                raise AssertionError(f"{address}: value {i} sent at {t} was never committed")
            if window[0] <= t <= window[1]:
                out.append(commits[k - 1]["t"] - t)
    return out


def run_backend(name: str, hci: str, peer: Peer, ids: list[str], addresses: list[str], window_s: float,
                helper_pid: int | None) -> dict:
    db = os.path.join(WORK, f"bench-{name}.sqlite")
    commit_log = os.path.join(WORK, f"commits-{name}.jsonl")
    log_path = os.path.join(RESULTS, f"record-{name}.log")
    log = open(log_path, "w")
    for pid in ids:
        peer.control(f"resume {pid}")
    recorder = subprocess.Popen([BIN, "record", "--hci", hci, "--db", db, "--device", "auto", "--commit-log", commit_log,
                                 "--for", "1800s"], stdout=log, stderr=subprocess.STDOUT)
    try:
        def connected() -> int:
            with open(log_path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            return sum(1 for a in addresses if f"{a}: connected, recording" in text)
        wait_for(lambda: connected() == len(addresses), 60 + 30 * len(addresses), f"{len(addresses)} devices connected ({name})",
                 interval=0.5)
        step(f"{name}: {len(addresses)} devices connected")
        t0, c0 = time.time(), cpu_ticks(recorder.pid)
        h0 = cpu_ticks(helper_pid) if helper_pid else 0
        time.sleep(window_s)  # the measurement window itself: nothing to poll
        t1, c1 = time.time(), cpu_ticks(recorder.pid)
        h1 = cpu_ticks(helper_pid) if helper_pid else 0
        for pid in ids:
            peer.control(f"pause {pid}")
        step(f"{name}: window of {window_s:.0f} s done, peripherals paused")
        central = None
        sent_all = [r for r in peer.sent() if r.get("malformed") is None and r["t"] >= t0 - 3600]

        def complete() -> bool:
            for a in addresses:
                mine = [r for r in sent_all if r["address"] == a and r["central"] == central] if central else []
                if len(stored(db, SAMPLES, (a,))) < len(mine):
                    return False
            return True
        # This backend's central address: the one that received values during the window.
        centrals = {r["central"] for r in sent_all if t0 <= r["t"] <= t1}
        if len(centrals) != 1:
            raise AssertionError(f"{name}: expected one central during the window, saw {centrals}")
        central = centrals.pop()
        sent_all = [r for r in peer.sent() if r.get("malformed") is None and r["central"] == central]
        wait_for(complete, 60, f"{name}: every sent value stored")
        recorder.send_signal(signal.SIGINT)
        rc = recorder.wait(120)
        if rc != 0:
            raise AssertionError(f"{name}: record exited {rc} (see {log_path})")
        for a in addresses:
            bpm_sent = [r["fields"]["bpm"] for r in sent_all if r["address"] == a]
            bpm_stored = [row[0] for row in stored(db, SAMPLES, (a,))]
            if bpm_stored != bpm_sent:
                raise AssertionError(f"{name}: {a}: stored heart rates != sent log ({len(bpm_stored)} vs {len(bpm_sent)})")
        with open(commit_log) as f:
            commits = [json.loads(line) for line in f if line.strip()]
        lat = latencies(sent_all, commits, (t0, t1))
        if not lat:
            raise AssertionError(f"{name}: no values in the window")
        row = {"backend": name, "devices": len(addresses), "window_s": round(t1 - t0, 1), "values": len(lat),
               "rate_hz": round(len(lat) / (t1 - t0), 1),
               "p50_ms": round(percentile(lat, 50) * 1000, 1), "p99_ms": round(percentile(lat, 99) * 1000, 1),
               "max_ms": round(max(lat) * 1000, 1),
               "cpu_pct": round((c1 - c0) / TICKS / (t1 - t0) * 100, 2), "batches": len(commits)}
        if helper_pid:
            row["bluetoothd_cpu_pct"] = round((h1 - h0) / TICKS / (t1 - t0) * 100, 2)
        step(f"{name}: {row}")
        return row
    finally:
        if recorder.poll() is None:
            recorder.kill()
            recorder.wait()
        for path in (db, commit_log):
            subprocess.run(["cp", path, RESULTS], check=False, stderr=subprocess.DEVNULL)


def table(rows: list[dict]) -> str:
    head = ["backend", "devices", "values", "window", "p50", "p99", "max", "healthgate CPU", "bluetoothd CPU"]
    lines = [head] + [[r["backend"], str(r["devices"]), str(r["values"]), f"{r['window_s']} s", f"{r['p50_ms']} ms",
                       f"{r['p99_ms']} ms", f"{r['max_ms']} ms", f"{r['cpu_pct']} %",
                       f"{r['bluetoothd_cpu_pct']} %" if "bluetoothd_cpu_pct" in r else "-"] for r in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines)


def main(devices: int = 10, rate_hz: int = 4, window_s: float = 60, calibrate: bool = True) -> int:
    if not BIN:
        raise SystemExit("needs --binary")
    result: dict = {"devices": devices, "rate_hz": rate_hz, "window_s": window_s}
    if calibrate:
        make_export = os.path.join(SHARE, "repo", "Drivers", "AppleHealth", "tools", "make-export.py")
        result["calibration"] = calibration_cpu(BIN, make_export, WORK)
        step(f"calibration: {result['calibration']}")
    peer = Peer(["hr"] * devices, rate=rate_hz, extra=("--also-listen", f"unix:{H4_SOCKET}"))
    ids = [p["id"] for p in peer.info["peripherals"]]
    addresses = [p["address"] for p in peer.info["peripherals"]]
    for pid in ids:
        peer.control(f"pause {pid}")
    step(f"peer ready: {devices} heart-rate sensors at {rate_hz} Hz")
    bluetoothd = subprocess.Popen(["/usr/libexec/bluetooth/bluetoothd", "-n"],
                                  stdout=open(os.path.join(RESULTS, "bluetoothd.log"), "w"), stderr=subprocess.STDOUT)
    rows = []
    try:
        bus = dbus.SystemBus()
        adapter_path = f"/org/bluez/hci{peer.info['h4']['index']}"
        wait_for(lambda: bus.name_has_owner("org.bluez"), 20, "bluetoothd on the bus")
        if not adapter_powered(bus, adapter_path):
            subprocess.run(["bluetoothctl", "power", "on"], capture_output=True, timeout=30)
        wait_for(lambda: adapter_powered(bus, adapter_path), 20, f"{adapter_path} powered")
        step("adapter powered")
        rows.append(run_backend("bluez", "bluez", peer, ids, addresses, window_s, bluetoothd.pid))
        bluetoothd.terminate()
        bluetoothd.wait(15)
        step("bluetoothd stopped")
        rows.append(run_backend("own-stack", f"unix:{H4_SOCKET}", peer, ids, addresses, window_s, None))
        result["rows"] = rows
        text = table(rows)
        print(text, flush=True)
        with open(os.path.join(RESULTS, "bench.txt"), "w") as f:
            f.write(text + "\n")
        return 0
    finally:
        result["timings"] = timings
        with open(os.path.join(RESULTS, "bench.json"), "w") as f:
            json.dump(result, f, indent=1)
        peer.close()
        if bluetoothd.poll() is None:
            bluetoothd.terminate()
            bluetoothd.wait(15)
        subprocess.run(["cp", peer.sent_log, RESULTS], check=False)


if __name__ == "__main__":
    sys.exit(main())
