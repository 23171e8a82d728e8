"""HealthGate's BlueZ backend against the guest's real bluetoothd: the peer's heart-rate
peripheral on /dev/vhci, `healthgate ble scan --hci bluez --json` finds it, and `healthgate record
--hci bluez` records it into a SQLite file on the guest's disk, through a link loss (the
peripheral disconnects and stops advertising, then comes back: the recorder reconnects into the
same workout); the stored heart-rate samples and RR intervals equal the peer's sent log exactly
(values and order), and the battery level read on connecting is stored. A thermometer, which indicates, is recorded at the same time (through
StartNotify and PropertiesChanged, where the heart rate goes through AcquireNotify sockets): its
stored temperatures equal its sent log too. Last, `healthgate ble watch --hci bluez` prints the
heart rate as the peer sends it.

Exact comparison: once enough samples are stored the peer is paused (`pause hr`: no new samples,
the link and the subscription stay), the scenario waits until the database holds as many samples
as the peer logged, and only then stops the recording with SIGINT (Ctrl-C: the recorder stores
what it holds and ends the workout).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import dbus

from vmpeer import (ble_scan, power_on, HR_ADDRESS, RESULTS, SAMPLES, WORK, Peer, step, stored, timings, check_heart_rates_stored,
                    wait_for)

BIN = os.environ["HG_BIN"]
MIN_THERMO = 4  # thermometer readings stored before the end
MIN_SAMPLES = 12  # samples stored before the peer is paused
BATTERY_PERCENT = 87  # what the peer's heart-rate sensor reports
TEMPERATURES = "SELECT value FROM measurements WHERE kind = 'temperature' ORDER BY time"


def main() -> int:
    result: dict = {}
    peer = Peer(["hr", "thermometer"], rate=4)
    result["peer"] = peer.info
    step("peer ready")
    bluetoothd_log = open(os.path.join(RESULTS, "bluetoothd.log"), "w")
    bluetoothd = subprocess.Popen(["/usr/libexec/bluetooth/bluetoothd", "-n", "-d"],
                                  stdout=bluetoothd_log, stderr=subprocess.STDOUT)
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

        # --hci auto picks BlueZ, since bluetoothd runs.
        devices, output = ble_scan(BIN, "auto", HR_ADDRESS, window="4s")
        if not any(d["address"].split(" ")[0] == HR_ADDRESS for d in devices):
            raise AssertionError(f"ble scan --hci auto did not list {HR_ADDRESS}: {output}")
        step("ble scan --hci auto: through BlueZ too")

        # record: until MIN_SAMPLES are stored, then pause the peer and stop when all are in.
        record_log_path = os.path.join(RESULTS, "record.log")
        record_log = open(record_log_path, "w")

        def read_log() -> str:
            with open(record_log_path, encoding="utf-8", errors="replace") as f:
                return f.read()
        t0 = time.monotonic()
        recorder = subprocess.Popen([BIN, "record", "--hci", "bluez", "--db", db, "--device", "auto", "--device", "service:1809",
                                     "--for", "300s"],
                                    stdout=record_log, stderr=subprocess.STDOUT)
        wait_for(lambda: len(stored(db, SAMPLES, (HR_ADDRESS,))) >= 1, 60, "the first stored sample")
        result["first_sample_s"] = round(time.monotonic() - t0, 2)
        step("first sample stored")
        wait_for(lambda: len(stored(db, SAMPLES, (HR_ADDRESS,))) >= MIN_SAMPLES, 60, f"{MIN_SAMPLES} stored samples")
        sent_count = peer.control("pause hr")["sent"]
        wait_for(lambda: len(stored(db, SAMPLES, (HR_ADDRESS,))) >= sent_count, 30,
                 f"all {sent_count} samples the peer sent to be stored")
        step(f"{sent_count} samples stored; the peripheral drops the link and stops advertising")

        # Link loss: the peer disconnects (nothing in flight: it is paused) and comes back; the
        # recorder sees the link end and its session reconnects through bluetoothd.
        peer.control("stop hr")
        wait_for(lambda: "disconnected" in read_log(), 30, "the recorder to see the link down")
        t0 = time.monotonic()
        peer.control("start hr")
        peer.control("resume hr")
        wait_for(lambda: "reconnected (connection 2)" in read_log(), 90, "the recorder to reconnect")
        result["reconnect_s"] = round(time.monotonic() - t0, 2)
        step("reconnected")
        wait_for(lambda: len(stored(db, SAMPLES, (HR_ADDRESS,))) >= sent_count + MIN_SAMPLES, 60,
                 f"{MIN_SAMPLES} more stored samples")
        sent_count = peer.control("pause hr")["sent"]
        wait_for(lambda: len(stored(db, SAMPLES, (HR_ADDRESS,))) >= sent_count, 30,
                 f"all {sent_count} samples the peer sent to be stored")
        # The thermometer indicates (StartNotify and PropertiesChanged Value, not AcquireNotify).
        wait_for(lambda: len(stored(db, TEMPERATURES)) >= MIN_THERMO, 60, f"{MIN_THERMO} stored temperatures")
        thermo_count = peer.control("pause thermometer")["sent"]
        wait_for(lambda: len(stored(db, TEMPERATURES)) >= thermo_count, 30,
                 f"all {thermo_count} temperatures the peer sent to be stored")
        step(f"{sent_count} samples and {thermo_count} temperatures stored, stopping the recording")
        recorder.send_signal(signal.SIGINT)
        rc = recorder.wait(60)
        result["record_exit"] = rc
        step(f"record exited {rc}")
        if rc != 0:
            raise AssertionError(f"healthgate record exited {rc} (see record.log)")

        bpm_sent, rr_sent = check_heart_rates_stored(peer, db, result)
        step(f"stored == sent log: {len(bpm_sent)} heart rates, {len(rr_sent)} RR intervals")

        thermo_sent = sorted(r["fields"]["temperature_c"] for r in peer.sent()
                             if r["peripheral"] == "thermometer" and r.get("malformed") is None)
        thermo_stored = sorted(row[0] for row in stored(db, TEMPERATURES))
        result.update(thermo_sent=len(thermo_sent), thermo_stored=len(thermo_stored))
        if len(thermo_stored) != len(thermo_sent) or any(abs(a - b) > 1e-6 for a, b in zip(thermo_stored, thermo_sent)):
            raise AssertionError(f"stored temperatures != sent log:\n{thermo_stored}\n{thermo_sent}")
        step(f"stored == sent log: {len(thermo_sent)} indicated temperatures")

        workouts = stored(db, "SELECT in_progress, source_driver FROM workouts WHERE source_device = ?", (HR_ADDRESS,))
        if workouts != [(0, "ble")]:
            raise AssertionError(f"expected one completed ble workout, found {workouts}")
        battery = stored(db, "SELECT value FROM measurements WHERE kind = 'battery_level' AND source_device = ?", (HR_ADDRESS,))
        result["battery"] = battery
        if not battery or battery[0][0] != BATTERY_PERCENT:
            raise AssertionError(f"expected a stored battery level of {BATTERY_PERCENT} %, found {battery}")
        step("one completed workout, battery level stored")

        # ble watch: the heart rate printed as it arrives; every printed value is one the peer
        # sent, in the order it sent them (a contiguous run of its log).
        before = len([r for r in peer.sent() if r["peripheral"] == "hr"])
        peer.control("resume hr")
        watch = subprocess.run([BIN, "ble", "watch", "--hci", "bluez", HR_ADDRESS, "--for", "8s", "--json"],
                               capture_output=True, text=True, timeout=90)
        with open(os.path.join(RESULTS, "watch.jsonl"), "w") as f:
            f.write(watch.stdout + watch.stderr)
        if watch.returncode != 0:
            raise AssertionError(f"ble watch exited {watch.returncode}: {watch.stderr}")
        lines = [json.loads(line) for line in watch.stdout.splitlines() if line.strip()]
        printed = [line["hex"] for line in lines if line["characteristic"] == "2A37"]
        sent_hex = [r["hex"] for r in peer.sent() if r["peripheral"] == "hr"][before:]
        start = sent_hex.index(printed[0]) if printed and printed[0] in sent_hex else -1
        if len(printed) < 3 or start < 0 or sent_hex[start:start + len(printed)] != printed:
            raise AssertionError(f"ble watch printed {printed}, the peer sent {sent_hex}")
        result["watch_lines"] = len(printed)
        step(f"ble watch: {len(printed)} heart-rate lines, each as the peer sent it, in order")
        return 0
    finally:
        result["timings"] = timings
        if recorder is not None and recorder.poll() is None:
            recorder.kill()
            recorder.wait()
        with open(os.path.join(RESULTS, "result.json"), "w") as f:
            json.dump(result, f, indent=1)
        peer.close()
        bluetoothd.terminate()
        try:
            bluetoothd.wait(10)
        except subprocess.TimeoutExpired:
            bluetoothd.kill()
        subprocess.run(["cp", peer.sent_log, RESULTS], check=False)
        for suffix in ("", "-wal", "-shm"):
            subprocess.run(["cp", db + suffix, RESULTS], check=False, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    sys.exit(main())
