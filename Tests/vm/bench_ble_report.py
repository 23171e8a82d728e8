#!/usr/bin/env python3
"""The BLE benchmark's table at the host's speed (`make bench-ble` runs this after the guest run).

The guest's CPU is emulated (TCG), so the CPU figures of ble-bench (Tests/vm/guest/scenarios/
ble-bench.py) are inflated. The guest run also measured calibration.py's fixed workload with the
same binary (debug sections stripped, as run.py passes it); this runs that workload here, in the
same `make bench-ble`, and divides each CPU figure by the ratio guest / host. The ratio is of
CPU-bound work; the recorder's is mostly wake-ups and system calls, which emulation may slow by
another factor, so the figures at host speed are estimates, and the table says so."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "guest", "scenarios"))
from calibration import calibration_cpu  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", required=True, help="the healthgate the guest ran (before stripping)")
    ap.add_argument("--results", default=os.path.join(REPO, ".build", "vm-results", "init", "ble-bench"),
                    help="the ble-bench scenario's results folder")
    args = ap.parse_args()
    with open(os.path.join(args.results, "bench.json")) as f:
        bench = json.load(f)
    guest = bench.get("calibration")
    rows = bench.get("rows")
    if not guest or not rows:
        sys.exit(f"bench_ble_report: {args.results}/bench.json has no calibration or no rows (did the guest run finish?)")
    with tempfile.TemporaryDirectory(prefix="hg-bench-ble-") as work:
        binary = os.path.join(work, "healthgate")
        subprocess.run(["strip", "--strip-debug", "-o", binary, args.binary], check=True)
        host = calibration_cpu(binary, os.path.join(REPO, "Drivers", "AppleHealth", "tools", "make-export.py"), work)
    factor = guest["cpu_s"] / host["cpu_s"]
    lines = [f"calibration: {guest['command']}: {guest['cpu_s']:.2f} s CPU in the guest (runs {guest['runs']}), "
             f"{host['cpu_s']:.2f} s on this host (runs {host['runs']}): the guest runs healthgate {factor:.1f}x slower",
             "",
             "backend    devices  values  p99       healthgate CPU (guest)  at host speed  target < 2 %  bluetoothd (guest / host speed)"]
    for r in rows:
        at_host = r["cpu_pct"] / factor
        helper = (f"{r['bluetoothd_cpu_pct']} % / {r['bluetoothd_cpu_pct'] / factor:.2f} %" if "bluetoothd_cpu_pct" in r else "-")
        lines.append(f"{r['backend']:<10} {r['devices']:<8} {r['values']:<7} {r['p99_ms']:>6} ms  {r['cpu_pct']:>6} %"
                     f"{'':16}{at_host:6.2f} %       {'met' if at_host < 2 else 'NOT met':<13} {helper}")
    lines.append("")
    lines.append("At host speed = guest CPU / the calibration factor: an estimate (the recorder's work is wake-ups and")
    lines.append("system calls, which emulation may slow by another factor than the calibration's CPU-bound work).")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(args.results, "bench-host.txt"), "w") as f:
        f.write(text + "\n")
    bench["host_calibration"] = host
    bench["factor"] = round(factor, 2)
    with open(os.path.join(args.results, "bench.json"), "w") as f:
        json.dump(bench, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
