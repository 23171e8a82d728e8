"""ANT serial protocol as a USB stick speaks it: frames, ids, codes, and the ANT-FS CRC.

A frame is ``A4 len id payload[len] xor`` where ``xor`` is the XOR of every byte before it. Hosts
may pad OUT transfers with zeros and a transfer may hold several frames or part of one, so
``FrameParser`` works on a byte stream.
"""
from __future__ import annotations

from dataclasses import dataclass

SYNC = 0xA4

# Message ids (host to stick)
UNASSIGN_CHANNEL = 0x41
ASSIGN_CHANNEL = 0x42
CHANNEL_PERIOD = 0x43
SEARCH_TIMEOUT = 0x44
RF_FREQUENCY = 0x45
NETWORK_KEY = 0x46
SEARCH_WAVEFORM = 0x49
RESET_SYSTEM = 0x4A
OPEN_CHANNEL = 0x4B
CLOSE_CHANNEL = 0x4C
REQUEST = 0x4D
CHANNEL_ID = 0x51
OPEN_RX_SCAN = 0x5B
LP_SEARCH_TIMEOUT = 0x63
ENABLE_EXT_RX = 0x66
LIB_CONFIG = 0x6E
# Data, both ways
BROADCAST_DATA = 0x4E
ACKNOWLEDGED_DATA = 0x4F
BURST_DATA = 0x50
# Stick to host
RESPONSE_EVENT = 0x40
CHANNEL_STATUS = 0x52
VERSION = 0x3E
CAPABILITIES = 0x54
SERIAL_NUMBER = 0x61
STARTUP = 0x6F
SERIAL_ERROR = 0xAE

# Channel events: 40 [ch, 01, code]
EVENT = 0x01
EVENT_RX_SEARCH_TIMEOUT = 1
EVENT_RX_FAIL = 2
EVENT_TX = 3
EVENT_TRANSFER_RX_FAILED = 4
EVENT_TRANSFER_TX_COMPLETED = 5
EVENT_TRANSFER_TX_FAILED = 6
EVENT_CHANNEL_CLOSED = 7
EVENT_RX_FAIL_GO_TO_SEARCH = 8
EVENT_CHANNEL_COLLISION = 9
EVENT_TRANSFER_TX_START = 10
# Response codes: 40 [ch, msgId, code]
NO_ERROR = 0
CHANNEL_IN_WRONG_STATE = 21
CHANNEL_NOT_OPENED = 22
CHANNEL_ID_NOT_SET = 24
TRANSFER_IN_PROGRESS = 31
TRANSFER_SEQUENCE_NUMBER_ERROR = 32
INVALID_MESSAGE = 40
INVALID_NETWORK_NUMBER = 41
INVALID_PARAMETER_PROVIDED = 51

# Startup reasons (6F [reason])
STARTUP_POWER_ON = 0x00
STARTUP_COMMAND_RESET = 0x20

# Serial error codes (AE [code, ...])
SERIAL_ERROR_BAD_CHECKSUM = 0x02

# Channel types (assign, byte 1) and states (channel status, bits 0-1)
TYPE_SLAVE = 0x00
TYPE_MASTER = 0x10
TYPE_SHARED_SLAVE = 0x20
TYPE_SHARED_MASTER = 0x30
TYPE_SLAVE_RX_ONLY = 0x40
TYPE_MASTER_TX_ONLY = 0x50
STATE_UNASSIGNED, STATE_ASSIGNED, STATE_SEARCHING, STATE_TRACKING = 0, 1, 2, 3

# Extended data flags (lib config 6E [0, flags]; enable-ext 66 [0, 1] is the channel-id flag)
EXT_CHANNEL_ID = 0x80
EXT_RSSI = 0x40
EXT_TIMESTAMP = 0x20

MAX_PAYLOAD = 40  # longer frames are taken as line noise by the parser


def checksum(data: bytes) -> int:
    """XOR of every byte."""
    x = 0
    for b in data:
        x ^= b
    return x


def frame(msg_id: int, payload: bytes | list[int]) -> bytes:
    """One ANT frame: sync, length, id, payload, checksum."""
    body = bytes([SYNC, len(payload), msg_id]) + bytes(payload)
    return body + bytes([checksum(body)])


def response(channel: int, msg_id: int, code: int) -> bytes:
    """``40 [ch, msgId, code]``: the answer to a configuration or control message."""
    return frame(RESPONSE_EVENT, [channel, msg_id, code])


def event(channel: int, code: int) -> bytes:
    """``40 [ch, 01, code]``: a channel event."""
    return frame(RESPONSE_EVENT, [channel, EVENT, code])


@dataclass
class Frame:
    """A parsed frame: ``msg_id`` and ``payload``; ``raw`` is the frame as received."""
    msg_id: int
    payload: bytes
    raw: bytes


@dataclass
class BadFrame:
    """A frame whose checksum did not match (``raw`` as received)."""
    raw: bytes


class FrameParser:
    """Turns a byte stream, fed in any chunks, into frames.

    Bytes outside a frame (zero padding, noise) are skipped until the next sync byte. A length
    above ``MAX_PAYLOAD`` means the sync byte was noise: it is skipped. A frame whose checksum
    does not match comes out as ``BadFrame``.
    """

    def __init__(self) -> None:
        self.buf = bytearray()
        self.skipped = 0

    def feed(self, data: bytes) -> list[Frame | BadFrame]:
        self.buf += data
        out: list[Frame | BadFrame] = []
        while True:
            start = self.buf.find(SYNC)
            if start < 0:
                self.skipped += len(self.buf)
                self.buf.clear()
                return out
            if start:
                self.skipped += start
                del self.buf[:start]
            if len(self.buf) < 2:
                return out
            length = self.buf[1]
            if length > MAX_PAYLOAD:
                self.skipped += 1
                del self.buf[:1]
                continue
            total = length + 4
            if len(self.buf) < total:
                return out
            raw = bytes(self.buf[:total])
            del self.buf[:total]
            if checksum(raw[:-1]) != raw[-1]:
                out.append(BadFrame(raw))
            else:
                out.append(Frame(raw[2], raw[3:-1], raw))


def parse_frames(data: bytes) -> list[Frame]:
    """Every good frame in ``data`` (a convenience for tests)."""
    return [f for f in FrameParser().feed(data) if isinstance(f, Frame)]


def crc16_arc(data: bytes, seed: int = 0) -> int:
    """CRC-16/ARC (reflected polynomial 0xA001), continued from ``seed``: the CRC of a file is
    chained block to block by passing the previous block's result as the next seed."""
    crc = seed & 0xFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def burst_sequence(index: int, last: bool) -> int:
    """The 3-bit sequence field of burst packet ``index``: 0 first, then 1, 2, 3, 1, ...;
    bit 2 (value 4) marks the last packet."""
    seq = 0 if index == 0 else (index - 1) % 3 + 1
    return seq | (4 if last else 0)


def burst_packets(channel: int, data: bytes) -> list[bytes]:
    """The payloads (``[seq<<5 | ch, 8 bytes]``) of a burst carrying ``data`` (zero-padded to
    a multiple of 8)."""
    if len(data) % 8:
        data = data + bytes(8 - len(data) % 8)
    n = len(data) // 8
    return [bytes([(burst_sequence(i, i == n - 1) << 5) | (channel & 0x1F)]) + data[8 * i:8 * i + 8]
            for i in range(n)]
