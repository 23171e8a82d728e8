"""The shipped systemd unit and udev rule with Garmin watches, for real: `make install`, udev
reloaded, then the emulated MTP watch (umtp-responder on dummy_hcd, vmwatch.py) plugged in: udev
gives its device node to the healthgate group (0660, tagged uaccess). `systemctl enable --now
healthgate` with a `watch` driver: the daemon, as the healthgate user with no capabilities, opens
the watch through libmtp under the unit's DevicePolicy (`DeviceAllow=char-usb_device rw`) and
fetches its FIT files into the unit's state directory (copies byte-identical, 0600, owned by
healthgate); `systemd-analyze security` on the running unit stays at most 1.5. A watch that mounts
as mass storage (FAT image on the mass-storage gadget, mounted read-only under /media after the
unit started: the unit sees /media read-only) is fetched by the same process. The MTP watch
unplugged, given a new activity and plugged back: the same process (no restart) fetches only it."""
from __future__ import annotations

import filecmp
import json
import os
import pwd
import stat
import sys

from vmunit import check_device_node, daemon_lines, install, run, running_exposure, save_results, show
from vmant import bus_address, load_dummy_hcd
from vmwatch import FR245_MUSIC, GARMIN, RESULTS, MassStorageWatch, MTPWatch, step, stored, timings, wait_for

BIN = os.environ["HG_BIN"]
REPO = os.path.join(os.environ["HG_SHARE"], "repo")
STATE = "/var/lib/healthgate"
DB = f"{STATE}/watch.sqlite"
MAX_EXPOSURE = 1.5
SERIAL, MSC_SERIAL = "3991234567", "3912345678"
FILES = {"GARMIN/Activity/garmin-fenix5-run.fit": "garmin-fenix5-run.fit",
         "GARMIN/Monitor/fitsdk-MonitoringFile.fit": "fitsdk-MonitoringFile.fit",
         "GARMIN/Weight/fitsdk-WeightScaleMultiUser.fit": "fitsdk-WeightScaleMultiUser.fit"}
NEW = ("GARMIN/Activity", "garmin-edge800-indoor-trainer-power.fit")
MSC_FILES = {"GARMIN/Activity/POOLSWIM.FIT": "garmin-fr735xt-poolswim-hr-chained.fit"}
CONFIG_TEXT = f"""# written by the systemd-unit-watch VM scenario
database = "{DB}"
log_level = "info"

[drivers.watch]
type = "watch"
"""


def fetched(serial: str) -> dict:
    rows = stored(DB, "SELECT value FROM driver_checkpoints WHERE driver = 'watch' AND device = ?", (f"watch:{serial}",))
    return json.loads(rows[0][0])["files"] if rows else {}


def main() -> int:
    result: dict = {}
    watch = msc = None
    try:
        run("systemctl", "is-system-running", "--wait", check=False, timeout=150)
        install(REPO, BIN, CONFIG_TEXT)
        step("make install done, udev rules reloaded")

        load_dummy_hcd()
        watch = MTPWatch(serial=SERIAL)
        for path, fixture in FILES.items():
            watch.add(os.path.dirname(path), fixture)
        watch.plug()
        run("udevadm", "settle", timeout=60)
        bus, address = bus_address(GARMIN, FR245_MUSIC)
        node = f"/dev/bus/usb/{bus:03d}/{address:03d}"
        result["node"] = check_device_node(node)
        step(f"watch at {node}: group healthgate, 0660, tagged uaccess")

        run("systemctl", "enable", "--now", "healthgate", timeout=120)
        props = show("ActiveState", "SubState", "MainPID")
        if (props["ActiveState"], props["SubState"]) != ("active", "running"):
            raise AssertionError(f"after enable --now the unit is not running: {props}")
        pid = int(props["MainPID"])
        status = dict(line.split(":\t", 1) for line in open(f"/proc/{pid}/status").read().splitlines() if ":\t" in line)
        result["proc_status"] = {k: status[k].strip() for k in ("Uid", "CapEff", "CapPrm", "CapBnd")}
        if status["Uid"].split()[0] != str(pwd.getpwnam("healthgate").pw_uid) \
                or any(int(status[k], 16) != 0 for k in ("CapEff", "CapPrm", "CapBnd")):
            raise AssertionError(f"the daemon is not the healthgate user without capabilities: {result['proc_status']}")
        # Plugged in before the daemon started: the hotplug's first events list it.
        wait_for(lambda: len(fetched(SERIAL)) == len(FILES) or None, 120, "the unit to fetch the watch's files")
        healthgate = pwd.getpwnam("healthgate").pw_uid
        for path in FILES:
            copy = f"{STATE}/watch/{SERIAL}/{path}"
            st = os.stat(copy)
            if not filecmp.cmp(copy, os.path.join(watch.folder, path), shallow=False) or st.st_uid != healthgate \
                    or stat.S_IMODE(st.st_mode) != 0o600:
                raise AssertionError(f"{copy}: not byte-identical, or not healthgate's 0600")
        step(f"the unit fetched {len(FILES)} files over MTP as healthgate (copies 0600)")

        result["exposure"] = running_exposure(MAX_EXPOSURE)
        step(f"systemd-analyze security on the running unit: {result['exposure']}")

        msc = MassStorageWatch(MSC_FILES, f"<Device><Model><Description>Forerunner 735XT</Description></Model><Id>{MSC_SERIAL}</Id></Device>\n")
        msc.plug()
        wait_for(lambda: len(fetched(MSC_SERIAL)) == len(MSC_FILES) or None, 120, "the unit to fetch the mounted watch's file")
        step("a mass-storage watch mounted under /media: fetched by the same process")

        watch.unplug()
        watch.add(*NEW)
        watch.plug()
        wait_for(lambda: len(fetched(SERIAL)) == len(FILES) + 1 or None, 120, "the new activity fetched")
        props = show("MainPID", "ActiveState", "NRestarts")
        result["replugged"] = props
        if props != {"MainPID": str(pid), "ActiveState": "active", "NRestarts": "0"}:
            raise AssertionError(f"the unit did not go on in the same process: {props}")
        lines = daemon_lines(pid)
        with open(os.path.join(RESULTS, "daemon-journal.txt"), "w") as f:
            f.writelines(f"{p} {m}\n" for p, m in lines)
        if not any("4 file(s) on the watch, 1 new" in m for _, m in lines):
            raise AssertionError("the journal does not say 1 of 4 files was fetched after the replug")
        step(f"replugged with a new activity: only it fetched, same pid {pid}, no restart")
        run("systemctl", "stop", "healthgate", timeout=90)
        props = show("ActiveState", "Result")
        if props != {"ActiveState": "inactive", "Result": "success"}:
            raise AssertionError(f"systemctl stop: {props}")
        return 0
    finally:
        save_results(result, timings, None, DB)
        if msc is not None:
            msc.close()
        if watch is not None:
            watch.close()


if __name__ == "__main__":
    sys.exit(main())
