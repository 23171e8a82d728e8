#!/usr/bin/env python3
"""Expected normalized workouts for the TCX fixtures, computed with tcxreader.

Usage: tcx_reference.py FILE.tcx... [--out DIR]   (default DIR: Fixtures/tcx/expected)

Writes DIR/<name>.json: the workouts HealthGate's TCX driver must produce, field by field.

Where the values come from:
- tcxreader (parsed with only_gps=False so no trackpoint is dropped): every trackpoint
  (time, position, altitude, distance, heart rate, cadence, TPX Speed/Watts/RunCadence), the
  sport, each lap's Calories (tcxreader rounds them to whole kcal, as the schema's unsignedShort
  does) and DistanceMeters, the activity's summed distance and calories, the ascent/descent
  (raw consecutive altitude differences), the trackpoint heart-rate max and mean.
- tcxreader does not read the Activity Id, Lap StartTime, TotalTimeSeconds, the laps'
  Average/MaximumHeartRateBpm or Creator; this script reads those with xml.etree.ElementTree.
- HealthGate rules applied on top (see Drivers/TCX/README.md): start = Id (else first lap
  StartTime); end = max(last trackpoint time, last lap StartTime + TotalTimeSeconds);
  timer = sum of TotalTimeSeconds; avg HR = lap AverageHeartRateBpm weighted by TotalTimeSeconds
  (tcxreader's trackpoint mean only when laps lack it); max HR = max over laps and trackpoints;
  heart rate 0 = no reading; device identity from Creator.
"""
import argparse
import datetime as dt
import json
import math
import os
import xml.etree.ElementTree as ET
from importlib.metadata import version

from tcxreader.tcxreader import TCXReader

NS = "{http://www.garmin.com/xmlschemas/TrainingCenterDatabase/v2}"
SPORTS = {"running": "running", "biking": "cycling", "other": "other"}
SAMPLE_FIELDS = ["time", "latitude", "longitude", "altitude_m", "distance_m", "heart_rate", "cadence",
                 "speed_mps", "power_w"]


def utc(t):
    return t.replace(tzinfo=dt.timezone.utc) if t.tzinfo is None else t


def epoch(t):
    return utc(t).timestamp()


def parse_time(text):
    return dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00")).timestamp()


def round_half_up(x):
    return int(math.floor(x + 0.5))


def child_text(node, path):
    found = node.find(path)
    return None if found is None or found.text is None or not found.text.strip() else found.text.strip()


def device(activity):
    creator = activity.find(NS + "Creator")
    if creator is None:
        return None
    name = (child_text(creator, NS + "Name") or "").lower()
    if " software version" in name:
        name = name[: name.index(" software version")].strip()
    product = child_text(creator, NS + "ProductID")
    if product and product.isdigit() and int(product) > 0 and name and not name.startswith("garmin"):
        name = "garmin " + name
    unit = child_text(creator, NS + "UnitId") or ""
    has_unit = unit not in ("", "0")
    if not name:
        return "tcx-unit/" + unit if has_unit else None
    return name + "/" + unit if has_unit else name


def hr_or_none(value):
    return None if value in (None, 0) else int(value)


def reference(path):
    exercise = TCXReader().read(path, only_gps=False)
    root = ET.parse(path).getroot()
    activities = root.findall(f"{NS}Activities/{NS}Activity")
    assert len(activities) == 1, "tcxreader merges activities: one per fixture"
    activity = activities[0]
    et_laps = activity.findall(NS + "Lap")
    assert len(et_laps) == len(exercise.laps), "tcxreader dropped a lap without trackpoints"

    points = [p for p in exercise.trackpoints if p.time is not None]
    lap_starts = [parse_time(l.get("StartTime")) for l in et_laps]
    lap_totals = [float(child_text(l, NS + "TotalTimeSeconds")) for l in et_laps]
    lap_avg = [child_text(l, f"{NS}AverageHeartRateBpm/{NS}Value") for l in et_laps]
    lap_max = [child_text(l, f"{NS}MaximumHeartRateBpm/{NS}Value") for l in et_laps]
    has_distance = [child_text(l, NS + "DistanceMeters") is not None for l in et_laps]
    has_calories = [child_text(l, NS + "Calories") is not None for l in et_laps]

    id_text = child_text(activity, NS + "Id")
    start = parse_time(id_text) if id_text else lap_starts[0]
    end = max([start, epoch(points[-1].time) if points else start, lap_starts[-1] + lap_totals[-1]])

    laps = []
    for i, (lap, et_lap) in enumerate(zip(exercise.laps, et_laps)):
        lap_points = [p for p in lap.trackpoints if p.time is not None]
        lap_end = max([lap_starts[i] + lap_totals[i]] + [epoch(p.time) for p in lap_points])
        hrs = [p.hr_value for p in lap_points if p.hr_value]
        laps.append({
            "start": lap_starts[i], "end": lap_end, "elapsed_s": lap_end - lap_starts[i],
            "timer_s": lap_totals[i],
            "distance_m": lap.distance if has_distance[i] else None,
            "energy_kcal": float(lap.calories) if has_calories[i] else None,
            "avg_hr": int(lap_avg[i]) if lap_avg[i] else (round_half_up(sum(hrs) / len(hrs)) if hrs else None),
            "max_hr": int(lap_max[i]) if lap_max[i] else (max(hrs) if hrs else None),
        })

    weighted = [(int(a), t) for a, t in zip(lap_avg, lap_totals) if a and t > 0]
    if weighted:
        avg_hr = round_half_up(sum(a * t for a, t in weighted) / sum(t for _, t in weighted))
    else:
        hrs = [p.hr_value for p in points if p.hr_value]
        avg_hr = round_half_up(exercise.hr_avg) if hrs else None  # tcxreader's trackpoint mean
    maxima = [int(m) for m in lap_max if m] + ([exercise.hr_max] if exercise.hr_max else [])

    if any(has_distance):
        distance = exercise.distance
    else:
        with_distance = [p.distance for p in points if p.distance is not None]
        distance = with_distance[-1] if with_distance else None

    altitudes = [p.elevation for p in points if p.elevation is not None]
    samples = []
    for p in points:
        ext = p.tpx_ext or {}
        cadence = p.cadence if p.cadence is not None else ext.get("RunCadence")
        samples.append([epoch(p.time), p.latitude, p.longitude, p.elevation, p.distance, hr_or_none(p.hr_value),
                        None if cadence is None else float(cadence),
                        None if ext.get("Speed") is None else float(ext["Speed"]),
                        None if ext.get("Watts") is None else float(ext["Watts"])])

    sport_name = exercise.activity_type
    sport = SPORTS[sport_name.lower()]
    return {
        "sport": sport,
        "sub_sport": None,
        "device": device(activity),
        "start": start,
        "end": end,
        "elapsed_s": end - start,
        "timer_s": sum(lap_totals),
        "distance_m": distance,
        "energy_kcal": float(exercise.calories) if exercise.calories > 0 else None,
        "avg_hr": avg_hr,
        "max_hr": max(maxima) if maxima else None,
        "ascent_m": exercise.ascent if len(altitudes) >= 2 else None,
        "descent_m": exercise.descent if len(altitudes) >= 2 else None,
        "laps": laps,
        "sample_fields": SAMPLE_FIELDS,
        "samples": samples,
    }


def dump(document):
    """Indented JSON with one line per sample, so diffs stay readable."""
    rows = {}
    for i, workout in enumerate(document["workouts"]):
        rows[i] = workout["samples"]
        workout["samples"] = f"@samples{i}@"
    text = json.dumps(document, indent=1)
    for i, samples in rows.items():
        body = ",\n  ".join(json.dumps(row) for row in samples)
        text = text.replace(f'"@samples{i}@"', "[\n  " + body + "\n ]" if samples else "[]")
        document["workouts"][i]["samples"] = samples
    return text


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "../../../Fixtures/tcx/expected"))
    args = parser.parse_args()
    for path in args.files:
        name = os.path.splitext(os.path.basename(path))[0]
        document = {
            "reference": {
                "tool": "tcxreader", "version": version("tcxreader"),
                "script": "Drivers/TCX/tools/tcx_reference.py",
                "note": "trackpoints, lap calories/distance, ascent and trackpoint HR from tcxreader; Id, "
                        "StartTime, TotalTimeSeconds, lap HR and Creator via xml.etree; HealthGate rules on top",
            },
            "file": os.path.basename(path),
            "workouts": [reference(path)],
        }
        with open(os.path.join(args.out, name + ".json"), "w") as f:
            f.write(dump(document) + "\n")
        print(f"{name}: {len(document['workouts'][0]['samples'])} samples")


if __name__ == "__main__":
    main()
