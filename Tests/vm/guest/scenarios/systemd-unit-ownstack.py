"""The shipped systemd unit with the own-host-stack drop-in (systemd/healthgate-ble.conf), for real:
bluetoothd is stopped and masked for the scenario (the HCI user channel takes the adapter whole),
the peer's heart-rate sensor on /dev/vhci is the guest's hciN, `make install`, the drop-in copied
to /etc/systemd/system/healthgate.service.d/ as README.md says, a configuration whose `ble` driver
has `hci = "hciN"`, then `systemctl enable --now healthgate`: the daemon opens hciN through the
HCI user channel and records the sensor; the running process holds exactly the capabilities the
drop-in grants (CAP_NET_ADMIN and CAP_NET_RAW: inheritable, effective, permitted, bounding, ambient) and no
more; `systemd-analyze security` on the running unit is at most 2.0 (the bound `make
systemd-check` sets for the drop-in); `systemctl stop` stores what the live session held: the
stored heart rates and RR intervals equal the peer's sent log. Then the unit is started again and
the controller unplugged under it (the peer exits, so hciN goes): the same process says at
warning that it waits for the controller (no driver restarts with a growing delay), and records
again once a new peer's controller is there."""
from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import sys

from vmunit import daemon_lines, run, running_exposure, save_results, show
from vmpeer import HR_ADDRESS, RESULTS, SAMPLES, Peer, check_heart_rates_stored, step, stored, timings, wait_for

BIN = os.environ["HG_BIN"]
REPO = os.path.join(os.environ["HG_SHARE"], "repo")
STATE = "/var/lib/healthgate"
DB = f"{STATE}/ownstack.sqlite"
CONFIG = "/etc/healthgate/healthgate.toml"
DROP_IN_DIR = "/etc/systemd/system/healthgate.service.d"
DROP_IN = f"{DROP_IN_DIR}/ble.conf"
MAX_EXPOSURE = 2.0  # make systemd-check's bound for the unit with healthgate-ble.conf
MIN_SAMPLES = 8  # live heart-rate samples stored before the stop
CAP_NET_ADMIN, CAP_NET_RAW = 12, 13
DROP_IN_CAPS = (1 << CAP_NET_ADMIN) | (1 << CAP_NET_RAW)


def config(hci: str) -> str:
    # flush_ms at its maximum: readings wait up to 10 s in memory, so the stop finds some held.
    return f"""# written by the systemd-unit-ownstack VM scenario
database = "{DB}"
log_level = "info"

[drivers.strap]
type = "ble"
hci = "{hci}"
devices = ["auto"]
gap_s = 600
flush_ms = 10000
"""


def adapter_down(hci: str) -> bool:
    """hciconfig says the adapter is DOWN (the kernel powers an adapter nobody uses off by itself
    about 2 s after it appears; the HCI user channel needs it down)."""
    out = run("hciconfig", hci, check=False, quiet=True).stdout
    return "DOWN" in out


def main() -> int:
    result: dict = {}
    peer = None
    try:
        run("systemctl", "is-system-running", "--wait", check=False, timeout=150)

        # 1. bluetoothd leaves the adapters alone: stopped and masked for this boot (udev would
        # start it again when the peer's controller appears).
        run("systemctl", "mask", "--runtime", "--now", "bluetooth.service", timeout=60)
        if run("systemctl", "is-active", "bluetooth.service", check=False).returncode == 0:
            raise AssertionError("bluetooth.service still active after mask --now")
        step("bluetooth.service stopped and masked for this boot")

        # 2. The peer on /dev/vhci: its controller is hciN; the kernel powers it off by itself.
        run("modprobe", "hci_vhci")
        peer = Peer(["hr"], rate=2)
        result["peer"] = peer.info
        hci = f"hci{peer.info['h4']['index']}"
        step(f"peer ready on {hci}")
        try:
            wait_for(lambda: adapter_down(hci), 15, f"{hci} to be down", interval=0.5)
        except TimeoutError:
            run("hciconfig", hci, "down")
        run("hciconfig", hci)
        step(f"{hci} is down")

        # 3. make install, the drop-in as README.md says, the configuration.
        run("make", "-C", REPO, "install", f"BINARY={BIN}")
        run("systemd-sysusers")
        run("systemd-tmpfiles", "--create")
        os.makedirs(DROP_IN_DIR, exist_ok=True)
        shutil.copy("/usr/local/share/healthgate/healthgate-ble.conf", DROP_IN)
        run("systemctl", "daemon-reload")
        uid = pwd.getpwnam("healthgate").pw_uid
        with open(CONFIG, "r+") as f:  # in place: the file keeps its owner and mode
            f.truncate(0)
            f.write(config(hci))
        drop_ins = show("DropInPaths")["DropInPaths"]
        if DROP_IN not in drop_ins:
            raise AssertionError(f"systemd does not use the drop-in: DropInPaths={drop_ins!r}")
        step(f"make install done, drop-in {DROP_IN} in use, ble driver on {hci}")

        # 4. enable --now: READY, then the daemon records through the HCI user channel.
        run("systemctl", "enable", "--now", "healthgate", timeout=120)
        props = show("Type", "ActiveState", "SubState", "StatusText", "MainPID")
        result["started"] = props
        if (props["ActiveState"], props["SubState"]) != ("active", "running"):
            raise AssertionError(f"after enable --now the unit is not running: {props}")
        pid = int(props["MainPID"])
        step(f"READY: StatusText {props['StatusText']!r}, pid {pid}")

        # 5. The capabilities the drop-in grants, and no more.
        status = dict(line.split(":\t", 1) for line in open(f"/proc/{pid}/status").read().splitlines() if ":\t" in line)
        result["proc_status"] = {k: status[k].strip() for k in ("Uid", "CapInh", "CapEff", "CapPrm", "CapBnd", "CapAmb",
                                                                "NoNewPrivs", "Seccomp")}
        # Ambient capabilities are kept across execve only when also inheritable: systemd sets both.
        caps = {k: int(status[k], 16) for k in ("CapInh", "CapEff", "CapPrm", "CapBnd", "CapAmb")}
        if any(v != DROP_IN_CAPS for v in caps.values()) or status["Uid"].split()[0] != str(uid) \
                or status["NoNewPrivs"].strip() != "1" or status["Seccomp"].strip() != "2":
            raise AssertionError(f"the daemon does not hold exactly CAP_NET_ADMIN and CAP_NET_RAW as healthgate, "
                                 f"with NoNewPrivs and seccomp: {result['proc_status']}")
        step(f"capabilities: inheritable, effective, permitted, bounding and ambient {DROP_IN_CAPS:#x} (CAP_NET_ADMIN, CAP_NET_RAW) "
             f"only; uid healthgate, NoNewPrivs 1, Seccomp 2")

        # 6. Recording: heart rates stored through the own stack.
        wait_for(lambda: len(stored(DB, SAMPLES, (HR_ADDRESS,))) >= MIN_SAMPLES, 120,
                 f"{MIN_SAMPLES} heart-rate samples stored through the own host stack")
        ready = next((line for line in daemon_lines(pid) if re.search(r"\bcontroller [0-9A-F:]{17} ready\b", line[1])), None)
        if ready is None:
            raise AssertionError("no 'controller ... ready' line from the own host stack in the journal")
        result["controller_ready"] = ready
        step(f"own host stack on {hci}: {len(stored(DB, SAMPLES, (HR_ADDRESS,)))} samples stored; journal: {ready[1][:120]}")

        # 7. The exposure of the running unit with the drop-in.
        result["exposure"] = running_exposure(MAX_EXPOSURE)
        step(f"systemd-analyze security on the running unit with the drop-in: {result['exposure']}")

        # 8. stop stores what the live session held: the peer pauses, the unit stops at once.
        peer.control("pause hr")
        held_before = len(stored(DB, SAMPLES, (HR_ADDRESS,)))
        run("systemctl", "stop", "healthgate", timeout=90)
        props = show("ActiveState", "Result", "NRestarts")
        result["stopped"] = props
        if props != {"ActiveState": "inactive", "Result": "success", "NRestarts": "0"}:
            raise AssertionError(f"systemctl stop: {props}")
        bpm_sent, rr_sent = check_heart_rates_stored(peer, DB, result)
        result["stored_before_stop"] = held_before
        workouts = stored(DB, "SELECT in_progress, source_driver FROM workouts WHERE source_device = ?", (HR_ADDRESS,))
        if workouts != [(0, "ble")]:
            raise AssertionError(f"expected one completed ble workout after the stop, found {workouts}")
        lines = daemon_lines(pid)
        with open(os.path.join(RESULTS, "daemon-journal.txt"), "w") as f:
            f.writelines(f"{p} {m}\n" for p, m in lines)
        step(f"stop: {len(bpm_sent)} heart rates and {len(rr_sent)} RR intervals stored == sent log "
             f"({len(bpm_sent) - held_before} of them held in memory at the stop), the workout completed")

        # 9. The controller unplugged under the running unit, then plugged back: the driver ends,
        # and the restarted one waits for hciN instead of failing; it records again.
        run("systemctl", "start", "healthgate", timeout=120)
        pid = int(show("MainPID")["MainPID"])
        peer.control("resume hr")
        before = len(stored(DB, SAMPLES, (HR_ADDRESS,)))
        wait_for(lambda: len(stored(DB, SAMPLES, (HR_ADDRESS,))) >= before + 4, 120, "recording again after the start")
        peer.close()
        peer = None
        waiting = f"{hci}: no such Bluetooth adapter (ENODEV); waiting for the controller"
        wait_for(lambda: any(waiting in m for _, m in daemon_lines(pid)), 60, f"'{waiting}' in the journal")
        line = next((p, m) for p, m in daemon_lines(pid) if waiting in m)
        if line[0] != 4:
            raise AssertionError(f"the wait is not logged at warning: {line}")
        result["unplugged"] = line[1]
        step(f"controller unplugged: journal (warning): {line[1][:150]}")
        # systemd's view: the status line counts the driver as waiting.
        status = wait_for(lambda: (t := show("StatusText")["StatusText"]).endswith("1 waiting") and t, 60,
                          "StatusText to count the driver as waiting")
        if not status.startswith("0/1 drivers running, 1 waiting"):
            raise AssertionError(f"StatusText while the controller is away: {status}")
        result["status_waiting"] = status
        step(f"StatusText: '{status}'")
        peer = Peer(["hr"], rate=2)
        hci_again = f"hci{peer.info['h4']['index']}"
        # No waiting for the kernel to power the new adapter off, as in step 2: the waiting
        # driver takes it as soon as the kernel's setup lets it (then it stays up, held).
        unplugged_at = len(stored(DB, SAMPLES, (HR_ADDRESS,)))
        wait_for(lambda: len(stored(DB, SAMPLES, (HR_ADDRESS,))) >= unplugged_at + 4, 120,
                 f"recording again through {hci_again} once it is back")
        props = show("MainPID", "ActiveState", "NRestarts")
        result["replugged"] = props
        if props != {"MainPID": str(pid), "ActiveState": "active", "NRestarts": "0"}:
            raise AssertionError(f"the unit did not go on in the same process: {props}")
        lines = daemon_lines(pid)
        back = [m for _, m in lines if f"controller {hci} is there" in m]
        if hci_again != hci or not back:
            raise AssertionError(f"no 'controller {hci} is there' in the journal (the controller came back as {hci_again})")
        # The waiting driver went on through the replug: no restart after its wait began (a
        # fresh-clone CI run once saw it give up on the kernel's setup of the new adapter, EBUSY).
        began = next(i for i, (_, m) in enumerate(lines) if waiting in m)
        restarts = [m for _, m in lines[began:] if "driver stopped; restarting" in m]
        if restarts:
            raise AssertionError(f"the waiting driver stopped before the controller was back: {restarts}")
        result["replug_journal"] = [m for _, m in lines[began:] if "waiting for the controller" in m or "is there" in m]
        status = wait_for(lambda: (t := show("StatusText")["StatusText"]).startswith("1/1 drivers running") and t, 60,
                          "StatusText to count the driver as running again")
        result["status_back"] = status
        step(f"controller back as {hci_again}: the same process records again ({back[0][:100]}); StatusText '{status}'")
        run("systemctl", "stop", "healthgate", timeout=90)

        # 10. Clean up: the unit, the drop-in and the install go.
        run("systemctl", "disable", "healthgate")
        os.remove(DROP_IN)
        run("make", "-C", REPO, "uninstall")
        run("systemctl", "daemon-reload")
        step("disabled and uninstalled")
        return 0
    finally:
        save_results(result, timings, peer, DB)
        subprocess.run(["systemctl", "unmask", "--runtime", "bluetooth.service"], check=False, capture_output=True)


if __name__ == "__main__":
    sys.exit(main())
