"""What the ANT scenarios share (not a scenario: run.py lists those): ``dummy_hcd`` at full
speed, the emulated ANT USB stick (Tests/peers/ant_stick.py) as a real USB device on it with its
control channel and sent log, waits for the device to appear or go, and the FIT files the
emulated watch serves.

    load_dummy_hcd()
    stick = Stick(["--ant-plus-key", key.hex(), "--sensor", "hrm"], watch_files=["antfs-dump-63.fit"],
                  ant_fs_key=fs_key)
    wait_for_device()            # 0fcf:1008 on the guest's USB bus
    ... the host under test drives it (libusb) ...
    stick.control("fault stall"); stick.sent(); stick.close()

Network keys are the test's own (``random_key()``): pass the same key to the stick and to the
host under test.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys

from vmpeer import RESULTS, SHARE, WORK, PeerProcess, step, timings, wait_for  # noqa: F401  (re-exported)

STICK = os.path.join(SHARE, "peers", "ant_stick.py")
FIT = os.path.join(SHARE, "repo", "Fixtures", "fit")
VENDOR, PRODUCT = 0x0FCF, 0x1008


def random_key() -> bytes:
    """A network key of the test's own (the emulator accepts any; the host must use the same)."""
    return secrets.token_bytes(8)


def run(cmd: list[str], timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def load_dummy_hcd() -> None:
    """Loads ``dummy_hcd`` with a full-speed bus (like a real ANT stick's) and two ports (UDCs
    ``dummy_udc.0`` and ``.1``: the watch scenarios plug two watches at once), or checks that the
    loaded one is full speed."""
    param = "/sys/module/dummy_hcd/parameters/is_high_speed"
    if not os.path.exists(param):
        out = run(["modprobe", "dummy_hcd", "is_high_speed=0", "num=2"])
        if out.returncode != 0:
            raise RuntimeError(f"modprobe dummy_hcd: {out.stderr}")
    with open(param) as f:
        if f.read().strip() not in ("N", "0"):
            raise RuntimeError("dummy_hcd is loaded as a high-speed bus; reload it with is_high_speed=0")
    wait_for(lambda: os.path.exists("/sys/class/udc/dummy_udc.0"), 10, "dummy_udc.0")


def usb_devices(vendor: int = VENDOR, product: int = PRODUCT) -> list[str]:
    """Sysfs paths of the USB devices with this vendor and product id."""
    found = []
    base = "/sys/bus/usb/devices"
    for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        try:
            with open(f"{base}/{name}/idVendor") as v, open(f"{base}/{name}/idProduct") as p:
                if int(v.read(), 16) == vendor and int(p.read(), 16) == product:
                    found.append(f"{base}/{name}")
        except OSError:
            continue
    return found


def bus_address(vendor: int = VENDOR, product: int = PRODUCT) -> tuple[int, int] | None:
    """(bus, device number) of the device as the kernel has it now; None when it is not there.
    A libusb client should open exactly that one: after a replug, libusb's device list can still
    hold the device that went."""
    for path in usb_devices(vendor, product):
        try:
            with open(f"{path}/busnum") as b, open(f"{path}/devnum") as d:
                return int(b.read()), int(d.read())
        except OSError:
            continue
    return None


def lsusb(vendor: int = VENDOR, product: int = PRODUCT) -> str:
    """``lsusb -d VID:PID`` (empty when the device is not there)."""
    return run(["lsusb", "-d", f"{vendor:04x}:{product:04x}"]).stdout.strip()


def wait_for_device(present: bool = True, vendor: int = VENDOR, product: int = PRODUCT, timeout: float = 30) -> str:
    """Waits until lsusb lists the device (or, ``present=False``, no longer does); returns the
    lsusb line."""
    what = f"{vendor:04x}:{product:04x} to {'appear' if present else 'go'}"
    return wait_for(lambda: (lsusb(vendor, product) or None) if present else (not lsusb(vendor, product)),
                    timeout, what, interval=0.3)


def start_udevd() -> subprocess.Popen:
    """Starts systemd-udevd (init mode has none). Debian's libusb learns of hotplugged devices
    through udev: without udevd a libusb context never sees a device that appears after it was
    created (a replugged stick stays invisible; only a new context finds it). udevd also loads
    the kernel driver matching the device (``usb_serial_simple`` claims 0fcf:1008), so the host
    under test must detach it, as on a real system. Stop it with ``stop(proc)``."""
    binary = next((p for p in ("/lib/systemd/systemd-udevd", "/usr/lib/systemd/systemd-udevd") if os.path.exists(p)),
                  None)
    if binary is None:
        raise RuntimeError("systemd-udevd is not in the image")
    log = open(os.path.join(RESULTS, "udevd.log"), "w")
    proc = subprocess.Popen([binary], stdout=log, stderr=subprocess.STDOUT)
    wait_for(lambda: run(["udevadm", "control", "--ping"], timeout=10).returncode == 0, 30, "udevd to answer")
    return proc


def stop(proc: subprocess.Popen | None) -> None:
    """Ends a process the scenario started (SIGTERM, then SIGKILL after 10 s)."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Stick(PeerProcess):
    """The emulated stick (ant_stick.py) as a USB gadget on ``dummy_udc.0``, with its control
    channel on a Unix socket and its sent log in HG_WORK (copied to the results on close)."""

    what = "stick"

    def __init__(self, args: list[str], *, name: str = "stick", watch_files: list[str] | None = None,
                 ant_fs_key: bytes | None = None, udc: str = "dummy_udc.0") -> None:
        self.name = name
        sent_log = os.path.join(WORK, f"{name}-sent.jsonl")
        control_path = f"/run/hg-{name}.sock"
        extra: list[str] = []
        if watch_files is not None:
            folder = os.path.join(WORK, f"{name}-watch")
            os.makedirs(folder, exist_ok=True)
            for f in watch_files:
                shutil.copy(f if os.path.isabs(f) else os.path.join(FIT, f), folder)
            extra += ["--watch-files", folder]
        if ant_fs_key is not None:
            extra += ["--ant-fs-key", ant_fs_key.hex()]
        super().__init__([sys.executable, STICK, "--listen", f"usb:{udc}", "--control", f"unix:{control_path}",
                          "--sent-log", sent_log, "--gadget-name", f"hg{name}", "-v", *extra, *args],
                         control_path=control_path, sent_log=sent_log, stderr_path=os.path.join(RESULTS, f"{name}.log"),
                         control_timeout=20, stop_timeout=30)

    def close(self) -> int | None:
        """Stops the stick (stdin EOF: it unbinds and removes its gadget) and copies its sent log
        to the results. Returns its exit status."""
        status = self.stop()
        if os.path.exists(self.sent_log):
            shutil.copy(self.sent_log, RESULTS)
        return status

HEART_RATES = ("SELECT s.heart_rate FROM samples s JOIN workouts w ON w.id = s.workout_id "
               "WHERE w.source_device = ? ORDER BY s.seq")
RR_INTERVALS = ("SELECT r.rr_s FROM rr_intervals r JOIN workouts w ON w.id = r.workout_id "
                "WHERE w.source_device = ? ORDER BY r.seq")


def heard_heart_rates(stick: Stick, sensor: str = "hrm") -> tuple[list[int], list[float]]:
    """The heart rates of the strap's messages the stick heard (the sent log's ``rx``), in order,
    and the RR intervals (s) a host can know from them by the ANT+ rule: a page whose beat count
    is the last page's is a repeat; a new beat gives beat time - previous beat time when the page
    says the previous beat time (page 4), else beat time - the last page's beat time when the
    count rose by exactly one; intervals outside 0.2-3 s are not stored."""
    heard = [m for m in stick.sent() if m.get("device") == sensor and m.get("rx")]
    rr, last = [], None
    for m in heard:
        f = m["fields"]
        if last is not None and f["beat_count"] == last["beat_count"]:
            last = f
            continue
        ticks = None
        if f["page_no"] == 4:
            ticks = (f["beat_time"] - f["prev_beat_time"]) % 65536
        elif last is not None and (f["beat_count"] - last["beat_count"]) % 256 == 1:
            ticks = (f["beat_time"] - last["beat_time"]) % 65536
        if ticks is not None and 0.2 <= ticks / 1024 <= 3.0:
            rr.append(round(ticks / 1024, 9))
        last = f
    return [m["fields"]["bpm"] for m in heard], rr


def check_heart_rates_stored(stick: Stick, db: str, device: str, result: dict) -> tuple[list[int], list[float]]:
    """The stored heart rates and RR intervals of `device` equal, value for value and in order,
    what the stick heard of the strap (``heard_heart_rates``); returns them."""
    from vmpeer import stored
    sent_bpm, sent_rr = heard_heart_rates(stick)
    stored_bpm = [r[0] for r in stored(db, HEART_RATES, (device,))]
    stored_rr = [round(r[0], 9) for r in stored(db, RR_INTERVALS, (device,))]
    result["hr"] = {"sent": len(sent_bpm), "stored": len(stored_bpm), "rr_sent": len(sent_rr), "rr_stored": len(stored_rr)}
    if stored_bpm != sent_bpm:
        raise AssertionError(f"heart rates differ: heard {sent_bpm} stored {stored_bpm}")
    if stored_rr != sent_rr:
        raise AssertionError(f"RR intervals differ: heard {sent_rr} stored {stored_rr}")
    return sent_bpm, sent_rr


def kernel_driver() -> str | None:
    """The kernel driver bound to the stick's interface 0 (``usb_serial_simple``), if any."""
    for path in usb_devices():
        name = os.path.basename(path)
        link = f"{path}/{name}:1.0/driver"
        if os.path.exists(link):
            return os.path.basename(os.readlink(link))
    return None


def finish(result: dict, *, recorder: subprocess.Popen | None, db: str, stick: Stick, udevd: subprocess.Popen | None) -> None:
    """What an ANT scenario leaves behind, passed or failed: the recorder killed if it still
    runs, a copy of its database and the stick's sent log in the results, the stick and udevd
    stopped, result.json with the step timings."""
    if recorder is not None and recorder.poll() is None:
        recorder.kill()
    if os.path.exists(db):
        run(["sqlite3", db, f".backup {os.path.join(RESULTS, os.path.basename(db))}"])
    stick.close()
    stop(udevd)
    result["timings"] = timings
    with open(os.path.join(RESULTS, "result.json"), "w") as f:
        json.dump(result, f, indent=1, default=str)
