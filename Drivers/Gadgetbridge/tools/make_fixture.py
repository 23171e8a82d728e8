#!/usr/bin/env python3
"""Builds Fixtures/gadgetbridge/Gadgetbridge: a small database with the tables and columns of
Gadgetbridge's greenDAO schema (version 92) that the importer reads, filled by hand.

Two bands of different generations (an original Mi Band, whose raw kinds are 4 deep / 5 light,
and an Amazfit Bip, whose kinds are masked with 0xF, 9 light / 11 deep, 0 and 10 repeating the
previous kind), one night each, hours of steps, heart rates with Gadgetbridge's "no reading"
values (0, -1, 255), and four workouts (one of a Garmin watch). The expected records are written
out in Tests/GadgetbridgeDriverTests, computed by hand from the rows below.

    python3 Drivers/Gadgetbridge/tools/make_fixture.py Fixtures/gadgetbridge/Gadgetbridge

With `--families`, it builds instead a database of schema version 151 (the tables as greenDAO
creates them at that version, every one read and a few that are not) holding a Zepp OS band
(HUAMI_EXTENDED_ACTIVITY_SAMPLE), a Xiaomi band (XIAOMI_ACTIVITY_SAMPLE, XIAOMI_SLEEP_TIME_SAMPLE,
XIAOMI_SLEEP_STAGE_SAMPLE) and a Colmi ring (COLMI_ACTIVITY_SAMPLE, COLMI_HEART_RATE_SAMPLE,
COLMI_SLEEP_STAGE_SAMPLE), one night each, and the export zip Gadgetbridge's "Export data" writes
around it (preferences first, then database/Gadgetbridge, then gadgetbridge.json):

    python3 Drivers/Gadgetbridge/tools/make_fixture.py --families Fixtures/gadgetbridge/v151
"""
import calendar
import json
import os
import sqlite3
import sys
import zipfile

SCHEMA = [
    'CREATE TABLE "android_metadata" (locale TEXT)',
    'CREATE TABLE "USER" ("_id" INTEGER PRIMARY KEY AUTOINCREMENT ,"NAME" TEXT NOT NULL ,"BIRTHDAY" INTEGER NOT NULL ,'
    '"GENDER" INTEGER NOT NULL )',
    'CREATE TABLE "USER_ATTRIBUTES" ("_id" INTEGER PRIMARY KEY AUTOINCREMENT ,"HEIGHT_CM" INTEGER NOT NULL ,'
    '"WEIGHT_KG" INTEGER NOT NULL ,"SLEEP_GOAL_HPD" INTEGER,"STEPS_GOAL_SPD" INTEGER,"VALID_FROM_UTC" INTEGER,'
    '"VALID_TO_UTC" INTEGER,"USER_ID" INTEGER NOT NULL )',
    'CREATE TABLE "DEVICE" ("_id" INTEGER PRIMARY KEY AUTOINCREMENT ,"NAME" TEXT NOT NULL ,"MANUFACTURER" TEXT NOT NULL ,'
    '"IDENTIFIER" TEXT NOT NULL UNIQUE ,"TYPE" INTEGER NOT NULL ,"TYPE_NAME" TEXT,"MODEL" TEXT,"ALIAS" TEXT,'
    '"PARENT_FOLDER" TEXT)',
    'CREATE TABLE "DEVICE_ATTRIBUTES" ("_id" INTEGER PRIMARY KEY AUTOINCREMENT ,"FIRMWARE_VERSION1" TEXT NOT NULL ,'
    '"FIRMWARE_VERSION2" TEXT,"VALID_FROM_UTC" INTEGER,"VALID_TO_UTC" INTEGER,"DEVICE_ID" INTEGER NOT NULL ,'
    '"VOLATILE_IDENTIFIER" TEXT)',
    'CREATE TABLE "MI_BAND_ACTIVITY_SAMPLE" ("TIMESTAMP" INTEGER NOT NULL ,"DEVICE_ID" INTEGER NOT NULL ,'
    '"USER_ID" INTEGER NOT NULL ,"RAW_INTENSITY" INTEGER NOT NULL ,"STEPS" INTEGER NOT NULL ,'
    '"RAW_KIND" INTEGER NOT NULL ,"HEART_RATE" INTEGER NOT NULL ,PRIMARY KEY ("TIMESTAMP" ,"DEVICE_ID" ) '
    'ON CONFLICT REPLACE) WITHOUT ROWID',
    'CREATE TABLE "BASE_ACTIVITY_SUMMARY" ("_id" INTEGER PRIMARY KEY AUTOINCREMENT ,"NAME" TEXT,'
    '"START_TIME" INTEGER NOT NULL ,"END_TIME" INTEGER NOT NULL ,"ACTIVITY_KIND" INTEGER NOT NULL ,'
    '"BASE_LONGITUDE" INTEGER,"BASE_LATITUDE" INTEGER,"BASE_ALTITUDE" INTEGER,"GPX_TRACK" TEXT,'
    '"RAW_DETAILS_PATH" TEXT,"DEVICE_ID" INTEGER NOT NULL ,"USER_ID" INTEGER NOT NULL ,"SUMMARY_DATA" TEXT,'
    '"RAW_SUMMARY_DATA" BLOB)',
    # A table of another family, present in every Gadgetbridge database and not read.
    'CREATE TABLE "GARMIN_ACTIVITY_SAMPLE" ("TIMESTAMP" INTEGER NOT NULL ,"DEVICE_ID" INTEGER NOT NULL ,'
    '"USER_ID" INTEGER NOT NULL ,"RAW_INTENSITY" INTEGER NOT NULL ,"STEPS" INTEGER NOT NULL ,'
    '"RAW_KIND" INTEGER NOT NULL ,"HEART_RATE" INTEGER NOT NULL ,"DISTANCE_CM" INTEGER NOT NULL ,'
    '"ACTIVE_CALORIES" INTEGER NOT NULL ,PRIMARY KEY ("TIMESTAMP" ,"DEVICE_ID" ) ON CONFLICT REPLACE) WITHOUT ROWID',
]

MI_BAND_1, AMAZFIT_BIP, GARMIN = 1, 2, 3


def at(text):
    """Unix seconds of 'YYYY-MM-DD HH:MM' UTC."""
    date, time = text.split(' ')
    y, mo, d = map(int, date.split('-'))
    h, mi = map(int, time.split(':'))
    return calendar.timegm((y, mo, d, h, mi, 0, 0, 0, 0))


def minutes(rows, device, start, count, kind, steps=0, heart_rate=-1):
    """`count` one-minute samples from `start`; heart_rate may be a function of the index."""
    t0 = at(start)
    for i in range(count):
        hr = heart_rate(i) if callable(heart_rate) else heart_rate
        rows.append((t0 + 60 * i, device, 1, 0, steps, kind, hr))


def sample_rows():
    rows = []
    # Mi Band 1 (codes: -1 activity, 3 not worn, 4 deep, 5 light); it measures no heart rate.
    minutes(rows, MI_BAND_1, '2026-03-01 21:50', 10, -1, steps=10)
    minutes(rows, MI_BAND_1, '2026-03-01 22:00', 30, 5)
    minutes(rows, MI_BAND_1, '2026-03-01 22:30', 60, 4)
    minutes(rows, MI_BAND_1, '2026-03-01 23:30', 10, -1, steps=5)
    minutes(rows, MI_BAND_1, '2026-03-01 23:40', 60, 5)
    minutes(rows, MI_BAND_1, '2026-03-02 00:40', 10, 3)
    minutes(rows, MI_BAND_1, '2026-03-02 02:30', 10, 5)   # 110 min after the last sleep: same night
    minutes(rows, MI_BAND_1, '2026-03-02 04:50', 4, 5)    # 130 min after: a new session, too short
    minutes(rows, MI_BAND_1, '2026-03-02 08:00', 30, -1, steps=40)
    # Amazfit Bip (codes & 0xF: 0 no change, 1 activity, 2 running, 9 light, 10 ignore, 11 deep,
    # 12 wake-up).
    minutes(rows, AMAZFIT_BIP, '2026-03-02 22:50', 10, 1, steps=20, heart_rate=lambda i: 70 + i)
    minutes(rows, AMAZFIT_BIP, '2026-03-02 23:00', 1, 9, heart_rate=60)
    minutes(rows, AMAZFIT_BIP, '2026-03-02 23:01', 29, 0, heart_rate=255)
    minutes(rows, AMAZFIT_BIP, '2026-03-02 23:30', 1, 11, heart_rate=52)
    minutes(rows, AMAZFIT_BIP, '2026-03-02 23:31', 59, 10, heart_rate=0)
    minutes(rows, AMAZFIT_BIP, '2026-03-03 00:30', 1, 0x19, heart_rate=58)
    minutes(rows, AMAZFIT_BIP, '2026-03-03 00:31', 29, 9, heart_rate=255)
    minutes(rows, AMAZFIT_BIP, '2026-03-03 01:00', 15, 12, heart_rate=66)
    minutes(rows, AMAZFIT_BIP, '2026-03-03 01:15', 45, 11, heart_rate=255)
    minutes(rows, AMAZFIT_BIP, '2026-03-03 02:00', 1, 1, steps=30, heart_rate=80)
    minutes(rows, AMAZFIT_BIP, '2026-03-03 03:00', 30, 0x29, heart_rate=255)
    minutes(rows, AMAZFIT_BIP, '2026-03-03 07:00', 30, 2, steps=150, heart_rate=140)
    return rows


def ms(text):
    return at(text) * 1000


def build(path):
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    for statement in SCHEMA:
        db.execute(statement)
    db.execute("INSERT INTO android_metadata VALUES ('en_US')")
    db.execute("INSERT INTO USER VALUES (1, 'gadgetbridge-user', ?, 1)", (ms('1990-01-01 00:00'),))
    db.execute("INSERT INTO USER_ATTRIBUTES VALUES (1, 175, 70, 8, 10000, ?, NULL, 1)", (ms('2026-01-01 00:00'),))
    db.executemany("INSERT INTO DEVICE VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, NULL)", [
        (MI_BAND_1, 'MI', 'Xiaomi', 'C8:0F:10:AA:00:01', 10, 'MIBAND'),
        (AMAZFIT_BIP, 'Amazfit Bip Watch', 'Huami', 'f4:00:00:bb:00:02', 12, 'AMAZFITBIP'),
        (GARMIN, 'Forerunner 255', 'Garmin', 'D0:00:00:CC:00:03', 0, 'GARMIN_FORERUNNER_255'),
    ])
    db.executemany("INSERT INTO DEVICE_ATTRIBUTES VALUES (?, ?, NULL, ?, NULL, ?, NULL)", [
        (1, '1.0.15.0', ms('2026-01-01 00:00'), MI_BAND_1),
        (2, '0.1.1.45', ms('2026-01-01 00:00'), AMAZFIT_BIP),
    ])
    db.executemany("INSERT INTO MI_BAND_ACTIVITY_SAMPLE VALUES (?, ?, ?, ?, ?, ?, ?)", sample_rows())
    db.executemany("INSERT INTO BASE_ACTIVITY_SUMMARY (_id, NAME, START_TIME, END_TIME, ACTIVITY_KIND, DEVICE_ID, USER_ID)"
                   " VALUES (?, ?, ?, ?, ?, ?, 1)", [
        (1, 'Morning run', ms('2026-03-03 07:00'), ms('2026-03-03 07:30'), 0x10, AMAZFIT_BIP),
        (2, 'Spinning', ms('2026-03-03 18:00'), ms('2026-03-03 19:00'), 0x800, AMAZFIT_BIP),
        (3, 'Yoga', ms('2026-03-04 06:00'), ms('2026-03-04 06:45'), 0x4000, GARMIN),
        (4, None, ms('2026-03-05 12:00'), ms('2026-03-05 12:20'), 0x04000005, AMAZFIT_BIP),
    ])
    db.execute('PRAGMA user_version = 92')
    db.commit()
    db.execute('VACUUM')
    db.close()


def table(name, columns, key=('TIMESTAMP', 'DEVICE_ID')):
    """A greenDAO CREATE TABLE: columns as (NAME, TYPE, not null), a composite primary key."""
    parts = ['"%s" %s%s' % (c, t, ' NOT NULL' if nn else '') for c, t, nn in columns]
    if key:
        parts.append('PRIMARY KEY (%s) ON CONFLICT REPLACE' % ' ,'.join('"%s"' % k for k in key))
    return 'CREATE TABLE "%s" (%s)%s' % (name, ' ,'.join(parts), ' WITHOUT ROWID' if key else '')


COMMON = [('TIMESTAMP', 'INTEGER', True), ('DEVICE_ID', 'INTEGER', True), ('USER_ID', 'INTEGER', True)]
I = 'INTEGER'

SCHEMA_151 = SCHEMA[:5] + [
    table('MI_BAND_ACTIVITY_SAMPLE', COMMON + [('RAW_INTENSITY', I, True), ('STEPS', I, True), ('RAW_KIND', I, True),
                                               ('HEART_RATE', I, True)]),
    table('HUAMI_EXTENDED_ACTIVITY_SAMPLE', COMMON + [('RAW_INTENSITY', I, True), ('STEPS', I, True), ('RAW_KIND', I, True),
                                                      ('HEART_RATE', I, True), ('UNKNOWN1', I, False), ('SLEEP', I, False),
                                                      ('DEEP_SLEEP', I, False), ('REM_SLEEP', I, False)]),
    table('XIAOMI_ACTIVITY_SAMPLE', COMMON + [('RAW_INTENSITY', I, True), ('STEPS', I, True), ('RAW_KIND', I, True),
                                              ('HEART_RATE', I, True), ('STRESS', I, False), ('SPO2', I, False),
                                              ('DISTANCE_CM', I, True), ('ACTIVE_CALORIES', I, True), ('ENERGY', I, True)]),
    table('XIAOMI_SLEEP_TIME_SAMPLE', COMMON + [('WAKEUP_TIME', I, False), ('IS_AWAKE', I, False), ('TOTAL_DURATION', I, False),
                                                ('DEEP_SLEEP_DURATION', I, False), ('LIGHT_SLEEP_DURATION', I, False),
                                                ('REM_SLEEP_DURATION', I, False), ('AWAKE_DURATION', I, False)]),
    table('XIAOMI_SLEEP_STAGE_SAMPLE', COMMON + [('STAGE', I, False)]),
    table('COLMI_ACTIVITY_SAMPLE', COMMON + [('RAW_KIND', I, True), ('STEPS', I, True), ('HEART_RATE', I, True),
                                             ('DISTANCE', I, True), ('CALORIES', I, True)]),
    table('COLMI_HEART_RATE_SAMPLE', COMMON + [('HEART_RATE', I, True)]),
    table('COLMI_SLEEP_SESSION_SAMPLE', COMMON + [('WAKEUP_TIME', I, False)]),
    table('COLMI_SLEEP_STAGE_SAMPLE', COMMON + [('DURATION', I, True), ('STAGE', I, True)]),
    # Read by no rule here: Garmin's samples are cumulative and its sleep needs its events.
    table('GARMIN_ACTIVITY_SAMPLE', COMMON + [('RAW_INTENSITY', I, True), ('STEPS', I, True), ('RAW_KIND', I, True),
                                              ('HEART_RATE', I, True), ('DISTANCE_CM', I, True), ('ACTIVE_CALORIES', I, True)]),
    table('GARMIN_SLEEP_STAGE_SAMPLE', COMMON + [('STAGE', I, True)]),
    'CREATE TABLE "BASE_ACTIVITY_SUMMARY" ("_id" INTEGER PRIMARY KEY AUTOINCREMENT ,"NAME" TEXT,'
    '"START_TIME" INTEGER NOT NULL ,"END_TIME" INTEGER NOT NULL ,"OVERRIDE_ACTIVITY_KIND" INTEGER NOT NULL ,'
    '"ACTIVITY_KIND" INTEGER NOT NULL ,"BASE_LONGITUDE" INTEGER,"BASE_LATITUDE" INTEGER,"BASE_ALTITUDE" INTEGER,'
    '"GPX_TRACK" TEXT,"RAW_DETAILS_PATH" TEXT,"HEADER_PHOTO" TEXT,"DEVICE_ID" INTEGER NOT NULL ,'
    '"USER_ID" INTEGER NOT NULL ,"SUMMARY_DATA" TEXT,"RAW_SUMMARY_DATA" BLOB)',
]

ZEPP, XIAOMI, COLMI, GARMIN_151 = 1, 2, 3, 4


def huami_extended_rows():
    """(TIMESTAMP s, DEVICE_ID, USER_ID, RAW_INTENSITY, STEPS, RAW_KIND, HEART_RATE, UNKNOWN1, SLEEP, DEEP_SLEEP, REM_SLEEP)."""
    rows = []

    def run(start, count, kind, steps=0, hr=-1, sleep=0, deep=0, rem=0):
        t0 = at(start)
        for i in range(count):
            rows.append((t0 + 60 * i, ZEPP, 1, 0, steps, kind, hr(i) if callable(hr) else hr, 0, sleep, deep, rem))
    run('2026-03-10 22:00', 10, 1, steps=12, hr=lambda i: 72 + i)
    run('2026-03-10 22:10', 20, 120, hr=58, sleep=30, deep=10, rem=5)     # light
    run('2026-03-10 22:30', 30, 120, hr=52, deep=50 | 128)                # deep (the high bit masked)
    run('2026-03-10 23:00', 15, 120, hr=255, deep=60, rem=60)             # REM before deep
    run('2026-03-10 23:15', 5, 115, hr=0)                                 # not worn: awake
    run('2026-03-10 23:20', 25, 120, hr=60, deep=42, rem=55)              # at the limits: light
    run('2026-03-11 07:00', 30, 64, steps=100, hr=130)                    # running
    return rows


def xiaomi_rows():
    t0 = at('2026-03-12 08:00')
    activity = [(t0 + 60 * i, XIAOMI, 1, 0, 50, 1, 90, None, None, 0, 0, 0) for i in range(60)]
    nights = [  # (TIMESTAMP ms, DEVICE_ID, USER_ID, WAKEUP_TIME ms, IS_AWAKE, durations...)
        (ms('2026-03-11 23:00') + 30_000, XIAOMI, 1, ms('2026-03-12 06:00'), 0, 420, 0, 0, 0, 0),
        (ms('2026-03-12 14:00'), XIAOMI, 1, ms('2026-03-12 14:03'), 0, 3, 0, 0, 0, 0),  # a nap too short to keep
    ]
    stages = [(ms(t), XIAOMI, 1, stage) for t, stage in [
        ('2026-03-11 23:30', 2), ('2026-03-12 00:30', 3), ('2026-03-12 01:30', 4), ('2026-03-12 02:00', 1),
        ('2026-03-12 02:10', 3), ('2026-03-12 04:00', 5), ('2026-03-12 04:05', 2)]]
    return activity, nights, stages


def colmi_rows():
    activity = [(at('2026-03-13 09:%02d' % m), COLMI, 1, 0, steps, 0, 0, 0)
                for m, steps in [(0, 400), (15, 300), (30, 200), (45, 100)]]
    t0 = ms('2026-03-13 09:00')
    heart = [(t0 + 300_000 * i, COLMI, 1, 80 + i) for i in range(12)] + [(t0 + 3_600_000, COLMI, 1, 0)]
    stages = [(ms(t), COLMI, 1, minutes, stage) for t, minutes, stage in [
        ('2026-03-12 23:10', 40, 2), ('2026-03-12 23:50', 60, 3), ('2026-03-13 00:50', 20, 4), ('2026-03-13 01:10', 10, 5),
        ('2026-03-13 01:20', 100, 2), ('2026-03-13 06:00', 3, 2)]]  # the last: three hours later, too short
    return activity, heart, stages


def build_families(folder):
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, 'Gadgetbridge')
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    for statement in SCHEMA_151:
        db.execute(statement)
    db.execute("INSERT INTO android_metadata VALUES ('en_US')")
    db.execute("INSERT INTO USER VALUES (1, 'gadgetbridge-user', ?, 1)", (ms('1990-01-01 00:00'),))
    db.executemany("INSERT INTO DEVICE VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, NULL)", [
        (ZEPP, 'Xiaomi Smart Band 7', 'Huami', 'e0:00:00:dd:00:04', 0, 'MIBAND7'),
        (XIAOMI, 'Xiaomi Smart Band 8', 'Xiaomi', 'C0:00:00:EE:00:05', 0, 'MIBAND8'),
        (COLMI, 'R02_1A2B', 'Colmi', 'A0:00:00:FF:00:06', 0, 'COLMI_R02'),
        (GARMIN_151, 'Forerunner 255', 'Garmin', 'D0:00:00:CC:00:07', 0, 'GARMIN_FORERUNNER_255'),
    ])
    db.executemany('INSERT INTO HUAMI_EXTENDED_ACTIVITY_SAMPLE VALUES (%s)' % ','.join('?' * 11), huami_extended_rows())
    activity, nights, stages = xiaomi_rows()
    db.executemany('INSERT INTO XIAOMI_ACTIVITY_SAMPLE VALUES (%s)' % ','.join('?' * 12), activity)
    db.executemany('INSERT INTO XIAOMI_SLEEP_TIME_SAMPLE VALUES (%s)' % ','.join('?' * 10), nights)
    db.executemany('INSERT INTO XIAOMI_SLEEP_STAGE_SAMPLE VALUES (?, ?, ?, ?)', stages)
    activity, heart, stages = colmi_rows()
    db.executemany('INSERT INTO COLMI_ACTIVITY_SAMPLE VALUES (%s)' % ','.join('?' * 8), activity)
    db.executemany('INSERT INTO COLMI_HEART_RATE_SAMPLE VALUES (?, ?, ?, ?)', heart)
    db.executemany('INSERT INTO COLMI_SLEEP_STAGE_SAMPLE VALUES (?, ?, ?, ?, ?)', stages)
    db.execute('INSERT INTO COLMI_SLEEP_SESSION_SAMPLE VALUES (?, ?, 1, ?)', (ms('2026-03-12 23:10'), COLMI, ms('2026-03-13 03:00')))
    db.execute('INSERT INTO GARMIN_ACTIVITY_SAMPLE VALUES (?, ?, 1, 0, 5000, 1, 70, 0, 0)', (at('2026-03-13 12:00'), GARMIN_151))
    db.execute('INSERT INTO GARMIN_SLEEP_STAGE_SAMPLE VALUES (?, ?, 1, 2)', (ms('2026-03-13 02:00'), GARMIN_151))
    db.executemany("INSERT INTO BASE_ACTIVITY_SUMMARY (_id, NAME, START_TIME, END_TIME, OVERRIDE_ACTIVITY_KIND, ACTIVITY_KIND,"
                   " DEVICE_ID, USER_ID) VALUES (?, ?, ?, ?, 0, ?, ?, 1)", [
        (1, 'Run', ms('2026-03-11 07:00'), ms('2026-03-11 07:30'), 0x10, ZEPP),
        (2, 'Walk', ms('2026-03-12 08:00'), ms('2026-03-12 08:30'), 0x20, XIAOMI),
        (3, 'Ride', ms('2026-03-13 09:00'), ms('2026-03-13 09:30'), 0x80, COLMI),
    ])
    db.execute('PRAGMA user_version = 151')
    db.commit()
    db.execute('VACUUM')
    db.close()
    build_zip(path, os.path.join(folder, 'Gadgetbridge_export.zip'))
    build_hostile(path, folder)


def build_zip(database, out):
    """The export zip around `database`, entries in the order ZipBackupExportJob writes them."""
    def entry(name):
        info = zipfile.ZipInfo(name, date_time=(2026, 3, 14, 8, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        return info
    with open(database, 'rb') as f:
        data = f.read()
    with zipfile.ZipFile(out, 'w') as z:
        z.writestr(entry('preferences/global.json'), json.dumps({'language': 'default'}))
        z.writestr(entry('preferences/device_E0:00:00:DD:00:04.json'), json.dumps({'heartrate_measurement_interval': 60}))
        z.writestr(entry('database/Gadgetbridge'), data)
        z.writestr(entry('gadgetbridge.json'), json.dumps({'appId': 'nodomain.freeyourgadget.gadgetbridge', 'appVersionName': '0.90.0',
                                                           'appVersionCode': 250, 'backupVersion': 1,
                                                           'backupDate': '2026-03-14T08:00:00Z'}))


def build_hostile(database, folder):
    """Two zips that must be refused: the database only under names that escape the archive
    (`../`, absolute), and a zip bomb: 64 MiB of zeros named database/Gadgetbridge."""
    def entry(name):
        info = zipfile.ZipInfo(name, date_time=(2026, 3, 14, 8, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        return info
    with open(database, 'rb') as f:
        data = f.read()
    with zipfile.ZipFile(os.path.join(folder, 'hostile-traversal.zip'), 'w') as z:
        z.writestr(entry('preferences/global.json'), '{}')
        z.writestr(entry('../database/Gadgetbridge'), data)
        z.writestr(entry('/database/Gadgetbridge'), data)
    with zipfile.ZipFile(os.path.join(folder, 'hostile-bomb.zip'), 'w') as z:
        z.writestr(entry('preferences/global.json'), '{}')
        z.writestr(entry('database/Gadgetbridge'), bytes(64 << 20))


if __name__ == '__main__':
    if len(sys.argv) > 2 and sys.argv[1] == '--families':
        build_families(sys.argv[2])
    else:
        build(sys.argv[1] if len(sys.argv) > 1 else 'Gadgetbridge')
