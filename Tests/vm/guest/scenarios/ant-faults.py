"""HealthGate's ANT driver against a misbehaving emulated ANT USB2 stick on the guest's real USB
stack (dummy_hcd, FunctionFS, udevd; Tests/peers/ant_stick.py faults):

1. A stick that answers no reset: `healthgate ant list --json` names it, with the reason, and
   exits 0 (the other sticks would still be listed); the kernel driver is given back. A stick
   another program holds (pyusb claims its interface): the error names that program and its pid.
2. `healthgate record --ant` with a heart-rate strap and a power meter. The stick's IN endpoint
   stalls under the recording (fault stall): the recorder clears the halt, says so, and loses
   nothing: the strap pauses and the database holds every heart rate the stick heard, value for
   value, with the RR intervals the ANT+ rule gives.
3. The stick hangs (fault hang: it sends nothing and hears nothing): the recorder notices the
   silence, asks the stick for a channel's status, gets no answer, says it resets the stick,
   resets it on the USB bus (the emulator counts the bus reset and starts again) and records on,
   in the same process, without being restarted.
4. SIGINT: exit 0, one workout per sensor.
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
# Another program holding the stick: claims its interface 0 (pyusb), says so, waits for stdin's end.
HOLD = """
import sys
import usb.core
import usb.util
dev = usb.core.find(idVendor=0x0FCF, idProduct=0x1008)
if dev.is_kernel_driver_active(0):
    dev.detach_kernel_driver(0)
usb.util.claim_interface(dev, 0)
print("held", flush=True)
sys.stdin.read()
"""
DEVICE = "ant:120:120001"  # the emulator's first strap
POWER_ROWS = "SELECT count(power_w) FROM samples"


def main() -> int:
    result: dict = {}
    key = random_key()
    load_dummy_hcd()
    udevd = start_udevd()
    stick = Stick(["--ant-plus-key", key.hex(), "--sensor", "hrm", "--sensor", "power"])
    recorder = None
    db = os.path.join(WORK, "ant-faults.sqlite")
    log_path = os.path.join(RESULTS, "record.log")
    log = open(log_path, "w")

    def said(text: str) -> bool:
        log.flush()
        return text in open(log_path).read()

    try:
        wait_for_device()
        wait_for(kernel_driver, 20, "usb_serial_simple to claim the stick")

        # 1. No answer to any reset.
        stick.control("fault no-startup 1000")
        listed = subprocess.run([BIN, "ant", "list", "--json"], capture_output=True, text=True, timeout=120)
        result["list"] = {"exit": listed.returncode, "stdout": listed.stdout, "stderr": listed.stderr[-2000:]}
        sticks = json.loads(listed.stdout) if listed.returncode == 0 else []
        error = sticks[0].get("error") if len(sticks) == 1 else None
        if listed.returncode != 0 or not error or "no startup message" not in error:
            raise AssertionError(f"ant list did not name the stick that answers no reset: {result['list']}")
        stick.control("fault clear")
        wait_for(kernel_driver, 20, "the kernel driver given back after ant list")
        step(f"a stick that answers no reset: ant list says {error!r}")

        # Another program holds the stick (pyusb claims its interface): named, with its pid.
        holder = subprocess.Popen([sys.executable, "-c", HOLD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            if holder.stdout.readline().strip() != "held":
                raise AssertionError("the holder could not claim the stick")
            listed = subprocess.run([BIN, "ant", "list", "--json"], capture_output=True, text=True, timeout=120)
            sticks = json.loads(listed.stdout) if listed.returncode == 0 else []
            error = sticks[0].get("error") if len(sticks) == 1 else None
            result["held"] = {"exit": listed.returncode, "stdout": listed.stdout, "holder": holder.pid}
            if not error or f"another program holds it: python3 (pid {holder.pid})" not in error:
                raise AssertionError(f"ant list did not name the program holding the stick: {result['held']}")
        finally:
            holder.stdin.close()
            holder.wait(30)
        step(f"a stick another program holds: ant list says {error!r}")

        # 2. A stalled IN endpoint under the recording.
        recorder = subprocess.Popen([BIN, "record", "--ant", "--ant-network-key", key.hex(), "--db", db, "--gap", "10m"],
                                    stdout=subprocess.PIPE, stderr=log, text=True)
        wait_for(lambda: len(stored(db, HEART_RATES, (DEVICE,))) >= 8, 120, "8 heart-rate samples stored")
        stick.control("fault stall")
        wait_for(lambda: said("stalled; its halt was cleared"), 60, "the recorder to clear the stall")
        count = len(stored(db, HEART_RATES, (DEVICE,)))
        wait_for(lambda: len(stored(db, HEART_RATES, (DEVICE,))) >= count + 8, 120, "8 more heart-rate samples after the stall")
        stick.control("stop hrm")
        time.sleep(1.5)
        heard = len([m for m in stick.sent() if m.get("device") == "hrm" and m.get("rx")])
        wait_for(lambda: len(stored(db, HEART_RATES, (DEVICE,))) >= heard, 60, f"{heard} heart-rate samples stored")
        bpm, rr = check_heart_rates_stored(stick, db, DEVICE, result)
        result["stall"] = stick.control("status")["edge"].get("stalls")
        step(f"stall cleared: {len(bpm)} heart rates and {len(rr)} RR intervals stored == heard")

        # 3. The stick hangs: silence, no answer to a status request, a bus reset, recording on.
        stick.control("start hrm")
        resets_before = stick.control("status")["stick"]["stats"]["bus_resets"]
        stick.control("fault hang")
        wait_for(lambda: said("resetting the stick"), 90, "the recorder to reset the silent stick")
        wait_for(lambda: stick.control("status")["stick"]["stats"]["bus_resets"] > resets_before, 60,
                 "the emulator to see the bus reset")
        power = stored(db, POWER_ROWS)[0][0]
        count = len(stored(db, HEART_RATES, (DEVICE,)))
        wait_for(lambda: len(stored(db, HEART_RATES, (DEVICE,))) >= count + 8, 120, "8 heart-rate samples after the reset")
        wait_for(lambda: stored(db, POWER_ROWS)[0][0] >= power + 8, 60, "8 power samples after the reset")
        if recorder.poll() is not None:
            raise AssertionError(f"the recorder ended ({recorder.returncode}) instead of resetting the stick")
        status = stick.control("status")["stick"]
        result["hang"] = {"stats": status["stats"], "faults": status["faults"]}
        line = next((x for x in open(log_path).read().splitlines() if "resetting the stick" in x), "")
        result["reset_line"] = line
        step(f"a hung stick reset on the bus and recorded on: {line[:160]}")

        # 4. The end.
        recorder.send_signal(signal.SIGINT)
        out, _ = recorder.communicate(timeout=60)
        result["record_exit"] = recorder.returncode
        result["record"] = out
        recorder = None
        if result["record_exit"] != 0:
            raise AssertionError(f"record exited {result['record_exit']}")
        workouts = stored(db, "SELECT source_device, count(*) FROM workouts GROUP BY source_device")
        result["workouts"] = workouts
        if len(workouts) != 2 or any(w[1] != 1 for w in workouts):
            raise AssertionError(f"one workout per sensor expected: {workouts}")
        step("recording stopped: one workout per sensor")
        return 0
    finally:
        finish(result, recorder=recorder, db=db, stick=stick, udevd=udevd)

if __name__ == "__main__":
    sys.exit(main())
