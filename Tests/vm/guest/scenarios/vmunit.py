"""What the systemd-unit scenarios share (not a scenario): running commands with their output
logged, the unit's properties, the daemon's journal lines, `systemd-analyze security` on the
running unit, and what a scenario leaves in its results whether it passed or not."""
from __future__ import annotations

import grp
import json
import os
import re
import stat
import subprocess

from vmpeer import RESULTS


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


def journal() -> list[dict]:
    """The unit's journal entries (the daemon's and systemd's about it)."""
    out = run("journalctl", "-u", "healthgate", "-o", "json", "--no-pager", quiet=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def daemon_lines(pid: int) -> list[tuple[int, str]]:
    """(priority, message) of the daemon process's journal lines."""
    return [(int(e["PRIORITY"]), e["MESSAGE"]) for e in journal()
            if e.get("_PID") == str(pid) and isinstance(e.get("MESSAGE"), str)]


def running_exposure(limit: float, unit: str = "healthgate") -> float:
    """`systemd-analyze security` of the running unit (its output saved to the results): the
    overall exposure level, which must be at most `limit`."""
    sec = run("systemd-analyze", "security", f"{unit}.service", "--no-pager", check=False, quiet=True)
    with open(os.path.join(RESULTS, f"systemd-analyze-security-{unit}.txt"), "w") as f:
        f.write(sec.stdout + sec.stderr)
    m = re.search(rf"Overall exposure level for {re.escape(unit)}\.service: ([0-9.]+)", sec.stdout)
    if not m:
        raise AssertionError(f"no exposure level in systemd-analyze security's output: {sec.stdout[-500:]}")
    exposure = float(m.group(1))
    if exposure > limit:
        raise AssertionError(f"exposure {exposure} > {limit}")
    return exposure


def save_results(result: dict, timings: dict, peer, database: str, units: tuple[str, ...] = ("healthgate",)) -> None:
    """What a systemd-unit scenario leaves in its results, passed or failed: result.json with the
    step timings, the unit stopped (storing what it held), the journal of `units`, the peer's
    sent log and the database with its WAL."""
    result["timings"] = timings
    with open(os.path.join(RESULTS, "result.json"), "w") as f:
        json.dump(result, f, indent=1)
    subprocess.run(["systemctl", "stop", "healthgate"], check=False, capture_output=True, timeout=90)
    with open(os.path.join(RESULTS, "unit-journal.log"), "w") as f:
        subprocess.run(["journalctl", *(a for unit in units for a in ("-u", unit)), "--no-pager", "-o", "short-monotonic"],
                       stdout=f, stderr=subprocess.STDOUT, check=False)
    if peer is not None:
        peer.close()
        subprocess.run(["cp", peer.sent_log, RESULTS], check=False)
    for suffix in ("", "-wal", "-shm"):
        subprocess.run(["cp", database + suffix, RESULTS], check=False, stderr=subprocess.DEVNULL)


def install(repo: str, binary: str, config: str) -> None:
    """`make install` of `binary` as README.md says (the unit, the udev rules, sysusers, tmpfiles),
    the user and folders made, udev and systemd reloaded, and /etc/healthgate/healthgate.toml
    replaced by `config` in place (the file keeps its owner and mode)."""
    run("make", "-C", repo, "install", f"BINARY={binary}")
    run("systemd-sysusers")
    run("systemd-tmpfiles", "--create")
    run("udevadm", "control", "--reload")
    run("systemctl", "daemon-reload")
    with open("/etc/healthgate/healthgate.toml", "r+") as f:
        f.truncate(0)
        f.write(config)


def check_device_node(node: str) -> dict:
    """The udev rule's work on a USB device node: group healthgate, mode 0660, tagged uaccess;
    fails otherwise. Returns what was seen (for the results)."""
    st = os.stat(node)
    info = run("udevadm", "info", node, quiet=True).stdout
    seen = {"path": node, "mode": oct(stat.S_IMODE(st.st_mode)), "group": grp.getgrgid(st.st_gid).gr_name, "udev": info}
    if stat.S_IMODE(st.st_mode) != 0o660 or seen["group"] != "healthgate":
        raise AssertionError(f"the udev rule did not give {node} to the healthgate group, 0660: {seen}")
    if "uaccess" not in next((line for line in info.splitlines() if "TAGS=" in line), ""):
        raise AssertionError(f"{node} is not tagged uaccess: {info}")
    return seen

