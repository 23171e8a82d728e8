#!/usr/bin/env python3
"""Runs the virtual-machine test scenarios (Tests/vm/README.md).

Builds or reuses the cached Debian guest (build-image.sh), then boots it once per boot mode that
has scenarios: `init` (a plain init script, the BLE scenarios) and `systemd` (systemd as PID 1, a
test unit runs the scenarios). Each boot gets a fresh 9p share with the guest scripts, the test
peer, the plan (scenario names and limits) and, with --binary, a healthgate executable; the guest
writes each scenario's status and log to the share and ends QEMU through isa-debug-exit. A boot
that does not report within its limit is killed. Exit status 0 only if every scenario passed.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# name: (boot mode, limit in seconds inside the guest, needs --binary)
SCENARIOS = {
    "healthgate-version": ("init", 60, True),
    "ble-hr-bluez": ("init", 180, False),
    "ble-record-bluez": ("init", 240, True),
    "ble-bluez-restart": ("init", 180, True),
    "ble-pair-bluez": ("init", 300, True),
    "ble-glucose-racp": ("init", 300, True),
    "ble-glucose-daemon": ("init", 300, True),
    "systemd-basic": ("systemd", 150, False),
    "ble-bluez-power": ("init", 300, True),
    "ble-bench-smoke": ("init", 420, True),
    "ble-bench": ("init", 1500, True),
    "systemd-unit-bluez": ("systemd", 420, True),
    "systemd-unit-ownstack": ("systemd", 240, True),
    "ant-stick-selftest": ("init", 300, False),
    "ant-record": ("init", 300, True),
    "ant-download": ("init", 420, True),
    "ant-faults": ("init", 420, True),
    "systemd-unit-ant": ("systemd", 420, True),
    "watch-mtp": ("init", 420, True),
    "systemd-unit-watch": ("systemd", 420, True),
    "systemd-unit-server": ("systemd", 300, False),
    "watch-bench": ("init", 2400, True),
    "ant-bench": ("init", 900, True),
}
# Need --server-binary (a static healthgate-server) as well.
NEEDS_SERVER = {"systemd-unit-server"}
# Run only when named with --scenario (`make bench-ble`), never by default.
ON_REQUEST = {"ble-bench", "ant-bench", "watch-bench"}
# What `make install` reads, the fixtures systemd-unit-bluez drops into its watch folders, the
# export writer of ble-bench's CPU calibration, and the FIT files the emulated ANT-FS watch serves
# (ant-stick-selftest, ant-download; ant-bench's download adds two larger ones): copied to the
# share's repo/ (small; the guest runs `make install` there).
REPO_FILES = ["Makefile", "README.md", "systemd", "docs/server.md", "Fixtures/fit/garmin-fenix5-run.fit",
              "Fixtures/gpx/apple-health-workout-route.gpx", "Drivers/AppleHealth/tools/make-export.py",
              "Fixtures/fit/antfs-dump-63.fit", "Fixtures/fit/fitsdk-Activity.fit",
              "Fixtures/fit/fitsdk-WeightScaleMultiUser.fit", "Fixtures/fit/fitsdk-Settings.fit",
              "Fixtures/fit/garmin-fr735xt-poolswim-hr-chained.fit", "Fixtures/fit/garmin-edge800-indoor-trainer-power.fit",
              "Fixtures/fit/fitsdk-MonitoringFile.fit", "Fixtures/fit/garmin-fenix2-multisport.fit",
              "Fixtures/fit/fitsdk-activity-poolswim-with-hr.fit"]
# The test peers copied to the share's peers/: the BLE peer and the emulated ANT stick.
PEER_FILES = ["ble_peer.py", "ant_stick.py", "antstick", "peer_common.py"]
# QEMU's exit status when the guest wrote RC to isa-debug-exit: (RC << 1) | 1.
GUEST_DONE = {1: "all scenarios ran, all passed", 3: "all scenarios ran, some failed",
              203: "the guest's scenario runner did not start or did not report"}


def cache_dir() -> str:
    return os.environ.get("HEALTHGATE_VM_CACHE", os.path.join(REPO, ".cache", "vm"))


def qemu_command(cache: str, share: str, mode: str, console: str, memory_mb: int) -> list[str]:
    append = "console=ttyS0 root=/dev/vda rw quiet panic=-1"
    if mode == "init":
        append += " init=/sbin/hg-init"
    else:
        append += " healthgate.mode=systemd systemd.show_status=false"
    return [
        "qemu-system-x86_64", "-accel", "tcg,thread=multi", "-smp", "2", "-m", str(memory_mb),
        "-nodefaults", "-display", "none", "-no-reboot", "-monitor", "none",
        "-serial", f"file:{console}",
        "-kernel", os.path.join(cache, "vmlinuz"), "-initrd", os.path.join(cache, "initrd.img"),
        "-append", append,
        # -snapshot: the guest's writes go to a temporary overlay, the cached image stays clean
        "-drive", f"file={os.path.join(cache, 'rootfs.img')},if=virtio,format=raw,cache=unsafe",
        "-snapshot",
        "-virtfs", f"local,path={share},mount_tag=share,security_model=none,id=share",
        "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
        "-nic", "none",
    ]


def strip_into(binary: str, dest: str) -> None:
    """A copy of `binary` without its debug sections (a static release build: 194 MB, 120 MB
    without), so that what the scenarios install fits the guest's disk (229 MB free); symbols
    are kept."""
    if shutil.which("strip") is None:
        sys.exit("vm-test: strip (binutils) is needed to pass a binary to the guest")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    subprocess.run(["strip", "--strip-debug", "-o", dest, binary], check=True)


def make_certificates(folder: str) -> None:
    """Two self-signed certificates for 127.0.0.1 (the guest has no openssl): the server's, and
    the one a reload puts in its place."""
    for name in ("first", "second"):
        os.makedirs(os.path.join(folder, name))
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN=healthgate-vm-{name}",
                        "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", os.path.join(folder, name, "key.pem"),
                        "-out", os.path.join(folder, name, "cert.pem")], check=True, capture_output=True)


def prepare_share(share: str, names: list[str], binary: str | None, server_binary: str | None = None) -> None:
    shutil.copytree(os.path.join(HERE, "guest"), os.path.join(share, "guest"))
    os.makedirs(os.path.join(share, "peers"))
    for name in PEER_FILES:
        src, dest = os.path.join(REPO, "Tests", "peers", name), os.path.join(share, "peers", name)
        if os.path.isdir(src):
            shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, dest)
    for rel in REPO_FILES:
        src, dest = os.path.join(REPO, rel), os.path.join(share, "repo", rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, dest)
    if binary:
        strip_into(binary, os.path.join(share, "bin", "healthgate"))
    if server_binary and NEEDS_SERVER & set(names):
        strip_into(server_binary, os.path.join(share, "bin", "healthgate-server"))
        make_certificates(os.path.join(share, "tls"))
    with open(os.path.join(share, "plan"), "w") as f:
        for name in names:
            f.write(f"{name} {SCENARIOS[name][1]}\n")
    os.makedirs(os.path.join(share, "results"))


def read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def tail(text: str, lines: int) -> str:
    return "\n".join(text.rstrip("\n").split("\n")[-lines:])


def boot(mode: str, names: list[str], args, out_dir: str) -> dict[str, str]:
    """One boot running `names`; returns name -> status ("pass" or why not)."""
    share = tempfile.mkdtemp(prefix=f"hg-vm-{mode}-")
    try:
        prepare_share(share, names, args.binary, args.server_binary)
        console = os.path.join(share, "console.log")
        limit = args.boot_limit + sum(SCENARIOS[n][1] for n in names)
        cmd = qemu_command(cache_dir(), share, mode, console, args.memory)
        print(f"vm-test: booting the guest ({mode} mode) for {', '.join(names)}; limit {limit} s", flush=True)
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        started_at = None
        timed_out = False
        while proc.poll() is None:
            if started_at is None and os.path.exists(os.path.join(share, "results", "started.json")):
                started_at = time.monotonic() - t0
                print(f"vm-test: guest runner started {started_at:.1f} s after QEMU was started", flush=True)
            if time.monotonic() - t0 > limit:
                timed_out = True
                proc.kill()
                break
            time.sleep(0.2)
        qemu_output = proc.communicate()[0].decode(errors="replace")
        elapsed = time.monotonic() - t0
        rc = proc.returncode
        if timed_out:
            outcome = f"killed after {limit} s (no report through isa-debug-exit)"
        else:
            outcome = GUEST_DONE.get(rc, f"QEMU exited with status {rc} without a report from the guest")
        print(f"vm-test: {mode} boot ended after {elapsed:.1f} s: {outcome}", flush=True)

        statuses = {}
        for name in names:
            res = os.path.join(share, "results", name)
            status = read(os.path.join(res, "status")).strip() or "did not report"
            took = read(os.path.join(res, "elapsed_s")).strip()
            statuses[name] = status
            mark = "PASS" if status == "pass" else "FAIL"
            print(f"vm-test: {mark} {name}" + (f" ({took} s in the guest)" if took else "")
                  + ("" if status == "pass" else f": {status}"), flush=True)
            if status != "pass" or args.verbose:
                print(f"----- {name}: log -----\n{tail(read(os.path.join(res, 'log')), 80)}")
                for extra in sorted(os.listdir(res)) if os.path.isdir(res) else []:
                    if extra.endswith(".log") and status != "pass":
                        print(f"----- {name}: {extra} (last 40 lines) -----\n{tail(read(os.path.join(res, extra)), 40)}")
        if any(s != "pass" for s in statuses.values()) or rc not in (1, 3):
            print(f"----- {mode} boot: serial console (last 60 lines) -----\n{tail(read(console), 60)}")
            if qemu_output.strip():
                print(f"----- {mode} boot: QEMU output -----\n{tail(qemu_output, 20)}")
        if rc == 1 and any(s != "pass" for s in statuses.values()):
            statuses["(harness)"] = "guest reported success but a scenario did not pass"
        # keep the results (logs, databases the scenarios copied out) for CI artifacts
        dest = os.path.join(out_dir, mode)
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(os.path.join(share, "results"), dest)
        if os.path.exists(console):
            shutil.copy(console, os.path.join(dest, "console.log"))
        with open(os.path.join(dest, "boot.json"), "w") as f:
            json.dump({"mode": mode, "qemu_status": rc, "outcome": outcome, "runner_started_s": started_at,
                       "elapsed_s": round(elapsed, 1), "scenarios": statuses}, f, indent=1)
        return statuses
    finally:
        shutil.rmtree(share, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description="HealthGate virtual-machine tests (Tests/vm/README.md)")
    ap.add_argument("--binary", help="a static healthgate executable to pass to the guest "
                    "(make vm-test builds one); scenarios that need it run only with it")
    ap.add_argument("--server-binary", help="a static healthgate-server executable (make vm-test builds one); "
                    "scenarios that need it run only with it")
    ap.add_argument("--scenario", action="append", choices=sorted(SCENARIOS),
                    help="run only this scenario (repeatable; default: all)")
    ap.add_argument("--results", default=os.path.join(REPO, ".build", "vm-results"),
                    help="where each boot's results are kept (default .build/vm-results)")
    ap.add_argument("--boot-limit", type=int, default=120,
                    help="seconds allowed for booting, on top of the scenarios' own limits (default 120)")
    ap.add_argument("--memory", type=int, default=1024, help="guest memory in MB (default 1024)")
    ap.add_argument("--no-build", action="store_true", help="do not (re)build the image; fail if it is missing")
    ap.add_argument("-v", "--verbose", action="store_true", help="show every scenario's log, not only failures")
    args = ap.parse_args()
    for option, path in (("--binary", args.binary), ("--server-binary", args.server_binary)):
        if path and not (os.path.isfile(path) and os.access(path, os.X_OK)):
            ap.error(f"{option} {path}: not an executable file")
    if args.boot_limit < 10 or args.memory < 256:
        ap.error("--boot-limit must be at least 10 s and --memory at least 256 MB")

    names = args.scenario or sorted(n for n in SCENARIOS if n not in ON_REQUEST)
    skipped = [n for n in names if (SCENARIOS[n][2] and not args.binary) or (n in NEEDS_SERVER and not args.server_binary)]
    if args.scenario and skipped:
        ap.error(f"{', '.join(skipped)} need --binary (and --server-binary)")
    names = [n for n in names if n not in skipped]
    for n in skipped:
        print(f"vm-test: not running {n} (it needs --binary" + (" and --server-binary)" if n in NEEDS_SERVER else ")"))

    if not args.no_build:
        subprocess.run([os.path.join(HERE, "build-image.sh")], check=True)
    for f in ("rootfs.img", "vmlinuz", "initrd.img"):
        if not os.path.exists(os.path.join(cache_dir(), f)):
            print(f"vm-test: {cache_dir()}/{f} is missing (run Tests/vm/build-image.sh)", file=sys.stderr)
            return 2

    os.makedirs(args.results, exist_ok=True)
    statuses: dict[str, str] = {}
    for mode in ("init", "systemd"):
        in_mode = [n for n in names if SCENARIOS[n][0] == mode]
        if in_mode:
            statuses.update(boot(mode, in_mode, args, args.results))
    failed = [n for n, s in statuses.items() if s != "pass"]
    print(f"vm-test: {len(statuses) - len(failed)} passed, {len(failed)} failed"
          + (f" ({', '.join(failed)})" if failed else "") + f"; results in {args.results}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
