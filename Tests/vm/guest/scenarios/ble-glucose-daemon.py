"""The daemon downloads a glucose meter's stored records by itself, through the guest's real
bluetoothd: the peer's meter requires bonding (Just Works, paired with `healthgate ble pair` as in
ble-glucose-racp) and holds 5 records; `healthgate daemon` runs a `ble` driver on the BlueZ
backend for the meter's address.

The daemon connects and stores every record (values and sequence numbers equal the peer's sent
log; the meter's last sequence number in its ble checkpoint); it is stopped, the meter adds 2 records,
the daemon is started again: it asks the meter only for the records from the last one stored
on (the meter's RACP requests; that one again, to check the meter was not reset), and exactly
the 2 new rows are stored, none twice (every record was sent once, the last stored one twice).
Then the meter is reset and fills past the stored sequence number (9 new records) while the
daemon is stopped: the third run finds record 7 changed, asks for every record, and stores the
9 new ones (1 to 6 included) with sequence number 9; its log says why.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

from vmpeer import RESULTS, WORK, Daemon, Peer, bond, forget_bonds, start_bluetoothd, step, stop, stored, timings, wait_for

BIN = os.environ["HG_BIN"]
METER = "C0:4E:47:00:00:0A"
RECORDS = 5
DB = os.path.join(WORK, "daemon.sqlite")
CONFIG = os.path.join(WORK, "healthgate.toml")
ROWS = ("SELECT value, json_extract(extra, '$.sequence') FROM measurements "
        "WHERE kind = 'glucose' AND source_device = ? ORDER BY json_extract(extra, '$.sequence')")
SYNC = ("SELECT json_extract(value, '$.sequence') FROM driver_checkpoints "
        "WHERE driver = 'ble' AND device = ?")

CONFIG_TEXT = f"""# written by the ble-glucose-daemon VM scenario
database = "{DB}"
log_level = "info"

[api]
socket = "{WORK}/healthgate.sock"

[drivers.meter]
type = "ble"
hci = "bluez"
devices = ["{METER}"]
"""


def sent_sequences(peer: Peer) -> list[int]:
    """The sequence numbers of the records the meter sent, in order (a record sent twice shows twice)."""
    return [r["seq"] for r in peer.sent() if r["peripheral"] == "glucose" and r["characteristic"] == "2A18"]


def rows_equal_sent_log(peer: Peer, count: int) -> None:
    rows = [(round(v, 6), int(s)) for v, s in stored(DB, ROWS, (METER,))]
    sent = {r["seq"]: r["fields"] for r in peer.sent() if r["peripheral"] == "glucose" and r["characteristic"] == "2A18"}
    expected = [(round(sent[s]["mmol_l"], 6), s) for s in sorted(sent)]
    if len(rows) != count or rows != expected:
        raise AssertionError(f"stored glucose rows != the meter's sent log ({count} expected):\n{rows}\n{expected}")


def racp_requests(peer: Peer) -> list[str]:
    return peer.control("status")["peripherals"]["glucose"]["racp_requests"]


def wait_rows(daemon: Daemon, count: int, what: str) -> None:
    def enough() -> bool:
        daemon.alive()
        return len(stored(DB, ROWS, (METER,))) >= count and stored(DB, SYNC, (METER,)) == [(count,)]
    wait_for(enough, 150, what, interval=0.5)


def main() -> int:
    result: dict = {}
    peer = Peer(["glucose"], rate=1, extra=["--pairing", "glucose=just-works", "--glucose-records", str(RECORDS)])
    result["peer"] = peer.info
    step("peer ready")
    bluetoothd = daemon = None
    adapter = None
    try:
        bluetoothd, _, adapter = start_bluetoothd(peer)
        step("adapter powered")
        bond(BIN, METER)
        step("meter bonded")
        with open(CONFIG, "w") as f:
            f.write(CONFIG_TEXT)

        daemon = Daemon(["--config", CONFIG], header="run 1: ")
        wait_rows(daemon, RECORDS, f"the daemon to store the meter's {RECORDS} records and sequence number {RECORDS}")
        step(f"daemon: all {RECORDS} records stored")
        status = daemon.stop()
        daemon = None
        result["first_exit"] = status
        if status != 0:
            raise AssertionError(f"the daemon exited {status} on SIGTERM")
        rows_equal_sent_log(peer, RECORDS)
        result["requests_first"] = racp_requests(peer)
        if result["requests_first"] != ["0101"]:
            raise AssertionError(f"first run: RACP requests {result['requests_first']}, not ['0101'] (every record)")
        step(f"daemon stopped (exit 0): rows == sent log, checkpoint sequence {RECORDS}")

        added = peer.control("add-records glucose 2")
        result["added"] = added.get("added")
        daemon = Daemon(["--config", CONFIG], header="run 2: ")
        wait_rows(daemon, RECORDS + 2, f"the restarted daemon to store the 2 new records and sequence number {RECORDS + 2}")
        step("restarted daemon: the 2 new records stored")
        status = daemon.stop()
        daemon = None
        result["second_exit"] = status
        if status != 0:
            raise AssertionError(f"the restarted daemon exited {status} on SIGTERM")
        rows_equal_sent_log(peer, RECORDS + 2)
        result["requests"] = racp_requests(peer)
        after = f"010301{RECORDS:02x}00"  # report stored records, >= RECORDS
        if result["requests"] != ["0101", after]:
            raise AssertionError(f"RACP requests {result['requests']}, not ['0101', '{after}'] (all, then from {RECORDS})")
        result["sent_sequences"] = sent_sequences(peer)
        expected = list(range(1, RECORDS + 1)) + list(range(RECORDS, RECORDS + 3))
        if result["sent_sequences"] != expected:
            raise AssertionError(f"the meter sent {result['sent_sequences']}, not {expected}")
        step(f"restart asked from sequence {RECORDS} (checked) on: exactly 2 new rows, each record stored once")

        refill = RECORDS + 4  # past the stored RECORDS + 2
        peer.control(f"reset-records glucose {refill}")
        daemon = Daemon(["--config", CONFIG], header="run 3: ")

        def refilled() -> bool:
            daemon.alive()
            return len(stored(DB, ROWS, (METER,))) >= RECORDS + 2 + refill and stored(DB, SYNC, (METER,)) == [(refill,)]
        wait_for(refilled, 150, f"the daemon to store the reset meter's {refill} records and sequence number {refill}", interval=0.5)
        status = daemon.stop()
        daemon = None
        result["third_exit"] = status
        if status != 0:
            raise AssertionError(f"the third daemon exited {status} on SIGTERM")
        rows = stored(DB, ROWS, (METER,))
        # Each record the meter sent, once (a record is its sequence number and time: the reset
        # meter's 1 to 7 are other records than the first meter's).
        records = {(r["seq"], r["fields"]["time"]): r["fields"]["mmol_l"] for r in peer.sent()
                   if r["peripheral"] == "glucose" and r["characteristic"] == "2A18"}
        got = sorted((int(s), round(v, 6)) for v, s in rows)
        expected = sorted((seq, round(v, 6)) for (seq, _), v in records.items())
        if got != expected:
            raise AssertionError(f"after the reset: stored rows != the meter's records:\n{got}\n{expected}")
        requests = racp_requests(peer)
        result["requests_after_reset"] = requests
        checked = f"010301{RECORDS + 2:02x}00"
        if requests[2:] != [checked, "0101"]:
            raise AssertionError(f"third run's RACP requests {requests[2:]}, not ['{checked}', '0101']")
        with open(os.path.join(RESULTS, "daemon.log")) as f:
            log = f.read()
        if f"record {RECORDS + 2} is not the one stored (reset): asking for every record" not in log:
            raise AssertionError("the daemon's log does not say why it asked for every record")
        step(f"meter reset and filled to {refill}: record {RECORDS + 2} changed, every record stored, sequence {refill}")
        return 0
    finally:
        result["timings"] = timings
        if daemon is not None:
            try:
                daemon.stop()
            except AssertionError as e:
                result["daemon_stop_error"] = str(e)
        forget_bonds(bluetoothd, adapter, [METER], result)
        with open(os.path.join(RESULTS, "result.json"), "w") as f:
            json.dump(result, f, indent=1)
        peer.close()
        stop(bluetoothd)
        subprocess.run(["cp", peer.sent_log, CONFIG, RESULTS], check=False)
        for suffix in ("", "-wal", "-shm"):
            subprocess.run(["cp", DB + suffix, RESULTS], check=False, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    sys.exit(main())
