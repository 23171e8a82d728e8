"""A glucose meter's stored records through its Record Access Control Point, against the
guest's real bluetoothd: the peer's meter requires bonding (Just Works) and holds 5 records.

`healthgate ble pair` bonds; `healthgate ble download --hci bluez --json` stores every record
(values, times and sequence numbers equal the peer's sent log); a second download asks for the
records from the last one stored on (that one again, to check the meter was not reset) and
stores nothing; the meter adds 2 records and the next download stores exactly those 2; `--all`
gets every record again and stores nothing new; a meter that goes silent mid-transfer ends the
download with an error saying how many records arrived, and the whole ones that did are stored.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

from vmpeer import RESULTS, WORK, Peer, bond, forget_bonds, start_bluetoothd, step, stop, stored, timings

BIN = os.environ["HG_BIN"]
METER = "C0:4E:47:00:00:0A"
RECORDS = 5
ROWS = ("SELECT value, time, json_extract(extra, '$.sequence') FROM measurements "
        "WHERE kind = 'glucose' AND source_device = ? ORDER BY json_extract(extra, '$.sequence')")


def download(db: str, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    run = subprocess.run([BIN, "ble", "download", "--hci", "bluez", "--db", db, "--json", *args, METER],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=240)
    with open(os.path.join(RESULTS, "download.log"), "a") as f:
        f.write(f"$ healthgate ble download --hci bluez --db DB --json {' '.join(args)} {METER}\n"
                f"exit {run.returncode}\n{run.stdout}{run.stderr}\n")
    try:
        summary = json.loads(run.stdout)
    except json.JSONDecodeError:
        summary = {}
    return run, summary


def sent_records(peer: Peer) -> dict[int, dict]:
    """The records the meter sent (each sequence number once), from its sent log."""
    return {r["seq"]: r["fields"] for r in peer.sent() if r["peripheral"] == "glucose" and r["characteristic"] == "2A18"}


def check_rows(db: str, peer: Peer, count: int) -> list:
    rows = stored(db, ROWS, (METER,))
    sent = sent_records(peer)
    expected = [(sent[s]["mmol_l"], s) for s in sorted(sent)]
    got = [(round(v, 6), int(s)) for v, _, s in rows]
    if len(rows) != count or got != [(round(v, 6), s) for v, s in expected]:
        raise AssertionError(f"stored glucose rows != the meter's sent log ({count} expected):\n{got}\n{expected}")
    return rows


def main() -> int:
    result: dict = {}
    peer = Peer(["glucose"], rate=1, extra=["--pairing", "glucose=just-works", "--glucose-records", str(RECORDS)])
    result["peer"] = peer.info
    step("peer ready")
    bluetoothd = adapter = None
    db = os.path.join(WORK, "healthgate.sqlite")
    try:
        bluetoothd, _, adapter = start_bluetoothd(peer)
        step("adapter powered")
        bond(BIN, METER)
        step("meter bonded")

        run, summary = download(db)
        result["first"] = summary
        if run.returncode != 0 or summary.get("from") is not None or summary.get("meter_count") != RECORDS \
                or summary.get("received") != RECORDS or summary.get("stored") != RECORDS:
            raise AssertionError(f"first download: exit {run.returncode} {summary} {run.stderr}")
        if len(sent_records(peer)) != RECORDS:
            raise AssertionError(f"the meter logged {len(sent_records(peer))} records, not {RECORDS}")
        rows = check_rows(db, peer, RECORDS)
        times = [t for _, t, _ in rows]
        sent = sent_records(peer)
        if [t[:16] for t in times] != sorted(t[:16] for t in times) or len(set(times)) != RECORDS:
            raise AssertionError(f"stored times out of order or repeated: {times} (sent {[sent[s]['time'] for s in sorted(sent)]})")
        if f"records: {RECORDS}/{RECORDS}" not in run.stderr:
            raise AssertionError(f"no progress line 'records: {RECORDS}/{RECORDS}' on stderr: {run.stderr!r}")
        step(f"first download: all {RECORDS} records stored == sent log ({run.stderr.count('records:')} progress "
             f"lines, the last 'records: {RECORDS}/{RECORDS}')")

        run, summary = download(db)
        result["second"] = summary
        if run.returncode != 0 or summary.get("from") != RECORDS or summary.get("received") != 1 \
                or summary.get("stored") != 0 or summary.get("already_stored") != 1 or summary.get("meter_reset") \
                or summary.get("outcome") != "complete":
            raise AssertionError(f"second download: exit {run.returncode} {summary} {run.stderr}")
        check_rows(db, peer, RECORDS)
        step(f"second download: asked from {RECORDS} (the last one stored, the same again), nothing new stored")

        peer.control("add-records glucose 2")
        run, summary = download(db)
        result["third"] = summary
        if run.returncode != 0 or summary.get("received") != 3 or summary.get("stored") != 2 \
                or summary.get("last_sequence") != RECORDS + 2:
            raise AssertionError(f"after 2 new records: exit {run.returncode} {summary} {run.stderr}")
        check_rows(db, peer, RECORDS + 2)
        step("the meter added 2 records: exactly 2 new rows")

        run, summary = download(db, "--all")
        result["all_again"] = summary
        if run.returncode != 0 or summary.get("received") != RECORDS + 2 or summary.get("stored") != 0 \
                or summary.get("already_stored") != RECORDS + 2:
            raise AssertionError(f"--all again: exit {run.returncode} {summary} {run.stderr}")
        check_rows(db, peer, RECORDS + 2)
        step(f"--all: {RECORDS + 2} records sent again, none stored twice")

        peer.control("add-records glucose 3")
        peer.control("racp-stop-after glucose 2")  # the last one stored again, and one new
        run, summary = download(db, "--silence", "6s")
        result["silent"] = summary
        if run.returncode == 0 or summary.get("outcome") != "failed" or summary.get("received") != 2 \
                or "2 of 4 records arrived" not in (summary.get("error") or "") \
                or "1 new record stored" not in (summary.get("error") or ""):
            raise AssertionError(f"a meter going silent: exit {run.returncode} {summary} {run.stderr}")
        check_rows(db, peer, RECORDS + 3)
        step(f"meter silent after 2 of 4: exit {run.returncode}, {summary['error']!r}")
        return 0
    finally:
        result["timings"] = timings
        forget_bonds(bluetoothd, adapter, [METER], result)
        with open(os.path.join(RESULTS, "result.json"), "w") as f:
            json.dump(result, f, indent=1)
        peer.close()
        stop(bluetoothd)
        subprocess.run(["cp", peer.sent_log, RESULTS], check=False)
        for suffix in ("", "-wal", "-shm"):
            subprocess.run(["cp", db + suffix, RESULTS], check=False, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    sys.exit(main())
