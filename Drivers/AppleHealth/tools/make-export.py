#!/usr/bin/env python3
"""Writes a synthetic Apple Health export for the tests and benchmarks: every record type the
apple-health importer maps (and some it skips), several sources, the HealthKit Export Version 14
DTD (or iOS 16's broken one, or one declaring entities), characters illegal in XML in a source
name, workouts with statistics, pause events and routes (GPX files in the zip, referenced by
FileReference), optionally zipped under a localized name. Deterministic for a given seed.

    python3 make-export.py OUT.zip [--days N] [--name exportar.xml] [--dtd v14|ios16|entities]
    python3 make-export.py OUT.xml --days 3          (a bare export.xml)
    python3 make-export.py OUT.xml --size 1024 --inline-routes --legal-only   (the benchmark's 1 GB)

`--size MB` writes days until the document holds that many megabytes (10^6 bytes), the dates
running on past `--days`; `--inline-routes` writes each run's route as `Location` elements in the
Workout (how iOS 12 and before did), so that a bare export.xml has routes too; `--legal-only`
leaves out the vertical tab (for readers that reject it, such as healthkit-to-sqlite's expat).

Each day has: heart rate every 5 minutes from two sources, steps/distance/active energy per hour
from the iPhone and the Watch, basal energy, a resting HR, HRV, SpO2, respiratory rate, a body
mass/fat/BMI/temperature/glucose reading, a blood pressure Correlation (with its two Records also
at the top level), water, a food Correlation with its energy Record, a night of sleep stages, a
mindful session, a workout with a route, an ActivitySummary. `--expect` prints the counts the
importer should store, as JSON.
"""
import argparse
import datetime as dt
import json
import random
import sys
import zipfile

DTD_V14 = """<!DOCTYPE HealthData [
<!-- HealthKit Export Version: 14 -->
<!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary|ClinicalRecord|Audiogram|VisionPrescription)*)>
<!ATTLIST HealthData
  locale CDATA #REQUIRED
>
<!ELEMENT ExportDate EMPTY>
<!ATTLIST ExportDate
  value CDATA #REQUIRED
>
<!ELEMENT Record ((MetadataEntry|HeartRateVariabilityMetadataList)*)>
<!ATTLIST Record
  type          CDATA #REQUIRED
  unit          CDATA #IMPLIED
  value         CDATA #IMPLIED
  sourceName    CDATA #REQUIRED
  sourceVersion CDATA #IMPLIED
  device        CDATA #IMPLIED
  creationDate  CDATA #IMPLIED
  startDate     CDATA #REQUIRED
  endDate       CDATA #REQUIRED
>
<!-- Note: Any Records that appear as children of a correlation also appear as top-level records in this document. -->
<!ELEMENT Correlation ((MetadataEntry|Record)*)>
<!ELEMENT Workout ((MetadataEntry|WorkoutEvent|WorkoutRoute|WorkoutStatistics)*)>
<!ELEMENT WorkoutRoute ((MetadataEntry|FileReference)*)>
<!ELEMENT FileReference EMPTY>
<!ATTLIST FileReference
  path CDATA #REQUIRED
>
]>
"""
# iOS 16 (Export Version 12): an ATTLIST never closed and a stray '>' before the end.
DTD_IOS16 = """<!DOCTYPE HealthData [
<!-- HealthKit Export Version: 12 -->
<!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary|ClinicalRecord|Audiogram|VisionPrescription)*)>
<!ATTLIST VisionPrescription
  type             CDATA #REQUIRED
  dateIssued       CDATA #REQUIRED
  expirationDate   CDATA #IMPLIED
  brand            CDATA #IMPLIED
<!ELEMENT RightEye EMPTY>
>
]>
"""
# Declarations that an expanding parser would blow up on (never referenced in the document).
DTD_ENTITIES = """<!DOCTYPE HealthData [
<!ENTITY lol "lol">
<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
<!ENTITY xxe SYSTEM "file:///etc/passwd">
<!ELEMENT HealthData ANY>
]>
"""

WATCH = ("Simon\u2019s Apple Watch", "10.1",
         "&lt;&lt;HKDevice: 0x3012772a0&gt;, name:Apple Watch, manufacturer:Apple Inc., model:Watch, hardware:Watch6,7, software:10.1&gt;")
PHONE = ("Simon\u2019s iPhone", "17.1", "&lt;&lt;HKDevice: 0x300d2a0&gt;, name:iPhone, manufacturer:Apple Inc., model:iPhone, hardware:iPhone15,2, software:17.1&gt;")
SCALE = ("Health Mate", "6.2.0", None)
# A source name with a vertical tab (illegal in XML 1.0), as some real exports carry.
APP = ("Water\x0bLlama", "3.1", None)


def stamp(t, offset="+0100"):
    return t.strftime("%Y-%m-%d %H:%M:%S ") + offset


def record(out, counts, source, type_, unit, value, start, end=None, children="", counted=None):
    name, version, device = source
    end = end or start
    dev = f' device="{device}"' if device else ""
    unit_attr = f' unit="{unit}"' if unit is not None else ""
    value_attr = f' value="{value}"' if value is not None else ""
    head = (f' <Record type="{type_}" sourceName="{name}" sourceVersion="{version}"{dev}{unit_attr} '
            f'creationDate="{stamp(end)}" startDate="{stamp(start)}" endDate="{stamp(end)}"{value_attr}')
    out.write(head + (f">\n{children} </Record>\n" if children else "/>\n"))
    if counted:
        counts[counted] = counts.get(counted, 0) + 1


def day(out, routes, counts, rng, date, inline_routes=False, app=None):
    APP = app or globals()["APP"]
    base = dt.datetime.combine(date, dt.time(0, 0))
    q = "HKQuantityTypeIdentifier"
    for minute in range(0, 24 * 60, 5):
        t = base + dt.timedelta(minutes=minute)
        record(out, counts, WATCH, q + "HeartRate", "count/min", rng.randint(55, 120), t,
               children='  <MetadataEntry key="HKMetadataKeyHeartRateMotionContext" value="0"/>\n', counted="heart_rate")
        if minute % 60 == 0:
            record(out, counts, PHONE, q + "HeartRate", "count/min", rng.randint(55, 100), t + dt.timedelta(seconds=30), counted="heart_rate")
    for hour in range(7, 22):
        t = base + dt.timedelta(hours=hour)
        for src in (WATCH, PHONE):
            steps = rng.randint(100, 900)
            record(out, counts, src, q + "StepCount", "count", steps, t, t + dt.timedelta(minutes=50), counted="steps")
            record(out, counts, src, q + "DistanceWalkingRunning", "km", round(steps * 0.00075, 5), t, t + dt.timedelta(minutes=50), counted="distance")
        record(out, counts, WATCH, q + "ActiveEnergyBurned", "Cal", round(rng.uniform(5, 40), 3), t, t + dt.timedelta(minutes=59), counted="energy")
        record(out, counts, WATCH, q + "BasalEnergyBurned", "kcal", round(rng.uniform(60, 70), 3), t, t + dt.timedelta(minutes=59), counted="basal_energy")
        record(out, counts, WATCH, q + "AppleStandTime", "min", 2, t, t + dt.timedelta(minutes=5))  # skipped
    noon = base + dt.timedelta(hours=12)
    record(out, counts, WATCH, q + "RestingHeartRate", "count/min", rng.randint(50, 60), base + dt.timedelta(hours=8), counted="resting_heart_rate")
    record(out, counts, WATCH, q + "HeartRateVariabilitySDNN", "ms", round(rng.uniform(20, 80), 3), base + dt.timedelta(hours=3),
           children='  <HeartRateVariabilityMetadataList>\n   <InstantaneousBeatsPerMinute bpm="60" time="3:00:01.00 AM"/>\n'
                    '  </HeartRateVariabilityMetadataList>\n', counted="hrv")
    record(out, counts, WATCH, q + "OxygenSaturation", "%", round(rng.uniform(0.94, 0.99), 2), base + dt.timedelta(hours=4), counted="spo2")
    record(out, counts, WATCH, q + "RespiratoryRate", "count/min", round(rng.uniform(12, 16), 1), base + dt.timedelta(hours=4), counted="respiratory_rate")
    record(out, counts, SCALE, q + "BodyMass", "kg", round(rng.uniform(70, 72), 1), noon, counted="weight")
    record(out, counts, SCALE, q + "BodyFatPercentage", "%", round(rng.uniform(0.18, 0.2), 3), noon, counted="body_fat")
    record(out, counts, SCALE, q + "BodyMassIndex", "count", round(rng.uniform(22, 23), 2), noon, counted="bmi")
    record(out, counts, PHONE, q + "BodyTemperature", "degC", round(rng.uniform(36.4, 37.0), 1), noon, counted="temperature")
    record(out, counts, PHONE, q + "BloodGlucose", "mg/dL", rng.randint(80, 120), noon, counted="glucose")
    # Blood pressure: the two Records at the top level (not counted) and in the Correlation.
    bp_t = base + dt.timedelta(hours=9)
    sys_v, dia_v = rng.randint(110, 130), rng.randint(70, 85)
    record(out, counts, SCALE, q + "BloodPressureSystolic", "mmHg", sys_v, bp_t)
    record(out, counts, SCALE, q + "BloodPressureDiastolic", "mmHg", dia_v, bp_t)
    out.write(f' <Correlation type="HKCorrelationTypeIdentifierBloodPressure" sourceName="{SCALE[0]}" sourceVersion="{SCALE[1]}" '
              f'creationDate="{stamp(bp_t)}" startDate="{stamp(bp_t)}" endDate="{stamp(bp_t)}">\n')
    record(out, counts, SCALE, q + "BloodPressureSystolic", "mmHg", sys_v, bp_t)
    record(out, counts, SCALE, q + "BloodPressureDiastolic", "mmHg", dia_v, bp_t)
    out.write(" </Correlation>\n")
    counts["blood_pressure"] = counts.get("blood_pressure", 0) + 1
    # Water: 250 ml twice and 8 US fl oz once.
    for hour, (value, unit) in zip((10, 15, 19), ((250, "mL"), (250, "mL"), (8, "fl_oz_us"))):
        record(out, counts, APP, q + "DietaryWater", unit, value, base + dt.timedelta(hours=hour), counted="hydration")
    # A meal as a food Correlation (its energy Record also at the top level: one meal) and a
    # bare DietaryEnergyConsumed.
    lunch = base + dt.timedelta(hours=12, minutes=30)
    kcal = rng.randint(400, 800)
    record(out, counts, PHONE, q + "DietaryEnergyConsumed", "kcal", kcal, lunch)
    record(out, counts, PHONE, q + "DietaryProtein", "g", 30, lunch)  # skipped
    out.write(f' <Correlation type="HKCorrelationTypeIdentifierFood" sourceName="{PHONE[0]}" sourceVersion="{PHONE[1]}" '
              f'creationDate="{stamp(lunch)}" startDate="{stamp(lunch)}" endDate="{stamp(lunch)}">\n'
              '  <MetadataEntry key="HKFoodType" value="Pasta"/>\n  <MetadataEntry key="meal" value="Lunch"/>\n')
    record(out, counts, PHONE, q + "DietaryEnergyConsumed", "kcal", kcal, lunch)
    record(out, counts, PHONE, q + "DietaryProtein", "g", 30, lunch)
    out.write(" </Correlation>\n")
    record(out, counts, PHONE, q + "DietaryEnergyConsumed", "kJ", 836.8, base + dt.timedelta(hours=16))
    counts["meal"] = counts.get("meal", 0) + 2
    # The night before this day: Watch stages 23:00 -> 06:30 and the iPhone's InBed.
    night = base - dt.timedelta(hours=1)
    c = "HKCategoryTypeIdentifierSleepAnalysis"
    stages = ["AsleepCore", "AsleepDeep", "AsleepCore", "AsleepREM", "Awake", "AsleepCore", "AsleepREM", "AsleepCore"]
    t = night
    for stage in stages:
        end = t + dt.timedelta(minutes=56, seconds=15)
        record(out, counts, WATCH, c, None, "HKCategoryValueSleepAnalysis" + stage, t, end,
               children='  <MetadataEntry key="HKTimeZone" value="Europe/Amsterdam"/>\n')
        t = end
    record(out, counts, PHONE, c, None, "HKCategoryValueSleepAnalysisInBed", night - dt.timedelta(minutes=10), t + dt.timedelta(minutes=5))
    counts["sleep"] = counts.get("sleep", 0) + 2
    record(out, counts, WATCH, "HKCategoryTypeIdentifierMindfulSession", None, None, base + dt.timedelta(hours=21),
           base + dt.timedelta(hours=21, minutes=10), counted="mindfulness")
    # A run with a pause, its statistics (iOS 16+) and a route file.
    run = base + dt.timedelta(hours=18)
    run_end = run + dt.timedelta(minutes=35)
    route = f"/workout-routes/route_{date.isoformat()}_6.00pm.gpx"
    seconds = range(0, 35 * 60, 10)
    if inline_routes:
        route_xml = "".join(
            f'   <Location date="{stamp(run + dt.timedelta(seconds=i))}" latitude="{52.37 + i * 0.00001:.6f}" '
            f'longitude="{4.89 + i * 0.00002:.6f}" altitude="{2 + (i % 7)}" horizontalAccuracy="5" verticalAccuracy="3" '
            'course="-1" speed="2.5"/>\n' for i in seconds)
    else:
        route_xml = f'   <FileReference path="{route}"/>\n'
    out.write(f' <Workout workoutActivityType="HKWorkoutActivityTypeRunning" duration="30" durationUnit="min" '
              f'sourceName="{WATCH[0]}" sourceVersion="{WATCH[1]}" device="{WATCH[2]}" creationDate="{stamp(run_end)}" '
              f'startDate="{stamp(run)}" endDate="{stamp(run_end)}">\n'
              '  <MetadataEntry key="HKIndoorWorkout" value="0"/>\n'
              f'  <WorkoutEvent type="HKWorkoutEventTypePause" date="{stamp(run + dt.timedelta(minutes=10))}"/>\n'
              f'  <WorkoutEvent type="HKWorkoutEventTypeResume" date="{stamp(run + dt.timedelta(minutes=15))}"/>\n'
              f'  <WorkoutStatistics type="HKQuantityTypeIdentifierActiveEnergyBurned" startDate="{stamp(run)}" endDate="{stamp(run_end)}" sum="312.5" unit="kcal"/>\n'
              f'  <WorkoutStatistics type="HKQuantityTypeIdentifierDistanceWalkingRunning" startDate="{stamp(run)}" endDate="{stamp(run_end)}" sum="5.2" unit="km"/>\n'
              f'  <WorkoutStatistics type="HKQuantityTypeIdentifierHeartRate" startDate="{stamp(run)}" endDate="{stamp(run_end)}" average="151.4" minimum="98" maximum="178" unit="count/min"/>\n'
              f'  <WorkoutRoute sourceName="{WATCH[0]}" sourceVersion="{WATCH[1]}" creationDate="{stamp(run_end)}" startDate="{stamp(run)}" endDate="{stamp(run_end)}">\n'
              + route_xml + '  </WorkoutRoute>\n </Workout>\n')
    counts["workout"] = counts.get("workout", 0) + 1
    if routes is not None:
        points = []
        for i in seconds:
            pt = run + dt.timedelta(seconds=i) - dt.timedelta(hours=1)  # the GPX is in UTC
            points.append(f'<trkpt lon="{4.89 + i * 0.00002:.6f}" lat="{52.37 + i * 0.00001:.6f}"><ele>{2 + (i % 7)}</ele>'
                          f'<time>{pt.strftime("%Y-%m-%dT%H:%M:%SZ")}</time><extensions><speed>2.5</speed></extensions></trkpt>')
        routes[route.lstrip("/")] = ('<?xml version="1.0" encoding="UTF-8"?>\n<gpx version="1.1" creator="Apple Health Export" '
                                     'xmlns="http://www.topografix.com/GPX/1/1"><metadata><time>'
                                     f'{run.strftime("%Y-%m-%dT%H:%M:%SZ")}</time></metadata><trk><name>Route</name><trkseg>\n'
                                     + "\n".join(points) + "\n</trkseg></trk></gpx>\n")
    if routes is not None or inline_routes:
        counts["route_points"] = counts.get("route_points", 0) + len(seconds)
    out.write(f' <ActivitySummary dateComponents="{date.isoformat()}" activeEnergyBurned="400" activeEnergyBurnedGoal="500" '
              'activeEnergyBurnedUnit="kcal" appleExerciseTime="30" appleExerciseTimeGoal="30" appleStandHours="10" appleStandHoursGoal="12"/>\n')


class Sink:
    """Writes text as UTF-8 to a binary stream, counting bytes."""

    def __init__(self, stream):
        self.stream = stream
        self.bytes = 0

    def write(self, text):
        data = text.encode()
        self.bytes += len(data)
        self.stream.write(data)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--days", type=int, default=2)
    parser.add_argument("--name", default="export.xml", help="the data file's name in the zip (localized: exportar.xml)")
    parser.add_argument("--dtd", choices=["v14", "ios16", "entities", "none"], default="v14")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--expect", action="store_true", help="print the expected counts as JSON")
    parser.add_argument("--size", type=float, default=0, help="write days until the document holds this many MB (10^6 bytes)")
    parser.add_argument("--inline-routes", action="store_true", help="routes as Location elements in the Workout (iOS 12)")
    parser.add_argument("--legal-only", action="store_true", help="no character XML 1.0 forbids (no vertical tab)")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    counts, routes = {}, {}
    dtd = {"v14": DTD_V14, "ios16": DTD_IOS16, "entities": DTD_ENTITIES, "none": ""}[args.dtd]
    first = dt.date(2019, 1, 1)
    if args.size:
        # About 200 kB a day: start early enough that the last day is not in the future (the
        # importer's validation rejects future-dated records).
        first = min(first, dt.date.today() - dt.timedelta(days=int(args.size * 1e6 / 200e3) + 30))

    def document(stream):
        out = Sink(stream)
        out.write('<?xml version="1.0" encoding="UTF-8"?>\n' + dtd + '<HealthData locale="nl_NL">\n'
                  ' <ExportDate value="2024-06-01 08:10:05 +0200"/>\n'
                  ' <Me HKCharacteristicTypeIdentifierDateOfBirth="1990-05-20" HKCharacteristicTypeIdentifierBiologicalSex="HKBiologicalSexMale"/>\n')
        app = ("Water Llama", "3.1", None) if args.legal_only else APP
        keep = routes if args.out.endswith(".zip") else None
        n = 0
        while n < args.days or out.bytes < args.size * 1e6:
            day(out, keep, counts, rng, first + dt.timedelta(days=n), inline_routes=args.inline_routes, app=app)
            n += 1
        out.write("</HealthData>\n")

    if args.out.endswith(".zip"):
        with zipfile.ZipFile(args.out, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as z:
            z.writestr(zipfile.ZipInfo("apple_health_export/", (2024, 6, 1, 8, 10, 4)), b"")
            info = zipfile.ZipInfo("apple_health_export/" + args.name, (2024, 6, 1, 8, 10, 4))
            info.compress_type = zipfile.ZIP_DEFLATED
            with z.open(info, "w", force_zip64=True) as stream:
                document(stream)
            def put(name, data):
                entry = zipfile.ZipInfo(name, (2024, 6, 1, 8, 10, 4))
                entry.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(entry, data)
            put("apple_health_export/export_cda.xml", '<?xml version="1.0"?><ClinicalDocument></ClinicalDocument><junk/>')
            for path, text in sorted(routes.items()):
                put("apple_health_export/" + path, text)
            put("__MACOSX/apple_health_export/._" + args.name, b"\x00\x05\x16\x07 AppleDouble junk")
    else:
        with open(args.out, "wb") as stream:
            document(stream)
    if args.expect:
        json.dump(dict(sorted(counts.items())), sys.stdout, indent=1)
        print()


if __name__ == "__main__":
    main()
