"""What the BLE scenarios share (not a scenario: run.py lists those): the test peer on
/dev/vhci with its control channel, step timings, polling waits, reads of the database a
scenario's `healthgate` writes, and `healthgate daemon` run by a scenario."""
from __future__ import annotations

import json
import os
import select
import signal
import socket
import sqlite3
import subprocess
import sys
import time

import dbus

SHARE = os.environ["HG_SHARE"]
RESULTS = os.environ["HG_RESULTS"]
WORK = os.environ["HG_WORK"]
PEER = os.path.join(SHARE, "peers", "ble_peer.py")
HR_ADDRESS = "C0:4E:47:00:00:01"
BLUEZ = "org.bluez"

t_start = time.monotonic()
timings: dict[str, float] = {}


def step(name: str) -> None:
    """Prints `name` with the seconds since the scenario started, and keeps it in `timings`."""
    timings[name] = round(time.monotonic() - t_start, 2)
    print(f"[{timings[name]:7.2f}] {name}", flush=True)


def wait_for(pred, timeout: float, what: str, interval: float = 0.2):
    """Polls pred() until it is true (returns its value); fails after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


class PeerProcess:
    """A test peer program (the BLE peer, the emulated ANT stick) that a scenario starts: its
    ready line (JSON) in ``info``, its control channel on a Unix socket, its sent log. Stop it
    with ``stop()`` (stdin EOF: it exits and removes what it set up)."""

    what = "peer"

    def __init__(self, argv: list[str], *, control_path: str, sent_log: str, stderr_path: str,
                 control_timeout: float = 10, stop_timeout: float = 15) -> None:
        self.sent_log = sent_log
        self.stderr_path = stderr_path
        self.stderr = open(stderr_path, "w")
        self.control_path = control_path
        self.stop_timeout = stop_timeout
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr)
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        line = self.proc.stdout.readline() if ready else b""
        if not line:
            raise RuntimeError(f"the {self.what} printed no ready line within 60 s (see {stderr_path})")
        self.info = json.loads(line)
        self.ctl = socket.socket(socket.AF_UNIX)
        self.ctl.settimeout(control_timeout)
        self.ctl.connect(control_path)
        self.ctl_file = self.ctl.makefile("rb")

    def request(self, line: str) -> dict:
        """One control command; the reply as it came (``ok`` may be false)."""
        self.ctl.sendall(line.encode() + b"\n")
        return json.loads(self.ctl_file.readline())

    def control(self, line: str) -> dict:
        """One control command that must succeed."""
        reply = self.request(line)
        if not reply.get("ok"):
            raise RuntimeError(f"{self.what}: {line}: {reply}")
        return reply

    def sent(self) -> list[dict]:
        with open(self.sent_log, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    def stop(self) -> int | None:
        """stdin EOF, then SIGKILL if it has not exited within ``stop_timeout``; its exit status."""
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


class Peer(PeerProcess):
    """The test peer (Tests/peers/ble_peer.py) on /dev/vhci, with its control channel."""

    def __init__(self, peripherals: list[str], rate: int, extra: tuple[str, ...] = ()) -> None:
        sent_log = os.path.join(WORK, "sent.jsonl")
        control_path = "/run/hg-peer.sock"
        chosen = [arg for p in peripherals for arg in ("--peripheral", p)]
        super().__init__([sys.executable, PEER, "--listen", "vhci", "--control", f"unix:{control_path}", *chosen,
                          "--rate", str(rate), "--sent-log", sent_log, "-v", *extra],
                         control_path=control_path, sent_log=sent_log, stderr_path=os.path.join(RESULTS, "peer.log"))

    def close(self) -> None:
        self.stop()  # stdin EOF: the peer exits and /dev/vhci closes


def adapter_powered(bus, path: str) -> bool:
    """Whether bluetoothd publishes the adapter at `path` and it is powered."""
    if not bus.name_has_owner(BLUEZ):
        return False
    manager = dbus.Interface(bus.get_object(BLUEZ, "/"), "org.freedesktop.DBus.ObjectManager")
    adapter = manager.GetManagedObjects().get(path, {}).get("org.bluez.Adapter1")
    return bool(adapter and adapter.get("Powered"))


def ble_scan(binary: str, hci: str, address: str, window: str = "6s", attempts: int = 5) -> tuple[list[dict], str]:
    """`healthgate ble scan --hci HCI --json --for WINDOW` again until it lists `address`, at most
    `attempts` times (a slow emulated guest on a busy host may miss the advertising in one
    window). Returns the last scan's devices and its output; fails when a scan exits non-zero."""
    for _ in range(attempts):
        scan = subprocess.run([binary, "ble", "scan", "--hci", hci, "--json", "--for", window],
                              capture_output=True, text=True, timeout=60)
        if scan.returncode != 0:
            raise AssertionError(f"ble scan --hci {hci} exited {scan.returncode}: {scan.stderr}")
        devices = json.loads(scan.stdout)
        if any(d["address"].split(" ")[0] == address for d in devices):
            break
    return devices, scan.stdout + scan.stderr


def power_on(bus, path: str, wait_s: float = 30) -> None:
    """Waits for bluetoothd to publish the adapter at `path` powered (it powers adapters itself,
    AutoEnable); when it has not after `wait_s`, powers it, and waits for that."""
    try:
        wait_for(lambda: adapter_powered(bus, path), wait_s, f"bluetoothd to publish and power {path}")
    except TimeoutError:
        props = dbus.Interface(bus.get_object(BLUEZ, path), "org.freedesktop.DBus.Properties")
        props.Set("org.bluez.Adapter1", "Powered", dbus.Boolean(True))
        wait_for(lambda: adapter_powered(bus, path), wait_s, "the adapter to power on")


def stored(db: str, sql: str, args=()) -> list:
    """Rows of `sql` in the database at `db`, read-only; none while it or its schema is missing."""
    if not os.path.exists(db):
        return []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return con.execute(sql, args).fetchall()
    except sqlite3.OperationalError:
        return []  # the schema is not there yet
    finally:
        con.close()


SAMPLES = ("SELECT s.heart_rate FROM samples s JOIN workouts w ON w.id = s.workout_id "
           "WHERE w.source_device = ? ORDER BY w.start_time, s.seq")
RR = ("SELECT r.rr_s FROM rr_intervals r JOIN workouts w ON w.id = r.workout_id "
      "WHERE w.source_device = ? ORDER BY w.start_time, r.seq")


def start_bluetoothd(peer: Peer):
    """Starts the guest's bluetoothd (debug log in the results) and waits until it publishes the
    peer's adapter powered (powering it on if it stays off); returns (process, bus, adapter path)."""
    log = open(os.path.join(RESULTS, "bluetoothd.log"), "w")
    proc = subprocess.Popen(["/usr/libexec/bluetooth/bluetoothd", "-n", "-d"], stdout=log, stderr=subprocess.STDOUT)
    bus = dbus.SystemBus()
    adapter = f"/org/bluez/hci{peer.info['h4']['index']}"
    try:
        wait_for(lambda: adapter_powered(bus, adapter), 20, f"bluetoothd to publish and power {adapter}")
    except TimeoutError:
        props = dbus.Interface(bus.get_object(BLUEZ, adapter), "org.freedesktop.DBus.Properties")
        props.Set("org.bluez.Adapter1", "Powered", dbus.Boolean(True))
        wait_for(lambda: adapter_powered(bus, adapter), 20, "the adapter to power on")
    return proc, bus, adapter


def stop(proc) -> None:
    """Ends a process the scenario started (SIGTERM, then SIGKILL after 10 s)."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def device_properties(bus, adapter: str, address: str) -> dict:
    """bluetoothd's Device1 properties of `address` on `adapter`; {} when it does not know it."""
    path = f"{adapter}/dev_{address.replace(':', '_')}"
    manager = dbus.Interface(bus.get_object(BLUEZ, "/"), "org.freedesktop.DBus.ObjectManager")
    return dict(manager.GetManagedObjects().get(path, {}).get("org.bluez.Device1", {}))


def forget_devices(bus, adapter: str, addresses: list[str]) -> list[str]:
    """Removes `addresses` from bluetoothd (Adapter1.RemoveDevice: their bonds go too), so that
    later scenarios of the same boot, whose fresh peer has no keys, do not meet bonds stored on
    the guest's disk. Returns the addresses removed."""
    removed = []
    adapter_iface = dbus.Interface(bus.get_object(BLUEZ, adapter), "org.bluez.Adapter1")
    for address in addresses:
        if device_properties(bus, adapter, address):
            adapter_iface.RemoveDevice(dbus.ObjectPath(f"{adapter}/dev_{address.replace(':', '_')}"))
            removed.append(address)
    return removed



def forget_bonds(bluetoothd, adapter: str | None, addresses: list[str], result: dict) -> None:
    """At a scenario's end, while its bluetoothd still runs: ``forget_devices``, the outcome (or
    the D-Bus error) noted in `result`."""
    if bluetoothd is None or bluetoothd.poll() is not None or adapter is None:
        return
    try:  # the next scenarios of this boot must not meet these bonds
        result["forgotten"] = forget_devices(dbus.SystemBus(), adapter, addresses)
    except dbus.DBusException as e:
        result["forget_error"] = str(e)


def bond(binary: str, address: str) -> None:
    """`healthgate ble pair --hci bluez --json ADDRESS` with no terminal: a Just Works peripheral
    must end up bonded."""
    run = subprocess.run([binary, "ble", "pair", "--hci", "bluez", "--json", address], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=180)
    if run.returncode != 0 or json.loads(run.stdout).get("result") != "bonded":
        raise AssertionError(f"ble pair {address} exited {run.returncode}: {run.stdout} {run.stderr}")


def check_heart_rates_stored(peer, db: str, result: dict) -> tuple[list, list]:
    """The heart rates and RR intervals stored for the peer's `hr` equal its sent log, in order
    (malformed values left out); notes the counts in `result`; returns what was sent."""
    sent = [r for r in peer.sent() if r["peripheral"] == "hr" and r.get("malformed") is None]
    bpm_sent = [r["fields"]["bpm"] for r in sent]
    rr_sent = [rr / 1024 for r in sent for rr in r["fields"].get("rr", [])]
    bpm_stored = [row[0] for row in stored(db, SAMPLES, (HR_ADDRESS,))]
    rr_stored = [row[0] for row in stored(db, RR, (HR_ADDRESS,))]
    result.update(sent=len(sent), stored=len(bpm_stored), rr_sent=len(rr_sent), rr_stored=len(rr_stored))
    if bpm_stored != bpm_sent:
        raise AssertionError(f"stored heart rates != sent log:\n{bpm_stored}\n{bpm_sent}")
    if len(rr_stored) != len(rr_sent) or any(abs(a - b) > 1e-12 for a, b in zip(rr_stored, rr_sent)):
        raise AssertionError(f"stored RR intervals != sent log:\n{rr_stored}\n{rr_sent}")
    return bpm_sent, rr_sent


class Daemon:
    """`healthgate daemon ARGS...` (the binary under test), its output appended to LOG_NAME in the
    results after a header line."""

    def __init__(self, args: list[str], log_name: str = "daemon.log", header: str = "") -> None:
        binary = os.environ["HG_BIN"]
        self.path = os.path.join(RESULTS, log_name)
        self.log = open(self.path, "a")
        self.log.write(f"--- {header}{binary} daemon {' '.join(args)}\n")
        self.log.flush()
        self.proc = subprocess.Popen([binary, "daemon", *args], stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)

    def text(self) -> str:
        """What it logged so far (with the earlier runs in the same log)."""
        with open(self.path) as f:
            return f.read()

    def alive(self) -> None:
        if self.proc.poll() is not None:
            raise AssertionError(f"the daemon exited ({self.proc.returncode}); see {os.path.basename(self.path)}")

    def stop(self) -> int:
        """SIGTERM (the daemon stores what it holds, then exits); its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("the daemon did not stop within 60 s of SIGTERM")
        self.log.close()
        return self.proc.returncode

