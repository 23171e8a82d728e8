"""A Garmin watch that speaks MTP, imported by the daemon on plug-in: umtp-responder serves a
GARMIN/ tree of real FIT fixtures as a Forerunner 245 Music (091e:4c05) through a FunctionFS gadget
on the guest's real USB stack (dummy_hcd), and libmtp in healthgate reads it.

1. `healthgate watch list --json` finds the watch over MTP with its serial and would fetch the
   four FIT files of GARMIN/Activity, Monitor and Weight (not Music/, not GarminDevice.xml); mtp-files
   (libmtp's own tool, mtp-tools) lists the same files with the same sizes. While another program
   holds the watch (pyusb claiming its interface, as a desktop's MTP backend would), `watch list`
   names it with its pid. udev marks the watch ID_MTP_DEVICE=1 (libmtp's rules); with
   systemd/70-healthgate-watch-no-desktop.rules installed it does not, and the daemon still reads it.
2. The daemon's `watch` driver (libusb hotplug, no polling) fetches and imports them when the watch
   is plugged in: the copies under STATE/watch/SERIAL/ are byte-identical, each file in the import
   ledger and in the driver checkpoint.
3. Unplugged and plugged again: nothing fetched.
4. A new activity on the watch: only that one is fetched.
5. A large file (8 MB) with the watch unplugged halfway through its copy: no copy, no temporary
   file left, nothing in the ledger or the checkpoint for it; plugged again, it is fetched whole
   (umtprd starts over at each unplug, as a real watch's MTP side does: vmwatch.py).
6. Next to it, a watch that mounts as USB mass storage (the kernel's mass-storage gadget with a FAT
   image on the second port, 091e:0003, mounted read-only under /media): the same driver fetches
   its files (serial from GARMIN/GarminDevice.xml), byte-identical; unmounted, unplugged and
   mounted again: nothing fetched.
7. The daemon stopped, `healthgate watch import --json` on the same database: nothing to fetch
   from either watch.
8. A model libmtp's device table lacks (091e:4f00): libmtp's probe finds it (its interface is
   MTP's, class 6/1/1) and `watch list` shows it with its serial and what it would fetch.
"""
from __future__ import annotations

import filecmp
import glob
import json
import os
import shutil
import subprocess
import sys

from vmant import bus_address
from vmpeer import SHARE
from vmwatch import (BIN, FIT, FR245_MUSIC, GARMIN, RESULTS, WORK, Daemon, MassStorageWatch, MTPWatch, load_dummy_hcd, start_udevd, step, stop,
                     stored, timings, wait_for)

REPO = os.path.join(SHARE, "repo")

SERIAL = "3991234567"
STATE = os.path.join(WORK, "watch-state")
DB = os.path.join(STATE, "healthgate.sqlite")
CONFIG = os.path.join(WORK, "watch.toml")
COPIES = os.path.join(STATE, "watch", SERIAL)
FIRST = {"GARMIN/Activity/garmin-fenix5-run.fit": "garmin-fenix5-run.fit",
         "GARMIN/Activity/fitsdk-Activity.fit": "fitsdk-Activity.fit",
         "GARMIN/Monitor/fitsdk-MonitoringFile.fit": "fitsdk-MonitoringFile.fit",
         "GARMIN/Weight/fitsdk-WeightScaleMultiUser.fit": "fitsdk-WeightScaleMultiUser.fit"}
NEW = ("GARMIN/Activity/garmin-edge800-indoor-trainer-power.fit", "garmin-edge800-indoor-trainer-power.fit")
BIG = "GARMIN/Activity/BIG.FIT"
MSC_SERIAL = "3912345678"
UNKNOWN = 0x4F00  # not in Debian 12's libmtp device table
MSC_FILES = {"GARMIN/Activity/POOLSWIM.FIT": "garmin-fr735xt-poolswim-hr-chained.fit",
             "GARMIN/Activity/ANTFS63.FIT": "antfs-dump-63.fit"}


# Claims the watch's interface through pyusb and holds it until stdin closes.
HOLDER = """
import sys, usb.core, usb.util
dev = usb.core.find(idVendor=0x091e, idProduct=0x4c05)
usb.util.claim_interface(dev, 0)
print("claimed", flush=True)
sys.stdin.read()
"""


def udev_properties() -> dict:
    """udev's properties of the watch's USB device (after udev has handled its events)."""
    subprocess.run(["udevadm", "settle", "--timeout=30"], timeout=40)
    where = bus_address(GARMIN, FR245_MUSIC)
    if where is None:
        raise AssertionError("the watch is not on the bus")
    out = subprocess.run(["udevadm", "info", "--query=property", f"--name=/dev/bus/usb/{where[0]:03d}/{where[1]:03d}"],
                         capture_output=True, text=True, timeout=30).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def fetched(serial: str = SERIAL) -> dict:
    rows = stored(DB, "SELECT value FROM driver_checkpoints WHERE driver = 'watch' AND device = ?", (f"watch:{serial}",))
    return json.loads(rows[0][0])["files"] if rows else {}


def ledger_paths() -> list[str]:
    return sorted(p for (p,) in stored(DB, "SELECT path FROM imports WHERE status = 'imported'"))


def check_copies(expected: dict, watch: MTPWatch) -> None:
    for path in expected:
        copy = os.path.join(COPIES, path)
        if not os.path.exists(copy) or not filecmp.cmp(copy, os.path.join(watch.folder, path), shallow=False):
            raise AssertionError(f"{copy} is missing or differs from the watch's {path}")


def count_lines(daemon: Daemon, text: str) -> int:
    return daemon.text().count(text)


def main() -> int:
    result: dict = {}
    udevd = watch = daemon = msc = None
    try:
        udevd = start_udevd()
        load_dummy_hcd()
        watch = MTPWatch(serial=SERIAL)
        for path, fixture in FIRST.items():
            watch.add(os.path.dirname(path), fixture)
        watch.add("Music", os.path.join(FIT, "fitsdk-Settings.fit"), name="song.fit")
        with open(os.path.join(watch.folder, "GARMIN", "GarminDevice.xml"), "w") as f:
            f.write("<Device><Id>3991234567</Id></Device>\n")
        watch.plug()
        step("watch plugged in")

        out = subprocess.run([BIN, "watch", "list", "--json", "--db", DB], capture_output=True, text=True, timeout=120)
        result["list"] = out.stdout or out.stderr
        listing = json.loads(out.stdout)
        mtp = [w for w in listing["watches"] if w["watch"]["attachment"] == "mtp"]
        if len(mtp) != 1 or mtp[0]["watch"]["serial"] != SERIAL or sorted(mtp[0]["to_fetch"]) != sorted(FIRST):
            raise AssertionError(f"watch list: expected the watch {SERIAL} with {sorted(FIRST)} to fetch: {out.stdout} {out.stderr}")
        files = subprocess.run(["mtp-files"], capture_output=True, text=True, timeout=120).stdout
        result["mtp-files"] = files
        for path, fixture in FIRST.items():
            size = os.path.getsize(os.path.join(FIT, fixture))
            if f"Filename: {os.path.basename(path)}" not in files or f"File size {size} (0x" not in files:
                raise AssertionError(f"mtp-files does not list {path} with {size} bytes")
        step("watch list and mtp-files agree")

        holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            if holder.stdout.readline().strip() != "claimed":
                raise AssertionError("the holder could not claim the watch")
            out = subprocess.run([BIN, "watch", "list", "--json", "--db", DB], capture_output=True, text=True, timeout=180)
            result["held"] = out.stdout or out.stderr
            problems = json.loads(out.stdout)["problems"]
            if not any(f"another program holds it: python3 (pid {holder.pid})" in p for p in problems):
                raise AssertionError(f"watch list does not name the program holding the watch: {problems}")
        finally:
            holder.stdin.close()
            holder.wait(30)
        step("a held watch: its holder named")

        props = udev_properties()
        if props.get("ID_MTP_DEVICE") != "1":
            raise AssertionError(f"libmtp's udev rules did not mark the watch: {props}")
        watch.unplug()
        shutil.copy(os.path.join(REPO, "systemd", "70-healthgate-watch-no-desktop.rules"), "/etc/udev/rules.d/")
        subprocess.run(["udevadm", "control", "--reload"], check=True, timeout=30)

        os.makedirs(STATE, exist_ok=True)
        with open(CONFIG, "w") as f:
            f.write('log_level = "info"\n\n[drivers.watch]\ntype = "watch"\n')
        daemon = Daemon(["--config", CONFIG, "--state-dir", STATE])
        wait_for(lambda: daemon.alive() or os.path.exists(DB), 60, "the daemon to open its database")
        watch.plug()
        props = udev_properties()
        if "ID_MTP_DEVICE" in props or "ID_MEDIA_PLAYER" in props:
            raise AssertionError(f"the no-desktop rule left the MTP marks: {props}")
        wait_for(lambda: daemon.alive() or len(fetched()) == 4 or None, 120, "the daemon to fetch the watch's 4 files")
        check_copies(FIRST, watch)
        if len(ledger_paths()) != 4:
            raise AssertionError(f"4 files imported expected: {ledger_paths()}")
        records = stored(DB, "SELECT count(*) FROM workouts")[0][0] + stored(DB, "SELECT count(*) FROM measurements")[0][0]
        result["records"] = records
        if records == 0:
            raise AssertionError("nothing stored from the watch's files")
        step("plug-in: 4 files fetched, byte-identical, imported")

        watch.unplug()
        before = count_lines(daemon, "0 new")
        watch.plug()
        wait_for(lambda: daemon.alive() or count_lines(daemon, "0 new") > before or None, 60, "the daemon to look again")
        if len(fetched()) != 4 or len(ledger_paths()) != 4:
            raise AssertionError("plugged again: something was fetched")
        step("plugged again: nothing fetched")

        watch.unplug()
        watch.add(os.path.dirname(NEW[0]), NEW[1])
        watch.plug()
        wait_for(lambda: daemon.alive() or len(fetched()) == 5 or None, 120, "the daemon to fetch the new activity")
        if set(fetched()) != set(FIRST) | {NEW[0]}:
            raise AssertionError(f"fetched: {sorted(fetched())}")
        check_copies({NEW[0]: NEW[1]}, watch)
        if "5 file(s) on the watch, 1 new" not in daemon.text():
            raise AssertionError("the daemon did not say it fetches 1 of 5 files")
        step("a new activity: only it fetched")

        watch.unplug()
        big = os.path.join(watch.folder, BIG)
        with open(big, "wb") as out_file:
            for _ in range(8):
                with open(os.path.join(FIT, "garmin-fenix2-multisport.fit"), "rb") as part:
                    out_file.write(part.read())
        os.utime(big, (os.path.getmtime(big) - 3600,) * 2)
        size = os.path.getsize(big)
        watch.plug()
        partial = os.path.join(COPIES, BIG) + ".tmp-*"

        def copying() -> bool:
            daemon.alive()
            return any(0 < os.path.getsize(p) < size for p in glob.glob(partial))
        wait_for(copying, 120, "the large file's copy to begin", interval=0.02)
        seen = max(os.path.getsize(p) for p in glob.glob(partial))
        watch.unplug()
        result["unplugged_at"] = {"copied": seen, "size": size}
        wait_for(lambda: daemon.alive() or not glob.glob(partial) or None, 60, "the partial copy to be removed")
        if os.path.exists(os.path.join(COPIES, BIG)) or BIG in fetched() or len(ledger_paths()) != 5:
            raise AssertionError("a file cut off by the unplug was kept, marked fetched or imported")
        step(f"unplugged after {seen} of {size} bytes: nothing kept")
        watch.plug()
        wait_for(lambda: daemon.alive() or BIG in fetched() or None, 180, "the large file to be fetched whole")
        if not filecmp.cmp(os.path.join(COPIES, BIG), big, shallow=False) or len(ledger_paths()) != 6:
            raise AssertionError("the large file is not whole or not imported")
        step("plugged again: the large file fetched whole")

        msc = MassStorageWatch(MSC_FILES, "<Device><Model><Description>Forerunner 735XT</Description></Model>"
                                          "<Id>3912345678</Id></Device>\n")
        msc.plug()
        wait_for(lambda: daemon.alive() or len(fetched(MSC_SERIAL)) == 2 or None, 120, "the daemon to fetch the mounted watch's 2 files")
        for path in MSC_FILES:
            copy = os.path.join(STATE, "watch", MSC_SERIAL, path)
            if not filecmp.cmp(copy, os.path.join(FIT, MSC_FILES[path]), shallow=False):
                raise AssertionError(f"{copy} differs from the mounted watch's {path}")
        if len(ledger_paths()) != 8:
            raise AssertionError(f"8 files imported expected: {ledger_paths()}")
        step("a mass-storage watch next to it: its 2 files fetched")
        before = count_lines(daemon, "Forerunner 735XT 3912345678: 2 file(s) on the watch, 0 new")
        msc.unplug()
        msc.plug()
        wait_for(lambda: daemon.alive() or count_lines(daemon, "Forerunner 735XT 3912345678: 2 file(s) on the watch, 0 new") > before or None,
                 60, "the daemon to read the mounted watch again")
        if len(fetched(MSC_SERIAL)) != 2 or len(ledger_paths()) != 8:
            raise AssertionError("mounted again: something was fetched")
        step("mounted again: nothing fetched")

        code = daemon.stop()
        daemon = None
        if code != 0:
            raise AssertionError(f"the daemon exited {code} on SIGTERM")
        out = subprocess.run([BIN, "watch", "import", "--json", "--db", DB], capture_output=True, text=True, timeout=180)
        result["import"] = out.stdout or out.stderr
        summary = json.loads(out.stdout)
        mtp_watch = [w for w in summary["watches"] if w["watch"]["attachment"] == "mtp"]
        msc_watch = [w for w in summary["watches"] if w["watch"]["attachment"] == "mass_storage"]
        if out.returncode != 0 or len(mtp_watch) != 1 or mtp_watch[0]["fetched"] or mtp_watch[0]["already_fetched"] != 6 \
                or len(msc_watch) != 1 or msc_watch[0]["fetched"] or msc_watch[0]["already_fetched"] != 2:
            raise AssertionError(f"watch import after the daemon: {out.returncode} {out.stdout} {out.stderr}")
        step("watch import: nothing new")

        watch.close()
        watch = MTPWatch(serial="3990000001", name="hgnew", product_id=UNKNOWN, product="Forerunner 999")
        watch.add("GARMIN/Activity", "garmin-fenix5-run.fit")
        watch.plug()
        out = subprocess.run([BIN, "watch", "list", "--json", "--db", DB], capture_output=True, text=True, timeout=180)
        result["unknown_model"] = out.stdout or out.stderr
        found = [w for w in json.loads(out.stdout)["watches"] if w["watch"]["serial"] == "3990000001"]
        if len(found) != 1 or found[0]["watch"]["attachment"] != "mtp" or "091e:4f00" not in found[0]["watch"]["place"] \
                or found[0]["to_fetch"] != ["GARMIN/Activity/garmin-fenix5-run.fit"] or found[0]["files_on_watch"] != 1:
            raise AssertionError(f"a model outside libmtp's table: {out.stdout} {out.stderr}")
        step("a model outside libmtp's table: found by its probe")
        result["timings"] = timings
        return 0
    finally:
        rule = "/etc/udev/rules.d/70-healthgate-watch-no-desktop.rules"
        if os.path.exists(rule):
            os.unlink(rule)
            subprocess.run(["udevadm", "control", "--reload"], timeout=30)
        if daemon is not None:
            daemon.stop()
        if watch is not None:
            watch.close()
        if msc is not None:
            msc.close()
        stop(udevd)
        with open(os.path.join(RESULTS, "result.json"), "w") as f:
            json.dump(result, f, indent=2, default=str)


if __name__ == "__main__":
    sys.exit(main())
