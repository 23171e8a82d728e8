#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target (Fuzz/corpus/<target>/) from the repository's
fixtures and tests, and the JSON dictionary.

Large fixtures are cut: FIT files to their first few kilobytes (header length and CRCs fixed up),
XML documents after a few track points (the open elements closed again). BLE seeds are the packets
of the btsnoop fixture, taken apart layer by layer. Run from anywhere; it replaces the corpus.

    python3 Fuzz/make-corpus.py
"""
import hashlib
import json
import re
import shutil
import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FUZZ = ROOT / "Fuzz"
CORPUS = FUZZ / "corpus"
FIXTURES = ROOT / "Fixtures"

# How large a cut file may be.
FIT_CUT = 6 * 1024
XML_POINTS = 12


def write(target: str, data: bytes) -> None:
    """Adds one seed, named by its SHA-1 as libFuzzer names corpus files."""
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)


# MARK: - FIT

def fit_crc(data: bytes) -> int:
    table = [0x0000, 0xCC01, 0xD801, 0x1400, 0xF001, 0x3C00, 0x2800, 0xE401,
             0xA001, 0x6C00, 0x7800, 0xB401, 0x5000, 0x9C01, 0x8801, 0x4400]
    crc = 0
    for byte in data:
        tmp = table[crc & 0xF]
        crc = (crc >> 4) & 0x0FFF
        crc = crc ^ tmp ^ table[byte & 0xF]
        tmp = table[crc & 0xF]
        crc = (crc >> 4) & 0x0FFF
        crc = crc ^ tmp ^ table[(byte >> 4) & 0xF]
    return crc


def fit_cut(data: bytes, size: int) -> bytes:
    """The first `size` bytes of the first FIT file in `data`, as a file of its own: the header
    declares that many data bytes and both CRCs match (the last record may be cut short)."""
    header_size = data[0]
    declared = struct.unpack_from("<I", data, 4)[0]
    body = min(declared, size - header_size)
    header = bytearray(data[:header_size])
    struct.pack_into("<I", header, 4, body)
    if header_size >= 14:
        struct.pack_into("<H", header, 12, fit_crc(bytes(header[:12])))
    out = bytes(header) + data[header_size:header_size + body]
    return out + struct.pack("<H", fit_crc(out))


def fit_seeds() -> None:
    for path in sorted((FIXTURES / "fit").rglob("*.fit")):
        data = path.read_bytes()
        write("fuzz-fit", data if len(data) <= FIT_CUT else fit_cut(data, FIT_CUT))


# MARK: - XML (TCX, GPX)

TAG = re.compile(rb"<(/?)([A-Za-z_][\w:.-]*)[^>]*?(/?)>")


def xml_cut(data: bytes, point_tag: bytes, points: int) -> bytes:
    """The document up to the end of its `points`-th `point_tag` element, with the elements
    still open there closed."""
    end_tag = b"</" + point_tag + b">"
    at = -1
    for _ in range(points):
        at = data.find(end_tag, at + 1)
        if at < 0:
            return data
    prefix = data[:at + len(end_tag)]
    stack: list[bytes] = []
    for m in TAG.finditer(prefix):
        closing, name, empty = m.groups()
        if empty:
            continue
        if closing:
            if stack and stack[-1] == name:
                stack.pop()
        else:
            stack.append(name)
    return prefix + b"".join(b"</" + name + b">" for name in reversed(stack)) + b"\n"


XML_SNIPPETS = [
    b'<?xml version="1.0" encoding="UTF-8"?>\n<a x="1" y=\'2\'><b/>text &amp; &lt; &#65; &#x42;<![CDATA[raw <x>]]><!-- c --><?pi data?></a>',
    b'<!DOCTYPE a [<!ENTITY e "x">]><a>&e;</a>',
    b'<p:a xmlns:p="urn:x" p:k="v"><p:b>1</p:b></p:a>',
    b'\xef\xbb\xbf<a>\xc3\xa9\xe2\x82\xac</a>',
]


def xml_seeds() -> None:
    for path in sorted((FIXTURES / "tcx").glob("*.tcx")):
        cut = xml_cut(path.read_bytes(), b"Trackpoint", XML_POINTS)
        write("fuzz-tcx", cut)
        write("fuzz-xml", cut)
    for path in sorted((FIXTURES / "gpx").rglob("*.gpx")):
        cut = xml_cut(path.read_bytes(), b"trkpt", XML_POINTS)
        write("fuzz-gpx", cut)
        write("fuzz-xml", cut)
    for snippet in XML_SNIPPETS:
        write("fuzz-xml", snippet)


# MARK: - Zip and Apple Health

APPLE_RECORDS = 40


def zip_seeds() -> None:
    """The zip fixtures that are small (the 20 KB bomb too: the target's limits are lower), and
    the Apple Health archives."""
    for path in sorted((FIXTURES / "zip").glob("*.zip")) + sorted((FIXTURES / "apple-health").glob("*.zip")):
        write("fuzz-zip", path.read_bytes())


def apple_health_seeds() -> None:
    """The Apple Health fixtures, the malformed one cut after a few records (the open elements
    closed again)."""
    for path in sorted((FIXTURES / "apple-health").rglob("*.xml")):
        data = path.read_bytes()
        if data.count(b"<Record") > APPLE_RECORDS:
            end = 0
            for _ in range(APPLE_RECORDS):
                end = data.index(b"<Record", end + 1)
            data = data[:end] + b"</HealthData>\n"
        write("fuzz-applehealth", data)
        write("fuzz-xml", data)


# MARK: - Exec

def exec_seeds() -> None:
    lines: list[str] = []
    readme = (ROOT / "Drivers" / "Exec" / "README.md").read_text()
    lines += [line for line in readme.splitlines() if line.startswith('{"')]
    tests = (ROOT / "Tests" / "ExecDriverTests" / "ExecDriverTests.swift").read_text()
    for raw in re.findall(r'#"(\{.*?\})"#', tests):
        lines.append(raw.replace(r"\#(t)", "2026-11-22T07:30:00Z"))
    seen = set()
    for line in lines:
        if line not in seen:
            seen.add(line)
            write("fuzz-exec", line.encode() + b"\n")
    write("fuzz-exec", ("\n".join(sorted(seen)[:6]) + "\n# a comment\n\n").encode())


# MARK: - GATT

def gatt_characteristics() -> list[int]:
    """Every characteristic UUID GATTNumbers.swift names (the decoders take most of them)."""
    text = (ROOT / "Drivers" / "BluetoothLE" / "Profiles" / "GATTNumbers.swift").read_text()
    return sorted({int(m, 16) for m in re.findall(r"static let \w+: UInt16 = 0x(2A[0-9A-F]{2})", text)})


def gatt_seeds() -> None:
    """The fuzz target reads a characteristic UUID (2 bytes, little-endian), then its value."""
    for uuid in gatt_characteristics():
        head = struct.pack("<H", uuid)
        write("fuzz-gatt", head + bytes([0x00, 0x48, 0x00]))
        write("fuzz-gatt", head + bytes([0xFF]) + bytes(range(1, 30)))
    for line in (FIXTURES / "ble" / "hr-csc-watch.sent.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("characteristic") and event.get("hex") is not None:
            write("fuzz-gatt", struct.pack("<H", int(event["characteristic"], 16)) + bytes.fromhex(event["hex"]))


# MARK: - BLE host (from the btsnoop fixture)

def btsnoop_records(path: Path) -> list[bytes]:
    data = path.read_bytes()
    offset, records = 16, []
    while offset + 24 <= len(data):
        included = struct.unpack_from(">I", data, offset + 4)[0]
        records.append(data[offset + 24:offset + 24 + included])
        offset += 24 + included
    return records


def ble_seeds() -> None:
    captures = sorted((FIXTURES / "ble").glob("*.btsnoop"))
    for path in captures:
        data = path.read_bytes()
        write("fuzz-btsnoop", data)
        # The header and the first records only.
        offset = 16
        for _ in range(20):
            offset += 24 + struct.unpack_from(">I", data, offset + 4)[0]
        write("fuzz-btsnoop", data[:offset])
    # The same session as pcap and pcapng (link type 201), whole and cut after 20 records.
    for path in sorted((FIXTURES / "ble").glob("*.pcap")):
        write("fuzz-btsnoop", path.read_bytes())
        write("fuzz-btsnoop", pcap_prefix(path.read_bytes(), 20))
    for path in sorted((FIXTURES / "ble").glob("*.pcapng")):
        write("fuzz-btsnoop", path.read_bytes())
        write("fuzz-btsnoop", pcapng_prefix(path.read_bytes(), 3 + 20))

    packets = btsnoop_records(captures[0])
    for start in range(0, len(packets), 24):
        write("fuzz-h4", b"".join(packets[start:start + 24]))
    acl: list[bytes] = []
    for packet in packets:
        kind, body = packet[0], packet[1:]
        if kind in (0x01, 0x04):
            write("fuzz-hci", body)
        elif kind == 0x02:
            acl.append(body)
            flags = body[1] >> 4
            frame = body[4:]
            if flags & 0x3 != 0x1 and len(frame) >= 4:
                write("fuzz-l2cap", frame)
                if struct.unpack_from("<H", frame, 2)[0] == 0x0004:
                    write("fuzz-att", frame[4:])
    for start in range(0, len(acl), 8):
        write("fuzz-acl", b"".join(acl[start:start + 8]))


# MARK: - Packet captures (pcap, pcapng, usbmon)

def pcap_prefix(data: bytes, records: int) -> bytes:
    """A little-endian pcap file's header and first `records` records."""
    offset = 24
    for _ in range(records):
        offset += 16 + struct.unpack_from("<I", data, offset + 8)[0]
    return data[:offset]


def pcapng_prefix(data: bytes, blocks: int) -> bytes:
    """A little-endian pcapng file's first `blocks` blocks."""
    offset = 0
    for _ in range(blocks):
        offset += struct.unpack_from("<I", data, offset + 4)[0]
    return data[:offset]


def pcap_file(order: str, nanoseconds: bool, link_type: int, snaplen: int, packets: list) -> bytes:
    """Classic pcap in byte order `order` ("<" or ">"): packets of (seconds, fraction, data)."""
    out = struct.pack(order + "IHHiIII", 0xA1B23C4D if nanoseconds else 0xA1B2C3D4, 2, 4, 0, 0, snaplen, link_type)
    for seconds, fraction, data in packets:
        out += struct.pack(order + "IIII", seconds, fraction, len(data), len(data)) + data
    return out


def pcapng_block(order: str, kind: int, body: bytes) -> bytes:
    body += bytes(-len(body) % 4)
    return struct.pack(order + "II", kind, 12 + len(body)) + body + struct.pack(order + "I", 12 + len(body))


def pcapng_option(order: str, code: int, value: bytes) -> bytes:
    return struct.pack(order + "HH", code, len(value)) + value + bytes(-len(value) % 4)


def pcapng_mixed() -> bytes:
    """Two sections (little-, then big-endian), three interfaces (link types 201, 220 with
    if_tsresol 10^-9, 189 with 2^-10), Enhanced, Simple and obsolete Packet Blocks, and blocks a
    reader skips (Interface Statistics, a custom block): PcapngTests' mixed file."""
    out = b""
    for order, interfaces, packets in [
        ("<", [(201, 0, b""), (220, 4096, bytes([9]))],
         [(6, struct.pack("<IIIII", 0, 1_700_000_000_123_456 >> 32, 1_700_000_000_123_456 & 0xFFFFFFFF, 8, 8)
           + bytes([0, 0, 0, 1, 0x04, 0x0E, 0x01, 0x02])),
          (5, bytes(12)),
          (6, struct.pack("<IIIII", 1, 1_700_000_001_000_000_123 >> 32, 1_700_000_001_000_000_123 & 0xFFFFFFFF, 70, 70)
           + bytes(range(70))),
          (3, struct.pack("<I", 8) + bytes([0, 0, 0, 0, 0x01, 0x03, 0x0C, 0x00]))]),
        (">", [(189, 0, bytes([0x80 | 10]))],
         [(2, struct.pack(">HHIIII", 0, 0, (1_700_000_002 << 10 | 512) >> 32, (1_700_000_002 << 10 | 512) & 0xFFFFFFFF, 2, 2)
           + bytes([0xAB, 0xCD])),
          (0x0BAD, bytes([1, 2, 3, 4, 5])),
          (6, struct.pack(">IIIII", 0, (1_700_000_003 << 10) >> 32, (1_700_000_003 << 10) & 0xFFFFFFFF, 0, 0))]),
    ]:
        shb = struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1) + pcapng_option(order, 4, b"HealthGate tests") + pcapng_option(order, 0, b"")
        out += pcapng_block(order, 0x0A0D0D0A, shb)
        for link_type, snaplen, resolution in interfaces:
            options = (pcapng_option(order, 9, resolution) + pcapng_option(order, 0, b"")) if resolution else b""
            out += pcapng_block(order, 1, struct.pack(order + "HHI", link_type, 0, snaplen) + options)
        for kind, body in packets:
            out += pcapng_block(order, kind, body)
    return out


def usbmon(event: str, transfer: int, endpoint: int, status: int, length: int, data: bytes, setup: bytes, usec: int,
           mmapped: bool) -> bytes:
    """A usbmon header (48 or 64 bytes, little-endian, the kernel's binary layout) and its data."""
    header = struct.pack("<QBBBBHbbqiiII8s", 0xFFFF888100001000 + transfer, ord(event), transfer, endpoint, 5, 1,
                         0 if setup else ord("-"), 0 if data else ord("<" if endpoint & 0x80 else ">"),
                         1_700_000_000, usec, status, length, len(data), setup or bytes(8))
    return header + (struct.pack("<iiII", 0, 0, 0, 0) if mmapped else b"") + data


def usbmon_session(mmapped: bool) -> list:
    """An ANT stick's start as USBMonTests builds it: a control read of the device descriptor,
    the reset out, the startup message in, an interrupt error."""
    descriptor = bytes.fromhex("1201000200000020cf0f0810000101020301")
    events = [("S", 2, 0x80, -115, 18, b"", bytes([0x80, 0x06, 0x00, 0x01, 0x00, 0x00, 0x12, 0x00])),
              ("C", 2, 0x80, 0, 18, descriptor, b""),
              ("S", 3, 0x01, -115, 5, bytes.fromhex("a4014a00ef"), b""),
              ("C", 3, 0x01, 0, 5, b"", b""),
              ("S", 3, 0x81, -115, 64, b"", b""),
              ("C", 3, 0x81, 0, 5, bytes.fromhex("a4016f20ea"), b""),
              ("E", 1, 0x83, -32, 8, b"", b"")]
    return [usbmon(e, t, ep, st, n, d, su, i * 100, mmapped) for i, (e, t, ep, st, n, d, su) in enumerate(events)]


def capture_seeds() -> None:
    """fuzz-capture: the captures the PacketCapture tests build (pcap in both byte orders and
    resolutions, the mixed pcapng, usbmon sessions of link types 220 and 189) and the BLE
    fixture as pcap and pcapng."""
    packets = [(1_700_000_000, 123_456, bytes([0, 0, 0, 1, 0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])),
               (1_700_000_001, 999_999, b""), (4_000_000_000, 1, bytes(range(200)))]
    for order, nanoseconds in [("<", False), (">", True)]:
        write("fuzz-capture", pcap_file(order, nanoseconds, 201, 65535, packets))
    write("fuzz-capture", pcapng_mixed())
    write("fuzz-capture", pcap_file("<", False, 220, 262144, [(1_700_000_000, i * 100, r) for i, r in enumerate(usbmon_session(True))]))
    # Snapshot length 56: the readers keep 56 bytes of the longer records.
    write("fuzz-capture", pcap_file("<", False, 189, 56, [(1_700_000_000, i * 100, r) for i, r in enumerate(usbmon_session(False))]))
    for path in sorted((FIXTURES / "ble").glob("*.pcap")) + sorted((FIXTURES / "ble").glob("*.pcapng")):
        write("fuzz-capture", path.read_bytes())


# MARK: - Sync protocol JSON

def record(i: int, kind: str, data: dict) -> dict:
    rid = f"6f1c0d8e-3b5a-4c1e-9a57-0000000000{i:02d}"
    return {"id": rid, "version": 1, "type": kind, "data": {"id": rid, "version": 1, **data}}


def sync_seeds() -> list[dict]:
    records = [
        record(1, "workout", {"sport": "running", "start": "2025-03-03T07:00:00Z", "end": "2025-03-03T08:00:00.250Z",
                              "elapsed_s": 3600.25, "distance_m": 10000, "laps": [],
                              "samples": [{"time": "2025-03-03T07:00:01Z", "heart_rate": 120, "latitude": 47.1,
                                           "longitude": 8.5}],
                              "rr_intervals": [0.5], "lengths": [], "source": {"driver": "fit", "device": "watch"}}),
        record(2, "sleep", {"start": "2025-03-03T22:00:00Z", "end": "2025-03-04T06:00:00Z",
                            "stages": [{"start": "2025-03-03T22:00:00Z", "end": "2025-03-03T23:00:00Z", "stage": "deep"}],
                            "source": {"driver": "fit"}}),
        record(3, "habit", {"habit": "hydration", "time": "2025-03-04T08:00:00Z", "value": 250, "unit": "ml",
                            "source": {"driver": "csv"}}),
        record(4, "measurement", {"kind": "blood_pressure", "time": "2025-03-04T08:00:00Z", "value": 120,
                                  "extra": {"diastolic": 80}, "source": {"driver": "ble"}}),
    ]
    messages = [
        {"records": records},
        {"records": [dict(r, device_id="d1", seq=i + 1) for i, r in enumerate(records)], "next": 4, "more": False,
         "epoch": "e1"},
        {"records": [{"id": records[0]["id"], "version": 2, "type": "workout", "device_id": "d1", "seq": 9,
                      "deleted": True}], "next": 9, "more": True},
        {"results": [{"id": records[0]["id"], "version": 1, "status": "accepted"},
                     {"id": records[1]["id"], "version": 1, "status": "rejected", "reason": "why"}]},
        {"error": {"code": "too_large", "message": "m", "record_id": "x", "max_bytes": 10}},
        {"email": "a@example.org", "password": "p", "device_name": "d"},
        {"period": "week", "buckets": [{"start": "2025-03-03", "workouts": 1}]},
    ]
    for message in messages:
        write("fuzz-syncjson", json.dumps(message, separators=(",", ":")).encode())
    write("fuzz-syncjson", json.dumps(messages[0], indent=1).encode())
    write("fuzz-syncjson", rb'{"a":[1,-0,2.5e-3,true,false,null,"\u00e9\n\"\\"],"b":{}}')
    return messages


def keys(value, out: set) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(k)
            keys(v, out)
    elif isinstance(value, list):
        for v in value:
            keys(v, out)
    elif isinstance(value, str) and len(value) < 24:
        out.add(value)


def json_dictionary(messages: list[dict]) -> None:
    words: set = set()
    for message in messages:
        keys(message, words)
    lines = ["# Keys and values of the sync protocol's messages (written by make-corpus.py).", ""]
    lines += [f'"\\"{w}\\""' for w in sorted(words)]
    lines += ['"true"', '"false"', '"null"', '"\\\\u"', '"e+"', '"-0."']
    (FUZZ / "dict" / "json.dict").write_text("\n".join(lines) + "\n")


# MARK: - CSV

def csv_seeds() -> None:
    """The habit exports (Loop, HabitBull, generic CSVs), each after a delimiter byte (0: comma)."""
    habits = FIXTURES / "habits"
    for path in sorted(habits.rglob("*.csv")):
        data = path.read_bytes()[:2048]
        write("fuzz-csv", (b"\x01" if b";" in data.split(b"\n")[0] else b"\x00") + data)
    write("fuzz-csv", b"\x00a,\"b\"\"c\",\"d\r\ne\"\r\nf,g\rh,i\n\"\"\"\n")


def gadgetbridge_seeds() -> None:
    """Rows of Gadgetbridge's sleep tables as fuzz-gadgetbridge reads them: a family byte, then
    rows of (choice, a, b, c[, stage count]), each 32-bit number as two little-endian halves, high
    half first: the Colmi and Xiaomi nights of Fixtures/gadgetbridge/v151 and Zepp OS minutes."""
    def number(v: int) -> bytes:
        v &= 0xFFFFFFFF
        return (v >> 16).to_bytes(2, "little") + (v & 0xFFFF).to_bytes(2, "little")

    def row(choice: int, a: int, b: int, c: int, extra: bytes = b"") -> bytes:
        return bytes([choice]) + number(a) + number(b) + bytes([c & 0xFF]) + extra
    colmi = [(0, 40, 2), (2400, 60, 3), (6000, 20, 4), (7200, 10, 5), (7800, 100, 2), (21000, 3, 2)]
    write("fuzz-gadgetbridge", b"\x01" + b"".join(row(0, a, b, c) for a, b, c in colmi))
    write("fuzz-gadgetbridge", b"\x01" + row(1, 30_000, 25_170_000, 2, bytes([7])) + row(1, 0, 180_000, 3, bytes([0])))
    zepp = [(60, 120, 10), (120, 120, 50 | 128), (180, 120, 60), (240, 115, 0), (300, 120, 42)]
    write("fuzz-gadgetbridge", b"\x00" + b"".join(row(3, a, b, c) for a, b, c in zepp))
    write("fuzz-gadgetbridge", b"\x01" + b"".join(row(2, 60 * i, 9 if i < 8 else 11, 0) for i in range(16)))


def derived_seeds() -> None:
    """Derived habits as fuzz-derived reads them: a source byte, five condition bytes, a zone byte,
    two day-start bytes, then records (0 workout, 1 night, 2 reading, 3 entry) with little-endian
    16-bit times after 2026-03-27 00:00 UTC: a few days of a strap and a watch, one seed a source."""
    def u16(v: int) -> bytes:
        return (v & 0xFFFF).to_bytes(2, "little")
    records = b""
    for day in range(4):
        minutes = day * 1440
        samples = b"".join(u16(s * 60) + bytes([100 + s * 3]) for s in range(12))
        records += b"\x00" + u16(minutes + 1080) + u16(45) + bytes([0, 1, 12]) + samples
        records += b"\x00" + u16(minutes + 1110) + u16(30) + bytes([1, 0, 0])
        stages = u16(0) + bytes([60, 1]) + u16(60) + bytes([90, 2]) + u16(150) + bytes([200, 1])
        records += b"\x01" + u16(minutes - 60) + u16(450) + bytes([0, 3]) + stages
        records += b"\x01" + u16(minutes - 30) + u16(400) + bytes([1, 0])
        for m in range(0, 120, 10):
            records += b"\x02" + bytes([3]) + u16((minutes + 420 + m) * 2) + bytes([0]) + u16(40 + m) + bytes([m % 2])
            records += b"\x02" + bytes([2]) + u16((minutes + 1080 + m) * 2) + bytes([5]) + u16(110 + m // 4) + bytes([0])
        records += b"\x02" + bytes([0]) + u16((minutes + 420) * 2) + bytes([0]) + u16(52) + bytes([0])
        records += b"\x03" + bytes([0]) + u16(minutes + 540) + bytes([1]) + u16(330) + bytes([2])
        records += b"\x03" + bytes([2]) + u16(minutes + 230) + bytes([1]) + u16(1) + bytes([2])
    for source in range(9):
        # Berlin-ish zone byte and a 04:00 day start (240 minutes).
        write("fuzz-derived", bytes([source, 90, 0, 20, 1, 0, 7]) + u16(240) + records)


def socket_seeds() -> None:
    """Daemon socket requests, each after a byte that picks how the input is cut into reads."""
    requests = [
        b'{"request":"status"}\n',
        b'{"request":"log","entry":{"kind":"water","value":"250ml"}}\r\n',
        b'{"request":"log","entry":{"kind":"vape","trigger":"stress","thoughts":"x","pod_finished":true,"at":"-1h"}}\n',
        b'{"request":"log","entry":{"kind":"habit","name":"reading","value":"25","at":"2025-06-01T08:30"}}\n',
        b'{"request":"log","entry":{"kind":"workout","sport":"running","duration":"45m","distance":"5km"}}\n',
        b'{"request":"log","entry":{"kind":"sleep","from":"23:10","to":"06:40"}}',
        b'{"request":"log","entry":{"kind":"meal","name":"kebab","kcal":700}}\n',
        b'{"request":["status"]}\n',
        b'[1,2]\n',
    ]
    for i, request in enumerate(requests):
        write("fuzz-socket", bytes([i * 7 % 64]) + request)


def entry_seeds() -> None:
    """Typed entries for fuzz-entry: kind byte, zone byte, two day-start bytes, then the texts
    (value, name, duration, distance, from, to, at) cut at NUL bytes."""
    kinds = ["drink", "glass", "bottle", "water", "vape", "habit", "meal", "workout", "sleep", "weight"]
    entries = [
        ("water", 7, 0, ["330ml", "", "", "", "", "", "2026-03-29T02:30"]),
        ("workout", 31, 240, ["", "running", "45m", "5km", "", "", "-2h"]),
        ("sleep", 99, 300, ["", "", "", "", "23:10", "06:40", "2026-10-25"]),
        ("weight", 150, 719, ["160lb", "", "", "", "", "", "07:30"]),
        ("habit", 200, 60, ["12", "reading", "1h30m", "800m", "00:00", "11:59", "2026-02-29"]),
        ("vape", 3, 0, ["", "stress", "after the call", "", "", "", "1900-01-01"]),
    ]
    for kind, zone, start, texts in entries:
        write("fuzz-entry", bytes([kinds.index(kind), zone]) + start.to_bytes(2, "little") + b"\0".join(t.encode() for t in texts))


# MARK: - ANT (stick framing, ANT+ pages)

def ant_frame(message_id: int, payload: bytes) -> bytes:
    """An ANT frame: A4, length, ID, payload, XOR of every byte before it."""
    frame = bytes([0xA4, len(payload), message_id]) + payload
    checksum = 0
    for byte in frame:
        checksum ^= byte
    return frame + bytes([checksum])


def ant_seeds() -> None:
    """fuzz-antframe: a chunk-size byte, then a stick's byte stream made of the frames the tests
    use (Tests/ANTProtocolTests/ANTFrameTests.swift, ANTReplyTests.swift: the notes' reset and
    startup, openant's `A4 03 40 00 46 00 A1`, both sticks' capabilities, extended data, a burst),
    with padding, garbage, a bad checksum and an oversized length.
    fuzz-antplus: a device-type byte (an index into ANTPlusDeviceType.supported: 0 power, 1 FE,
    2 weight, 3 heart rate, 4 speed and cadence, 5 cadence, 6 speed, 7 stride), then records of a
    time step (1/8 s units) and an 8-byte page, as ANTPlusSensorDecoderTests builds them."""
    hr = bytes([0x84, 0x00, 0x2E, 0x56, 0x59, 0x58, 0x2E, 0x6E])
    setup = (ant_frame(0x4A, b"\x00") + b"\x00\x00" + ant_frame(0x6F, b"\x20") + ant_frame(0x40, bytes([0, 0x46, 0]))
             + ant_frame(0x54, bytes([8, 3, 0, 0xBA, 0x36, 0])) + ant_frame(0x54, bytes([8, 8, 0, 186, 54, 0, 223]))
             + ant_frame(0x3E, b"AP2USB1.05\x00") + ant_frame(0x61, bytes([0x78, 0x56, 0x34, 0x12])))
    write("fuzz-antframe", b"\x04" + setup + bytes(64 - len(setup) % 64))
    extended = bytes([0xE0, 0x39, 0x30, 0x78, 0x01, 0x20, 0xC4, 0xB0, 0x34, 0x12])
    data = (ant_frame(0x4E, b"\x00" + hr) + ant_frame(0x4E, b"\x00" + hr + extended)
            + ant_frame(0x5D, bytes([0x02, 0x02, 0x01, 0x0B, 0x05]) + hr) + ant_frame(0x40, bytes([0, 1, 7]))
            + ant_frame(0x51, bytes([1, 0x39, 0x30, 0x78, 0x01])) + ant_frame(0x52, bytes([0, 3])) + ant_frame(0xAE, b"\x02"))
    write("fuzz-antframe", b"\x3f" + data)
    burst = bytes(range(1, 21))
    packets = [bytes([0x01]) + burst[0:8], bytes([0x21]) + burst[8:16], bytes([0xC1]) + burst[16:20] + bytes(4)]
    write("fuzz-antframe", b"\x07" + b"".join(ant_frame(0x50, p) for p in packets))
    bad = bytearray(ant_frame(0x40, bytes([0, 0x46, 0])))
    bad[-1] ^= 1
    write("fuzz-antframe", b"\x00" + b"\x13\x00\x55" + bytes(bad) + b"\xa4\xff" + ant_frame(0x6F, b"\x20") + b"\xa4\x03\x40")

    def le16(v: int) -> bytes:
        return struct.pack("<H", v & 0xFFFF)

    def records(pages: list, step: int = 2) -> bytes:
        return b"".join(bytes([step]) + page for page in pages)
    beats = [bytes([0x00, 0xFF, 0xFF, 0xFF]) + le16(0x5859 + 800 * i) + bytes([0x2F + i, 75]) for i in range(8)]
    write("fuzz-antplus", b"\x03" + records([hr, bytes([0x04, 0x00, 0x59, 0x58, 0x59, 0x58, 0x2E, 0x6E])] + beats
                                           + [bytes([0x07, 85, 0x80, 0x32, 0, 0, 0x37, 75]), bytes([0x03, 5, 26, 7, 0, 0, 0x37, 75])]))
    wheel = [bytes([0x80 if i % 4 == 0 else 0, 0xFF, 0xFF, 0xFF]) + le16(65_000 + 600 * i) + le16(65_530 + 3 * i) for i in range(12)]
    write("fuzz-antplus", b"\x06" + records(wheel + [bytes([0x05, 0x01, 0xFF, 0xFF, 0, 0, 0, 0])] * 3, step=4))
    write("fuzz-antplus", b"\x05" + records([bytes([0x00, 0xFF, 0xFF, 0xFF]) + le16(1024 * i) + le16(i) for i in range(8)], step=8))
    write("fuzz-antplus", b"\x04" + records([le16(65_000 + 700 * i) + le16(250 + i) + le16(64_000 + 500 * i) + le16(65_534 + 2 * i)
                                             for i in range(10)]))
    standard = [bytes([0x10, (250 + 2 * i) & 0xFF, 0xB2, 90]) + le16(65_000 + 500 * i) + le16(250) for i in range(6)]
    crank = [bytes([0x12, (254 + i) & 0xFF, (254 + i) & 0xFF, 0xFF]) + le16(64_000 + 2458 * i) + le16(65_000 + 1280 * i)
             for i in range(6)]
    common = [bytes([0x50, 0xFF, 0xFF, 2, 0x20, 0, 0x10, 0]), bytes([0x51, 0xFF, 0xFF, 0x21, 0x78, 0x56, 0x34, 0x12]),
              bytes([0x52, 0xFF, 0x12, 0x0A, 0, 0, 0x80, 0x93])]
    write("fuzz-antplus", b"\x00" + records(standard + crank + common))
    wheel = [bytes([0x11, (250 + 4 * i) & 0xFF, (250 + 4 * i) & 0xFF, 85]) + le16(65_000 + 2048 * i) + le16(100 + 1280 * i)
             for i in range(6)]
    others = [bytes([0x13, 1, 0xC8, 0xB4, 0x40, 0xFE, 0xFF, 0xFF]), bytes([0x20, 9, 1, 0x2C, 0x12, 0x34, 0xAB, 0xCD])]
    write("fuzz-antplus", b"\x00" + records(wheel + others))
    general = [bytes([0x10, 25, (252 + 4 * i) & 0xFF, (250 + 3 * i) & 0xFF]) + le16(5000) + bytes([150, 0x34]) for i in range(6)]
    trainer = [bytes([0x19, (250 + i) & 0xFF, 90]) + le16(65_000 + 200 * i) + bytes([0xFA, 0x00, 0x30]) for i in range(6)]
    metabolic = [bytes([0x12, 0xFF, 0x52, 0x03, 0x64, 0x19, (250 + 3 * i) & 0xFF, 0x31]) for i in range(4)]
    write("fuzz-antplus", b"\x01" + records(general + trainer + metabolic + [bytes([0x11, 0xFF, 0xFF, 150, 0x06, 0xFF, 80, 0x30]),
                                                                          bytes([0x16, 0xFF, 0xFF, 17, 28, 0x96, 0x00, 0x30])]))
    weight = ([bytes([0x01, 5, 0, 0, 0xFF, 0xFF, 0xFE, 0xFF])] * 2 + [bytes([0x01, 5, 0, 0, 0xFF, 0xFF, 0x6C, 0x1D])] * 3
              + [bytes([0x02, 5, 0, 0xFF, 0xB3, 0x15, 0xDA, 0x07]), bytes([0x03, 5, 0, 0xFF, 0x10, 0x27, 0x58, 0x1B]),
                 bytes([0x04, 5, 0, 0xFF, 0xFF, 0xB8, 0x0B, 32]), bytes([0x3A, 5, 0, 1, 0xFF, 0xA8, 180, 0x83])])
    write("fuzz-antplus", b"\x02" + records(weight))
    stride = ([bytes([0x01, 100, (12 + i) & 0xFF, (250 + 3 * i) & 0xFF, 0x43, 128, (250 + 2 * i) & 0xFF, 8]) for i in range(6)]
              + [bytes([0x02, 0xFF, 0xFF, 85, 0x82, 64, 0xFF, 0x11]), bytes([0x03, 0xFF, 0xFF, 85, 0x82, 64, 200, 0x11]),
                 bytes([0x10, 0x10, 0x27, 0, 0, 1, 0, 0]), bytes([0x16, 0x3F, 0, 0, 0, 0, 0, 0])])
    write("fuzz-antplus", b"\x07" + records(stride))


def crc16_arc(data: bytes, crc: int = 0) -> int:
    """CRC-16/ARC (reflected polynomial 0xA001), continuing from `crc`: ANT-FS's block CRC."""
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def antfs_seeds() -> None:
    """ANT-FS inputs as fuzz-antfs reads them: a mode byte (0 beacon, 1 response burst, 2
    directory, 3 host session), then the bytes. Beacons from the notes' captures (the antpm
    usbmon capture, antfs-cli #140); responses, a directory and sessions built by the layouts the
    tests use (Tests/ANTProtocolTests/ANTFS*Tests.swift)."""
    def le16(v: int) -> bytes:
        return struct.pack("<H", v)

    def le32(v: int) -> bytes:
        return struct.pack("<I", v)

    def pad(b: bytes) -> bytes:
        return b + bytes(-len(b) % 8)

    def beacon(state: int, descriptor: bytes) -> bytes:
        return bytes([0x43, 0x2C, state, 0x03]) + descriptor

    for b in ["43 2c 00 03 fa 03 01 00", "43 3c 01 03 39 05 00 00", "43 2c 02 03 39 05 00 00", "43 2c 03 03 39 05 00 00"]:
        write("fuzz-antfs", b"\x00" + bytes.fromhex(b))

    host = le32(1337)
    name = b"Forerunner 610"
    write("fuzz-antfs", b"\x01" + beacon(1, host) + pad(bytes([0x44, 0x84, 0, len(name)]) + le32(3_812_345_678) + name))
    write("fuzz-antfs", b"\x01" + beacon(1, host) + pad(bytes([0x44, 0x84, 1, 8]) + le32(42) + bytes(range(1, 9))))
    data = bytes((i * 7 + 11) & 0xFF for i in range(0x200))
    block = bytes([0x44, 0x89, 0, 0]) + le32(0x200) + le32(0xA00) + le32(0x253D) + pad(data) + bytes(6) + le16(crc16_arc(data, 0x4321))
    write("fuzz-antfs", b"\x01" + beacon(2, host) + block)
    last = data[:0x13D]
    block = bytes([0x44, 0x89, 0, 0]) + le32(0x13D) + le32(0x2400) + le32(0x253D) + pad(last) + bytes(6) + le16(crc16_arc(last, 7))
    write("fuzz-antfs", b"\x01" + beacon(2, host) + block)
    write("fuzz-antfs", b"\x01" + beacon(2, host) + bytes([0x44, 0x89, 1, 0]) + le32(0) * 3)
    write("fuzz-antfs", b"\x01" + beacon(2, host) + bytes([0x44, 0x8B, 0, 0, 0, 0, 0, 0]))

    def entry(index: int, data_type: int, sub: int, number: int, type_flags: int, flags: int, size: int, date: int) -> bytes:
        return le16(index) + bytes([data_type, sub]) + le16(number) + bytes([type_flags, flags]) + le32(size) + le32(date)
    activity = 1_332_954_752 - 631_065_600  # 2012-03-28T17:12:32Z, openant's activity #33
    directory = (bytes([0x01, 16, 2, 0, 0, 0, 0, 0]) + le32(0x01020304) + le32(0x2A000000)
                 + entry(1, 0x01, 12, 0, 0, 0x50, 0x19E000, 0)
                 + entry(2, 0x80, 2, 1, 0, 0xC0, 680, activity - 86_400)
                 + entry(7, 0x80, 4, 33, 0, 0xB0, 2336, activity)
                 + entry(0x0102, 0x80, 32, 0x0304, 0, 0x80, 0, 0x0FFFFFFF))
    write("fuzz-antfs", b"\x02" + directory)

    # Host sessions: one choice byte per input (0 raw beacon, 1 beacon, 2 burst, 3 download block,
    # 4 transfer completed, 5 transfer failed, 6 tick, 7 passkey, 8 pairing allowed or selection,
    # 9 a cooperating watch's answer to the last command).
    link = bytes([1, 0, 0])
    transport = bytes([1, 2, 0])
    answer = bytes([4, 9])
    blocks = answer * 2 + answer * 3 + answer * 4  # files 1-3: 70, 140 and 210 bytes in 64-byte blocks
    pairing = (link + answer + answer + bytes([7, 0]) + answer + transport + answer
               + bytes([8, 1, 3, 1, 2, 3]) + blocks + bytes([4]))
    write("fuzz-antfs", bytes([3, 1]) + pairing)
    passkey = (link + answer + answer + bytes([7, 1, 8]) + bytes(range(1, 9)) + answer + transport + answer
               + bytes([8, 1, 2, 3, 1]) + answer * 4 + answer * 2 + bytes([4]))
    write("fuzz-antfs", bytes([3, 0]) + passkey)
    faults = (link + bytes([5, 5]) + answer + bytes([6, 200, 6, 200]) + answer + bytes([7, 0, 5]) + answer
              + transport + bytes([3, 20, 0, 0, 0, 20, 0]) + bytes(range(20)) + bytes([1, 0]) + answer + bytes([8, 1, 1, 2]) + answer * 2)
    write("fuzz-antfs", bytes([3, 1]) + faults)


def main() -> None:
    if CORPUS.exists():
        shutil.rmtree(CORPUS)
    fit_seeds()
    xml_seeds()
    zip_seeds()
    apple_health_seeds()
    exec_seeds()
    gatt_seeds()
    ble_seeds()
    capture_seeds()
    csv_seeds()
    gadgetbridge_seeds()
    socket_seeds()
    derived_seeds()
    entry_seeds()
    ant_seeds()
    antfs_seeds()
    json_dictionary(sync_seeds())
    total = 0
    for folder in sorted(CORPUS.iterdir()):
        files = list(folder.iterdir())
        size = sum(f.stat().st_size for f in files)
        total += size
        print(f"{folder.name:14} {len(files):4} files {size:8} bytes")
    print(f"{'total':14} {'':4}       {total:8} bytes")


if __name__ == "__main__":
    main()
