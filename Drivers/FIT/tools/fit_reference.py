#!/usr/bin/env python3
"""Expected normalized output for every Fixtures/fit/*.fit, computed with an independent
decoder (the PyPI package fitdecode) by the normalization rules of Drivers/FIT/README.md.

Writes Fixtures/fit/expected/<name>.json. The Swift tests (FITReferenceTests) compare the
driver's records with these files field by field.

Per workout: laps and pool lengths in full; samples and RR intervals as a digest that keeps the
files small but fails on any wrong scale, offset or unit: per channel the number of present
values, their sum, min and max, plus some samples in full (the first three, the last three and
seven evenly spaced ones, each with its index). Sample times are seconds after the workout's start.

Usage: python3 Drivers/FIT/tools/fit_reference.py [repo root]
"""
import datetime
import glob
import json
import os
import sys

import fitdecode

FIT_EPOCH = 631065600
GARMIN_FAMILY = {"garmin", "dynastream", "dynastream_oem", "tacx"}


def iso(fit_seconds):
    t = datetime.datetime.fromtimestamp(FIT_EPOCH + fit_seconds, tz=datetime.timezone.utc)
    text = t.strftime("%Y-%m-%dT%H:%M:%S")
    if t.microsecond:
        text += ".%03d" % round(t.microsecond / 1000)
    return text + "Z"


def fields(msg):
    """name -> list of FieldData in message order (components included)."""
    out = {}
    for f in msg.fields:
        out.setdefault(f.name, []).append(f)
    return out


def first_value(fs, name):
    for f in fs.get(name, []):
        if f.value is not None:
            return f.value
    return None


def first_raw(fs, name):
    for f in fs.get(name, []):
        if f.raw_value is not None:
            return f.raw_value
    return None


def as_int_enum(fs, name):
    """Raw integer of an enumerated field (fitdecode renders names)."""
    raw = first_raw(fs, name)
    return raw if isinstance(raw, int) else None


class Group:
    def __init__(self):
        self.file_id = None
        self.sessions, self.laps, self.records, self.hrv, self.lengths, self.beats = [], [], [], [], [], []
        self.sport = None
        self.monitoring, self.sleep_levels, self.weights = [], [], []
        self.utc_offset = None
        self.last_timestamp = None


def read(path):
    groups = []
    counts = {}
    last_ts = None
    anchor = None
    acc = None

    def cur():
        if not groups:
            groups.append(Group())
        return groups[-1]

    with fitdecode.FitReader(path, check_crc=fitdecode.CrcCheck.DISABLED) as reader:
        for frame in reader:
            if isinstance(frame, fitdecode.FitHeader):
                anchor, acc = None, None
                last_ts = None
                continue
            if not isinstance(frame, fitdecode.FitDataMessage):
                continue
            counts[frame.name] = counts.get(frame.name, 0) + 1
            fs = fields(frame)
            ts = first_raw(fs, "timestamp")
            if frame.name == "monitoring" and ts is None:
                t16 = first_raw(fs, "timestamp_16")
                if t16 is not None and last_ts is not None:
                    ts = last_ts + ((t16 - last_ts) & 0xFFFF)
                elif t16 is not None:
                    ts = (t16 - 0) & 0xFFFF
            if ts is not None:
                last_ts = ts
                g = cur()
                if g.last_timestamp is None or ts > g.last_timestamp:
                    g.last_timestamp = ts
            name = frame.name
            if name == "file_id":
                if not groups or groups[-1].file_id is not None:
                    groups.append(Group())
                groups[-1].file_id = fs
            elif name == "session":
                cur().sessions.append(fs)
            elif name == "lap":
                cur().laps.append(fs)
            elif name == "record" and ts is not None:
                cur().records.append((ts, record_values(fs)))
            elif name == "hrv":
                raw = first_value(fs, "time")
                vals = raw if isinstance(raw, tuple) else (raw,)
                vals = [v for v in vals if v is not None]
                if vals:
                    cur().hrv.append((last_ts, vals))
            elif name == "length":
                if first_raw(fs, "start_time") is not None and first_value(fs, "total_elapsed_time") is not None:
                    cur().lengths.append(fs)
            elif name == "hr":
                anchor, acc = heart_beats(cur(), fs, anchor, acc)
            elif name == "sport":
                cur().sport = (as_int_enum(fs, "sport"), as_int_enum(fs, "sub_sport"))
            elif name == "activity":
                local = first_raw(fs, "local_timestamp")
                if ts is not None and local is not None and cur().utc_offset is None:
                    cur().utc_offset = local - ts
            elif name == "monitoring_info":
                local = first_raw(fs, "local_timestamp")
                if ts is not None and local is not None:
                    cur().utc_offset = local - ts
            elif name == "monitoring" and ts is not None:
                # cycles is read as steps or strokes (subfields) depending on the activity type.
                cycles = next((first_raw(fs, n) for n in ("cycles", "steps", "strokes") if first_raw(fs, n) is not None), None)
                cur().monitoring.append((ts, as_int_enum(fs, "activity_type"), cycles,
                                         first_value(fs, "active_calories"), first_value(fs, "calories"),
                                         first_value(fs, "heart_rate")))
            elif name == "sleep_level" and ts is not None:
                cur().sleep_levels.append(ts)
            elif name == "weight_scale" and ts is not None:
                cur().weights.append(fs)
    return groups, counts


SAMPLE_FIELDS = ["time", "heart_rate", "cadence", "power_w", "speed_mps", "distance_m", "latitude", "longitude",
                 "altitude_m", "temperature_c"]
SEMICIRCLE_DEGREES = 180 / 2 ** 31


def record_values(fs):
    """A record's sample channels by the README's rules, from fitdecode's scaled values (fitdecode
    expands components itself: enhanced_speed, enhanced_altitude, compressed_speed_distance)."""
    cadence = first_value(fs, "cadence")
    if cadence is not None:
        cadence = cadence + (first_value(fs, "fractional_cadence") or 0)
    lat, lon = first_raw(fs, "position_lat"), first_raw(fs, "position_long")
    has_position = lat is not None and lon is not None
    speed = first_value(fs, "enhanced_speed")
    altitude = first_value(fs, "enhanced_altitude")
    return {
        "heart_rate": first_value(fs, "heart_rate"),
        "cadence": cadence,
        "power_w": first_value(fs, "power"),
        "speed_mps": speed if speed is not None else first_value(fs, "speed"),
        "distance_m": first_value(fs, "distance"),
        "latitude": lat * SEMICIRCLE_DEGREES if has_position else None,
        "longitude": lon * SEMICIRCLE_DEGREES if has_position else None,
        "altitude_m": altitude if altitude is not None else first_value(fs, "altitude"),
        "temperature_c": first_value(fs, "temperature"),
    }


def probe_indices(n):
    """The first three, the last three and seven evenly spaced indices of a series of n."""
    return sorted(set(range(min(3, n))) | set(range(max(0, n - 3), n)) | {i * n // 8 for i in range(1, 8) if n})


def digest(values):
    """Count of present values, their sum, min and max (None when none is present)."""
    present = [v for v in values if v is not None]
    return dict(present=len(present), sum=sum(present) if present else None,
                min=min(present) if present else None, max=max(present) if present else None)


def sample_digest(samples, start):
    """samples: (FIT time, channel dict) in workout order; times become seconds after start."""
    rows = [[t - start] + [values.get(f) for f in SAMPLE_FIELDS[1:]] for t, values in samples]
    channels = {f: digest([r[i] for r in rows]) for i, f in enumerate(SAMPLE_FIELDS)}
    return dict(count=len(rows), fields=SAMPLE_FIELDS, channels=channels,
                probes=[[i] + rows[i] for i in probe_indices(len(rows))])


def rr_digest(intervals):
    return dict(count=len(intervals), **{k: v for k, v in digest(intervals).items() if k != "present"},
                probes=[[i, intervals[i]] for i in probe_indices(len(intervals))])


def lap_values(fs):
    start = first_raw(fs, "start_time")
    elapsed = first_value(fs, "total_elapsed_time")
    if elapsed is None:
        stamp = first_raw(fs, "timestamp")
        elapsed = max(0, stamp - start) if stamp is not None else 0
    return dict(start=FIT_EPOCH + start, end=FIT_EPOCH + start + elapsed, elapsed_s=elapsed,
                timer_s=first_value(fs, "total_timer_time"), distance_m=first_value(fs, "total_distance"),
                energy_kcal=first_value(fs, "total_calories"), avg_hr=first_value(fs, "avg_heart_rate"),
                max_hr=first_value(fs, "max_heart_rate"))


def length_values(fs):
    kind = enum_name(fs, "length_type")
    return dict(start=FIT_EPOCH + first_raw(fs, "start_time"), elapsed_s=first_value(fs, "total_elapsed_time"),
                kind=kind if kind is not None else "active", strokes=first_value(fs, "total_strokes"),
                stroke=enum_name(fs, "swim_stroke"))


def heart_beats(group, fs, anchor, acc):
    """hr messages: event times in 1/1024 s (12-bit packed, accumulated from event_timestamp);
    a message with a timestamp anchors its last event time to timestamp + fractional_timestamp."""
    events = []
    for f in fs.get("event_timestamp", []):
        if f.field_def is not None and f.raw_value is not None:
            for r in (f.raw_value if isinstance(f.raw_value, tuple) else (f.raw_value,)):
                if r is not None:
                    events.append(r)
                    acc = r
    for f in fs.get("event_timestamp_12", []):
        if f.raw_value is None:
            continue
        data = bytes(f.raw_value)
        packed = int.from_bytes(data, "little")
        for k in range(min(10, (len(data) * 8) // 12)):
            r = (packed >> (12 * k)) & 0xFFF
            base = acc or 0
            v = r | (base & ~0xFFF)
            if r < (base & 0xFFF):
                v += 0x1000
            acc = v
            events.append(v)
    raw_bpm = first_raw(fs, "filtered_bpm")
    bpms = list(raw_bpm) if isinstance(raw_bpm, tuple) else ([raw_bpm] if raw_bpm is not None else [])
    if not events:
        return anchor, acc
    ts = first_raw(fs, "timestamp")
    if ts is not None:
        frac = first_value(fs, "fractional_timestamp") or 0
        anchor = (ts + frac, events[-1] / 1024)
    if anchor is None:
        return anchor, acc
    previous = group.beats[-1][0] if group.beats else float("-inf")
    for e, b in zip(events, bpms):
        if b is None or b == 0xFF:
            continue
        t = anchor[0] + e / 1024 - anchor[1]
        if t > previous:
            group.beats.append((t, b))
            previous = t
    return anchor, acc


def device(group):
    fs = group.file_id
    if fs is None:
        return None
    parts = []
    mfr = first_value(fs, "manufacturer")
    if mfr is not None:
        parts.append(str(mfr))
    product = None
    gp = first_value(fs, "garmin_product")
    if mfr in GARMIN_FAMILY and isinstance(gp, str):
        product = gp
    elif first_value(fs, "product_name"):
        product = first_value(fs, "product_name")
    elif first_raw(fs, "product") is not None or first_raw(fs, "garmin_product") is not None:
        product = str(first_raw(fs, "product") if first_raw(fs, "product") is not None else first_raw(fs, "garmin_product"))
    if product is not None:
        parts.append(product)
    serial = first_raw(fs, "serial_number")
    if serial is not None:
        parts.append(str(serial))
    return "/".join(parts) if parts else None


def enum_name(fs, name):
    v = first_value(fs, name)
    return v if isinstance(v, str) else (None if v is None else str(v))


def workouts(group):
    sessions = []
    for fs in group.sessions:
        start = first_raw(fs, "start_time")
        stamp = first_raw(fs, "timestamp")
        elapsed = first_value(fs, "total_elapsed_time")
        if start is None:
            if stamp is None or elapsed is None:
                continue
            start = int(max(0, stamp - elapsed))
        end = start + elapsed if elapsed is not None else (stamp if stamp is not None else start)
        sessions.append(dict(fs=fs, start=start, end=max(end, start)))
    from_records = False
    if not sessions and group.records:
        # From the earliest record to the latest (records need not be in time order).
        first, last = min(r[0] for r in group.records), max(r[0] for r in group.records)
        hrs = [r[1]["heart_rate"] for r in group.records if r[1]["heart_rate"] is not None]
        dists = [r[1]["distance_m"] for r in sorted(group.records, key=lambda r: r[0]) if r[1]["distance_m"] is not None]
        sport = group.sport or (None, None)
        sessions.append(dict(fs=None, start=first, end=last, sport_raw=sport[0], sub_raw=sport[1],
                             avg_hr=round(sum(hrs) / len(hrs)) if hrs else None, max_hr=max(hrs) if hrs else None,
                             distance=dists[-1] if dists else None))
        from_records = True
    out = []
    for i, s in enumerate(sessions):
        fs = s["fs"]
        start, end = s["start"], s["end"]
        inside = lambda t: t is not None and start <= t <= end
        # Records in file order, then stored beats (heart rate only), merged in time order.
        samples = [r for r in group.records if inside(r[0])]
        beats = [(t, {"heart_rate": bpm}) for t, bpm in group.beats if inside(t)]
        if beats:
            samples = sorted(samples + beats, key=lambda s: s[0])
        rr = [x for after, v in group.hrv if (inside(after) if after is not None else i == 0) for x in v]
        lengths = [length_values(l) for l in group.lengths if inside(first_raw(l, "start_time"))]
        if fs is not None:
            fl, nl = first_raw(fs, "first_lap_index"), first_raw(fs, "num_laps")
            if fl is not None and nl is not None and nl > 0 and 0 <= fl < len(group.laps):
                laps = [l for l in group.laps[fl:fl + nl]]
            else:
                laps = [l for l in group.laps if inside(first_raw(l, "start_time"))]
            laps = [l for l in laps if first_raw(l, "start_time") is not None]
            sport_raw = as_int_enum(fs, "sport")
            sub_raw = as_int_enum(fs, "sub_sport")
            w = dict(fit_sport=enum_name(fs, "sport") if sport_raw is not None else None,
                     sub_sport=enum_name(fs, "sub_sport") if sub_raw not in (None, 0) else None,
                     timer_s=first_value(fs, "total_timer_time"), distance_m=first_value(fs, "total_distance"),
                     energy_kcal=first_value(fs, "total_calories"), avg_hr=first_value(fs, "avg_heart_rate"),
                     max_hr=first_value(fs, "max_heart_rate"), ascent_m=first_value(fs, "total_ascent"),
                     descent_m=first_value(fs, "total_descent"), laps=[lap_values(l) for l in laps])
        else:
            sport_names = fitdecode.profile.FIELD_TYPES["sport"].enum
            sub_names = fitdecode.profile.FIELD_TYPES["sub_sport"].enum
            w = dict(fit_sport=sport_names.get(s["sport_raw"]) if s["sport_raw"] is not None else None,
                     sub_sport=sub_names.get(s["sub_raw"]) if s["sub_raw"] not in (None, 0) else None,
                     timer_s=None, distance_m=s["distance"], energy_kcal=None, avg_hr=s["avg_hr"],
                     max_hr=s["max_hr"], ascent_m=None, descent_m=None, laps=[])
        out.append(dict(w, start=iso(start), end=iso(end), elapsed_s=end - start, samples=sample_digest(samples, start),
                        rr=rr_digest(rr), lengths=lengths, multisport=len(sessions) > 1))
    return out


def dump(value, depth=0):
    """Indented JSON (sorted keys) with every list of plain values on one line, so that a
    sample row reads as one line in a diff."""
    pad = " " * (depth + 1)
    if isinstance(value, dict) and value:
        items = [pad + json.dumps(k) + ": " + dump(value[k], depth + 1) for k in sorted(value)]
        return "{\n" + ",\n".join(items) + "\n" + " " * depth + "}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        return "[\n" + ",\n".join(pad + dump(v, depth + 1) for v in value) + "\n" + " " * depth + "]"
    return json.dumps(value)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "..")
    fixtures = os.path.join(root, "Fixtures", "fit")
    os.makedirs(os.path.join(fixtures, "expected"), exist_ok=True)
    for path in sorted(glob.glob(os.path.join(fixtures, "*.fit"))):
        name = os.path.basename(path)[:-4]
        groups, counts = read(path)
        result = dict(
            tool=f"fitdecode {fitdecode.__version__} (Drivers/FIT/tools/fit_reference.py)",
            file=os.path.basename(path),
            message_counts=dict(sorted(counts.items())),
            groups=[group_summary(g) for g in groups],
        )
        with open(os.path.join(fixtures, "expected", name + ".json"), "w") as out:
            out.write(dump(result) + "\n")
        print(name, [len(g["workouts"]) for g in result["groups"]])


def monitoring(group):
    """Heart-rate readings and daily totals (see README: cumulative per activity type, reset daily)."""
    ftype = first_raw(group.file_id, "type") if group.file_id else None
    if not group.monitoring or (ftype is not None and ftype not in (15, 28, 32)):
        return dict(heart_rate=0, days=[])
    offset = group.utc_offset or 0
    hr = sum(1 for m in group.monitoring if m[5] is not None and m[5] > 0)
    days = {}
    def add(run, value):
        if value < run[1]:
            run[0] += run[1]
        run[1] = value
    for t, atype, cycles, active, calories, _ in group.monitoring:
        local = t + offset - 1  # a reading at local midnight closes the day before
        day = (local // 86400) * 86400 - offset
        entry = days.setdefault(day, dict(last=t, steps={}, energy={}))
        entry["last"] = max(entry["last"], t)
        atype = 255 if atype is None else atype
        if cycles is not None and atype in (1, 6):
            add(entry["steps"].setdefault(atype, [0, 0]), cycles)
        energy = active if active is not None else calories
        if energy is not None:
            add(entry["energy"].setdefault(atype, [0, 0]), energy)
    out = []
    for day in sorted(days):
        e = days[day]
        out.append(dict(day_start=iso(day), end=iso(e["last"]), steps=sum(a + b for a, b in e["steps"].values()),
                        energy_kcal=sum(a + b for a, b in e["energy"].values())))
    return dict(heart_rate=hr, days=out)


def weights(group):
    keys = ["weight", "percent_fat", "percent_hydration", "bone_mass", "muscle_mass", "basal_met",
            "visceral_fat_rating", "bmi"]
    out = []
    for fs in group.weights:
        values = {}
        for k in keys:
            v = first_value(fs, k)
            if k == "weight" and isinstance(v, (int, float)) and v >= 655.34:
                v = None
            if isinstance(v, (int, float)):
                values[k] = v
        out.append(dict(time=iso(first_raw(fs, "timestamp")), user_profile_index=first_raw(fs, "user_profile_index"),
                        values=values))
    return out


def group_summary(group):
    ftype = first_value(group.file_id, "type") if group.file_id else None
    return dict(
        device=device(group),
        file_type=ftype if isinstance(ftype, str) else None,
        workouts=workouts(group),
        monitoring=monitoring(group),
        sleep_levels=len(group.sleep_levels),
        weights=weights(group),
    )


if __name__ == "__main__":
    main()
