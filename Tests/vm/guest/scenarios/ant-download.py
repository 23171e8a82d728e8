"""`healthgate ant download`: a watch's backlog over ANT-FS through the emulated ANT USB2 stick on
the guest's real USB stack, from the emulated FR310XT-like watch serving real FIT files of the
fixtures (Tests/peers/ant_stick.py).

1. Without a stored passkey and without --pair: refused, with the advice to pair (exit 1).
2. --pair: the watch accepts (the simulated user), its passkey is kept (0600), the directory is
   read and every FIT file downloaded block by block with its CRC checked; the files kept under the
   files folder are byte-identical to the fixtures, and each is imported (the import ledger).
3. Again: authenticated with the stored passkey, nothing to fetch, nothing imported.
4. The watch gains a file: only that one is fetched; the next block's CRC is made wrong once
   (fault bad-crc), a host command fails on the air once (tx-fail, event 6) and a reply burst of
   the watch breaks off halfway once (rx-fail-burst, event 4): the host asks or sends again and
   the file is still byte-identical.
"""
from __future__ import annotations

import filecmp
import json
import os
import stat
import subprocess
import sys

from vmant import FIT, RESULTS, WORK, Stick, load_dummy_hcd, random_key, step, timings, wait_for_device
from vmpeer import stored

BIN = os.environ["HG_BIN"]
FILES = ["antfs-dump-63.fit", "fitsdk-Activity.fit", "fitsdk-WeightScaleMultiUser.fit"]
NEW = "fitsdk-Settings.fit"


def download(key: bytes, db: str, *extra: str) -> tuple[int, dict | None, str]:
    out = subprocess.run([BIN, "ant", "download", "--antfs-key", key.hex(), "--db", db, "--json", "--timeout", "4m", *extra],
                         capture_output=True, text=True, timeout=300)
    summary = json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip() else None
    return out.returncode, summary, out.stderr


def main() -> int:
    result: dict = {}
    key = random_key()
    load_dummy_hcd()
    stick = Stick(["--watch-pairing", "accept", "--watch-pair-delay", "1"], watch_files=FILES, ant_fs_key=key)
    db = os.path.join(WORK, "antfs.sqlite")
    files = os.path.join(WORK, "antfs")
    try:
        wait_for_device()
        step("stick with a watch")

        code, _, err = download(key, db)
        result["unpaired"] = {"exit": code, "stderr": err}
        if code != 1 or "--pair" not in err:
            raise AssertionError(f"an unpaired watch must be refused with advice to pair: {code} {err}")
        step("refused without --pair")

        code, summary, err = download(key, db, "--pair")
        result["paired"] = summary or err
        if code != 0 or summary is None:
            raise AssertionError(f"ant download --pair: {code} {err}")
        serial = summary["watch_serial"]
        folder = os.path.join(files, str(serial))
        passkey = os.path.join(folder, "passkey")
        if not os.path.exists(passkey) or stat.S_IMODE(os.stat(passkey).st_mode) != 0o600:
            raise AssertionError("the passkey must be kept, 0600")
        if len(summary["fetched"]) != len(FILES) or summary["failed"]:
            raise AssertionError(f"every file fetched expected: {summary}")
        saved = sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".fit"))
        originals = [os.path.join(FIT, n) for n in FILES]
        matched = [any(filecmp.cmp(s, o, shallow=False) for s in saved) for o in originals]
        result["byte_identical"] = matched
        if not all(matched):
            raise AssertionError(f"files differ from the fixtures: {saved}")
        imports = stored(db, "SELECT count(*) FROM imports WHERE driver = 'fit'")[0][0]
        if imports != len(FILES):
            raise AssertionError(f"{imports} files in the import ledger, {len(FILES)} expected")
        step("paired and downloaded")

        code, summary, err = download(key, db)
        result["again"] = summary or err
        if code != 0 or summary is None or summary["fetched"]:
            raise AssertionError(f"a second download must fetch nothing: {code} {summary} {err}")
        step("nothing new")

        stick.control(f"add-file {os.path.join(FIT, NEW)}")
        stick.control("fault bad-crc 1")
        # And a command of the host's that fails on the air (event 6) and a reply burst of the
        # watch that breaks off halfway (event 4): each is sent or asked for again.
        stick.control("fault tx-fail 1")
        stick.control("fault rx-fail-burst 1")
        code, summary, err = download(key, db)
        result["new_file"] = summary or err
        if code != 0 or summary is None or len(summary["fetched"]) != 1:
            raise AssertionError(f"only the new file expected: {code} {summary} {err}")
        saved = [os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".fit")]
        if not any(filecmp.cmp(s, os.path.join(FIT, NEW), shallow=False) for s in saved):
            raise AssertionError("the new file differs from its fixture")
        events = [m for m in stick.sent() if m.get("kind") == "antfs" and m.get("event") == "download"]
        result["crc_wrong_blocks"] = sum(1 for e in events if e.get("crc_wrong"))
        if result["crc_wrong_blocks"] < 1:
            raise AssertionError("the bad-crc fault was not used")
        armed = stick.control("status")["stick"]["faults"]
        result["faults_left"] = armed
        if armed["tx-fail"] or armed["rx-fail-burst"]:
            raise AssertionError(f"the tx-fail and rx-fail-burst faults were not all used: {armed}")
        step("only the new file, through a bad CRC, a failed transfer and a broken burst")
        return 0
    finally:
        stick.close()
        result["timings"] = timings
        with open(os.path.join(RESULTS, "result.json"), "w") as f:
            json.dump(result, f, indent=1, default=str)


if __name__ == "__main__":
    sys.exit(main())
