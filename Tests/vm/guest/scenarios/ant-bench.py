"""The ANT benchmark (`make bench-ant`; not part of `make vm-test`): 8 ANT+ sensors at their ANT+
periods (two heart-rate straps, two power meters, two speed and cadence sensors, a foot pod and a
trainer: about 4 messages a second each) on the emulated ANT USB2 stick (dummy_hcd, FunctionFS),
recorded by `healthgate record --ant` for WINDOW_S seconds; next to it, in the same boot, the same
number of Bluetooth LE heart-rate sensors at 4 Hz through HealthGate's own host stack (the BLE
benchmark's path: ble-bench.py's run_backend). Then ANT-FS (run_antfs): a download's throughput
next to the protocol's limit at the emulator's burst rate, and its imports next to a plain import.

What is measured for ANT:
- message to committed row, for the straps (each message the stick heard is one stored sample,
  checked: the stored heart rates equal the heard ones in order): the emulator logs the guest's
  CLOCK_REALTIME when each message went out (`--sent-log`: before the USB transfer), `record
  --commit-log` when each batch's transaction committed; p50, p99, maximum over the window;
- CPU of the `healthgate record` process (utime + stime over the window) as % of one core, and per
  1,000 messages the stick heard from all 8 sensors.
The CPU figures are inflated by emulation (TCG): the calibration's fixed workload (calibration.py)
gives the factor to the host's speed, as for the BLE benchmark (Tests/vm/bench_ble_report.py
reads this scenario's bench.json too)."""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time

from calibration import calibration_cpu
from vmant import RESULTS, SHARE, WORK, Stick, load_dummy_hcd, random_key, step, timings, wait_for, wait_for_device
from vmpeer import Peer, stored

BIN = os.environ.get("HG_BIN", "")
WINDOW_S = 60.0
SENSORS = [("hrm", "heart_rate", 120, 120001), ("hrm", "heart_rate", 120, 120002), ("power", "power", 11, 11001),
           ("power", "power", 11, 11002), ("speed-cadence", "speed_cadence", 121, 121001),
           ("speed-cadence", "speed_cadence", 121, 121002), ("stride", "stride", 124, 124001), ("fe", "fitness_equipment", 17, 17001)]


def ble_bench():
    """ble-bench.py as a module: its run_backend, latencies, percentile, cpu_ticks, table."""
    spec = importlib.util.spec_from_file_location("ble_bench", os.path.join(os.path.dirname(os.path.abspath(__file__)), "ble-bench.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_ant(bench, window_s: float) -> dict:
    key = random_key()
    load_dummy_hcd()
    args = ["--ant-plus-key", key.hex()]
    for kind, _, _, device in SENSORS:
        args += ["--sensor", f"{kind},device={device}"]
    stick = Stick(args, name="bench")
    db = os.path.join(WORK, "bench-ant.sqlite")
    commit_log = os.path.join(WORK, "commits-ant.jsonl")
    log_path = os.path.join(RESULTS, "record-ant.log")
    recorder = None
    try:
        wait_for_device()
        sensors = []
        for _, key_name, device_type, device in SENSORS:
            sensors += ["--ant-sensor", f"{key_name}:{device}"]
        recorder = subprocess.Popen([BIN, "record", "--ant", "--ant-network-key", key.hex(), *sensors, "--db", db,
                                     "--commit-log", commit_log, "--for", "1800s"], stdout=open(log_path, "w"), stderr=subprocess.STDOUT)

        def found() -> int:
            with open(log_path, encoding="utf-8", errors="replace") as f:
                return f.read().count("ant: found ")
        wait_for(lambda: found() >= len(SENSORS), 120, f"{len(SENSORS)} ANT+ sensors found", interval=0.5)
        step(f"ant: {len(SENSORS)} sensors found")
        t0, c0 = time.time(), bench.cpu_ticks(recorder.pid)
        time.sleep(window_s)  # the measurement window itself
        t1, c1 = time.time(), bench.cpu_ticks(recorder.pid)
        ids = sorted({s["id"] for s in stick.info["sensors"]})
        for sensor_id in ids:
            stick.control(f"stop {sensor_id}")
        step(f"ant: window of {window_s:.0f} s done, sensors stopped")
        straps = [d for _, k, _, d in SENSORS if k == "heart_rate"]
        samples = ("SELECT s.heart_rate FROM samples s JOIN workouts w ON w.id = s.workout_id "
                   "WHERE w.source_device = ? ORDER BY s.seq")

        def heard(device: int) -> list[dict]:
            return [m for m in stick.sent() if m.get("dev") == device and m.get("rx")]
        wait_for(lambda: all(len(stored(db, samples, (f"ant:120:{d}",))) >= len(heard(d)) for d in straps), 60,
                 "every heard heart rate stored")
        recorder.send_signal(signal.SIGINT)
        rc = recorder.wait(120)
        recorder = None
        if rc != 0:
            raise AssertionError(f"ant: record exited {rc} (see {log_path})")
        sent = []
        for d in straps:
            mine = heard(d)
            if [m["fields"]["bpm"] for m in mine] != [r[0] for r in stored(db, samples, (f"ant:120:{d}",))]:
                raise AssertionError(f"ant: {d}: stored heart rates != heard ones")
            sent += [{"address": f"ant:120:{d}", "t": m["t"]} for m in mine]
        with open(commit_log) as f:
            commits = [json.loads(line) for line in f if line.strip()]
        lat = bench.latencies(sent, commits, (t0, t1))
        messages = sum(1 for m in stick.sent() if m.get("rx") and t0 <= m["t"] <= t1)
        cpu_s = (c1 - c0) / bench.TICKS
        row = {"backend": "ant", "devices": len(SENSORS), "window_s": round(t1 - t0, 1), "values": len(lat),
               "messages": messages, "rate_hz": round(messages / (t1 - t0), 1),
               "p50_ms": round(bench.percentile(lat, 50) * 1000, 1), "p99_ms": round(bench.percentile(lat, 99) * 1000, 1),
               "max_ms": round(max(lat) * 1000, 1), "cpu_pct": round(cpu_s / (t1 - t0) * 100, 2),
               "cpu_ms_per_1000": round(cpu_s / max(messages, 1) * 1_000_000, 1), "batches": len(commits)}
        step(f"ant: {row}")
        return row
    finally:
        if recorder is not None:
            recorder.kill()
            recorder.wait()
        stick.close()
        for path in (db, commit_log):
            subprocess.run(["cp", path, RESULTS], check=False, stderr=subprocess.DEVNULL)


ANTFS_FILES = ["garmin-fr735xt-poolswim-hr-chained.fit", "garmin-edge800-indoor-trainer-power.fit", "garmin-fenix5-run.fit"]


def run_antfs() -> dict:
    """ANT-FS: `ant download --pair` of ANTFS_FILES from the emulated watch (pairing, directory,
    blocks with CRC, each file imported), next to the protocol's own limit at the emulator's burst
    rate (8 bytes per burst packet, one packet per `burst_gap_s`), and the imports the download
    did next to a plain `healthgate import` of the same files into a fresh database."""
    sys.path.insert(0, os.path.join(SHARE, "peers"))
    from antstick.model import StickConfig
    gap_s = StickConfig().burst_gap_s
    key = random_key()
    load_dummy_hcd()
    stick = Stick(["--watch-pairing", "accept", "--watch-pair-delay", "1"], name="benchfs", watch_files=ANTFS_FILES,
                  ant_fs_key=key)
    try:
        wait_for_device()
        db = os.path.join(WORK, "bench-antfs.sqlite")
        t0 = time.time()
        out = subprocess.run([BIN, "ant", "download", "--pair", "--antfs-key", key.hex(), "--db", db, "--json", "--timeout", "10m"],
                             capture_output=True, text=True, timeout=900)
        wall = time.time() - t0
        with open(os.path.join(RESULTS, "antfs-download.log"), "w") as f:
            f.write(out.stderr)
        if out.returncode != 0:
            raise AssertionError(f"ant download: {out.returncode} {out.stderr[-2000:]}")
        summary = json.loads(out.stdout)
        sizes = sum(os.path.getsize(os.path.join(SHARE, "repo", "Fixtures", "fit", n)) for n in ANTFS_FILES)
        if len(summary["fetched"]) != len(ANTFS_FILES) or summary["failed"] or summary["bytes"] != sizes:
            raise AssertionError(f"every file downloaded whole expected: {summary}")
        plain_db = os.path.join(WORK, "bench-plain.sqlite")
        paths = [os.path.join(SHARE, "repo", "Fixtures", "fit", n) for n in ANTFS_FILES]
        t1 = time.time()
        plain = subprocess.run([BIN, "import", *paths, "--db", plain_db, "--json"], capture_output=True, text=True, timeout=600)
        plain_s = time.time() - t1
        if plain.returncode != 0:
            raise AssertionError(f"healthgate import: {plain.returncode} {plain.stderr[-2000:]}")
        row = {"files": len(ANTFS_FILES), "bytes": summary["bytes"], "wall_s": round(wall, 1),
               "download_s": round(summary["download_s"], 1),
               "throughput_Bps": round(summary["bytes"] / max(summary["download_s"], 0.001)),
               "protocol_limit_Bps": round(8 / gap_s), "import_s": round(summary["import_s"], 3),
               "plain_import_s": round(plain_s, 3)}
        step(f"ant-fs: {row}")
        return row
    finally:
        stick.close()


def run_ble(bench, devices: int, window_s: float) -> dict:
    """The same number of BLE heart-rate sensors at 4 Hz through the own host stack (no
    bluetoothd), as ble-bench's own-stack row."""
    socket_path = bench.H4_SOCKET
    peer = Peer(["hr"] * devices, rate=4, extra=("--also-listen", f"unix:{socket_path}"))
    try:
        ids = [p["id"] for p in peer.info["peripherals"]]
        addresses = [p["address"] for p in peer.info["peripherals"]]
        for pid in ids:
            peer.control(f"pause {pid}")
        row = bench.run_backend("ble own-stack", f"unix:{socket_path}", peer, ids, addresses, window_s, None)
        row["messages"] = row["values"]
        row["cpu_ms_per_1000"] = round(row["cpu_pct"] / 100 * row["window_s"] / max(row["values"], 1) * 1_000_000, 1)
        return row
    finally:
        peer.close()
        subprocess.run(["cp", peer.sent_log, RESULTS], check=False)


def main() -> int:
    if not BIN:
        raise SystemExit("needs --binary")
    bench = ble_bench()
    result: dict = {"window_s": WINDOW_S}
    make_export = os.path.join(SHARE, "repo", "Drivers", "AppleHealth", "tools", "make-export.py")
    result["calibration"] = calibration_cpu(BIN, make_export, WORK)
    step(f"calibration: {result['calibration']}")
    rows = []
    try:
        rows.append(run_ant(bench, WINDOW_S))
        rows.append(run_ble(bench, len(SENSORS), WINDOW_S))
        result["rows"] = rows
        fs = run_antfs()
        result["antfs"] = fs
        text = bench.table(rows) + "\n\nCPU per 1,000 messages: " + ", ".join(f"{r['backend']} {r['cpu_ms_per_1000']} ms" for r in rows)
        text += (f"\n\nANT-FS download of {fs['files']} FIT files, {fs['bytes']} bytes: {fs['download_s']} s, "
                 f"{fs['throughput_Bps']} B/s (the protocol's limit at the emulator's burst rate: {fs['protocol_limit_Bps']} B/s; "
                 f"{fs['wall_s']} s in all, pairing included)\n"
                 f"their imports during the download {fs['import_s']} s; a plain `healthgate import` of the same files "
                 f"{fs['plain_import_s']} s (process start included)")
        print(text, flush=True)
        with open(os.path.join(RESULTS, "bench.txt"), "w") as f:
            f.write(text + "\n")
        return 0
    finally:
        result["rows"] = rows
        result["timings"] = timings
        with open(os.path.join(RESULTS, "bench.json"), "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
