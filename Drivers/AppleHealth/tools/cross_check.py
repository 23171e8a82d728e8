#!/usr/bin/env python3
"""Cross-checks the counts and values Tests/AppleHealthDriverTests asserts for the real fixtures
against an independent implementation: healthkit-to-sqlite (PyPI, dogsheep; requirements-test.txt)
imports each fixture into SQLite, and this script compares its tables with the expectations below
(the same numbers as AppleHealthFixtureTests). Exits 1 on a difference.

    python3 Drivers/AppleHealth/tools/cross_check.py
"""
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "Fixtures" / "apple-health"

# file -> {table: rows} and {(table, column): values in order}; tables HealthGate maps or skips.
EXPECTED = {
    "apple-health-parser-export.xml": (
        {"rHeartRate": 2, "rActiveEnergyBurned": 2, "rSleepAnalysis": 2, "rAppleExerciseTime": 1, "rAppleStandTime": 1},
        {("rHeartRate", "value"): ["74", "75"], ("rActiveEnergyBurned", "value"): ["0.12", "0.08"],
         ("rSleepAnalysis", "value"): ["HKCategoryValueSleepAnalysisInBed", "HKCategoryValueSleepAnalysisAsleepCore"],
         ("rHeartRate", "startDate"): ["2024-01-01 01:01:36 +0200", "2024-01-01 01:01:37 +0200"]},
    ),
    "apple-health-parser-export.zip": (
        {"rHeartRate": 2, "rActiveEnergyBurned": 2, "rSleepAnalysis": 2, "rAppleExerciseTime": 1, "rAppleStandTime": 1},
        {("rHeartRate", "value"): ["74", "75"]},
    ),
    "healthkit-to-sqlite-export.xml": (
        {"rBodyMassIndex": 1, "rHeartRate": 1, "workouts": 1, "workout_points": 2, "activity_summary": 2},
        {("rBodyMassIndex", "value"): ["22.5312"], ("rHeartRate", "value"): ["72"],
         ("workouts", "duration"): ["5.19412346680959"], ("workouts", "totalDistance"): ["0.4971749504535062"],
         ("workouts", "totalEnergyBurned"): ["48.74499999999999"], ("workouts", "startDate"): ["2016-11-14 07:25:41 -0700"]},
    ),
    "healthkit-to-sqlite-export.zip": (
        {"rBodyMassIndex": 1, "rHeartRate": 1, "workouts": 1, "workout_points": 3, "activity_summary": 2},
        {},
    ),
}


def main() -> int:
    failures = 0
    with tempfile.TemporaryDirectory() as scratch:
        for name, (tables, values) in EXPECTED.items():
            db = Path(scratch) / (name + ".db")
            path = FIXTURES / name
            command = ["healthkit-to-sqlite", str(path), str(db)] + (["--xml"] if name.endswith(".xml") else [])
            subprocess.run(command, check=True, capture_output=True)
            conn = sqlite3.connect(db)
            present = {row[0] for row in conn.execute("select name from sqlite_master where type = 'table'")}
            for table, rows in tables.items():
                got = conn.execute(f"select count(*) from [{table}]").fetchone()[0] if table in present else 0
                status = "ok" if got == rows else "DIFFERS"
                failures += got != rows
                print(f"{name}: {table}: healthkit-to-sqlite {got}, HealthGate tests {rows}: {status}")
            for (table, column), expected in values.items():
                got = [str(row[0]) for row in conn.execute(f"select [{column}] from [{table}] order by rowid")]
                status = "ok" if got == expected else "DIFFERS"
                failures += got != expected
                print(f"{name}: {table}.{column}: {got}: {status}")
    print("agree" if failures == 0 else f"{failures} difference(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
