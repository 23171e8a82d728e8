#!/usr/bin/env python3
"""Expected sleep sessions for every Fixtures/fit-sleep/*.fit, computed with Garmin's own FIT
SDK for Python (PyPI garmin-fit-sdk) by the rules of Drivers/FIT/README.md ("Sleep"):

- the night starts at the first `sleep_level` and ends at the sleep event's stop (event 74,
  type stop or stop_all); without that stop, at the file's last timestamp;
- each level lasts until the next one, the last until the end; levels at or after the stop are
  dropped; consecutive minutes of the same level are one stage;
- levels 1 awake, 2 light, 3 deep, 4 rem, anything else unknown;
- `sleep_assessment`: overall_sleep_score is the score, awakenings_count the awakenings.

Writes Fixtures/fit-sleep/expected/<name>.json. FITSleepReferenceTests compares the driver's
session with it.
Usage: python3 Drivers/FIT/tools/sleep_reference.py [repo root]
"""
import datetime
import glob
import json
import os
import sys

from garmin_fit_sdk import Decoder, Stream

STAGES = {1: "awake", 2: "light", 3: "deep", 4: "rem"}


def iso(t):
    return t.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def session(path):
    messages, errors = Decoder(Stream.from_file(path)).read(convert_types_to_strings=False)
    if errors:
        raise SystemExit(f"{path}: {errors}")
    levels = sorted((m["timestamp"], m["sleep_level"]) for m in messages.get("sleep_level_mesgs", []))
    stops = [m["timestamp"] for m in messages.get("event_mesgs", [])
             if m.get("event") == 74 and m.get("event_type") in (1, 4)]
    stop = stops[-1] if stops else None
    if stop is not None:
        levels = [(t, level) for t, level in levels if t < stop]
    if not levels:
        return None
    if stop is None:
        stamps = [m["timestamp"] for ms in messages.values() for m in ms if "timestamp" in m]
        stop = max(stamps)
    end = max(stop, levels[-1][0])
    stages = []
    for i, (t, level) in enumerate(levels):
        stage_end = levels[i + 1][0] if i + 1 < len(levels) else end
        if stage_end <= t:
            continue
        name = STAGES.get(level, "unknown")
        if stages and stages[-1]["stage"] == name and stages[-1]["end"] == iso(t):
            stages[-1]["end"] = iso(stage_end)
        else:
            stages.append({"start": iso(t), "end": iso(stage_end), "stage": name})
    out = {"start": iso(levels[0][0]), "end": iso(end), "stages": stages}
    for m in messages.get("sleep_assessment_mesgs", []):
        out["assessment"] = {"score": m.get("overall_sleep_score"), "awakenings": m.get("awakenings_count")}
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.getcwd()
    folder = os.path.join(root, "Fixtures", "fit-sleep")
    os.makedirs(os.path.join(folder, "expected"), exist_ok=True)
    for path in sorted(glob.glob(os.path.join(folder, "*.fit"))):
        name = os.path.splitext(os.path.basename(path))[0]
        with open(os.path.join(folder, "expected", name + ".json"), "w") as f:
            json.dump(session(path), f, indent=1, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()
