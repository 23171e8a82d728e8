"""The shipped systemd unit and udev rule with an ANT USB stick, for real: `make install` (unit,
udev rule 60-healthgate.rules, sysusers, tmpfiles), udev reloaded, then the emulated ANT USB2 stick
(Tests/peers/ant_stick.py, a FunctionFS gadget on dummy_hcd) plugged in with a heart-rate strap and
a power meter on a random network key. udev gives the stick's device node to the healthgate group
(0660, tagged uaccess) and binds the kernel's usb_serial_simple to it, as on a real machine.
`systemctl enable --now healthgate` with an `ant` driver: the daemon, as the healthgate user with
no capabilities, detaches usb_serial_simple, opens the stick through libusb under the unit's
DevicePolicy and records both sensors; `systemd-analyze security` on the running unit stays at
most 1.5. The strap stops, `systemctl stop` stores what the live session held: the stored heart
rates and RR intervals equal, value for value and in order, the strap's messages the stick heard.
Then the unit is started again and the stick unplugged under it and plugged back: the same process
(no restart) takes it up again by its hotplug event and records on."""
from __future__ import annotations

import os
import pwd
import sys
import time

from vmunit import check_device_node, daemon_lines, install, run, running_exposure, save_results, show
from vmant import (HEART_RATES, RESULTS, Stick, bus_address, check_heart_rates_stored, kernel_driver, load_dummy_hcd,
                   random_key, step, timings, wait_for, wait_for_device)
from vmpeer import stored

BIN = os.environ["HG_BIN"]
REPO = os.path.join(os.environ["HG_SHARE"], "repo")
STATE = "/var/lib/healthgate"
DB = f"{STATE}/ant.sqlite"
MAX_EXPOSURE = 1.5  # make systemd-check's bound for the unit without the own-stack drop-in
HRM = 120_001  # the emulator's first strap
DEVICE = f"ant:120:{HRM}"
POWER_ROWS = "SELECT count(power_w) FROM samples"


def config(key: bytes) -> str:
    # flush_ms at its maximum: readings wait up to 10 s in memory, so the stop finds some held.
    return f"""# written by the systemd-unit-ant VM scenario
database = "{DB}"
log_level = "info"

[drivers.ant-sensors]
type = "ant"
network_key = "{key.hex()}"
sensors = ["heart_rate", "power"]
gap_s = 600
flush_ms = 10000
"""


def main() -> int:
    result: dict = {}
    stick = None
    try:
        run("systemctl", "is-system-running", "--wait", check=False, timeout=150)

        # 1. make install: the unit, the udev rule, the user; udev reloaded as README.md says.
        key = random_key()
        install(REPO, BIN, config(key))
        step("make install done, udev rules reloaded")

        # 2. The stick plugged in: udev applies the rule and binds usb_serial_simple.
        load_dummy_hcd()
        stick = Stick(["--ant-plus-key", key.hex(), "--sensor", "hrm", "--sensor", "power"])
        wait_for_device()
        wait_for(kernel_driver, 30, "usb_serial_simple to claim the stick")
        run("udevadm", "settle", timeout=60)
        bus, address = bus_address()
        node = f"/dev/bus/usb/{bus:03d}/{address:03d}"
        result["node"] = check_device_node(node)
        step(f"stick at {node}: group healthgate, 0660, tagged uaccess; kernel driver {kernel_driver()}")

        # 3. enable --now: the daemon as healthgate, without capabilities, records both sensors.
        run("systemctl", "enable", "--now", "healthgate", timeout=120)
        props = show("ActiveState", "SubState", "StatusText", "MainPID")
        result["started"] = props
        if (props["ActiveState"], props["SubState"]) != ("active", "running"):
            raise AssertionError(f"after enable --now the unit is not running: {props}")
        pid = int(props["MainPID"])
        status = dict(line.split(":\t", 1) for line in open(f"/proc/{pid}/status").read().splitlines() if ":\t" in line)
        result["proc_status"] = {k: status[k].strip() for k in ("Uid", "CapEff", "CapPrm", "CapBnd", "NoNewPrivs")}
        if status["Uid"].split()[0] != str(pwd.getpwnam("healthgate").pw_uid) \
                or any(int(status[k], 16) != 0 for k in ("CapEff", "CapPrm", "CapBnd")):
            raise AssertionError(f"the daemon is not the healthgate user without capabilities: {result['proc_status']}")
        wait_for(lambda: len(stored(DB, HEART_RATES, (DEVICE,))) >= 8, 120, "8 heart-rate samples stored by the unit")
        wait_for(lambda: stored(DB, POWER_ROWS)[0][0] >= 4, 60, "4 power samples stored by the unit")
        opened = [m for _, m in daemon_lines(pid) if "detached the kernel driver usb_serial_simple" in m]
        if not opened:
            raise AssertionError("the journal does not say the daemon detached usb_serial_simple")
        result["opened"] = opened[0]
        step(f"recording as healthgate (no capabilities); journal: {opened[0][:140]}")

        # 4. The exposure of the running unit.
        result["exposure"] = running_exposure(MAX_EXPOSURE)
        step(f"systemd-analyze security on the running unit: {result['exposure']}")

        # 5. stop stores what the live session held: the strap stops, its last messages reach the
        # daemon, the unit stops at once (with flush_ms 10 s some readings are still in memory).
        stick.control("stop hrm")
        time.sleep(1.5)
        held_before = len(stored(DB, HEART_RATES, (DEVICE,)))
        run("systemctl", "stop", "healthgate", timeout=90)
        props = show("ActiveState", "Result", "NRestarts")
        result["stopped"] = props
        if props != {"ActiveState": "inactive", "Result": "success", "NRestarts": "0"}:
            raise AssertionError(f"systemctl stop: {props}")
        bpm, rr = check_heart_rates_stored(stick, DB, DEVICE, result)
        workouts = stored(DB, "SELECT in_progress, source_driver FROM workouts WHERE source_device = ?", (DEVICE,))
        if workouts != [(0, "ant")]:
            raise AssertionError(f"expected one completed ant workout after the stop, found {workouts}")
        step(f"stop: {len(bpm)} heart rates and {len(rr)} RR intervals stored == heard "
             f"({len(bpm) - held_before} of them held in memory at the stop), the workout completed")

        # 6. Started again, the stick unplugged under the unit and plugged back: the same process
        # takes it up again and records on.
        stick.control("start hrm")
        run("systemctl", "start", "healthgate", timeout=120)
        pid = int(show("MainPID")["MainPID"])
        before = len(stored(DB, HEART_RATES, (DEVICE,)))
        wait_for(lambda: len(stored(DB, HEART_RATES, (DEVICE,))) >= before + 4, 120, "recording again after the start")
        stick.control("unplug")
        wait_for_device(present=False)
        time.sleep(2)
        stick.control("replug")
        wait_for_device()
        unplugged_at = len(stored(DB, HEART_RATES, (DEVICE,)))
        wait_for(lambda: len(stored(DB, HEART_RATES, (DEVICE,))) >= unplugged_at + 8, 120,
                 "8 more heart-rate samples after the replug")
        props = show("MainPID", "ActiveState", "NRestarts")
        result["replugged"] = props
        if props != {"MainPID": str(pid), "ActiveState": "active", "NRestarts": "0"}:
            raise AssertionError(f"the unit did not go on in the same process: {props}")
        lines = daemon_lines(pid)
        with open(os.path.join(RESULTS, "daemon-journal.txt"), "w") as f:
            f.writelines(f"{p} {m}\n" for p, m in lines)
        step(f"unplugged and plugged back under the unit: same pid {pid}, no restart, recording on")
        return 0
    finally:
        save_results(result, timings, None, DB)
        if stick is not None:
            stick.close()


if __name__ == "__main__":
    sys.exit(main())
