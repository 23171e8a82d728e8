#!/usr/bin/env python3
"""Writes Fixtures/fit-sleep/synthetic-garmin-sleep.fit: a night laid out the way Garmin watches
write their sleep files (file type 49): the sleep event (74) started, one `sleep_level` message
per minute, the sleep event stopped, a `sleep_assessment`, and a `device_info` written when the
file was made, 40 minutes after the night ended. No real sleep file with a usable license was
available, so this script builds one from the FIT protocol (header, definitions, data, CRC).

The night: 23:00 to 06:30 UTC, 2021-09-08 to 2021-09-09, stages in runs of several minutes.
Usage: python3 Drivers/FIT/tools/make_sleep_fixture.py [repo root]
"""
import os
import struct
import sys

FIT_EPOCH = 631065600
START = 1631142000 - FIT_EPOCH  # 2021-09-08T23:00:00Z as FIT seconds
# (minutes after START, level): 1 awake, 2 light, 3 deep, 4 rem.
RUNS = [(0, 1), (6, 2), (31, 3), (73, 2), (110, 4), (131, 2), (172, 3), (201, 1), (204, 2),
        (260, 4), (288, 2), (339, 3), (356, 2), (400, 4), (431, 2), (447, 1)]
STOP = START + 450 * 60           # 06:30, the sleep event's stop
CREATED = STOP + 40 * 60          # the file is written 40 minutes later


def crc16(data, crc=0):
    table = [0x0000, 0xCC01, 0xD801, 0x1400, 0xF001, 0x3C00, 0x2800, 0xE401,
             0xA001, 0x6C00, 0x7800, 0xB401, 0x5000, 0x9C01, 0x8801, 0x4400]
    for byte in data:
        for nibble in (byte & 0xF, byte >> 4):
            tmp = table[crc & 0xF]
            crc = (crc >> 4) & 0x0FFF
            crc = crc ^ tmp ^ table[nibble]
    return crc


BASE = {"enum": (0x00, "B"), "uint8": (0x02, "B"), "uint16": (0x84, "H"), "uint32": (0x86, "I"),
        "uint32z": (0x8C, "I")}


class Writer:
    def __init__(self):
        self.records = bytearray()
        self.layouts = {}

    def define(self, local, global_number, fields):
        self.layouts[local] = fields
        self.records += struct.pack("<BBBHB", 0x40 | local, 0, 0, global_number, len(fields))
        for number, kind in fields:
            base, fmt = BASE[kind]
            self.records += struct.pack("<BBB", number, struct.calcsize(fmt), base)

    def data(self, local, values):
        self.records += bytes([local])
        for (number, kind), value in zip(self.layouts[local], values):
            self.records += struct.pack("<" + BASE[kind][1], value)

    def file(self):
        header = struct.pack("<BBHI4s", 14, 0x20, 2171, len(self.records), b".FIT")
        header += struct.pack("<H", crc16(header))
        body = header + bytes(self.records)
        return body + struct.pack("<H", crc16(body))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.getcwd()
    w = Writer()
    # file_id: type 49 (sleep), manufacturer 1 (garmin), product, serial, time_created.
    w.define(0, 0, [(0, "enum"), (1, "uint16"), (2, "uint16"), (3, "uint32z"), (4, "uint32")])
    w.data(0, [49, 1, 3290, 3_912_345_678, CREATED])
    # event: timestamp, event (74 = sleep), event_type (0 start, 1 stop).
    w.define(1, 21, [(253, "uint32"), (0, "enum"), (1, "enum")])
    w.data(1, [START, 74, 0])
    w.define(2, 275, [(253, "uint32"), (0, "enum")])
    levels = dict(RUNS)
    level = None
    for minute in range(0, 450):
        level = levels.get(minute, level)
        w.data(2, [START + minute * 60, level])
    w.data(1, [STOP, 74, 1])
    # sleep_assessment: combined_awake_score .. awakenings_count (0-11), interruptions_score (14),
    # average_stress_during_sleep (15, uint16 scale 100).
    fields = [(n, "uint8") for n in range(12)] + [(14, "uint8"), (15, "uint16")]
    w.define(3, 346, fields)
    w.data(3, [88, 79, 62, 100, 91, 86, 81, 77, 70, 94, 74, 3, 82, 1850])
    # device_info: timestamp only (the file's last message, written when the file was made).
    w.define(4, 23, [(253, "uint32"), (0, "uint8")])
    w.data(4, [CREATED, 0])
    path = os.path.join(root, "Fixtures", "fit-sleep", "synthetic-garmin-sleep.fit")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(w.file())
    print(path)


if __name__ == "__main__":
    main()
