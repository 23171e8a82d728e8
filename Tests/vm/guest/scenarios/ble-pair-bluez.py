"""Pairing through the guest's real bluetoothd: `healthgate ble pair` registers its agent and
bonds with peripherals that require it, and bonded devices are then recorded with no agent.

- Just Works: a blood-pressure cuff whose CCCDs need an encrypted link (`--pairing
  bp=just-works`). `ble pair --hci bluez --json` bonds (the peer lists the guest's controller as
  bonded, bluetoothd shows Paired and Trusted); a second `ble pair` says it is already bonded
  (exit 0). `record --hci bluez` (no agent) then records the cuff: the link is encrypted again
  from the stored keys, and the stored systolic pressures equal the peer's sent log.
- Passkey entry: a scale showing a passkey (`--pairing scale=passkey:246810`). A wrong
  `--passkey` fails with an authentication failure in plain words and bonds nothing (the peer
  has no bond, bluetoothd shows the device unpaired); the right one bonds, and `record` then
  records the scale's indicated weights over the authenticated link (no agent), equal to the
  sent log.
- Passkey typed at the terminal (a pseudo-terminal here): a second scale; a mistyped answer
  is asked again, the right one bonds.
- Numeric comparison: a thermometer that confirms the number (`--pairing thermometer=numeric`).
  Without a terminal and without `--yes` the agent refuses and says what is missing (nothing is
  bonded); with `--yes` it bonds.
"""
from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time

from vmpeer import (RESULTS, WORK, Peer, device_properties, forget_bonds, start_bluetoothd, step, stop, stored, timings,
                    wait_for)

BIN = os.environ["HG_BIN"]
BP = "C0:4E:47:00:00:07"
SCALE = "C0:4E:47:00:00:06"
THERMO = "C0:4E:47:00:00:08"
SCALE2 = "C0:4E:47:00:01:06"
PASSKEY2 = 135790
PASSKEY = 246810
MIN_READINGS = 4
SYSTOLIC = "SELECT value FROM measurements WHERE kind = 'blood_pressure' AND source_device = ? ORDER BY value"
WEIGHTS = "SELECT value FROM measurements WHERE kind = 'weight' AND source_device = ? ORDER BY value"


def pair(*args: str) -> subprocess.CompletedProcess:
    """`healthgate ble pair --hci bluez --json ARGS` with no terminal (stdin /dev/null); logged."""
    run = subprocess.run([BIN, "ble", "pair", "--hci", "bluez", "--json", *args], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=180)
    with open(os.path.join(RESULTS, "pair.log"), "a") as f:
        f.write(f"$ healthgate ble pair --hci bluez --json {' '.join(args)}\nexit {run.returncode}\n"
                f"{run.stdout}{run.stderr}\n")
    return run


def pair_at_terminal(address: str, answers: list[tuple[str, str]]) -> tuple[int, str]:
    """`healthgate ble pair --hci bluez ADDRESS` on a pseudo-terminal: each time the next
    prompt of `answers` (prompt, typed line) appears, types its line. Returns (exit status, what
    the terminal showed)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(BIN, [BIN, "ble", "pair", "--hci", "bluez", address])
    shown, typed_up_to, pending = b"", 0, list(answers)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1)
        if fd in ready:
            try:
                data = os.read(fd, 4096)
            except OSError:  # EIO: the command exited and closed the terminal
                break
            if not data:
                break
            shown += data
        if pending and pending[0][0].encode() in shown[typed_up_to:]:
            typed_up_to = len(shown)
            os.write(fd, pending.pop(0)[1].encode() + b"\n")
    else:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    text = shown.decode(errors="replace")
    with open(os.path.join(RESULTS, "pair.log"), "a") as f:
        f.write(f"$ healthgate ble pair --hci bluez {address}   (at a terminal)\nexit {os.waitstatus_to_exitcode(status)}\n{text}\n")
    return os.waitstatus_to_exitcode(status), text


def record_until_all_stored(db: str, peer: Peer, pid: str, address: str, sql: str, field: str,
                            controller: str, result: dict) -> int:
    """`record --hci bluez --device ADDRESS` (no agent) until MIN_READINGS are stored; checks the
    peer sees the link encrypted without a new pairing; pauses the peer, waits for every value it
    sent, stops the recording (SIGINT) and compares the stored values with the sent log."""
    pairings_before = peer.control("status")["peripherals"][pid]["pairing"]["pairings"]
    record_log = open(os.path.join(RESULTS, f"record-{pid}.log"), "w")
    recorder = subprocess.Popen([BIN, "record", "--hci", "bluez", "--db", db, "--device", address, "--for", "300s"],
                                stdin=subprocess.DEVNULL, stdout=record_log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: len(stored(db, sql, (address,))) >= MIN_READINGS, 120, f"{MIN_READINGS} stored {field} values")
        status = peer.control("status")["peripherals"][pid]["pairing"]
        result[f"record_{pid}_link"] = status
        if controller not in status["encrypted"]:
            raise AssertionError(f"the recording link to {pid} is not encrypted: {status}")
        if status["pairings"] != pairings_before:
            raise AssertionError(f"record paired with {pid} again instead of using the stored keys: {status}")
        sent_count = peer.control(f"pause {pid}")["sent"]
        wait_for(lambda: len(stored(db, sql, (address,))) >= sent_count, 60, f"all {sent_count} {pid} values to be stored")
        recorder.send_signal(signal.SIGINT)
        rc = recorder.wait(60)
        if rc != 0:
            raise AssertionError(f"healthgate record exited {rc} (see record-{pid}.log)")
    finally:
        stop(recorder)
    sent = sorted(float(r["fields"][field]) for r in peer.sent() if r["peripheral"] == pid and r.get("malformed") is None)
    got = [row[0] for row in stored(db, sql, (address,))]
    result.update({f"{pid}_sent": len(sent), f"{pid}_stored": len(got)})
    if len(got) != len(sent) or any(abs(a - b) > 1e-6 for a, b in zip(got, sent)):
        raise AssertionError(f"stored {field} values != sent log:\n{got}\n{sent}")
    return len(got)


def main() -> int:
    result: dict = {}
    peer = Peer(["bp", "scale", "thermometer", "scale"], rate=1,
                extra=["--pairing", "bp=just-works", "--pairing", f"scale=passkey:{PASSKEY}", "--pairing", "thermometer=numeric",
                       "--pairing", f"scale-2=passkey:{PASSKEY2}"])
    result["peer"] = peer.info
    step("peer ready")
    bluetoothd = adapter = None
    db = os.path.join(WORK, "healthgate.sqlite")
    try:
        bluetoothd, bus, adapter = start_bluetoothd(peer)
        controller = peer.info["controller_address"]
        step("adapter powered")

        # Just Works.
        run = pair(BP)
        if run.returncode != 0 or json.loads(run.stdout).get("result") != "bonded":
            raise AssertionError(f"ble pair {BP} (Just Works) exited {run.returncode}: {run.stdout} {run.stderr}")
        status = peer.control("status")["peripherals"]["bp"]["pairing"]
        props = device_properties(bus, adapter, BP)
        result["just_works"] = {"peer": status, "paired": bool(props.get("Paired")), "trusted": bool(props.get("Trusted"))}
        if status["bonded"] != [controller] or not props.get("Paired") or not props.get("Trusted"):
            raise AssertionError(f"after ble pair: peer {status}, bluetoothd Paired={props.get('Paired')} "
                                 f"Trusted={props.get('Trusted')}")
        step(f"Just Works: bonded ({controller} on the peer; Paired and Trusted in bluetoothd)")
        run = pair(BP)
        if run.returncode != 0 or json.loads(run.stdout).get("result") != "already-bonded":
            raise AssertionError(f"ble pair {BP} again exited {run.returncode}: {run.stdout} {run.stderr}")
        step("ble pair again: already bonded, exit 0")

        # The bonded cuff recorded with no agent: the link is encrypted from the stored keys.
        n = record_until_all_stored(db, peer, "bp", BP, SYSTOLIC, "systolic", controller, result)
        step(f"record (no agent): encrypted link from the stored keys, {n} indicated blood pressures == sent log")

        # Passkey entry: wrong, then right.
        run = pair(SCALE, "--passkey", "111111")
        props = device_properties(bus, adapter, SCALE)
        status = peer.control("status")["peripherals"]["scale"]["pairing"]
        result["wrong_passkey"] = {"exit": run.returncode, "stderr": run.stderr.strip(), "peer": status,
                                   "paired": bool(props.get("Paired"))}
        if run.returncode == 0 or "authentication failed" not in run.stderr.lower():
            raise AssertionError(f"a wrong passkey: exit {run.returncode}, stderr {run.stderr!r}")
        if status["bonded"] or props.get("Paired"):
            raise AssertionError(f"a wrong passkey bonded: peer {status}, Paired={props.get('Paired')}")
        step(f"wrong passkey: exit {run.returncode}, {run.stderr.strip().splitlines()[-1]!r}, nothing bonded")
        run = pair(SCALE, "--passkey", str(PASSKEY))
        status = peer.control("status")["peripherals"]["scale"]["pairing"]
        props = device_properties(bus, adapter, SCALE)
        result["right_passkey"] = {"exit": run.returncode, "peer": status, "paired": bool(props.get("Paired"))}
        if run.returncode != 0 or json.loads(run.stdout).get("result") != "bonded" or status["bonded"] != [controller] \
                or not props.get("Paired"):
            raise AssertionError(f"the right passkey: exit {run.returncode} {run.stdout} {run.stderr}; peer {status}")
        step("right passkey: bonded")
        n = record_until_all_stored(db, peer, "scale", SCALE, WEIGHTS, "weight_kg", controller, result)
        step(f"record (no agent): the scale's link encrypted from its keys, {n} indicated weights == sent log")

        # Numeric comparison: refused without a terminal or --yes, then confirmed with --yes.
        run = pair(THERMO)
        status = peer.control("status")["peripherals"]["thermometer"]["pairing"]
        result["numeric_refused"] = {"exit": run.returncode, "stderr": run.stderr.strip(), "peer": status}
        if run.returncode == 0 or "needs a terminal to confirm at, or --yes" not in run.stderr or status["bonded"]:
            raise AssertionError(f"numeric comparison without --yes: exit {run.returncode}, {run.stderr!r}, peer {status}")
        step(f"numeric comparison without a terminal or --yes: exit {run.returncode}, refused, nothing bonded")
        run = pair(THERMO, "--yes")
        status = peer.control("status")["peripherals"]["thermometer"]["pairing"]
        props = device_properties(bus, adapter, THERMO)
        result["numeric"] = {"exit": run.returncode, "stderr": run.stderr.strip(), "peer": status,
                             "paired": bool(props.get("Paired"))}
        if run.returncode != 0 or json.loads(run.stdout).get("result") != "bonded" or status["bonded"] != [controller] \
                or not props.get("Paired"):
            raise AssertionError(f"numeric comparison with --yes: exit {run.returncode} {run.stdout} {run.stderr}; peer {status}")
        step("numeric comparison with --yes: bonded")

        # Passkey typed at a terminal: a mistyped answer is asked again.
        prompt = "Enter the 6-digit passkey the device shows: "
        rc, shown = pair_at_terminal(SCALE2, [(prompt, "12ab"), (prompt, str(PASSKEY2))])
        status = peer.control("status")["peripherals"]["scale-2"]["pairing"]
        result["terminal"] = {"exit": rc, "shown": shown, "peer": status}
        if rc != 0 or shown.count(prompt) != 2 or "A passkey is 1 to 6 digits" not in shown \
                or "bonded and trusted" not in shown or status["bonded"] != [controller]:
            raise AssertionError(f"passkey typed at the terminal: exit {rc}, terminal {shown!r}, peer {status}")
        step("passkey typed at the terminal (after one mistyped answer): bonded")
        return 0
    finally:
        result["timings"] = timings
        forget_bonds(bluetoothd, adapter, [BP, SCALE, THERMO, SCALE2], result)
        with open(os.path.join(RESULTS, "result.json"), "w") as f:
            json.dump(result, f, indent=1)
        peer.close()
        stop(bluetoothd)
        subprocess.run(["cp", peer.sent_log, RESULTS], check=False)


if __name__ == "__main__":
    sys.exit(main())
