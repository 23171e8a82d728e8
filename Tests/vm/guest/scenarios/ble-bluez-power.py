"""HealthGate's BlueZ backend when the adapter is powered off and on, and when the system bus
itself goes away. The peer's heart-rate sensor also advertises service data and manufacturer
data: `healthgate ble scan --hci bluez --json` prints them (from Device1's ServiceData and
ManufacturerData). `healthgate record --hci bluez` records; `bluetoothctl power off` ends the
link (the session's attempts then fail at once: the adapter is powered off), `power on` lets the
session reconnect into the same workout; the controller is unplugged (the peer closes /dev/vhci:
hci0 and its Adapter1 object go) and plugged back under another name (a new peer process comes
back as hci1: a placeholder holds hci0), the recorder follows the controller by its address and
the session reconnects again; the stored heart rates and RR intervals equal the peer's sent log.
Then the system dbus-daemon is killed: the recorder ends by itself with an error
naming the lost bus connection (the daemon's supervisor would start it again), after storing
what it had and completing the workout. The scenario starts the system bus again at the end."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import dbus

from vmpeer import (ble_scan, HR_ADDRESS, RESULTS, SAMPLES, WORK, Peer, adapter_powered, step, stored, timings, wait_for, check_heart_rates_stored)

BIN = os.environ["HG_BIN"]
MIN_SAMPLES = 12  # samples stored before each interruption
SERVICE_DATA = {"uuid": "181C", "data": "0102"}
MANUFACTURER_DATA = {"company": "0059", "data": "cafe"}


def bluetoothctl(*words: str) -> str:
    r = subprocess.run(["bluetoothctl", *words], capture_output=True, text=True, timeout=30)
    return r.stdout + r.stderr


def main() -> int:
    result: dict = {}
    peer = Peer(["hr"], rate=4, extra=("--service-data", "hr=181C:0102", "--manufacturer-data", "hr=0059:cafe"))
    result["peer"] = peer.info
    step("peer ready")
    bluetoothd_log = open(os.path.join(RESULTS, "bluetoothd.log"), "w")
    bluetoothd = subprocess.Popen(["/usr/libexec/bluetooth/bluetoothd", "-n", "-d"],
                                  stdout=bluetoothd_log, stderr=subprocess.STDOUT)
    recorder = None
    bus_killed = False
    db = os.path.join(WORK, "power.sqlite")
    try:
        bus = dbus.SystemBus()
        adapter_path = f"/org/bluez/hci{peer.info['h4']['index']}"
        wait_for(lambda: bus.name_has_owner("org.bluez"), 20, "bluetoothd on the bus")
        if not adapter_powered(bus, adapter_path):
            bluetoothctl("power", "on")
        wait_for(lambda: adapter_powered(bus, adapter_path), 20, f"{adapter_path} powered")
        step("adapter powered")

        # ble scan: service data and manufacturer data as the peer advertises them.
        devices, output = ble_scan(BIN, "bluez", HR_ADDRESS)
        with open(os.path.join(RESULTS, "scan.json"), "w") as f:
            f.write(output)
        found = [d for d in devices if d["address"].split(" ")[0] == HR_ADDRESS]
        result["scan"] = found
        if not found:
            raise AssertionError(f"ble scan did not list {HR_ADDRESS}: {devices}")
        hr = found[0]
        if hr.get("service_data") != [SERVICE_DATA] or hr.get("manufacturer_data") != [MANUFACTURER_DATA]:
            raise AssertionError(f"ble scan: expected service data {SERVICE_DATA} and manufacturer data "
                                 f"{MANUFACTURER_DATA}, got {hr}")
        step(f"ble scan: service_data {hr['service_data']}, manufacturer_data {hr['manufacturer_data']}, "
             f"flags {hr.get('flags')}, tx_power {hr.get('tx_power')}")

        record_log_path = os.path.join(RESULTS, "record.log")
        record_log = open(record_log_path, "w")

        def read_log() -> str:
            with open(record_log_path, encoding="utf-8", errors="replace") as f:
                return f.read()

        def count() -> int:
            return len(stored(db, SAMPLES, (HR_ADDRESS,)))

        recorder = subprocess.Popen([BIN, "record", "--hci", "bluez", "--db", db, "--device", "auto", "--for", "400s"],
                                    stdout=record_log, stderr=subprocess.STDOUT)
        wait_for(lambda: count() >= MIN_SAMPLES, 90, f"{MIN_SAMPLES} stored samples")
        sent_count = peer.control("pause hr")["sent"]
        wait_for(lambda: count() >= sent_count, 30, f"all {sent_count} samples the peer sent to be stored")
        step(f"{sent_count} samples stored; powering the adapter off")

        # Power off: the link ends; attempts fail at once while the adapter is off.
        result["power_off"] = bluetoothctl("power", "off")
        wait_for(lambda: not adapter_powered(bus, adapter_path), 20, "the adapter powered off")
        wait_for(lambda: "disconnected" in read_log(), 30, "the recorder to see the link down")
        wait_for(lambda: "is powered off" in read_log(), 60, "a reconnect attempt refused: the adapter is powered off")
        step("powered off: link down, attempts refused while off")
        t0 = time.monotonic()
        result["power_on"] = bluetoothctl("power", "on")
        wait_for(lambda: adapter_powered(bus, adapter_path), 20, "the adapter powered on")
        peer.control("resume hr")
        wait_for(lambda: "reconnected (connection 2)" in read_log(), 120, "the recorder to reconnect")
        result["reconnect_s"] = round(time.monotonic() - t0, 2)
        step("powered on: reconnected")
        wait_for(lambda: count() >= sent_count + MIN_SAMPLES, 60, f"{MIN_SAMPLES} more stored samples")
        sent_count = peer.control("pause hr")["sent"]
        wait_for(lambda: count() >= sent_count, 30, f"all {sent_count} samples the peer sent to be stored")
        stored_before = count()
        step(f"{sent_count} samples stored; unplugging the controller")

        # The controller unplugged and plugged back under another name: the peer closes
        # /dev/vhci (hci0 and its Adapter1 object go away); a placeholder controller (/dev/vhci
        # opened, nothing answering it) takes the freed index, so the new peer process (the same
        # controller address, the same peripherals, its values in the same sent log) comes back
        # as hci1, as a USB dongle replugged while its old index is still held often does.
        drops = read_log().count("disconnected")
        peer.close()
        wait_for(lambda: read_log().count("disconnected") > drops, 30, "the recorder to see the link down")
        wait_for(lambda: adapter_path not in [str(p) for p in dbus.Interface(
            bus.get_object("org.bluez", "/"), "org.freedesktop.DBus.ObjectManager").GetManagedObjects()], 30,
            f"{adapter_path} removed")
        step("controller unplugged: link down, adapter gone")
        old_name = adapter_path.rsplit("/", 1)[1]
        placeholder = os.open("/dev/vhci", os.O_RDWR)
        try:
            wait_for(lambda: os.path.exists(f"/sys/class/bluetooth/{old_name}"), 30, f"a placeholder controller as {old_name}")
            peer = Peer(["hr"], rate=4, extra=("--service-data", "hr=181C:0102", "--manufacturer-data", "hr=0059:cafe"))
        finally:
            os.close(placeholder)
        new_path = f"/org/bluez/hci{peer.info['h4']['index']}"
        if new_path == adapter_path:
            raise AssertionError(f"the controller came back as {new_path} again; the scenario needs another index")
        step(f"controller plugged back as {new_path}")
        adapter_path = new_path
        result["replugged_as"] = new_path
        wait_for(lambda: adapter_path in [str(p) for p in dbus.Interface(
            bus.get_object("org.bluez", "/"), "org.freedesktop.DBus.ObjectManager").GetManagedObjects()], 30,
            f"{adapter_path} back")
        if not adapter_powered(bus, adapter_path):
            bluetoothctl("power", "on")
        wait_for(lambda: adapter_powered(bus, adapter_path), 30, f"{adapter_path} powered again")
        wait_for(lambda: f"BlueZ adapter {old_name} is back as {new_path.rsplit('/', 1)[1]}" in read_log(), 30,
                 "the recorder to follow the controller to its new name")
        wait_for(lambda: "reconnected (connection 3)" in read_log(), 120, "the recorder to reconnect to the new controller")
        step("controller plugged back: reconnected")
        wait_for(lambda: count() >= stored_before + MIN_SAMPLES, 60, f"{MIN_SAMPLES} more stored samples")
        sent_now = peer.control("pause hr")["sent"]
        wait_for(lambda: count() >= stored_before + sent_now, 30, "all samples the new peer sent to be stored")
        step(f"{count()} samples stored; killing the system bus")

        # The system bus goes away: the recorder must end by itself, with a clear error.
        pids = subprocess.run(["pidof", "dbus-daemon"], capture_output=True, text=True).stdout.split()
        for pid in pids:
            os.kill(int(pid), signal.SIGKILL)
        bus_killed = True
        t0 = time.monotonic()
        rc = recorder.wait(120)
        result["bus_loss_exit_s"] = round(time.monotonic() - t0, 2)
        result["record_exit"] = rc
        log = read_log()
        step(f"record exited {rc} by itself after the bus went away")
        if rc == 0 or "the connection to the system bus was lost" not in log:
            raise AssertionError(f"expected record to fail naming the lost bus connection, exit {rc}: {log[-2000:]}")

        bpm_sent, rr_sent = check_heart_rates_stored(peer, db, result)
        workouts = stored(db, "SELECT in_progress FROM workouts WHERE source_device = ?", (HR_ADDRESS,))
        if workouts != [(0,)]:
            raise AssertionError(f"expected one completed workout, found {workouts}")
        step(f"stored == sent log: {len(bpm_sent)} heart rates, {len(rr_sent)} RR intervals; one completed workout")
        return 0
    finally:
        result["timings"] = timings
        if recorder is not None and recorder.poll() is None:
            recorder.kill()
            recorder.wait()
        with open(os.path.join(RESULTS, "result.json"), "w") as f:
            json.dump(result, f, indent=1)
        peer.close()
        if bluetoothd.poll() is None:
            bluetoothd.terminate()
            try:
                bluetoothd.wait(10)
            except subprocess.TimeoutExpired:
                bluetoothd.kill()
        if bus_killed:
            # What init-mode.sh started, for the scenarios after this one.
            subprocess.run(["rm", "-f", "/run/dbus/system_bus_socket"], check=False)
            subprocess.run(["dbus-daemon", "--system", "--fork", "--nopidfile"], check=False)
        subprocess.run(["cp", peer.sent_log, RESULTS], check=False)
        for suffix in ("", "-wal", "-shm"):
            subprocess.run(["cp", db + suffix, RESULTS], check=False, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    sys.exit(main())
