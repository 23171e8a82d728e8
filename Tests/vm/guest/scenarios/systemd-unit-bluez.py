"""The shipped systemd unit for real, with BLE through BlueZ: `make install` into the guest (systemd
is PID 1), a configuration with a BlueZ `ble` driver (the peer's heart-rate sensor on /dev/vhci,
the guest's bluetoothd under systemd), a watch folder with a FIT file and the embedded SQLite store,
then `systemctl enable --now healthgate` and checks of what the unit promises: READY through
sd_notify, the watchdog pinged, `systemctl reload` applying a changed configuration (and refusing
a broken one), journald priorities, the sandbox (what the drivers need works, the rest is shut:
no capabilities, no new privileges, a seccomp filter, /etc and /usr read-only, /home and /tmp
private), `systemctl stop` storing what the live session held (the stored heart rates and RR
intervals equal the peer's sent log), and `systemd-analyze security` on the running unit.

Debian's bluetooth.conf lets every user call org.bluez; this scenario first takes that grant out,
so that the daemon reaches bluetoothd only through the shipped D-Bus policy (healthgate-bluez.conf),
and checks that the policy is what lets the healthgate user in, and lets in no more than it lists.
"""
from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import sys
import time

import dbus
import dbus.bus

from vmunit import daemon_lines, run, running_exposure, save_results, show
from vmpeer import HR_ADDRESS, RESULTS, RR, SAMPLES, Peer, power_on, step, stored, timings, wait_for

BIN = os.environ["HG_BIN"]
REPO = os.path.join(os.environ["HG_SHARE"], "repo")
STATE = "/var/lib/healthgate"
DB = f"{STATE}/healthgate.sqlite"
CONFIG = "/etc/healthgate/healthgate.toml"
POLICY = "/etc/dbus-1/system.d/healthgate-bluez.conf"
BLUETOOTH_CONF = "/etc/dbus-1/system.d/bluetooth.conf"
FIT = "garmin-fenix5-run.fit"
GPX = "apple-health-workout-route.gpx"
MAX_EXPOSURE = 1.5
MIN_SAMPLES = 6  # live heart-rate samples stored before the reload
# Values sent this long before bluetoothd or the bus was taken away may be lost with the link:
# still in the old bluetoothd, which a slow emulated guest may hold for a second or more. They
# must be the last ones sent before the loss (`missing_in_windows`: one unbroken run per loss).
RESTART_SLACK_S = 5.0

BASE_CONFIG = f"""# written by the systemd-unit-bluez VM scenario
database = "{DB}"
log_level = "info"

[api]
socket = "/run/healthgate/healthgate.sock"
metrics = "127.0.0.1:9464"

[drivers.inbox]
type = "watch_folder"
path = "{STATE}/inbox"
after_import = "move"
settle_s = 0.5

# flush_ms at its maximum: readings wait up to 10 s in memory, so a stop finds some held
[drivers.strap]
type = "ble"
hci = "bluez"
devices = ["auto"]
gap_s = 600
flush_ms = 10000
"""
# The reload: a second watch folder (applied at once) and another metrics address (a warning:
# it takes effect at the next restart).
RELOADED_CONFIG = BASE_CONFIG.replace('metrics = "127.0.0.1:9464"', 'metrics = "127.0.0.1:9465"') + f"""
[drivers.inbox2]
type = "watch_folder"
path = "{STATE}/inbox2"
after_import = "move"
settle_s = 0.5
"""
# A broken reload: an unknown key; the daemon must keep running the previous configuration.
BROKEN_CONFIG = RELOADED_CONFIG + 'bogus_key = 1\n'


def write_config(text: str) -> None:
    """Rewrites the configuration in place: the file keeps the owner and mode make install and
    systemd-tmpfiles gave it."""
    with open(CONFIG, "r+") as f:
        f.truncate(0)
        f.write(text)


def as_healthgate_dbus(*args: str) -> subprocess.CompletedProcess:
    """dbus-send on the system bus as the healthgate user."""
    return run("setpriv", "--reuid=healthgate", "--regid=healthgate", "--clear-groups",
               "dbus-send", "--system", "--print-reply", "--dest=org.bluez", *args, check=False)


def reload_bus() -> None:
    run("dbus-send", "--system", "--print-reply", "--dest=org.freedesktop.DBus", "/",
        "org.freedesktop.DBus.ReloadConfig")


def line_with(pid: int, text: str) -> tuple[int, str] | None:
    return next((line for line in daemon_lines(pid) if text in line[1]), None)


def in_unit_namespace(pid: int, uid: int | None, *cmd: str) -> subprocess.CompletedProcess:
    """Runs cmd in the running unit's mount namespace (as uid, or root)."""
    user = ["--setuid", str(uid), "--setgid", str(uid)] if uid is not None else []
    return run("nsenter", f"--target={pid}", "--mount", *user, "--", *cmd, check=False)


def missing_in_windows(sent: list[dict], bpm_stored: list, rr_stored: list,
                       windows: list[tuple[float, float]]) -> list[int]:
    """The sent-log entries that were not stored: the stored heart rates and RR intervals must be
    the sent ones in order less, for each of `windows` (from, to: the guest's clock, as the sent
    log's `t`), at most one unbroken run of entries sent inside it: the last ones before the loss
    and those sent while bluetoothd or the bus was away (a reading dropped while later ones got
    through is a loss, not the outage). Nothing stored twice, nothing invented, nothing else
    missing. Returns the indexes of the left-out entries; fails when no such choice exists."""
    def rr_of(entries: list[dict]) -> list[float]:
        return [x / 1024 for r in entries for x in r["fields"].get("rr", [])]

    ranges = []
    for a, b in windows:
        inside = [k for k, r in enumerate(sent) if a <= r["t"] <= b]
        ranges.append((inside[0], inside[-1] + 1) if inside else (0, 0))

    def runs(w: int, budget: int):
        """Every choice of one run per window from the w-th on, `budget` entries in all."""
        if w == len(ranges):
            if budget == 0:
                yield []
            return
        lo, hi = ranges[w]
        for length in range(0, min(budget, hi - lo) + 1):
            for start in ([lo] if length == 0 else range(lo, hi - length + 1)):
                for rest in runs(w + 1, budget - length):
                    yield list(range(start, start + length)) + rest

    for missing in runs(0, len(sent) - len(bpm_stored)):
        kept = [r for k, r in enumerate(sent) if k not in set(missing)]
        rr = rr_of(kept)
        if [r["fields"]["bpm"] for r in kept] == bpm_stored and len(rr) == len(rr_stored) \
                and all(abs(x - y) <= 1e-12 for x, y in zip(rr, rr_stored)):
            return sorted(missing)
    log = "\n".join(f"  seq {r['seq']} t {r['t']:.3f} bpm {r['fields']['bpm']} rr {r['fields'].get('rr', [])}"
                    f"{' (in a window)' if any(lo <= k < hi for lo, hi in ranges) else ''}" for k, r in enumerate(sent))
    raise AssertionError(f"the stored heart rates are not the sent log less one unbroken run per loss of values sent "
                         f"just before or while bluetoothd or the bus was away (sent {len(sent)}, stored {len(bpm_stored)}, "
                         f"windows {windows}):\nstored {bpm_stored}\nstored RR {rr_stored}\nsent log:\n{log}")


def main() -> int:
    result: dict = {}
    restart: dict = {}
    bus_loss: dict = {}
    peer = None
    try:
        run("systemctl", "is-system-running", "--wait", check=False, timeout=150)

        # 1. A strict bus: bluetooth.conf without its allow-everyone grant to org.bluez.
        conf = open(BLUETOOTH_CONF).read()
        strict = re.sub(r'<policy context="default">\s*<allow send_destination="org.bluez"/>\s*</policy>', "", conf)
        if strict == conf:
            raise AssertionError(f"{BLUETOOTH_CONF} has no default-context grant to org.bluez to take out:\n{conf}")
        with open(BLUETOOTH_CONF, "w") as f:
            f.write(strict)
        reload_bus()
        step("bluetooth.conf made strict: only root and group bluetooth may call org.bluez")

        # 2. The peer on /dev/vhci; bluetoothd (bluetooth.service) publishes and powers hci0.
        run("modprobe", "hci_vhci")
        peer = Peer(["hr"], rate=2)
        result["peer"] = peer.info
        step("peer ready")
        adapter_path = f"/org/bluez/hci{peer.info['h4']['index']}"
        # udev starts bluetooth.target (and with it bluetooth.service) when hci0 appears; started
        # here too in case the boot skipped it (its condition: /sys/class/bluetooth).
        run("systemctl", "start", "bluetooth.service", timeout=60)
        wait_for(lambda: run("systemctl", "is-active", "bluetooth.service", check=False).returncode == 0, 60,
                 "bluetooth.service to be active", interval=1)
        bus = dbus.SystemBus()
        power_on(bus, adapter_path, 30)
        step(f"bluetooth.service active, {adapter_path} powered")

        # 3. make install, as README.md says.
        run("make", "-C", REPO, "install", f"BINARY={BIN}")
        run("systemd-sysusers")
        run("systemd-tmpfiles", "--create")
        run("systemctl", "daemon-reload")
        uid = pwd.getpwnam("healthgate").pw_uid
        step(f"make install done; user healthgate is uid {uid}")

        # 4. The D-Bus policy is what lets healthgate in, and only as far as it lists.
        listed = as_healthgate_dbus("/", "org.freedesktop.DBus.ObjectManager.GetManagedObjects")
        if listed.returncode != 0 or adapter_path not in listed.stdout:
            raise AssertionError(f"as healthgate, GetManagedObjects failed with the policy installed: {listed.stderr}")
        unlisted = as_healthgate_dbus("/org/bluez", "org.bluez.ProfileManager1.UnregisterProfile", "objpath:/x")
        if "AccessDenied" not in unlisted.stderr:
            raise AssertionError(f"as healthgate, ProfileManager1 (not in the policy) was not denied: {unlisted.stderr}")
        os.rename(POLICY, POLICY + ".off")
        reload_bus()
        denied = as_healthgate_dbus("/", "org.freedesktop.DBus.ObjectManager.GetManagedObjects")
        os.rename(POLICY + ".off", POLICY)
        reload_bus()
        if "AccessDenied" not in denied.stderr:
            raise AssertionError(f"without healthgate-bluez.conf, healthgate was not denied: {denied.stdout} {denied.stderr}")
        step("D-Bus: healthgate may call org.bluez through healthgate-bluez.conf only, and not ProfileManager1")

        # 5. The configuration, a FIT file in the watch folder, a file in /home and /tmp to hide.
        write_config(BASE_CONFIG)
        st = os.stat(CONFIG)
        result["config_mode"] = oct(st.st_mode & 0o777)
        shutil.copy(os.path.join(REPO, "Fixtures", "fit", FIT), f"{STATE}/inbox/{FIT}")
        os.makedirs("/home/someone", exist_ok=True)
        with open("/home/someone/secret", "w") as f:
            f.write("not for the daemon\n")
        with open("/tmp/hg-host-tmp", "w") as f:
            f.write("the host's /tmp\n")

        # 6. enable --now: Type=notify, so it returns once the daemon said READY=1. bluetoothd is
        # stopped first (a daemon started before it, or before its USB adapter was plugged in):
        # the ble driver waits for it, saying so once at warning, instead of failing.
        run("systemctl", "stop", "bluetooth.service", timeout=90)
        run("systemctl", "enable", "--now", "healthgate", timeout=120)
        props = show("Type", "ActiveState", "SubState", "StatusText", "MainPID", "WatchdogUSec", "NRestarts",
                     "WatchdogTimestampMonotonic", "ActiveEnterTimestampMonotonic")
        result["started"] = props
        if (props["Type"], props["ActiveState"], props["SubState"]) != ("notify", "active", "running"):
            raise AssertionError(f"after enable --now the unit is not a running Type=notify service: {props}")
        # The daemon's first STATUS= travels with READY=1 in one message: a StatusText when
        # enable --now returns means systemd waited for READY. What the daemon does before READY
        # (open and migrate the database) is done by then.
        if "drivers running" not in props["StatusText"]:
            raise AssertionError(f"no STATUS= from the daemon (StatusText {props['StatusText']!r})")
        if not stored(DB, "SELECT count(*) FROM workouts"):
            raise AssertionError(f"the unit is active but {DB} has no schema yet: active before READY?")
        pid = int(props["MainPID"])
        started = line_with(pid, "started")
        if started is None:
            raise AssertionError("the daemon's 'started' line is not in the journal")
        step(f"READY: {props['SubState']}, StatusText {props['StatusText']!r}, pid {pid}")

        # 6b. The ble driver waits for bluetoothd (no restarts); started, it records.
        waiting = wait_for(lambda: line_with(pid, "bluetoothd is not running; waiting"), 60,
                           "the ble driver to say it waits for bluetoothd", interval=1)
        if waiting[0] != 4:
            raise AssertionError(f"waiting for bluetoothd is not logged at warning (4): {waiting}")
        run("systemctl", "start", "bluetooth.service", timeout=90)
        power_on(bus, adapter_path, 30)
        ready = wait_for(lambda: line_with(pid, "BlueZ adapter /org/bluez/hci0 ready"), 60,
                         "the ble driver to use the adapter once bluetoothd runs", interval=1)
        restarts = [line for line in daemon_lines(pid) if "driver stopped; restarting" in line[1]]
        if restarts:
            raise AssertionError(f"the ble driver failed while waiting for bluetoothd: {restarts}")
        result["waited_for_bluetoothd"] = {"waiting_line": waiting, "ready_line": ready}
        step("the ble driver waited for bluetoothd (warning, no restart) and took the adapter when it came")

        # 7. The sandbox, observed on the running process and in its mount namespace.
        status = dict(line.split(":\t", 1) for line in open(f"/proc/{pid}/status").read().splitlines() if ":\t" in line)
        result["proc_status"] = {k: status[k] for k in ("Uid", "CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")}
        checks = {"Uid": status["Uid"].split()[0] == str(uid), "CapEff": int(status["CapEff"], 16) == 0,
                  "CapPrm": int(status["CapPrm"], 16) == 0, "CapBnd": int(status["CapBnd"], 16) == 0,
                  "CapAmb": int(status["CapAmb"], 16) == 0, "NoNewPrivs": status["NoNewPrivs"].strip() == "1",
                  "Seccomp": status["Seccomp"].strip() == "2"}
        if not all(checks.values()):
            raise AssertionError(f"the daemon's /proc status is not sandboxed as the unit says: {result['proc_status']}")
        shutil.copy(f"/proc/{pid}/mountinfo", os.path.join(RESULTS, "daemon-mountinfo"))
        probes = {
            "root writes /etc": in_unit_namespace(pid, None, "touch", "/etc/hg-probe"),
            "root writes /usr": in_unit_namespace(pid, None, "touch", "/usr/hg-probe"),
            "healthgate writes /var/lib/healthgate": in_unit_namespace(pid, uid, "touch", f"{STATE}/hg-probe"),
        }
        if probes["root writes /etc"].returncode == 0 or "Read-only" not in probes["root writes /etc"].stderr:
            raise AssertionError("in the unit's namespace /etc is writable")
        if probes["root writes /usr"].returncode == 0 or "Read-only" not in probes["root writes /usr"].stderr:
            raise AssertionError("in the unit's namespace /usr is writable")
        if probes["healthgate writes /var/lib/healthgate"].returncode != 0:
            raise AssertionError("in the unit's namespace the state directory is not writable")
        os.remove(f"{STATE}/hg-probe")
        if os.path.exists(f"/proc/{pid}/root/home/someone/secret") or os.path.exists(f"/proc/{pid}/root/tmp/hg-host-tmp"):
            raise AssertionError("the daemon sees /home or the host's /tmp")
        step("sandbox: uid healthgate, no capabilities, NoNewPrivs 1, Seccomp 2; /etc and /usr read-only, "
             "the state directory writable, /home and the host's /tmp hidden")

        # 8. What the drivers need works: the FIT file imported and moved, live heart rates stored.
        wait_for(lambda: os.path.exists(f"{STATE}/inbox/imported/{FIT}"), 90, f"{FIT} to be imported and moved")
        fit_rows = stored(DB, "SELECT count(*) FROM workouts WHERE source_file LIKE ?", (f"%{FIT}",))
        if not fit_rows or fit_rows[0][0] < 1:
            raise AssertionError(f"{FIT} was moved to imported/ but no workout is stored from it")
        step(f"watch folder: {FIT} imported ({fit_rows[0][0]} workout), moved to imported/")
        wait_for(lambda: len(stored(DB, SAMPLES, (HR_ADDRESS,))) >= MIN_SAMPLES, 120,
                 f"{MIN_SAMPLES} live heart-rate samples stored through BlueZ")
        owner = pwd.getpwuid(os.stat(DB).st_uid).pw_name
        if owner != "healthgate":
            raise AssertionError(f"{DB} is owned by {owner}")
        step(f"BlueZ over D-Bus: {len(stored(DB, SAMPLES, (HR_ADDRESS,)))} live samples stored in {DB} (owner {owner})")

        # 9. The watchdog: armed, and pinged (systemd's last-ping timestamp moves).
        if props["WatchdogUSec"] not in ("30s", "30000000"):
            raise AssertionError(f"WatchdogUSec is {props['WatchdogUSec']!r}, the unit says 30s")
        first_ping = int(show("WatchdogTimestampMonotonic")["WatchdogTimestampMonotonic"])
        wait_for(lambda: int(show("WatchdogTimestampMonotonic")["WatchdogTimestampMonotonic"]) > first_ping, 60,
                 "systemd to see a watchdog ping", interval=1)
        step("watchdog: WatchdogUSec 30s, pings seen")

        # 10. Reload: a second watch folder with a GPX file, another metrics address.
        os.makedirs(f"{STATE}/inbox2")
        shutil.copy(os.path.join(REPO, "Fixtures", "gpx", GPX), f"{STATE}/inbox2/{GPX}")
        os.chown(f"{STATE}/inbox2", uid, uid)
        write_config(RELOADED_CONFIG)
        run("systemctl", "reload", "healthgate")
        wait_for(lambda: line_with(pid, "configuration reloaded"), 60, "the daemon to log 'configuration reloaded'", interval=1)
        wait_for(lambda: os.path.exists(f"{STATE}/inbox2/imported/{GPX}"), 90, f"{GPX} in the new watch folder imported")
        gpx_rows = stored(DB, "SELECT count(*) FROM workouts WHERE source_file LIKE ?", (f"%{GPX}",))
        if not gpx_rows or gpx_rows[0][0] < 1:
            raise AssertionError(f"{GPX} was moved to inbox2/imported/ but no workout is stored from it")
        wait_for(lambda: "3/3 drivers running" in show("StatusText")["StatusText"], 30, "StatusText to say 3/3 drivers running")
        warning = line_with(pid, "takes effect at the next restart")
        if warning is None or warning[0] != 4:
            raise AssertionError(f"the changed [api] was not logged at warning (4): {warning}")
        step("reload: inbox2 added and its GPX imported (a workout), the changed [api] logged at warning")

        # A broken configuration: refused, logged at err, the unit keeps running.
        write_config(BROKEN_CONFIG)
        run("systemctl", "reload", "healthgate")
        refused = wait_for(lambda: line_with(pid, "configuration not reloaded"), 60,
                           "the daemon to refuse the broken configuration", interval=1)
        after = show("ActiveState", "SubState", "MainPID")
        if refused[0] != 3 or after != {"ActiveState": "active", "SubState": "running", "MainPID": str(pid)}:
            raise AssertionError(f"broken reload: line {refused}, unit {after}")
        write_config(RELOADED_CONFIG)
        step("broken reload refused at err, the daemon runs on")

        # 11. journald: the daemon's lines with priorities info, warning, err.
        lines = daemon_lines(pid)
        with open(os.path.join(RESULTS, "daemon-journal.txt"), "w") as f:
            f.writelines(f"{p} {m}\n" for p, m in lines)
        for text, priority in (("started", 6), ("configuration reloaded", 6), ("imported", 6)):
            found = line_with(pid, text)
            if found is None or found[0] != priority:
                raise AssertionError(f"journal: {text!r} not at priority {priority}: {found}")
        step(f"journald: {len(lines)} daemon lines; info 6, warning 4, err 3 where expected")

        # 12. The exposure of the running unit.
        result["exposure"] = running_exposure(MAX_EXPOSURE)
        step(f"systemd-analyze security on the running unit: {result['exposure']}")

        # 12b. bluetoothd restarted under the running unit (the peer goes on sending): the daemon
        # keeps running (same process, no restart), the journal says the link was lost and came
        # back, and the session reconnects through the new bluetoothd into the same workout.
        before = stored(DB, SAMPLES, (HR_ADDRESS,))
        lines_before = len(daemon_lines(pid))
        restart["t"] = time.time()
        run("systemctl", "restart", "bluetooth.service", timeout=90)
        step("systemctl restart bluetooth")
        power_on(bus, adapter_path, 30)
        step(f"the new bluetoothd publishes {adapter_path} powered")
        reconnected = wait_for(lambda: line_with(pid, "reconnected (connection 2)"), 120,
                               "the daemon to log its reconnection (connection 2)", interval=1)
        restart["reconnected_t"] = time.time()
        step("the daemon reconnected through the new bluetoothd")
        after = show("ActiveState", "SubState", "MainPID", "NRestarts")
        during = daemon_lines(pid)[lines_before:]
        with open(os.path.join(RESULTS, "daemon-journal-bluetooth-restart.txt"), "w") as f:
            f.writelines(f"{p} {m}\n" for p, m in during)
        left = next((line for line in during if "bluetoothd left the bus" in line[1]), None)
        back = next((line for line in during if "bluetoothd is back on the bus" in line[1]), None)
        result["bluetooth_restart"] = {"stored_before": len(before), "unit_after": after, "left_line": left,
                                       "back_line": back, "reconnected_line": reconnected,
                                       "reconnect_s": round(restart["reconnected_t"] - restart["t"], 2)}
        if after != {"ActiveState": "active", "SubState": "running", "MainPID": str(pid), "NRestarts": "0"}:
            raise AssertionError(f"after systemctl restart bluetooth the unit is not the same running process: {after}")
        if left is None or left[0] != 4:
            raise AssertionError(f"bluetoothd leaving is not in the journal at warning (4): {left}")
        if back is None or back[0] != 6 or reconnected[0] != 6:
            raise AssertionError(f"bluetoothd's return and the reconnection are not in the journal at info (6): {back} {reconnected}")
        if any(p <= 3 for p, _ in during):
            raise AssertionError(f"the bluetoothd restart logged an error: {[line for line in during if line[0] <= 3]}")
        wait_for(lambda: len(stored(DB, SAMPLES, (HR_ADDRESS,))) > len(before), 60,
                 "heart rates stored after the reconnection")
        step(f"bluetoothd restart: the same daemon (pid {pid}) runs on; journal: bluetoothd left at warning, back and "
             f"reconnected at info, no error; recording again")

        # 12c. The system bus lost under the running unit: dbus-daemon killed (dbus.socket starts a
        # new one at the next connection; bluetoothd exits with its bus). The daemon runs on: the
        # ble driver ends with the lost bus, having stored its values and completed its workout,
        # and the supervisor starts it again (1 s, doubling) until bluetoothd is back.
        before = stored(DB, SAMPLES, (HR_ADDRESS,))
        lines_before = len(daemon_lines(pid))
        bus_loss["t"] = time.time()
        run("systemctl", "kill", "--signal=SIGKILL", "dbus.service")
        step("dbus-daemon killed")
        wait_for(lambda: any("driver stopped; restarting" in m for _, m in daemon_lines(pid)[lines_before:]), 60,
                 "the daemon's supervisor to restart the ble driver", interval=1)
        run("systemctl", "start", "dbus.service", timeout=60)
        run("systemctl", "restart", "bluetooth.service", timeout=90)
        new_bus = dbus.bus.BusConnection(dbus.bus.BUS_SYSTEM)
        power_on(new_bus, adapter_path, 30)
        step("a new system bus, bluetooth.service restarted")
        wait_for(lambda: any(": connected, recording" in m for _, m in daemon_lines(pid)[lines_before:]), 120,
                 "the restarted driver to connect the sensor", interval=1)
        bus_loss["reconnected_t"] = time.time()
        after = show("ActiveState", "SubState", "MainPID", "NRestarts")
        during = daemon_lines(pid)[lines_before:]
        with open(os.path.join(RESULTS, "daemon-journal-bus-loss.txt"), "w") as f:
            f.writelines(f"{p} {m}\n" for p, m in during)
        lost_bus = next((line for line in during if "D-Bus connection lost" in line[1]), None)
        restarting = next((line for line in during if "driver stopped; restarting" in line[1]), None)
        reconnected = next((line for line in during if ": connected, recording" in line[1]), None)
        result["bus_loss"] = {"stored_before": len(before), "unit_after": after, "lost_line": lost_bus,
                              "restarting_line": restarting, "reconnected_line": reconnected,
                              "driver_restarts": sum("driver stopped; restarting" in m for _, m in during),
                              "reconnect_s": round(bus_loss["reconnected_t"] - bus_loss["t"], 2)}
        if after != {"ActiveState": "active", "SubState": "running", "MainPID": str(pid), "NRestarts": "0"}:
            raise AssertionError(f"after the bus loss the unit is not the same running process: {after}")
        if lost_bus is None or lost_bus[0] != 4:
            raise AssertionError(f"the lost bus is not in the journal at warning (4): {lost_bus}")
        if restarting[0] != 3 or "system bus was lost" not in restarting[1]:
            raise AssertionError(f"the driver's end is not in the journal at err (3) naming the lost bus: {restarting}")
        if reconnected[0] != 6:
            raise AssertionError(f"the reconnection is not in the journal at info (6): {reconnected}")
        # The restarted driver waits for bluetoothd; only the bus itself missing fails it again.
        waited = [m for _, m in during if "driver stopped; restarting" in m and "bluetoothd is not running" in m]
        if waited:
            raise AssertionError(f"the restarted driver failed for want of bluetoothd instead of waiting: {waited}")
        wait_for(lambda: len(stored(DB, SAMPLES, (HR_ADDRESS,))) > len(before), 60,
                 "heart rates stored after the driver's restart")
        step(f"bus loss: the same daemon (pid {pid}) runs on; journal: the lost bus at warning, the driver's restart "
             f"at err ({result['bus_loss']['driver_restarts']}x), the reconnection at info; recording again")

        # 13. Still the same process well past WatchdogSec (never killed by the watchdog).
        entered = int(props["ActiveEnterTimestampMonotonic"])
        wait_for(lambda: time.clock_gettime(time.CLOCK_MONOTONIC) * 1e6 - entered > 45e6, 60,
                 "45 s since the unit became active", interval=1)
        props = show("ActiveState", "MainPID", "NRestarts")
        if props != {"ActiveState": "active", "MainPID": str(pid), "NRestarts": "0"}:
            raise AssertionError(f"the unit did not stay up past WatchdogSec: {props}")
        step("the same process active 45 s after READY (WatchdogSec 30 s)")

        # 14. stop stores what the live session held: the peer pauses, the unit stops at once.
        peer.control("pause hr")
        held_before = len(stored(DB, SAMPLES, (HR_ADDRESS,)))
        run("systemctl", "stop", "healthgate", timeout=90)
        props = show("ActiveState", "Result", "ExecMainStatus")
        result["stopped"] = props
        if props["ActiveState"] != "inactive" or props["Result"] != "success":
            raise AssertionError(f"systemctl stop: {props}")
        sent = [r for r in peer.sent() if r["peripheral"] == "hr" and r.get("malformed") is None]
        bpm_stored = [row[0] for row in stored(DB, SAMPLES, (HR_ADDRESS,))]
        rr_stored = [row[0] for row in stored(DB, RR, (HR_ADDRESS,))]
        windows = [(restart["t"] - RESTART_SLACK_S, restart["reconnected_t"]),
                   (max(bus_loss["t"] - RESTART_SLACK_S, restart["reconnected_t"]), bus_loss["reconnected_t"])]
        missing = missing_in_windows(sent, bpm_stored, rr_stored, windows)
        kept = [r for i, r in enumerate(sent) if i not in set(missing)]
        bpm_sent = [r["fields"]["bpm"] for r in kept]
        rr_sent = [rr / 1024 for r in kept for rr in r["fields"].get("rr", [])]
        result.update(sent=len(sent), stored_before_stop=held_before, stored=len(bpm_stored),
                      rr_sent=len(rr_sent), rr_stored=len(rr_stored), not_received=len(missing),
                      not_received_seq=[sent[i]["seq"] for i in missing])
        # Two: the driver restarted after the bus loss completed its first workout and began another.
        workouts = stored(DB, "SELECT in_progress, source_driver FROM workouts WHERE source_device = ? ORDER BY start_time",
                          (HR_ADDRESS,))
        if workouts != [(0, "ble"), (0, "ble")]:
            raise AssertionError(f"expected two completed ble workouts after the stop, found {workouts}")
        stopped = next((line for line in daemon_lines(pid) if line[1].split()[1:] == ["stopped"]), None)
        if stopped is None or stopped[0] != 6:
            raise AssertionError(f"the daemon's 'stopped' line is missing or not info: {stopped}")
        step(f"stop: {len(bpm_sent)} heart rates and {len(rr_sent)} RR intervals stored == sent log "
             f"({len(bpm_sent) - held_before} of them held in memory at the stop; {len(missing)} sent while bluetoothd "
             f"or the bus was away not received), both workouts completed")

        # 15. make uninstall takes the policy away again (and tells the bus).
        run("systemctl", "disable", "healthgate")
        run("make", "-C", REPO, "uninstall")
        if os.path.exists(POLICY) or os.path.exists("/etc/systemd/system/healthgate.service"):
            raise AssertionError("make uninstall left the D-Bus policy or the unit behind")
        denied = as_healthgate_dbus("/", "org.freedesktop.DBus.ObjectManager.GetManagedObjects")
        if "AccessDenied" not in denied.stderr:
            raise AssertionError(f"after make uninstall, healthgate still reaches org.bluez: {denied.stderr}")
        step("make uninstall: the unit and the policy gone, healthgate denied again")
        return 0
    finally:
        save_results(result, timings, peer, DB, units=("healthgate", "bluetooth"))


if __name__ == "__main__":
    sys.exit(main())
