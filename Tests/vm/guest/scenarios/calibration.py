"""How fast a CPU runs healthgate's own code, measured the same way in the guest and on the host
(not a scenario: ble-bench.py and Tests/vm/bench_ble_report.py use it). The guest's CPU is
emulated (TCG), so its CPU figures are inflated; the same binary doing the same work on both
sides gives the factor: `healthgate import --dry-run` (XML parsing, mapping, normalizing, no
writing) over a synthetic Apple Health export that make-export.py writes from a fixed seed."""
from __future__ import annotations

import os
import resource
import subprocess
import sys

DAYS = 100  # about 23 MB: half a second of CPU on the build machine


def calibration_cpu(binary: str, make_export: str, work: str, runs: int = 3) -> dict:
    """CPU seconds (user + system, the least of `runs`) of `binary import --dry-run` over the
    export, with the command and every run's figure."""
    export = os.path.join(work, "calibration.xml")
    subprocess.run([sys.executable, make_export, export, "--days", str(DAYS), "--seed", "1", "--legal-only",
                    "--inline-routes"], check=True, stdout=subprocess.DEVNULL)
    figures = []
    for i in range(runs):
        db = os.path.join(work, f"calibration-{i}.sqlite")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([binary, "import", "--dry-run", "--db", db, export], check=True, stdout=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        figures.append(round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 3))
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db + suffix):
                os.remove(db + suffix)
    os.remove(export)
    return {"command": f"healthgate import --dry-run (make-export.py --days {DAYS} --seed 1 --legal-only --inline-routes)",
            "cpu_s": min(figures), "runs": figures}
