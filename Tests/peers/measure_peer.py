#!/usr/bin/env python3
"""Measure the BLE test peer: start-up time, idle CPU and RSS, and CPU per notification.

    python3 Tests/peers/measure_peer.py [--seconds 5]

Prints one JSON object. Numbers depend on the machine and its load; the README quotes a run.
"""
from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from smoke_client import H4Host  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
ADDRS = {"hr": ("C0:4E:47:00:00:01", 0x180D, 0x2A37), "csc": ("C0:4E:47:00:00:02", 0x1816, 0x2A5B),
         "ftms-bike": ("C0:4E:47:00:00:03", 0x1826, 0x2AD2)}


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def start(*extra: str):
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "ble_peer.py"), *extra],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    select.select([proc.stdout], [], [], 10)
    info = json.loads(proc.stdout.readline())
    return proc, info, time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args()
    kinds = ["--peripheral", "hr", "--peripheral", "csc", "--peripheral", "ftms-bike"]
    out: dict = {}

    startups = []
    for _ in range(5):
        proc, info, dt = start(*kinds)
        startups.append(round(dt, 3))
        proc.terminate()
        proc.wait(5)
    out["startup_s"] = {"min": min(startups), "max": max(startups), "runs": startups}

    proc, info, _ = start(*kinds)
    time.sleep(1.0)
    c0, t0 = cpu_seconds(proc.pid), time.monotonic()
    time.sleep(args.seconds)
    out["idle_cpu_percent_3_advertising"] = round(100 * (cpu_seconds(proc.pid) - c0) / (time.monotonic() - t0), 2)
    out["idle_rss_mb"] = round(rss_mb(proc.pid), 1)
    proc.terminate()
    proc.wait(5)

    out["load"] = []
    for rate, log in ((50, False), (200, False), (500, False), (1000, False), (500, True)):
        extra = ["--sent-log", os.devnull] if log else []
        proc, info, _ = start(*kinds, "--rate", str(rate), *extra)
        h = H4Host(info["h4"]["host"], info["h4"]["port"])
        h.init()
        conns = []
        for kind, (addr, svc, char) in ADDRS.items():
            found = h.scan(2.0, stop_when=lambda f, a=addr: a in f)
            c = h.connect(addr, found[addr].address_type)
            h.exchange_mtu(c)
            h.subscribe(c, h.gatt_map(c), svc, char)
            conns.append(c)
        time.sleep(0.5)
        for c in conns:
            while not c.notifications.empty():
                c.notifications.get_nowait()
        c0, t0 = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(args.seconds)
        elapsed = time.monotonic() - t0
        cpu = cpu_seconds(proc.pid) - c0
        received = sum(c.notifications.qsize() for c in conns)
        out["load"].append({"rate_per_peripheral": rate, "sent_log": log, "notifications_per_s": round(received / elapsed),
                            "peer_cpu_percent": round(100 * cpu / elapsed, 1),
                            "cpu_us_per_notification": round(1e6 * cpu / max(received, 1), 1)})
        h.close()
        proc.terminate()
        proc.wait(5)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
