"""HealthGate's BlueZ backend when bluetoothd restarts mid-session: `healthgate record --hci bluez`
records the peer's heart-rate sensor; bluetoothd is stopped (the peer paused, nothing in flight)
and started again; the recorder sees the link end and reconnects through the new bluetoothd into
the same workout; the stored heart rates and RR intervals equal the peer's sent log exactly."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import dbus

from vmpeer import (ble_scan, power_on, HR_ADDRESS, RESULTS, SAMPLES, WORK, Peer, adapter_powered, step, stored, timings, check_heart_rates_stored,
                    wait_for)

BIN = os.environ["HG_BIN"]
MIN_SAMPLES = 12  # samples stored before the peer is paused
BATTERY_PERCENT = 87  # what the peer's heart-rate sensor reports


def main() -> int:
    result: dict = {}
    peer = Peer(["hr"], rate=4)
    result["peer"] = peer.info
    step("peer ready")
    bluetoothd_log = open(os.path.join(RESULTS, "bluetoothd.log"), "w")
    bluetoothd = subprocess.Popen(["/usr/libexec/bluetooth/bluetoothd", "-n", "-d"],
                                  stdout=bluetoothd_log, stderr=subprocess.STDOUT)
    nonlocal_bt = [bluetoothd]
    recorder = None
    db = os.path.join(WORK, "healthgate.sqlite")
    try:
        bus = dbus.SystemBus()
        adapter_path = f"/org/bluez/hci{peer.info['h4']['index']}"
        power_on(bus, adapter_path, 20)
        step("adapter powered")

        # ble scan: the device is found, with its heart-rate service.
        t0 = time.monotonic()
        devices, output = ble_scan(BIN, "bluez", HR_ADDRESS)
        result["scan_s"] = round(time.monotonic() - t0, 2)
        with open(os.path.join(RESULTS, "scan.json"), "w") as f:
            f.write(output)
        result["scan"] = devices
        found = [d for d in devices if d["address"].split(" ")[0] == HR_ADDRESS]
        if not found or "180D" not in found[0]["services"]:
            raise AssertionError(f"ble scan did not list {HR_ADDRESS} with service 180D: {devices}")
        step(f"ble scan: {len(devices)} device(s), {HR_ADDRESS} with {found[0]['services']}")

        # record: until MIN_SAMPLES are stored, then pause the peer and stop when all are in.
        record_log_path = os.path.join(RESULTS, "record.log")
        record_log = open(record_log_path, "w")

        def read_log() -> str:
            with open(record_log_path, encoding="utf-8", errors="replace") as f:
                return f.read()
        t0 = time.monotonic()
        recorder = subprocess.Popen([BIN, "record", "--hci", "bluez", "--db", db, "--device", "auto",
                                     "--for", "300s"],
                                    stdout=record_log, stderr=subprocess.STDOUT)
        wait_for(lambda: len(stored(db, SAMPLES, (HR_ADDRESS,))) >= 1, 60, "the first stored sample")
        result["first_sample_s"] = round(time.monotonic() - t0, 2)
        step("first sample stored")
        wait_for(lambda: len(stored(db, SAMPLES, (HR_ADDRESS,))) >= MIN_SAMPLES, 60, f"{MIN_SAMPLES} stored samples")
        sent_count = peer.control("pause hr")["sent"]
        wait_for(lambda: len(stored(db, SAMPLES, (HR_ADDRESS,))) >= sent_count, 30,
                 f"all {sent_count} samples the peer sent to be stored")
        step(f"{sent_count} samples stored; bluetoothd is stopped")

        # bluetoothd restarts mid-session: its objects vanish with its bus name, the recorder's
        # links end, and once the new bluetoothd owns org.bluez and powered the adapter the
        # session reconnects through it.
        nonlocal_bt[0].terminate()
        nonlocal_bt[0].wait(15)
        wait_for(lambda: "disconnected" in read_log(), 30, "the recorder to see the link down")
        step("bluetoothd stopped; the recorder saw the link down")
        t0 = time.monotonic()
        nonlocal_bt[0] = subprocess.Popen(["/usr/libexec/bluetooth/bluetoothd", "-n", "-d"],
                                          stdout=bluetoothd_log, stderr=subprocess.STDOUT)
        wait_for(lambda: adapter_powered(bus, adapter_path), 30, "the new bluetoothd to power the adapter")
        peer.control("resume hr")
        wait_for(lambda: "reconnected (connection 2)" in read_log(), 90, "the recorder to reconnect")
        result["reconnect_s"] = round(time.monotonic() - t0, 2)
        step("reconnected through the new bluetoothd")
        wait_for(lambda: len(stored(db, SAMPLES, (HR_ADDRESS,))) >= sent_count + MIN_SAMPLES, 60,
                 f"{MIN_SAMPLES} more stored samples")
        sent_count = peer.control("pause hr")["sent"]
        wait_for(lambda: len(stored(db, SAMPLES, (HR_ADDRESS,))) >= sent_count, 30,
                 f"all {sent_count} samples the peer sent to be stored")
        step(f"{sent_count} samples stored, stopping the recording")
        recorder.send_signal(signal.SIGINT)
        rc = recorder.wait(60)
        result["record_exit"] = rc
        step(f"record exited {rc}")
        if rc != 0:
            raise AssertionError(f"healthgate record exited {rc} (see record.log)")

        bpm_sent, rr_sent = check_heart_rates_stored(peer, db, result)
        step(f"stored == sent log: {len(bpm_sent)} heart rates, {len(rr_sent)} RR intervals")

        workouts = stored(db, "SELECT in_progress, source_driver FROM workouts WHERE source_device = ?", (HR_ADDRESS,))
        if workouts != [(0, "ble")]:
            raise AssertionError(f"expected one completed ble workout, found {workouts}")
        battery = stored(db, "SELECT value FROM measurements WHERE kind = 'battery_level' AND source_device = ?", (HR_ADDRESS,))
        result["battery"] = battery
        if not battery or battery[0][0] != BATTERY_PERCENT:
            raise AssertionError(f"expected a stored battery level of {BATTERY_PERCENT} %, found {battery}")
        step("one completed workout, battery level stored")

        return 0
    finally:
        result["timings"] = timings
        if recorder is not None and recorder.poll() is None:
            recorder.kill()
            recorder.wait()
        with open(os.path.join(RESULTS, "result.json"), "w") as f:
            json.dump(result, f, indent=1)
        peer.close()
        nonlocal_bt[0].terminate()
        try:
            nonlocal_bt[0].wait(10)
        except subprocess.TimeoutExpired:
            nonlocal_bt[0].kill()
        subprocess.run(["cp", peer.sent_log, RESULTS], check=False)
        for suffix in ("", "-wal", "-shm"):
            subprocess.run(["cp", db + suffix, RESULTS], check=False, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    sys.exit(main())
