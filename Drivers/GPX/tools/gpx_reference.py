#!/usr/bin/env python3
"""Expected normalized workouts for the GPX fixtures, computed with gpxpy.

Usage: gpx_reference.py FILE.gpx... [--out DIR]   (default DIR: Fixtures/gpx/expected)

Writes DIR/<name>.json: the workouts HealthGate's GPX driver must produce, field by field.

Where the values come from:
- gpxpy parses the file: creator, tracks, segments, points (time, lat, lon, elevation) and each
  point's raw extension elements; gpxpy's get_time_bounds() gives start/end and its
  get_duration() (the sum of segment durations) gives the timer time.
- Distance: HealthGate sums the haversine distance on a sphere of radius 6371 km (mean Earth
  radius) between consecutive points of each segment. gpxpy's length_2d() differs on purpose: it
  uses WGS84's equatorial radius 6378.137 km and, for points less than 0.2 degrees apart, a flat
  (equirectangular) approximation. So distance_m is computed here with gpxpy.geo.haversine_distance
  scaled by 6371/6378.137 (the same haversine on the smaller sphere), and gpxpy's own
  length_2d() is recorded as gpxpy_length_2d_m for the cross-check.
- Ascent/descent: raw differences between consecutive elevations within segments, from gpxpy's
  parsed points (gpxpy's get_uphill_downhill() smooths elevations; recorded as gpxpy_uphill_m /
  gpxpy_downhill_m for information).
- Extensions: hr, cad, atemp, speed, power, PowerInWatts by local name anywhere in a point's
  <extensions>; empty elements are absent; hr 0 means no reading.
"""
import argparse
import json
import math
import os
from importlib.metadata import version

import gpxpy
import gpxpy.geo

SPORTS = {"stand_up_paddleboarding": "paddling", "running": "running", "cycling": "cycling"}
SAMPLE_FIELDS = ["time", "latitude", "longitude", "altitude_m", "heart_rate", "cadence", "temperature_c",
                 "power_w", "speed_mps"]
EXTENSION_FIELDS = {"hr": "heart_rate", "cad": "cadence", "atemp": "temperature_c", "power": "power_w",
                    "PowerInWatts": "power_w", "speed": "speed_mps"}
MEAN_RADIUS = 6371000.0


def round_half_up(x):
    return int(math.floor(x + 0.5))


def local(tag):
    return tag.rsplit("}", 1)[-1]


def extension_values(point):
    values = {}

    def walk(element):
        name = local(element.tag)
        text = (element.text or "").strip()
        if name in EXTENSION_FIELDS and text:
            values[EXTENSION_FIELDS[name]] = float(text)
        for child in element:
            walk(child)

    for element in point.extensions:
        walk(element)
    if values.get("heart_rate") == 0:
        del values["heart_rate"]
    return values


def sport(track_type):
    key = (track_type or "").strip().lower().replace(" ", "_").replace("-", "_")
    if not key or key.isdigit():
        return "other", None
    normalized = SPORTS[key]
    return normalized, (None if key == normalized else key)


def workout(track, creator):
    points = [p for segment in track.segments for p in segment.points]
    if not points:
        return None
    start, end = track.get_time_bounds()
    distance, ascent, descent, climbs = 0.0, 0.0, 0.0, 0
    for segment in track.segments:
        for a, b in zip(segment.points, segment.points[1:]):
            distance += gpxpy.geo.haversine_distance(a.latitude, a.longitude, b.latitude, b.longitude) \
                * MEAN_RADIUS / gpxpy.geo.EARTH_RADIUS
            if a.elevation is not None and b.elevation is not None:
                if b.elevation > a.elevation:
                    ascent += b.elevation - a.elevation
                else:
                    descent += a.elevation - b.elevation
                climbs += 1
    samples = []
    for p in points:
        if p.time is None:
            continue
        ext = extension_values(p)
        hr = ext.get("heart_rate")
        samples.append([p.time.timestamp(), p.latitude, p.longitude, p.elevation,
                        None if hr is None else round_half_up(hr), ext.get("cadence"), ext.get("temperature_c"),
                        ext.get("power_w"), ext.get("speed_mps")])
    hrs = [s[4] for s in samples if s[4] is not None]
    uphill, downhill = track.get_uphill_downhill()
    name, sub = sport(track.type)
    return {
        "sport": name,
        "sub_sport": sub,
        "device": creator,
        "start": start.timestamp(),
        "end": end.timestamp(),
        "elapsed_s": (end - start).total_seconds(),
        "timer_s": track.get_duration(),
        "distance_m": distance,
        "gpxpy_length_2d_m": track.length_2d(),
        "energy_kcal": None,
        "avg_hr": round_half_up(sum(hrs) / len(hrs)) if hrs else None,
        "max_hr": max(hrs) if hrs else None,
        "ascent_m": ascent if climbs else None,
        "descent_m": descent if climbs else None,
        "gpxpy_uphill_m": uphill,
        "gpxpy_downhill_m": downhill,
        "laps": [],
        "sample_fields": SAMPLE_FIELDS,
        "samples": samples,
    }


def dump(document):
    """Indented JSON with one line per sample, so diffs stay readable."""
    rows = {}
    for i, w in enumerate(document["workouts"]):
        rows[i] = w["samples"]
        w["samples"] = f"@samples{i}@"
    text = json.dumps(document, indent=1)
    for i, samples in rows.items():
        body = ",\n  ".join(json.dumps(row) for row in samples)
        text = text.replace(f'"@samples{i}@"', "[\n  " + body + "\n ]" if samples else "[]")
        document["workouts"][i]["samples"] = samples
    return text


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "../../../Fixtures/gpx/expected"))
    args = parser.parse_args()
    for path in args.files:
        name = os.path.splitext(os.path.basename(path))[0]
        with open(path) as f:
            gpx = gpxpy.parse(f)
        creator = (gpx.creator or "").strip().lower() or None
        workouts = [w for w in (workout(t, creator) for t in gpx.tracks) if w is not None]
        document = {
            "reference": {
                "tool": "gpxpy", "version": version("gpxpy"),
                "script": "Drivers/GPX/tools/gpx_reference.py",
                "note": "points, times, duration and extensions parsed by gpxpy; distance is gpxpy's haversine "
                        "scaled to a 6371 km sphere; gpxpy_length_2d_m is gpxpy's own length for the cross-check",
            },
            "file": os.path.relpath(path, os.path.join(os.path.dirname(__file__), "../../../Fixtures/gpx")),
            "workouts": workouts,
        }
        with open(os.path.join(args.out, name + ".json"), "w") as f:
            f.write(dump(document) + "\n")
        print(f"{name}: {len(workouts)} workouts, {[len(w['samples']) for w in workouts]} samples")


if __name__ == "__main__":
    main()
