#!/usr/bin/env python3
"""Writes the pcap and pcapng copies of a btsnoop H4 capture (standard library only).

    python3 Fixtures/ble/tools/btsnoop-to-pcap.py            # hr-csc-watch.btsnoop -> .pcap, .pcapng
    python3 Fixtures/ble/tools/btsnoop-to-pcap.py --check    # and have tshark read them back

Both copies hold the btsnoop records as link type 201 (LINKTYPE_BLUETOOTH_HCI_H4_WITH_PHDR, what
Wireshark writes for a Bluetooth HCI interface): a 4-byte big-endian direction (0 sent by the host, 1 received from
the controller, from bit 0 of the btsnoop flags) before each H4 packet, with the record's time.

- The .pcap file is classic pcap: little-endian, microsecond timestamps, snapshot length 65540.
- The .pcapng file has one little-endian section with two interfaces. Interface 0 is the
  Bluetooth link (link type 201, if_tsresol 9: nanosecond timestamps, if_name "hci0").
  Interface 1 is a USB bus (link type 220, Linux usbmon with the 64-byte header; no if_tsresol,
  so microsecond timestamps) with one packet after every Bluetooth record, so that a reader's
  path for records of other link types is covered without moving the Bluetooth records'
  indexes. An Interface Statistics Block ends the file (readers skip it).

--check runs tshark (not needed otherwise) on both files and compares the number of packets,
each packet's length, captured length, time, interface and direction with the btsnoop records
(Wireshark counts the direction of link type 201 as a pseudo-header, outside its frame lengths).
The output is deterministic: running the script again rewrites the same bytes.
"""
import argparse
import struct
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_INPUT = HERE.parent / "hr-csc-watch.btsnoop"

# Microseconds from 0 AD to the Unix epoch, as btsnoop counts time.
BTSNOOP_EPOCH = 0x00DCDDB30F2F8000
LINKTYPE_BLUETOOTH_HCI_H4_WITH_PHDR = 201
LINKTYPE_USB_LINUX_MMAPPED = 220


class Record:
    def __init__(self, received: bool, unix_us: int, data: bytes, original: int):
        self.received = received
        self.unix_us = unix_us
        self.data = data
        self.original = original

    def with_direction(self) -> bytes:
        return struct.pack(">I", 1 if self.received else 0) + self.data


def read_btsnoop(path: Path) -> list:
    data = path.read_bytes()
    if data[:8] != b"btsnoop\0":
        sys.exit(f"{path}: not a btsnoop capture")
    version, datalink = struct.unpack_from(">II", data, 8)
    if version != 1 or datalink != 1002:
        sys.exit(f"{path}: btsnoop version {version}, datalink {datalink}; H4 (1002) only")
    records, offset = [], 16
    while offset < len(data):
        if offset + 24 > len(data):
            sys.exit(f"{path}: truncated record header at byte {offset}")
        original, included, flags, _drops, timestamp = struct.unpack_from(">IIIIq", data, offset)
        body = data[offset + 24:offset + 24 + included]
        if len(body) != included:
            sys.exit(f"{path}: truncated record data at byte {offset + 24}")
        records.append(Record(bool(flags & 1), timestamp - BTSNOOP_EPOCH, body, original))
        offset += 24 + included
    return records


def pcap(records: list) -> bytes:
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65540, LINKTYPE_BLUETOOTH_HCI_H4_WITH_PHDR))
    for r in records:
        payload = r.with_direction()
        seconds, microseconds = divmod(r.unix_us, 1_000_000)
        out += struct.pack("<IIII", seconds, microseconds, len(payload), r.original + 4) + payload
    return bytes(out)


def pad(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 4)


def option(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + pad(value)


def block(kind: int, body: bytes) -> bytes:
    body = pad(body)
    length = 12 + len(body)
    return struct.pack("<II", kind, length) + body + struct.pack("<I", length)


def enhanced_packet(interface: int, nanoseconds: int, data: bytes, original: int) -> bytes:
    return block(6, struct.pack("<IIIII", interface, nanoseconds >> 32, nanoseconds & 0xFFFFFFFF, len(data), original) + pad(data))


def usbmon_submit(unix_us: int) -> bytes:
    """A usbmon 'S' event: an ANT stick's reset message submitted to bulk OUT endpoint 0x01."""
    reset = bytes([0xA4, 0x01, 0x4A, 0x00, 0xEF])
    seconds, microseconds = divmod(unix_us, 1_000_000)
    header = struct.pack("<QBBBBHbbqiiII8siiII", 0xFFFF888100002000, ord("S"), 3, 0x01, 5, 1, ord("-"), 0,
                         seconds, microseconds, -115, len(reset), len(reset), bytes(8), 0, 0, 0, 0)
    return header + reset


def pcapng(records: list) -> bytes:
    shb = struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1) + option(4, b"HealthGate btsnoop-to-pcap.py") + option(0, b"")
    out = bytearray(block(0x0A0D0D0A, shb))
    # if_name, if_tsresol 10^-9.
    out += block(1, struct.pack("<HHI", LINKTYPE_BLUETOOTH_HCI_H4_WITH_PHDR, 0, 0) + option(2, b"hci0") + option(9, bytes([9]))
                 + option(0, b""))
    out += block(1, struct.pack("<HHI", LINKTYPE_USB_LINUX_MMAPPED, 0, 262144) + option(2, b"usbmon1") + option(0, b""))
    for r in records:
        payload = r.with_direction()
        out += enhanced_packet(0, r.unix_us * 1000, payload, r.original + 4)
    last = records[-1].unix_us
    usb = usbmon_submit(last)
    # Interface 1 has no if_tsresol: its times are in microseconds.
    out += enhanced_packet(1, last, usb, len(usb))
    # Interface Statistics Block for interface 0: time, then isb_ifrecv (4) = the packet count.
    isb = struct.pack("<III", 0, (last * 1000) >> 32, (last * 1000) & 0xFFFFFFFF) + option(4, struct.pack("<Q", len(records))) + option(0, b"")
    out += block(5, isb)
    return bytes(out)


def tshark_frames(path: Path) -> list:
    fields = ["frame.time_epoch", "frame.len", "frame.cap_len", "frame.interface_id", "hci_h4.direction"]
    command = ["tshark", "-r", str(path), "-T", "fields", "-E", "separator=;"]
    for f in fields:
        command += ["-e", f]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return [line.split(";") for line in output.splitlines()]


def check(records: list, pcap_path: Path, pcapng_path: Path) -> bool:
    """tshark reads both files: as many packets, the same lengths, times and directions."""
    # Wireshark reads the 4-byte direction of link type 201 as a pseudo-header: its frame lengths
    # are the H4 packet's.
    def expected(r: Record, interface: int) -> tuple:
        return (r.unix_us * 1000, r.original, len(r.data), interface, 1 if r.received else 0)

    ok = True
    for path, extra in [(pcap_path, 0), (pcapng_path, 1)]:
        frames = tshark_frames(path)
        got = []
        for time, length, captured, interface, direction in frames:
            nanoseconds = int(Decimal(time) * 1_000_000_000)
            got.append((nanoseconds, int(length), int(captured), int(interface or 0), int(direction, 16) if direction else None))
        want = [expected(r, 0) for r in records]
        if extra:
            usb = usbmon_submit(records[-1].unix_us)
            want.append((records[-1].unix_us * 1000, len(usb), len(usb), 1, None))
        mismatches = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
        same = len(got) == len(want) and not mismatches
        print(f"{path.name}: tshark read {len(got)} packets, expected {len(want)}; "
              + ("lengths, times, interfaces and directions all match" if same else f"mismatches at {mismatches[:5]}"))
        if not same:
            for i in mismatches[:5]:
                print(f"  packet {i}: tshark {got[i]}, expected {want[i]}")
            ok = False
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("input", nargs="?", type=Path, default=DEFAULT_INPUT, help="a btsnoop H4 capture")
    parser.add_argument("--check", action="store_true", help="have tshark read the copies back and compare")
    args = parser.parse_args()
    records = read_btsnoop(args.input)
    pcap_path = args.input.with_suffix(".pcap")
    pcapng_path = args.input.with_suffix(".pcapng")
    pcap_path.write_bytes(pcap(records))
    pcapng_path.write_bytes(pcapng(records))
    print(f"{args.input.name}: {len(records)} records -> {pcap_path.name}, {pcapng_path.name}")
    if args.check and not check(records, pcap_path, pcapng_path):
        sys.exit(1)


if __name__ == "__main__":
    main()
