"""The watch benchmark (`make bench-watch`; not part of `make vm-test`), on the emulated MTP watch
(umtp-responder on dummy_hcd, vmwatch.py) in the TCG guest.

1. Throughput: the same files fetched by `healthgate watch import` (one MTP session, listing,
   copies, imports) and by `mtp-getfile` (libmtp's own tool, mtp-tools: one run per file, as a
   script would use it), in the same boot: (a) one 8 MB file, MB/s; (b) SMALL small FIT files,
   files/s. For HealthGate the copy time alone (`copy_s` of its summary) is given as well.
2. Plug-in to first record: a watch holding N files of which 10 are new (the others fetched
   before, by a `watch import` that is not timed), the daemon's `watch` driver running: the time
   from the gadget's bind (the plug-in) to the first new record committed in the database, to the
   last of the 10 files marked fetched, and to the end of the look (every folder listed: the
   daemon's "N file(s) on the watch" line). N = 100, 1,000 and 2,000, to show how it grows with
   the files on the watch.
Writes bench.json and bench.txt to the results."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

from vmwatch import (BIN, FIT, RESULTS, WORK, Daemon, MTPWatch, load_dummy_hcd, start_udevd, step, stop, stored, timings,
                     wait_for, write)

SERIAL = "3991234567"
# Each mtp-getfile run opens and closes an MTP session: several seconds each in the TCG guest.
SMALL = 20
NEW = ["garmin-fenix5-run.fit", "fitsdk-Activity.fit", "garmin-edge800-indoor-trainer-power.fit", "fitsdk-MonitoringFile.fit",
       "fitsdk-WeightScaleMultiUser.fit", "fitsdk-Settings.fit", "antfs-dump-63.fit", "garmin-fr735xt-poolswim-hr-chained.fit",
       "garmin-fenix2-multisport.fit", "fitsdk-activity-poolswim-with-hr.fit"]


def mtp_ids() -> dict[str, int]:
    """File name -> MTP object id, from `mtp-files`."""
    out = subprocess.run(["mtp-files"], capture_output=True, text=True, timeout=600).stdout
    ids, current = {}, None
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("File ID:"):
            current = int(line.split(":", 1)[1])
        elif line.startswith("Filename:") and current is not None:
            ids[line.split(":", 1)[1].strip()] = current
    return ids


def getfile_all(names: list[str], dest: str) -> float:
    """Seconds for mtp-getfile to fetch `names`, one run each."""
    ids = mtp_ids()
    os.makedirs(dest, exist_ok=True)
    started = time.monotonic()
    for name in names:
        subprocess.run(["mtp-getfile", str(ids[name]), os.path.join(dest, name)], capture_output=True, timeout=600, check=True)
    return time.monotonic() - started


def healthgate_import(db: str) -> tuple[dict, float]:
    started = time.monotonic()
    out = subprocess.run([BIN, "watch", "import", "--json", "--db", db, "--root", "/nowhere"], capture_output=True, text=True, timeout=1200)
    elapsed = time.monotonic() - started
    if out.returncode != 0:
        raise AssertionError(f"watch import: {out.returncode} {out.stderr[-2000:]}")
    return json.loads(out.stdout)["watches"][0], elapsed


def throughput(watch: MTPWatch) -> dict:
    result = {}
    big = os.path.join(watch.folder, "GARMIN", "Activity", "BIG.FIT")
    os.makedirs(os.path.dirname(big), exist_ok=True)
    with open(big, "wb") as f:
        for _ in range(8):
            with open(os.path.join(FIT, "garmin-fenix2-multisport.fit"), "rb") as part:
                f.write(part.read())
    os.utime(big, (time.time() - 3600,) * 2)
    size = os.path.getsize(big)
    watch.plug()
    baseline = getfile_all(["BIG.FIT"], os.path.join(WORK, "getfile-big"))
    summary, elapsed = healthgate_import(os.path.join(WORK, "bench-big.sqlite"))
    result["large"] = {"bytes": size, "mtp_getfile_s": round(baseline, 2), "healthgate_s": round(elapsed, 2),
                       "healthgate_copy_s": round(summary["copy_s"], 2),
                       "mtp_getfile_mb_s": round(size / baseline / 1e6, 3), "healthgate_mb_s": round(size / elapsed / 1e6, 3),
                       "healthgate_copy_mb_s": round(size / summary["copy_s"] / 1e6, 3)}
    step(f"large file: {result['large']}")
    watch.unplug()
    os.unlink(big)
    names = []
    for i in range(SMALL):
        name = f"S{i:04d}.FIT"
        watch.add("GARMIN/Monitor", "fitsdk-MonitoringFile.fit", name=name)
        names.append(name)
    watch.plug()
    baseline = getfile_all(names, os.path.join(WORK, "getfile-small"))
    summary, elapsed = healthgate_import(os.path.join(WORK, "bench-small.sqlite"))
    if len(summary["fetched"]) != SMALL:
        raise AssertionError(f"{SMALL} files expected fetched: {len(summary['fetched'])}")
    result["small"] = {"files": SMALL, "mtp_getfile_s": round(baseline, 2), "healthgate_s": round(elapsed, 2),
                       "healthgate_copy_s": round(summary["copy_s"], 2),
                       "mtp_getfile_files_s": round(SMALL / baseline, 2), "healthgate_files_s": round(SMALL / elapsed, 2),
                       "healthgate_copy_files_s": round(SMALL / summary["copy_s"], 2)}
    step(f"small files: {result['small']}")
    watch.unplug()
    shutil.rmtree(os.path.join(watch.folder, "GARMIN"))
    return result


def plug_to_first_record(watch: MTPWatch, total: int) -> dict:
    """A watch with `total` files, `total - 10` fetched before: plug-in to the first new record."""
    shutil.rmtree(os.path.join(watch.folder, "GARMIN"), ignore_errors=True)
    for i in range(total - len(NEW)):
        watch.add("GARMIN/Monitor", "fitsdk-MonitoringFile.fit", name=f"M{i:05d}.FIT")
    state = os.path.join(WORK, f"plug-{total}")
    db = os.path.join(state, "healthgate.sqlite")
    os.makedirs(state, exist_ok=True)
    watch.plug()
    healthgate_import(db)  # the files fetched before (not timed)
    watch.unplug()
    for name in NEW:
        watch.add("GARMIN/Activity", name)
    config = os.path.join(WORK, f"plug-{total}.toml")
    write(config, 'log_level = "info"\n\n[drivers.watch]\ntype = "watch"\nroots = []\n')
    records_before = stored(db, "SELECT count(*) FROM workouts")[0][0] + stored(db, "SELECT count(*) FROM measurements")[0][0]
    daemon = Daemon(["--config", config, "--state-dir", state], log_name=f"daemon-{total}.log")
    try:
        wait_for(lambda: daemon.alive() or "started database=" in daemon.text() or None, 60, "the daemon to start")
        started = watch.plug()

        def records() -> int:
            return stored(db, "SELECT count(*) FROM workouts")[0][0] + stored(db, "SELECT count(*) FROM measurements")[0][0]

        wait_for(lambda: daemon.alive() or records() > records_before or None, 600, "the first new record", interval=0.05)
        first = time.monotonic() - started

        def fetched() -> int:
            rows = stored(db, "SELECT value FROM driver_checkpoints WHERE driver = 'watch' AND device = ?", (f"watch:{SERIAL}",))
            return len(json.loads(rows[0][0])["files"]) if rows else 0

        wait_for(lambda: daemon.alive() or fetched() == total or None, 600, f"all {total} files fetched", interval=0.1)
        last = time.monotonic() - started
        line = f"{total} file(s) on the watch, {len(NEW)} new"
        wait_for(lambda: daemon.alive() or line in daemon.text() or None, 600, f"the daemon's look to end ({line})", interval=0.1)
        look = time.monotonic() - started
    finally:
        daemon.stop()
        watch.unplug()
    return {"files_on_watch": total, "new": len(NEW), "first_record_s": round(first, 2), "all_new_fetched_s": round(last, 2),
            "whole_look_s": round(look, 2)}


def main() -> int:
    result: dict = {}
    udevd = watch = None
    try:
        udevd = start_udevd()
        load_dummy_hcd()
        watch = MTPWatch(serial=SERIAL, name="hgbench")
        result["throughput"] = throughput(watch)
        result["plug_in"] = []
        for total in (100, 1000, 2000):
            point = plug_to_first_record(watch, total)
            result["plug_in"].append(point)
            step(f"plug-in with {total} files: {point}")
        result["timings"] = timings
        lines = ["watch benchmark (TCG guest, umtp-responder on dummy_hcd full speed)",
                 "large file: " + json.dumps(result["throughput"]["large"]),
                 "small files: " + json.dumps(result["throughput"]["small"])]
        lines += [f"plug-in to first record, {p['files_on_watch']} files on the watch ({p['new']} new): {p['first_record_s']} s; "
                  f"all new fetched: {p['all_new_fetched_s']} s; whole look: {p['whole_look_s']} s" for p in result["plug_in"]]
        write(os.path.join(RESULTS, "bench.txt"), "\n".join(lines) + "\n")
        print("\n".join(lines))
        return 0
    finally:
        if watch is not None:
            watch.close()
        stop(udevd)
        with open(os.path.join(RESULTS, "bench.json"), "w") as f:
            json.dump(result, f, indent=2, default=str)


if __name__ == "__main__":
    sys.exit(main())
