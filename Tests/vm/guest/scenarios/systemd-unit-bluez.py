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

import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import time

import dbus

from vmpeer import HR_ADDRESS, RESULTS, RR, SAMPLES, Peer, adapter_powered, step, stored, timings, wait_for

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


def run(*cmd: str, check: bool = True, timeout: float = 120, quiet: bool = False, **kw) -> subprocess.CompletedProcess:
    """Runs cmd, logs it with (the end of) its output unless quiet; with check, fails on a
    non-zero exit."""
    p = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, **kw)
    out = (p.stdout + p.stderr).strip()
    if not quiet:
        print(f"$ {' '.join(cmd)}  -> {p.returncode}" + (f"\n{out[-600:]}" if out else ""), flush=True)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {p.returncode}: {out[-2000:]}")
    return p


def show(*props: str) -> dict[str, str]:
    """`systemctl show healthgate -p ...` as a dict."""
    out = run("systemctl", "show", "healthgate", "-p", ",".join(props), quiet=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


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


def journal() -> list[dict]:
    """The unit's journal entries (the daemon's and systemd's about it)."""
    out = run("journalctl", "-u", "healthgate", "-o", "json", "--no-pager", quiet=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def daemon_lines(pid: int) -> list[tuple[int, str]]:
    """(priority, message) of the daemon process's journal lines."""
    return [(int(e["PRIORITY"]), e["MESSAGE"]) for e in journal()
            if e.get("_PID") == str(pid) and isinstance(e.get("MESSAGE"), str)]


def line_with(pid: int, text: str) -> tuple[int, str] | None:
    return next((line for line in daemon_lines(pid) if text in line[1]), None)


def in_unit_namespace(pid: int, uid: int | None, *cmd: str) -> subprocess.CompletedProcess:
    """Runs cmd in the running unit's mount namespace (as uid, or root)."""
    user = ["--setuid", str(uid), "--setgid", str(uid)] if uid is not None else []
    return run("nsenter", f"--target={pid}", "--mount", *user, "--", *cmd, check=False)


def main() -> int:
    result: dict = {}
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
        try:
            wait_for(lambda: adapter_powered(bus, adapter_path), 30, f"bluetoothd to publish and power {adapter_path}")
        except TimeoutError:
            props = dbus.Interface(bus.get_object("org.bluez", adapter_path), "org.freedesktop.DBus.Properties")
            props.Set("org.bluez.Adapter1", "Powered", dbus.Boolean(True))
            wait_for(lambda: adapter_powered(bus, adapter_path), 30, "the adapter to power on")
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

        # 6. enable --now: Type=notify, so it returns once the daemon said READY=1.
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
        sec = run("systemd-analyze", "security", "healthgate.service", "--no-pager", check=False)
        with open(os.path.join(RESULTS, "systemd-analyze-security.txt"), "w") as f:
            f.write(sec.stdout + sec.stderr)
        m = re.search(r"Overall exposure level for healthgate\.service: ([0-9.]+)", sec.stdout)
        if not m:
            raise AssertionError(f"no exposure level in systemd-analyze security's output: {sec.stdout[-500:]}")
        result["exposure"] = float(m.group(1))
        if result["exposure"] > MAX_EXPOSURE:
            raise AssertionError(f"exposure {result['exposure']} > {MAX_EXPOSURE}")
        step(f"systemd-analyze security on the running unit: {result['exposure']}")

        # 13. Still the same process well past WatchdogSec (never killed by the watchdog).
        entered = int(props["ActiveEnterTimestampMonotonic"])
        wait_for(lambda: time.clock_gettime(time.CLOCK_MONOTONIC) * 1e6 - entered > 45e6, 60,
                 "45 s since the unit became active", interval=1)
        props = show("ActiveState", "MainPID", "NRestarts")
        if props != {"ActiveState": "active", "MainPID": str(pid), "NRestarts": "0"}:
            raise AssertionError(f"the unit did not stay up past WatchdogSec: {props}")
        step("the same process active 45 s after READY (WatchdogSec 30 s)")

        # 14. stop stores what the live session held: the peer pauses, the unit stops at once.
        sent_count = peer.control("pause hr")["sent"]
        held_before = len(stored(DB, SAMPLES, (HR_ADDRESS,)))
        run("systemctl", "stop", "healthgate", timeout=90)
        props = show("ActiveState", "Result", "ExecMainStatus")
        result["stopped"] = props
        if props["ActiveState"] != "inactive" or props["Result"] != "success":
            raise AssertionError(f"systemctl stop: {props}")
        sent = [r for r in peer.sent() if r["peripheral"] == "hr" and r.get("malformed") is None]
        bpm_sent = [r["fields"]["bpm"] for r in sent]
        rr_sent = [rr / 1024 for r in sent for rr in r["fields"].get("rr", [])]
        bpm_stored = [row[0] for row in stored(DB, SAMPLES, (HR_ADDRESS,))]
        rr_stored = [row[0] for row in stored(DB, RR, (HR_ADDRESS,))]
        result.update(sent=len(bpm_sent), stored_before_stop=held_before, stored=len(bpm_stored),
                      rr_sent=len(rr_sent), rr_stored=len(rr_stored))
        if bpm_stored != bpm_sent:
            raise AssertionError(f"stored heart rates != the peer's sent log ({sent_count} sent):\n{bpm_stored}\n{bpm_sent}")
        if len(rr_stored) != len(rr_sent) or any(abs(a - b) > 1e-12 for a, b in zip(rr_stored, rr_sent)):
            raise AssertionError(f"stored RR intervals != sent log:\n{rr_stored}\n{rr_sent}")
        workouts = stored(DB, "SELECT in_progress, source_driver FROM workouts WHERE source_device = ?", (HR_ADDRESS,))
        if workouts != [(0, "ble")]:
            raise AssertionError(f"expected one completed ble workout after the stop, found {workouts}")
        stopped = line_with(pid, "stopped")
        if stopped is None or stopped[0] != 6:
            raise AssertionError(f"the daemon's 'stopped' line is missing or not info: {stopped}")
        step(f"stop: {len(bpm_sent)} heart rates and {len(rr_sent)} RR intervals stored == sent log "
             f"({len(bpm_sent) - held_before} of them held in memory at the stop), the workout completed")

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
        result["timings"] = timings
        with open(os.path.join(RESULTS, "result.json"), "w") as f:
            json.dump(result, f, indent=1)
        subprocess.run(["systemctl", "stop", "healthgate"], check=False, capture_output=True, timeout=90)
        with open(os.path.join(RESULTS, "unit-journal.log"), "w") as f:
            subprocess.run(["journalctl", "-u", "healthgate", "-u", "bluetooth", "--no-pager", "-o", "short-monotonic"],
                           stdout=f, stderr=subprocess.STDOUT, check=False)
        if peer is not None:
            peer.close()
            subprocess.run(["cp", peer.sent_log, RESULTS], check=False)
        for suffix in ("", "-wal", "-shm"):
            subprocess.run(["cp", DB + suffix, RESULTS], check=False, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    sys.exit(main())
