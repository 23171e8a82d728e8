#!/usr/bin/env python3
"""Builds Fixtures/gadgetbridge/Gadgetbridge: a small database with the tables and columns of
Gadgetbridge's greenDAO schema (version 92) that the importer reads, filled by hand.

Two bands of different generations (an original Mi Band, whose raw kinds are 4 deep / 5 light,
and an Amazfit Bip, whose kinds are masked with 0xF, 9 light / 11 deep, 0 and 10 repeating the
previous kind), one night each, hours of steps, heart rates with Gadgetbridge's "no reading"
values (0, -1, 255), and four workouts (one of a Garmin watch). The expected records are written
out in Tests/GadgetbridgeDriverTests, computed by hand from the rows below.

    python3 Drivers/Gadgetbridge/tools/make_fixture.py Fixtures/gadgetbridge/Gadgetbridge
"""
import calendar
import os
import sqlite3
import sys

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


if __name__ == '__main__':
    build(sys.argv[1] if len(sys.argv) > 1 else 'Gadgetbridge')
