"""HealthGate's ANT driver against the emulated ANT USB2 stick on the guest's real USB stack
(dummy_hcd, FunctionFS; Tests/peers/ant_stick.py): udevd runs, so the kernel's usb_serial_simple
claims the stick first, as on a real machine.

1. `healthgate ant list --json`: the stick, with its firmware and serial, the kernel driver
   detached for the look and given back.
2. `healthgate record --ant` with four sensors at once (heart-rate strap, power meter, speed and
   cadence sensor, foot pod) at their ANT+ periods, into a database on the guest's disk.
3. The strap pauses (the database must then hold a sample for each of its messages the stick
   heard); the stick is unplugged mid-recording (the other sensors go on) and plugged back: the
   same recorder process finds it again by its hotplug event and records on; the strap goes on.
4. The strap is stopped, the scenario waits until the database holds as many heart-rate samples
   as the strap's messages the stick heard, and stops the recording (SIGINT). (The strap pauses
   around the unplug because a message the emulated radio hears while the gadget is being unbound
   never reaches the host: no host could store it.)

Checks: the stored heart rates equal, value for value and in order, those of the strap's messages
the stick received (the emulator's sent log, `rx`), and the stored RR intervals those the ANT+
rule gives for them (computed here from the logged beat counts and times); power, cadence, speed
and stride values were stored from the other three; one workout per sensor (the replug within
the gap keeps each sensor's workout); the recorder detached usb_serial_simple.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from vmant import (HEART_RATES, RESULTS, WORK, Stick, check_heart_rates_stored, finish, kernel_driver, load_dummy_hcd,
                   random_key, start_udevd, step, wait_for, wait_for_device)
from vmpeer import stored

BIN = os.environ["HG_BIN"]
HRM = 120_001  # the strap's 20-bit device number (the emulator's default for the first strap)


def main() -> int:
    result: dict = {}
    key = random_key()
    load_dummy_hcd()
    udevd = start_udevd()
    stick = Stick(["--ant-plus-key", key.hex(), "--sensor", "hrm", "--sensor", "power", "--sensor", "speed-cadence",
                   "--sensor", "stride"])
    recorder = None
    db = os.path.join(WORK, "ant.sqlite")
    log = open(os.path.join(RESULTS, "record.log"), "w")
    try:
        wait_for_device()
        wait_for(kernel_driver, 20, "usb_serial_simple to claim the stick")
        result["kernel_driver_before"] = kernel_driver()
        step("stick plugged in, claimed by " + str(result["kernel_driver_before"]))

        listed = subprocess.run([BIN, "ant", "list", "--json"], capture_output=True, text=True, timeout=60)
        result["list"] = listed.stdout
        sticks = json.loads(listed.stdout)
        if listed.returncode != 0 or len(sticks) != 1 or sticks[0].get("error") or not sticks[0].get("firmware"):
            raise AssertionError(f"ant list: {listed.returncode} {listed.stdout} {listed.stderr}")
        wait_for(kernel_driver, 20, "the kernel driver given back after ant list")
        step("ant list")

        recorder = subprocess.Popen([BIN, "record", "--ant", "--ant-network-key", key.hex(), "--db", db, "--gap", "10m"],
                                    stdout=subprocess.PIPE, stderr=log, text=True)
        hr_rows = HEART_RATES
        device = f"ant:120:{HRM}"
        wait_for(lambda: len(stored(db, hr_rows, (device,))) >= 12, 120, "12 heart-rate samples stored")
        step("recording")

        # The strap pauses (its messages so far must all be stored), the stick is unplugged under
        # the recording while the other sensors go on, and plugged back; once the recorder has
        # taken the stick up again (power samples grow) the strap goes on.
        stick.control("stop hrm")
        heard = [m for m in stick.sent() if m.get("device") == "hrm" and m.get("rx")]
        try:
            wait_for(lambda: len(stored(db, hr_rows, (device,))) >= len(heard), 60, f"{len(heard)} heart-rate samples stored")
        except TimeoutError:
            result["stick_status"] = stick.control("status")
            raise
        power_rows = "SELECT count(power_w) FROM samples"
        stick.control("unplug")
        wait_for_device(present=False)
        time.sleep(2)
        stick.control("replug")
        wait_for_device()
        before = stored(db, power_rows)[0][0]
        wait_for(lambda: stored(db, power_rows)[0][0] >= before + 8, 120, "power samples after the replug")
        stick.control("start hrm")
        count = len(stored(db, hr_rows, (device,)))
        wait_for(lambda: len(stored(db, hr_rows, (device,))) >= count + 8, 120, "8 more heart-rate samples after the replug")
        step("unplugged and plugged back")

        stick.control("stop hrm")
        heard = [m for m in stick.sent() if m.get("device") == "hrm" and m.get("rx")]
        try:
            wait_for(lambda: len(stored(db, hr_rows, (device,))) >= len(heard), 60, f"{len(heard)} heart-rate samples stored")
        except TimeoutError:
            result["stick_status"] = stick.control("status")
            result["stored_bpm"] = [r[0] for r in stored(db, hr_rows, (device,))]
            result["heard"] = [(m["seq"], m["rx"], m["fields"]["bpm"]) for m in heard]
            raise
        time.sleep(1)
        recorder.send_signal(signal.SIGINT)
        out, _ = recorder.communicate(timeout=60)
        result["record_exit"] = recorder.returncode
        result["record"] = out
        recorder = None
        step("recording stopped")

        check_heart_rates_stored(stick, db, device, result)
        workouts = stored(db, "SELECT source_device, sport, count(*) FROM workouts GROUP BY source_device, sport")
        result["workouts"] = workouts
        devices = {w[0] for w in workouts}
        if len(devices) != 4 or any(w[2] != 1 for w in workouts):
            raise AssertionError(f"one workout per sensor expected: {workouts}")
        values = stored(db, "SELECT count(power_w), count(cadence), count(speed_mps) FROM samples")[0]
        result["values"] = values
        if min(values) == 0:
            raise AssertionError(f"power, cadence and speed expected: {values}")
        log.flush()
        text = open(os.path.join(RESULTS, "record.log")).read()
        if "detached the kernel driver usb_serial_simple" not in text:
            raise AssertionError("the recorder did not say it detached usb_serial_simple")
        step("stored values equal the sent log")
        return 0
    finally:
        finish(result, recorder=recorder, db=db, stick=stick, udevd=udevd)

if __name__ == "__main__":
    sys.exit(main())
