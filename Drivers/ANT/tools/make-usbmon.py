#!/usr/bin/env python3
"""Writes the usbmon captures and the device description with which `make test` replays an ANT
USB2 stick to HealthGate's real libusb code path under umockdev (Fixtures/ant/).

No real stick was recorded: these are synthetic captures of what a Dynastream USB2 stick
(0fcf:1008, bulk OUT 0x01 / IN 0x81, 64-byte packets) answers to the exact commands HealthGate
sends, written as Linux usbmon records (pcap, link type 220, DLT_USB_LINUX_MMAPPED: a 64-byte
header per URB submission 'S' and completion 'C'), in the order a real capture shows them: the
reader's IN transfer is always pending, each OUT is submitted and completed, each answer completes
the pending IN and the reader submits the next one.

umockdev replays a capture in order: the host must send exactly the bytes recorded here, so the
conversations below are written from the ANT message protocol (the stick's side) and from
HealthGate's documented start-up sequence (the host's side); a change to that sequence shows up
as a failed replay, which is the point.

    python3 Drivers/ANT/tools/make-usbmon.py          # rewrites Fixtures/ant/
    python3 Drivers/ANT/tools/make-usbmon.py --check  # fails if Fixtures/ant/ differs
"""
import json
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
OUT = ROOT / "Fixtures" / "ant"

BUS, DEVNUM = 1, 5
SYSFS = "/devices/pci0000:00/0000:00:14.0/usb1/1-2"

# Device descriptor (18 bytes) and configuration descriptor (9 + 9 + 7 + 7): USB 2.00, vendor
# class interface 0 with bulk IN 0x81 and bulk OUT 0x01 of 64 bytes, ids 0fcf:1008.
DESCRIPTORS = bytes.fromhex(
    "12010002000000" "20" "cf0f" "0810" "0001" "01" "02" "03" "01"
    "0902" "2000" "01" "01" "00" "80" "32"
    "0904" "00" "00" "02" "ff" "00" "00" "00"
    "0705" "81" "02" "4000" "01"
    "0705" "01" "02" "4000" "01")


def frame(message_id: int, payload: bytes) -> bytes:
    """`A4 len id payload xor`."""
    body = bytes([0xA4, len(payload), message_id]) + payload
    checksum = 0
    for b in body:
        checksum ^= b
    return body + bytes([checksum])


class Capture:
    """usbmon records of one device, in order."""

    def __init__(self):
        self.records = []
        self.urb = 0xFFFF8880_00000000
        self.time_us = 1_764_000_000 * 1_000_000
        self.in_urb = None

    def _record(self, kind: str, endpoint: int, status: int, length: int, data: bytes):
        self.time_us += 1500
        flag_data = 0 if data else (0x3C if endpoint & 0x80 else 0x3E)  # 0: data follows; '<' in, '>' out
        header = struct.pack(
            "<QBBBBHbbqiiII8siiII",
            self.urb if endpoint != 0x81 else self.in_urb, ord(kind), 3, endpoint, DEVNUM, BUS, 0x2D, flag_data,
            self.time_us // 1_000_000, self.time_us % 1_000_000, status, length, len(data), b"\0" * 8, 0, 0, 0, 0)
        self.records.append((self.time_us, header + data))

    def submit_in(self):
        """The reader's next 64-byte IN transfer."""
        self.urb += 0x100
        self.in_urb = self.urb
        self._record("S", 0x81, -115, 64, b"")

    def host_sends(self, data: bytes):
        self.urb += 0x100
        self._record("S", 0x01, -115, len(data), data)
        self._record("C", 0x01, 0, len(data), b"")

    def stick_sends(self, data: bytes):
        """Completes the pending IN with `data` (at most 64 bytes) and submits the next one."""
        assert len(data) <= 64
        self._record("C", 0x81, 0, len(data), data)
        self.submit_in()

    def pcap(self) -> bytes:
        out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 220)
        for time_us, record in self.records:
            out += struct.pack("<IIII", time_us // 1_000_000, time_us % 1_000_000, len(record), len(record)) + record
        return out


# The stick's answers.
STARTUP = frame(0x6F, bytes([0x20]))
CAPABILITIES = frame(0x54, bytes([0x08, 0x03, 0x00, 0xBA, 0x36, 0x00]))
VERSION = frame(0x3E, b"AP2USB1.05\0")
SERIAL = frame(0x61, struct.pack("<I", 3_871_234_567))


def response(channel: int, message_id: int, code: int = 0) -> bytes:
    return frame(0x40, bytes([channel, message_id, code]))


def identify(c: Capture):
    """Reset, startup, capabilities, version, serial number: what every start does."""
    c.submit_in()
    c.host_sends(frame(0x4A, b"\0"))
    c.stick_sends(STARTUP)
    c.host_sends(frame(0x4D, bytes([0x00, 0x54])))
    c.stick_sends(CAPABILITIES)
    c.host_sends(frame(0x4D, bytes([0x00, 0x3E])))
    c.stick_sends(VERSION)
    c.host_sends(frame(0x4D, bytes([0x00, 0x61])))
    c.stick_sends(SERIAL)


# The network key of these captures: not the ANT+ key (which HealthGate never ships), any 8 bytes
# do for a replay.
TEST_KEY = bytes(range(1, 9))


def heart_rate(c: Capture, device_number: int, beats: list, garble: bool = False):
    """The ANT+ configuration of one heart-rate channel, then one broadcast per entry of `beats`
    ((bpm, beat count, beat time in 1/1024 s)), with the flagged extended data a stick adds after
    `6E 00 C0`: channel id and RSSI. Returns the expected readings. With `garble`, the sixth
    broadcast arrives with a wrong checksum (dropped: no reading), noise precedes the tenth, and
    the fifteenth is split over two transfers."""
    c.host_sends(frame(0x46, bytes([0x00]) + TEST_KEY))
    c.stick_sends(response(0, 0x46))
    c.host_sends(frame(0x6E, bytes([0x00, 0xC0])))
    c.stick_sends(response(0, 0x6E))
    for message_id, payload in [(0x42, bytes([0, 0x00, 0])), (0x51, bytes([0, 0, 0, 120, 0])),
                                (0x43, bytes([0]) + struct.pack("<H", 8070)), (0x44, bytes([0, 10])),
                                (0x63, bytes([0, 255])), (0x45, bytes([0, 57])), (0x4B, bytes([0]))]:
        c.host_sends(frame(message_id, payload))
        c.stick_sends(response(0, message_id))
    expected = []
    previous = None
    pending = b""
    for i, (bpm, count, beat_time) in enumerate(beats):
        page = 4 if i % 4 else 0
        toggle = 0x80 if (i // 4) % 2 else 0
        prev_time = previous[1] if previous else 0
        data = bytes([page | toggle, 0xFF, prev_time & 0xFF, prev_time >> 8] if page == 4 else [page | toggle, 0xFF, 0xFF, 0xFF])
        data += struct.pack("<HBB", beat_time, count & 0xFF, bpm)
        ext = bytes([0x80 | 0x40]) + struct.pack("<HBB", device_number, 120, 1) + bytes([0x20, 0xC4, 0x80])
        message = frame(0x4E, bytes([0]) + data + ext)
        rr = []
        if previous and (count - previous[0]) % 256 == 1:
            rr = [((beat_time - previous[1]) % 65536) / 1024]
        if garble and i == 5:
            message = message[:-1] + bytes([message[-1] ^ 0xFF])
            c.stick_sends(pending + message)
            pending = b""
            continue  # lost: the next beat's RR spans two counts, so none either
        if garble and i == 9:
            message = bytes([0x00, 0x13, 0x37]) + message
        if garble and i == 14:
            c.stick_sends(pending + message[:7])
            c.stick_sends(message[7:])
            pending = b""
            expected.append({"bpm": bpm, "rr_s": rr})
            previous = (count, beat_time)
            continue
        expected.append({"bpm": bpm, "rr_s": rr})
        previous = (count, beat_time)
        # Two frames share one transfer now and then, as a real stick sends them.
        if i % 5 == 3:
            pending = message
            continue
        c.stick_sends(pending + message)
        pending = b""
    if pending:
        c.stick_sends(pending)
    return expected


def umockdev_description() -> str:
    hexd = DESCRIPTORS.hex().upper()
    return f"""P: {SYSFS}
N: bus/usb/001/005={hexd}
E: DEVNAME=/dev/bus/usb/001/005
E: DEVTYPE=usb_device
E: DRIVER=usb
E: PRODUCT=fcf/1008/100
E: TYPE=0/0/0
E: BUSNUM=001
E: DEVNUM=005
E: MAJOR=189
E: MINOR=4
E: SUBSYSTEM=usb
E: ID_VENDOR_ID=0fcf
E: ID_MODEL_ID=1008
A: bConfigurationValue=1\\n
A: bDeviceClass=00\\n
A: bMaxPacketSize0=32\\n
A: bNumConfigurations=1\\n
A: bNumInterfaces= 1\\n
A: busnum=1\\n
A: devnum=5\\n
A: devpath=2\\n
H: descriptors={hexd}
A: dev=189:4\\n
A: idProduct=1008\\n
A: idVendor=0fcf\\n
A: manufacturer=Dynastream Innovations\\n
A: product=ANT USBStick2\\n
A: serial=123\\n
A: speed=12\\n
A: version= 2.00\\n

P: /devices/pci0000:00/0000:00:14.0/usb1
E: DEVNAME=/dev/bus/usb/001/001
E: DEVTYPE=usb_device
E: DRIVER=usb
E: SUBSYSTEM=usb
E: BUSNUM=001
E: DEVNUM=001
A: busnum=1\\n
A: devnum=1\\n
A: idProduct=0002\\n
A: idVendor=1d6b\\n

P: /devices/pci0000:00/0000:00:14.0
E: DRIVER=xhci_hcd
E: SUBSYSTEM=pci
"""


def main() -> int:
    files = {"usb2.umockdev": umockdev_description().encode()}

    c = Capture()
    identify(c)
    files["identify.pcap"] = c.pcap()

    c = Capture()
    identify(c)
    beats, t, n = [], 1000, 10
    for i in range(24):
        bpm = 118 + i % 7
        if i % 4 != 2:  # every 4th message repeats the last beat: no new RR
            n += 1
            t = (t + int(60 / bpm * 1024)) % 65536
        beats.append((bpm, n, t))
    expected = heart_rate(c, device_number=12345, beats=beats)
    files["heart-rate.pcap"] = c.pcap()
    files["heart-rate.expected.json"] = (json.dumps({"sensor": "ant:120:12345", "readings": expected}, indent=1) + "\n").encode()

    c = Capture()
    identify(c)
    expected = heart_rate(c, device_number=12345, beats=beats, garble=True)
    files["heart-rate-garbled.pcap"] = c.pcap()
    files["heart-rate-garbled.expected.json"] = (json.dumps({"sensor": "ant:120:12345", "readings": expected}, indent=1)
                                                 + "\n").encode()

    # A stick that stops answering: eight heart-rate messages, then nothing (a write after the
    # end of a replay times out, as to a stick that no longer takes anything).
    c = Capture()
    identify(c)
    expected = heart_rate(c, device_number=12345, beats=beats[:8])
    files["stops-answering.pcap"] = c.pcap()
    files["stops-answering.expected.json"] = (json.dumps({"sensor": "ant:120:12345", "readings": expected}, indent=1)
                                              + "\n").encode()

    # A stick that answers none of three resets.
    c = Capture()
    c.submit_in()
    for _ in range(3):
        c.host_sends(frame(0x4A, b"\0"))
    files["silent.pcap"] = c.pcap()

    check = "--check" in sys.argv[1:]
    OUT.mkdir(parents=True, exist_ok=True)
    differs = []
    for name, data in files.items():
        path = OUT / name
        if check:
            if not path.exists() or path.read_bytes() != data:
                differs.append(name)
        else:
            path.write_bytes(data)
    if differs:
        print("Fixtures/ant differs from make-usbmon.py: " + ", ".join(differs), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
