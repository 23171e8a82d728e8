"""Tests of the emulated ANT USB stick's pure model (Tests/peers/antstick), driven the way a host
drives a stick: frames in, frames out, simulated time. No USB, no root, no guest; the last tests
run ant_stick.py itself on a TCP byte stream.

Run: python3 -m pytest -q -p no:cacheprovider Tests/peers/test_ant_stick.py
"""
from __future__ import annotations

import json
import os
import select
import socket
import struct
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from antstick import protocol as P  # noqa: E402
from antstick.antfs import Watch, fit_file_id, load_file  # noqa: E402
from antstick.functionfs import descriptors, pack_transfers  # noqa: E402
from antstick.model import StickConfig, StickModel  # noqa: E402
from antstick.sensors import make_sensor  # noqa: E402

PLUS_KEY = bytes.fromhex("0a1b2c3d4e5f6071")  # a test key of our own: the emulator must not care
FS_KEY = bytes.fromhex("f0e1d2c3b4a59687")
FIT = os.path.join(REPO, "Fixtures", "fit")
HRM_PERIOD = 8070


class Host:
    """Drives a StickModel: sends frames, advances simulated time, keeps what came back with the
    time it came (``log`` holds the sent-log records)."""

    def __init__(self, masters=(), config: StickConfig | None = None, t: float = 0.0) -> None:
        self.log: list[dict] = []
        self.model = StickModel(config or StickConfig(), list(masters), log=self.log.append, seed="7", now=t)
        self.t = t
        self.got: list[tuple[float, P.Frame]] = []
        self.parser = P.FrameParser()

    def _keep(self, frames: list[bytes]) -> None:
        for f in self.parser.feed(b"".join(frames)):
            assert isinstance(f, P.Frame), f"bad frame from the stick: {f}"
            self.got.append((self.t, f))

    def raw(self, data: bytes) -> None:
        self._keep(self.model.feed(data, self.t))

    def send(self, mid: int, *payload: int, pad: int = 0) -> None:
        self.raw(P.frame(mid, bytes(payload)) + bytes(pad))

    def run(self, seconds: float) -> None:
        end = self.t + seconds
        while (d := self.model.next_deadline()) is not None and d <= end:
            self.t = max(self.t, d)
            self._keep(self.model.tick(self.t))
        self.t = end
        self._keep(self.model.tick(end))

    def take(self) -> list[tuple[float, P.Frame]]:
        got, self.got = self.got, []
        return got

    def replies(self) -> list[tuple[int, bytes]]:
        return [(f.msg_id, f.payload) for _, f in self.take()]

    def until(self, pred, timeout: float, step: float = 0.01):
        """Runs until pred(frame) holds for a frame received; returns (time, frame)."""
        end = self.t + timeout
        while True:
            for i, (t, f) in enumerate(self.got):
                if pred(f):
                    del self.got[:i + 1]
                    return t, f
            if self.t >= end:
                break
            self.run(step)
        raise AssertionError(f"nothing matched within {timeout} s; got {[(f.msg_id, f.payload.hex()) for _, f in self.got][-10:]}")

    def response(self, ch: int, mid: int) -> int:
        _, f = self.until(lambda f: f.msg_id == 0x40 and f.payload[0] == ch and f.payload[1] == mid, 1.0)
        return f.payload[2]

    def event(self, ch: int, timeout: float = 5.0) -> tuple[float, int]:
        t, f = self.until(lambda f: f.msg_id == 0x40 and f.payload[0] == ch and f.payload[1] == 1, timeout)
        return t, f.payload[2]

    def transfer_result(self, ch: int, timeout: float = 5.0) -> int:
        """The outcome of an acknowledged or burst transfer: event 5, 6 or a burst error (RX
        events in between are skipped, as a host does)."""
        _, f = self.until(lambda f: f.msg_id == 0x40 and f.payload[0] == ch and f.payload[1] == 1
                          and f.payload[2] not in (2, 3), timeout)
        return f.payload[2]

    # the usual start-up: reset, key, one slave channel
    def start(self, net_key: bytes = PLUS_KEY, net: int = 0) -> None:
        self.send(0x4A, 0)
        self.until(lambda f: f.msg_id == 0x6F, 1.0)
        self.send(0x46, net, *net_key)
        assert self.response(net, 0x46) == 0

    def open_channel(self, ch: int = 0, dev: int = 0, dtype: int = 0, trans: int = 0, period: int = HRM_PERIOD,
                     rf: int = 57, net: int = 0, timeout: int | None = None) -> None:
        for mid, payload in ((0x42, [ch, 0x00, net]), (0x51, [ch, dev & 0xFF, dev >> 8, dtype, trans]),
                             (0x43, [ch, period & 0xFF, period >> 8]), (0x45, [ch, rf])):
            self.send(mid, *payload)
            assert self.response(ch, mid) == 0, hex(mid)
        if timeout is not None:
            self.send(0x44, ch, timeout)
            assert self.response(ch, 0x44) == 0
        self.send(0x4B, ch)
        assert self.response(ch, 0x4B) == 0

    def broadcasts(self, ch: int) -> list[tuple[float, bytes]]:
        return [(t, f.payload) for t, f in self.take() if f.msg_id == 0x4E and f.payload[0] == ch]


def hrm(**kw):
    return make_sensor("hrm", kw.pop("id", "hrm"), kw.pop("device", 120001), kw.pop("key", PLUS_KEY), "7", **kw)


# ---------------------------------------------------------------------------------------------
# framing, start-up, requests
# ---------------------------------------------------------------------------------------------
def test_framing_examples_and_stream_parser():
    assert P.frame(0x4A, [0]) == bytes.fromhex("a4014a00ef")
    assert P.frame(0x6F, [0x20]) == bytes.fromhex("a4016f20ea")
    assert P.response(0, 0x46, 0) == bytes.fromhex("a403400046 00a1".replace(" ", ""))
    stream = bytes.fromhex("a4014a00ef") + bytes(5) + bytes.fromhex("a4024d0054bf") + b"\x00\x00"
    parser = P.FrameParser()
    got = []
    for i in range(len(stream)):  # one byte at a time: frames straddle every boundary
        got += parser.feed(stream[i:i + 1])
    assert [(f.msg_id, f.payload) for f in got] == [(0x4A, b"\x00"), (0x4D, b"\x00\x54")]
    bad = parser.feed(bytes.fromhex("a4014a00ee"))
    assert isinstance(bad[0], P.BadFrame)


def test_crc16_arc_check_value_and_chaining():
    assert P.crc16_arc(b"123456789") == 0xBB3D  # the CRC-16/ARC check value
    data = bytes(range(256)) * 3
    assert P.crc16_arc(data[300:], P.crc16_arc(data[:300])) == P.crc16_arc(data)


def test_reset_answers_startup_after_the_delay_and_drops_commands_meanwhile():
    h = Host(config=StickConfig(startup_delay_s=0.2))
    h.raw(P.frame(0x4A, [0])[:3])  # the frame split across two transfers, then zero padding
    h.raw(P.frame(0x4A, [0])[3:] + bytes(2))
    h.send(0x4D, 0, 0x54)  # during the reset: ignored, as a busy stick would
    h.run(0.19)
    assert h.replies() == []
    h.run(0.02)
    assert h.replies() == [(0x6F, b"\x20")]


def test_requests_capabilities_version_serial():
    h = Host(config=StickConfig(serial=0x01020304))
    h.start()
    h.send(0x4D, 0, 0x54, pad=2)
    h.send(0x4D, 0, 0x3E)
    h.send(0x4D, 0, 0x61)
    h.send(0x4D, 0, 0x99)
    assert h.replies() == [(0x54, bytes([0x08, 0x03, 0x00, 0xBA, 0x36, 0x00])), (0x3E, b"AP2USB1.05\x00"),
                           (0x61, bytes([4, 3, 2, 1])), (0x40, bytes([0, 0x4D, 40]))]
    m = Host(config=StickConfig(product=0x1009))
    m.send(0x4D, 0, 0x54)
    assert m.replies() == [(0x54, bytes([8, 8, 0, 186, 54, 0, 223]))]


def test_channel_configuration_responses_and_errors():
    h = Host()
    h.start()
    h.send(0x4B, 1)  # open unassigned
    h.send(0x51, 1, 0, 0, 120, 0)  # configure unassigned
    h.send(0x4C, 1)  # close unassigned
    h.send(0x42, 1, 0x00, 7)  # network 7 does not exist (3 networks)
    h.send(0x46, 3, *PLUS_KEY)
    h.send(0x42, 9, 0x00, 0)  # channel 9 does not exist (8 channels)
    h.send(0x42, 1)  # too short
    h.send(0x99, 1)  # unknown message
    assert h.replies() == [(0x40, bytes([1, 0x4B, 21])), (0x40, bytes([1, 0x51, 21])), (0x40, bytes([1, 0x4C, 21])),
                           (0x40, bytes([1, 0x42, 41])), (0x40, bytes([3, 0x46, 41])), (0x40, bytes([9, 0x42, 40])),
                           (0x40, bytes([1, 0x42, 40])), (0x40, bytes([1, 0x99, 40]))]
    h.send(0x42, 1, 0x00, 0)
    h.send(0x42, 1, 0x00, 0)  # assigned twice
    h.send(0x44, 1, 4)
    h.send(0x63, 1, 2)
    h.send(0x49, 1, 53, 0)
    h.send(0x45, 1, 200)  # beyond 2524 MHz
    h.send(0x4B, 1)
    h.send(0x4B, 1)  # open twice
    h.send(0x41, 1)  # unassign an open channel
    h.send(0x51, 1, 0, 0, 120, 0)  # channel id of an open channel
    assert h.replies() == [(0x40, bytes([1, 0x42, 0])), (0x40, bytes([1, 0x42, 21])), (0x40, bytes([1, 0x44, 0])),
                           (0x40, bytes([1, 0x63, 0])), (0x40, bytes([1, 0x49, 0])), (0x40, bytes([1, 0x45, 51])),
                           (0x40, bytes([1, 0x4B, 0])), (0x40, bytes([1, 0x4B, 21])), (0x40, bytes([1, 0x41, 21])),
                           (0x40, bytes([1, 0x51, 21]))]
    h.send(0x4D, 1, 0x52)
    assert h.replies() == [(0x52, bytes([1, 0x02]))]  # slave, network 0, searching
    h.send(0x4C, 1)
    h.send(0x41, 1)  # the channel-closed event has not come yet: still closing
    assert h.replies() == [(0x40, bytes([1, 0x4C, 0])), (0x40, bytes([1, 0x41, 21]))]
    h.run(0.05)
    assert h.replies() == [(0x40, bytes([1, 0x01, 7]))]
    h.send(0x4D, 1, 0x52)
    h.send(0x41, 1)
    h.send(0x4D, 1, 0x52)
    assert h.replies() == [(0x52, bytes([1, 0x01])), (0x40, bytes([1, 0x41, 0])), (0x52, bytes([1, 0x00]))]
    h.raw(bytes.fromhex("a4014a00ee"))  # bad checksum
    assert h.replies()[0][0] == 0xAE


# ---------------------------------------------------------------------------------------------
# ANT+ heart rate
# ---------------------------------------------------------------------------------------------
def test_hrm_broadcasts_at_its_period_with_extended_data():
    h = Host([hrm()])
    h.start()
    h.send(0x6E, 0, 0xE0)  # channel id, RSSI, timestamp
    assert h.response(0, 0x6E) == 0
    h.open_channel(dtype=120)
    h.run(10)
    got = h.broadcasts(0)
    assert len(got) >= 35
    first = got[0][0]
    assert 0.5 <= first <= 1.5, "an open channel finds the sensor within about a second"
    gaps = [b[0] - a[0] for a, b in zip(got, got[1:])]
    assert all(abs(g - HRM_PERIOD / 32768) < 1e-6 for g in gaps)
    for _, payload in got:
        assert len(payload) == 1 + 8 + 1 + 4 + 3 + 2
        assert payload[9] == 0xE0
        dev, dtype, trans = struct.unpack_from("<HBB", payload, 10)
        assert (dev, dtype, trans) == (120001 & 0xFFFF, 120, (120001 >> 16) << 4 | 1)
        assert payload[14] == 0x20 and struct.unpack_from("<b", payload, 15)[0] == -62
    stamps = [struct.unpack_from("<H", p, 17)[0] for _, p in got]
    assert all((b - a) % 65536 in (HRM_PERIOD, HRM_PERIOD + 1) for a, b in zip(stamps, stamps[1:]))
    h.send(0x4D, 0, 0x51)
    h.send(0x4D, 0, 0x52)
    assert h.replies() == [(0x51, bytes([0]) + struct.pack("<HBB", 120001 & 0xFFFF, 120, 0x11)),
                           (0x52, bytes([0, 0x03]))]


def test_enable_ext_gives_the_channel_id_only():
    h = Host([hrm()])
    h.start()
    h.send(0x66, 0, 1)
    assert h.response(0, 0x66) == 0
    h.open_channel()
    h.run(3)
    payload = h.broadcasts(0)[0][1]
    assert len(payload) == 14 and payload[9] == 0x80


def decode_hrm(page: bytes) -> dict:
    beat_time, count, bpm = struct.unpack_from("<HBB", page, 4)
    out = {"page": page[0] & 0x7F, "toggle": page[0] >> 7, "beat_time": beat_time, "count": count, "bpm": bpm}
    if out["page"] == 4:
        out["prev"] = struct.unpack_from("<H", page, 2)[0]
    return out


def test_messages_due_when_the_host_writes_are_sent_not_dropped():
    # A host writing while the engine is late (a loaded machine): the sensor's slots that came due
    # in between go out with the reply, each one the sent log says was heard.
    h = Host([hrm()])
    h.start()
    h.open_channel(dtype=120)
    h.run(3)
    h.take()
    heard_before = sum(1 for r in h.log if r.get("device") == "hrm" and r.get("rx"))
    h.t += 2.0  # no tick for 2 s: about 8 messages due
    h.send(0x4D, 0, 0x52)  # a channel-status request arrives then
    frames = h.take()
    heard = sum(1 for r in h.log if r.get("device") == "hrm" and r.get("rx")) - heard_before
    broadcasts = [f for _, f in frames if f.msg_id == 0x4E]
    assert heard >= 7 and len(broadcasts) == heard
    assert (0x52, bytes([0, 0x03])) in [(f.msg_id, f.payload) for _, f in frames]


def test_hrm_pages_toggle_battery_and_sent_log_agree_with_the_bytes():
    h = Host([hrm(rr_script=[800, 812, 790, 1300, 640, 700, 905])])
    h.start()
    h.open_channel(dtype=120)
    h.run(70)
    got = h.broadcasts(0)
    records = [r for r in h.log if r.get("device") == "hrm" and "page" in r]
    heard = [r for r in records if r["rx"] == [0]]
    assert [bytes.fromhex(r["page"]) for r in heard] == [p[1:9] for _, p in got]
    pages = [decode_hrm(bytes.fromhex(r["page"])) for r in records]
    for r, d in zip(records, pages):
        f = r["fields"]
        assert (d["beat_time"], d["count"], d["bpm"]) == (f["beat_time"], f["beat_count"], f["bpm"])
        if d["page"] == 4:
            assert d["prev"] == f["prev_beat_time"]
        if f["rr"]:
            assert (d["beat_time"] - f["prev_beat_time"]) % 65536 == f["rr"][-1]
            assert d["bpm"] == round(61440 / f["rr"][-1])
    seqs = [r["seq"] for r in records]
    assert [d["page"] for d in pages] == [7 if s % 65 == 64 else 4 for s in seqs]
    assert [d["toggle"] for d in pages] == [(s // 4) & 1 for s in seqs]
    assert all(bytes.fromhex(r["page"])[1] == 87 for r in records if r["fields"]["page_no"] == 7)
    # What a host computes: RR between consecutive heard messages whose count rose by exactly one.
    host_rr = []
    for a, b in zip(pages, pages[1:]):
        if (b["count"] - a["count"]) % 256 == 1:
            host_rr.append((b["beat_time"] - a["beat_time"]) % 65536)
    logged = [rr for r in records[1:] for rr in r["fields"]["rr"]]
    assert host_rr == logged
    script = [800, 812, 790, 1300, 640, 700, 905]
    all_rr = [rr for r in records for rr in r["fields"]["rr"]]
    assert all_rr == [script[i % 7] for i in range(len(all_rr))]


def test_hrm_seeded_rr_are_plausible_and_repeatable():
    def run():
        h = Host([hrm()])
        h.start()
        h.open_channel()
        h.run(30)
        return [rr for r in h.log if "page" in r for rr in r["fields"]["rr"]]
    a, b = run(), run()
    assert a == b and len(a) > 20
    assert all(300 <= rr <= 1200 for rr in a)


def test_wrong_network_key_hears_nothing_and_the_search_times_out():
    h = Host([hrm()])
    h.start(net_key=bytes.fromhex("0102030405060708"))
    h.open_channel(timeout=2)  # 5 s of low- (the default) and 5 s of high-priority search
    t_open = h.t
    t1, code1 = h.event(0, timeout=10)
    t2, code2 = h.event(0, timeout=1)
    assert (code1, code2) == (1, 7)
    assert abs(t1 - t_open - 10.0) < 0.01
    assert h.broadcasts(0) == []


def test_channel_id_filters_and_the_pairing_bit():
    h = Host([hrm(), hrm(id="other", device=4242, pairing=True)])
    h.start()
    h.open_channel(0, dev=4242, dtype=120)
    h.open_channel(1, dev=999, dtype=120, timeout=1)
    h.open_channel(2, dtype=120 | 0x80)  # pairing search: only the strap sending the pairing bit
    h.run(9)
    frames = h.take()
    by_ch = {ch: [f.payload for _, f in frames if f.msg_id == 0x4E and f.payload[0] == ch] for ch in range(3)}
    assert by_ch[0] and by_ch[2] and not by_ch[1]
    events = [f.payload for _, f in frames if f.msg_id == 0x40 and f.payload[1] == 1]
    assert [e[2] for e in events if e[0] == 1] == [1, 7]
    h.send(0x4D, 2, 0x51)
    assert h.replies() == [(0x51, bytes([2]) + struct.pack("<HBB", 4242, 120 | 0x80, 1))]


def test_sensor_switched_off_gives_rx_fail_then_search_and_comes_back():
    sensor = hrm()
    h = Host([sensor])
    h.start()
    h.open_channel(timeout=4)
    h.run(3)
    assert h.broadcasts(0)
    h.model.stop_master("hrm")
    h.run(3)
    codes = [f.payload[2] for _, f in h.take() if f.msg_id == 0x40 and f.payload[1] == 1]
    assert codes == [2, 2, 2, 2, 8]
    h.send(0x4D, 0, 0x52)
    assert h.replies() == [(0x52, bytes([0, 0x02]))]  # searching again
    h.model.start_master("hrm", h.t)
    h.run(2)
    assert h.broadcasts(0)


def test_rx_scan_mode_reports_every_sensor_on_channel_0():
    power = make_sensor("power", "power", 11001, PLUS_KEY, "7")
    far = make_sensor("fe", "fe", 17001, PLUS_KEY, "7", rf=66)  # another frequency: not heard
    h = Host([hrm(), power, far])
    h.start()
    h.send(0x42, 0, 0x00, 0)
    h.send(0x45, 0, 57)
    h.send(0x5B, 0)
    assert [r for r in h.replies()] == [(0x40, bytes([0, 0x42, 0])), (0x40, bytes([0, 0x45, 0])),
                                        (0x40, bytes([0, 0x5B, 0]))]
    h.run(3)
    got = h.broadcasts(0)
    types = {p[12] & 0x7F for _, p in got}
    assert types == {120, 11}
    assert all(p[9] & 0x80 for _, p in got)
    h.send(0x4C, 0)
    assert h.response(0, 0x4C) == 0
    assert h.event(0)[1] == 7
    h.send(0x5B, 1)
    assert h.replies() == [(0x40, bytes([1, 0x5B, 21]))]


# ---------------------------------------------------------------------------------------------
# host transmissions and their events
# ---------------------------------------------------------------------------------------------
def test_acknowledged_and_burst_from_the_host():
    sensor = hrm()
    h = Host([sensor])
    h.start()
    h.open_channel()
    h.send(0x4F, 1, *range(8))  # channel 1 is not open
    assert h.replies() == [(0x40, bytes([1, 0x4F, 21]))]
    h.run(2)
    h.take()
    h.send(0x4F, 0, *range(8))
    h.send(0x4F, 0, *range(8))  # the first is not out yet
    assert h.replies() == [(0x40, bytes([0, 0x4F, 31]))]
    assert h.event(0)[1] == 5
    assert sensor.received[-1] == {"t": pytest.approx(h.t, abs=0.5), "kind": "ack", "hex": bytes(range(8)).hex()}
    data = bytes(range(24))
    for payload in P.burst_packets(0, data):
        h.send(0x50, *payload)
    assert h.event(0)[1] == 5
    assert sensor.received[-1]["kind"] == "burst" and sensor.received[-1]["hex"] == data.hex()
    assert any(r.get("from_host") == "burst" and r["hex"] == data.hex() for r in h.log)
    h.model.set_fault("tx-fail", 2)
    h.send(0x4F, 0, *range(8))
    assert h.event(0)[1] == 6
    for payload in P.burst_packets(0, data):
        h.send(0x50, *payload)
    assert h.event(0)[1] == 6
    h.send(0x4F, 0, *range(8))
    assert h.event(0)[1] == 5
    packets = P.burst_packets(0, data)
    h.send(0x50, *packets[0])
    h.send(0x50, *packets[2])  # sequence 2 where 1 was due
    assert h.event(0)[1] == 32


# ---------------------------------------------------------------------------------------------
# the other sensors
# ---------------------------------------------------------------------------------------------
def heard_records(kind: str, **options) -> list[dict]:
    sensor = make_sensor(kind, kind, 5001, PLUS_KEY, "7", **options)
    h = Host([sensor])
    h.start()
    h.open_channel(period=sensor.period)
    h.run(40)
    got = h.broadcasts(0)
    records = [r for r in h.log if r.get("device") == kind and r["rx"] == [0]]
    assert len(got) == len(records) > 100
    assert [bytes.fromhex(r["page"]) for r in records] == [p[1:9] for _, p in got]
    gaps = {round(b[0] - a[0], 6) for a, b in zip(got, got[1:])}
    assert gaps == {round(sensor.period / 32768, 6)}
    return records


def test_power_pages_accumulate():
    records = heard_records("power")
    pages = {}
    for r in records:
        pages.setdefault(bytes.fromhex(r["page"])[0], []).append(r)
    assert {0x10, 0x12} <= set(pages) and {0x50, 0x51} & set(pages)
    p10 = pages[0x10]
    for a, b in zip(p10, p10[1:]):
        pa, pb = bytes.fromhex(a["page"]), bytes.fromhex(b["page"])
        count = (pb[1] - pa[1]) % 256
        delta = (struct.unpack_from("<H", pb, 4)[0] - struct.unpack_from("<H", pa, 4)[0]) % 65536
        assert count == 1 and delta == struct.unpack_from("<H", pb, 6)[0] == b["fields"]["power_w"]
    p12 = [bytes.fromhex(r["page"]) for r in pages[0x12]]
    events = period = torque = 0
    for a, b in zip(p12, p12[1:]):  # sums of deltas: the 16-bit counters roll over within the run
        events += (b[1] - a[1]) % 256
        period += (struct.unpack_from("<H", b, 4)[0] - struct.unpack_from("<H", a, 4)[0]) % 65536
        torque += (struct.unpack_from("<H", b, 6)[0] - struct.unpack_from("<H", a, 6)[0]) % 65536
    cadence = 2048 * 60 * events / period
    power = 3.141592653589793 * (torque / (32 * events)) * cadence / 30
    assert 70 < cadence < 105 and 100 < power < 400


def test_speed_cadence_stride_fe_and_scale_pages():
    sc = heard_records("speed-cadence")
    for r in sc:
        page = bytes.fromhex(r["page"])
        assert struct.unpack("<HHHH", page) == (r["fields"]["cadence_event_time"], r["fields"]["crank_revs"],
                                               r["fields"]["speed_event_time"], r["fields"]["wheel_revs"])
    revs = [r["fields"]["wheel_revs"] for r in sc]
    assert any(b < a for a, b in zip(revs, revs[1:])), "the wheel counter rolls over"
    for kind in ("speed", "cadence"):
        recs = heard_records(kind)
        assert {bytes.fromhex(r["page"])[0] & 0x7F for r in recs} >= {0}
    stride = heard_records("stride")
    p1 = [bytes.fromhex(r["page"]) for r in stride if r["fields"].get("page_no") == 1]
    p2 = [r for r in stride if r["fields"].get("page_no") == 2]
    assert p1 and p2
    for r in p2:
        page = bytes.fromhex(r["page"])
        assert ((page[3] << 4) | (page[4] >> 4)) / 16 == r["fields"]["cadence_spm"]
    fe = heard_records("fe")
    p19 = [r for r in fe if r["fields"].get("page_no") == 0x19]
    for r in p19:
        page = bytes.fromhex(r["page"])
        assert page[5] | (page[6] & 0x0F) << 8 == r["fields"]["power_w"] and page[7] >> 4 == 3
    assert any(r["fields"].get("page_no") == 0x10 and bytes.fromhex(r["page"])[1] == 25 for r in fe)
    scale = heard_records("scale", compute_s=3.0)
    weights = [struct.unpack_from("<H", bytes.fromhex(r["page"]), 6)[0] for r in scale
               if bytes.fromhex(r["page"])[0] == 1]
    assert weights[0] == 0xFFFE and weights[-1] != 0xFFFE
    final = [r for r in scale if r["fields"].get("weight_kg")]
    assert final and all(round(struct.unpack_from("<H", bytes.fromhex(r["page"]), 6)[0] / 100, 2)
                         == r["fields"]["weight_kg"] for r in final)
    assert {2, 4} <= {bytes.fromhex(r["page"])[0] for r in scale}


# ---------------------------------------------------------------------------------------------
# ANT-FS
# ---------------------------------------------------------------------------------------------
class FsHost(Host):
    """A host doing ANT-FS on channel 0, network 1, from the protocol facts."""

    HOST_SERIAL = 0x0BADCAFE

    def connect(self) -> bytes:
        self.send(0x4A, 0)
        self.until(lambda f: f.msg_id == 0x6F, 1.0)
        self.send(0x46, 1, *FS_KEY)
        assert self.response(1, 0x46) == 0
        for mid, payload in ((0x42, [0, 0x00, 1]), (0x51, [0, 0, 0, 1, 0]), (0x43, [0, 0x00, 0x10]),
                             (0x44, [0, 255]), (0x45, [0, 50]), (0x49, [0, 53, 0]), (0x4B, [0])):
            self.send(mid, *payload)
            assert self.response(0, mid) == 0
        return self.beacon()

    def beacon(self, timeout: float = 3.0) -> bytes:
        _, f = self.until(lambda f: f.msg_id == 0x4E and f.payload[0] == 0 and f.payload[1] == 0x43, timeout)
        return f.payload[1:9]

    def ack(self, data: bytes) -> int:
        self.send(0x4F, 0, *data)
        return self.transfer_result(0, 3.0)

    def burst(self, data: bytes) -> int:
        for p in P.burst_packets(0, data):
            self.send(0x50, *p)
        return self.transfer_result(0, 3.0)

    def command(self, data: bytes) -> int:
        return self.ack(data) if len(data) == 8 else self.burst(data)

    def reply(self, timeout: float = 5.0) -> bytes:
        """The next burst the watch sends (beacon + response), reassembled."""
        data = bytearray()
        end = self.t + timeout
        expect = 0
        while self.t < end:
            for i, (_, f) in enumerate(self.got):
                if f.msg_id == 0x50 and f.payload[0] & 0x1F == 0:
                    seq = f.payload[0] >> 5
                    assert (seq & 3) == expect, f"burst sequence {seq} where {expect} was due"
                    expect = expect % 3 + 1
                    data += f.payload[1:9]
                    if seq & 4:
                        del self.got[:i + 1]
                        return bytes(data)
                elif f.msg_id == 0x40 and f.payload[1] == 1 and f.payload[2] == 4:
                    del self.got[:i + 1]
                    raise BurstFailed()
            self.got = [(t, f) for t, f in self.got if f.msg_id == 0x4E]
            self.run(0.01)
        raise AssertionError("no burst from the watch")

    def link(self, freq: int = 19) -> bytes:
        assert self.ack(bytes([0x44, 0x02, freq, 4]) + struct.pack("<I", self.HOST_SERIAL)) == 5
        self.send(0x45, 0, freq)
        assert self.response(0, 0x45) == 0
        return self.beacon()

    def download(self, index: int, max_block: int = 0, retry_on=()) -> tuple[bytes, list[dict]]:
        data, crc, blocks = b"", 0, []
        while True:
            request = struct.pack("<BBHIxBHI", 0x44, 0x09, index, len(data), 1 if not data else 0, crc, max_block)
            assert self.command(request) == 5
            try:
                reply = self.reply()
            except BurstFailed:
                blocks.append({"failed": True})
                continue
            response = reply[8:]
            code, remaining, offset, size = struct.unpack_from("<xxBxIII", response)
            assert code == 0, f"download response {code}"
            block = response[16:16 + remaining]
            block_crc = struct.unpack_from("<H", response, len(response) - 2)[0]
            good = P.crc16_arc(block, crc) == block_crc
            blocks.append({"offset": offset, "length": remaining, "crc_ok": good})
            if not good:
                assert "bad-crc" in retry_on
                continue
            data += block
            crc = block_crc
            if len(data) >= size:
                return data, blocks


class BurstFailed(Exception):
    pass


def watch(**kw) -> Watch:
    files = [load_file(os.path.join(FIT, "antfs-dump-63.fit"), 1),
             load_file(os.path.join(FIT, "fitsdk-WeightScaleMultiUser.fit"), 2, 0x80 | 0x10),
             load_file(os.path.join(FIT, "fitsdk-Settings.fit"), 3, 0x20)]
    kw.setdefault("pair_delay_s", 1.5)
    return Watch(key=FS_KEY, seed="7", files=files, clock_base=1000000000, **kw)


def test_antfs_session_link_pairing_passkey_directory_and_download():
    w = watch()
    h = FsHost([w])
    beacon = h.connect()
    assert beacon[0] == 0x43 and beacon[1] == 0x2C and beacon[2] == 0 and beacon[3] == 3
    assert struct.unpack_from("<HH", beacon, 4) == (1018, 1)
    h.send(0x4D, 0, 0x51)
    assert h.replies()[-1] == (0x51, bytes([0]) + struct.pack("<HBB", w.device_number, 1, 5))
    beacon = h.link()
    assert beacon[2] & 0x0F == 1 and struct.unpack_from("<I", beacon, 4)[0] == FsHost.HOST_SERIAL
    # serial and name
    assert h.ack(bytes([0x44, 0x04, 1, 0]) + struct.pack("<I", FsHost.HOST_SERIAL)) == 5
    reply = h.reply()
    assert reply[8:10] == b"\x44\x84" and struct.unpack_from("<I", reply, 12)[0] == w.serial
    assert reply[16:16 + reply[11]] == b"Forerunner 310XT"
    # a passkey before pairing: rejected, the watch stays in authentication
    assert h.burst(bytes([0x44, 0x04, 3, 8]) + struct.pack("<I", FsHost.HOST_SERIAL) + bytes(8)) == 5
    assert h.reply()[8:11] == b"\x44\x84\x02"
    # pairing: accepted once the user pressed accept
    t0 = h.t
    name = b"healthgate"
    assert h.burst(bytes([0x44, 0x04, 2, len(name)]) + struct.pack("<I", FsHost.HOST_SERIAL) + name + bytes(6)) == 5
    reply = h.reply()
    assert h.t - t0 >= 1.5
    assert reply[8:12] == bytes([0x44, 0x84, 1, 8])
    passkey = reply[16:24]
    assert reply[2] & 0x0F == 2  # the beacon of the reply: transport
    assert any(r.get("event") == "pairing-accepted" and r["host_name"] == "healthgate" for r in h.log)
    # directory
    directory, _ = h.download(0)
    version, length, _, now, modified = struct.unpack_from("<BBB5xII", directory)
    assert (version >> 4, length) == (1, 16) and 1000000000 < now <= 1000000000 + h.t
    assert modified == max(f.date for f in w.files)
    entries = [struct.unpack_from("<HBBHBBII", directory, off) for off in range(16, len(directory), 16)]
    assert [(e[0], e[1], e[2], e[5], e[6]) for e in entries] == [
        (1, 0x80, 4, 0x80, 1933), (2, 0x80, 9, 0x90, os.path.getsize(os.path.join(FIT, "fitsdk-WeightScaleMultiUser.fit"))),
        (3, 0x80, 2, 0x20, os.path.getsize(os.path.join(FIT, "fitsdk-Settings.fit")))]
    assert entries[0][7] == fit_file_id(open(os.path.join(FIT, "antfs-dump-63.fit"), "rb").read())["time_created"]
    # a real FIT file in chained-CRC blocks, byte-identical
    data, blocks = h.download(1, max_block=512)
    assert data == open(os.path.join(FIT, "antfs-dump-63.fit"), "rb").read()
    assert [b["length"] for b in blocks] == [512, 512, 512, 397] and all(b["crc_ok"] for b in blocks)
    # not readable, not there, wrong seed
    assert h.burst(struct.pack("<BBHIxBHI", 0x44, 0x09, 3, 0, 1, 0, 0)) == 5
    assert h.reply()[10] == 2
    assert h.burst(struct.pack("<BBHIxBHI", 0x44, 0x09, 9, 0, 1, 0, 0)) == 5
    assert h.reply()[10] == 1
    assert h.burst(struct.pack("<BBHIxBHI", 0x44, 0x09, 1, 512, 0, 0x1234, 0)) == 5
    assert h.reply()[10] == 5
    # erase: only files flagged erasable
    assert h.ack(bytes([0x44, 0x0B, 1, 0, 0, 0, 0, 0])) == 5
    assert h.reply()[8:11] == b"\x44\x8b\x01"
    assert h.ack(bytes([0x44, 0x0B, 3, 0, 0, 0, 0, 0])) == 5
    assert h.reply()[8:11] == b"\x44\x8b\x00"
    assert [f.index for f in w.files] == [1, 2]
    # disconnect: back to the link beacon on the search frequency
    assert h.ack(bytes([0x44, 0x03, 0, 0, 0, 0, 0, 0])) == 5
    h.send(0x45, 0, 50)
    assert h.beacon()[2] == 0
    # a later session: the stored passkey is accepted
    h.link()
    assert h.burst(bytes([0x44, 0x04, 3, 8]) + struct.pack("<I", FsHost.HOST_SERIAL) + passkey) == 5
    assert h.reply()[8:11] == b"\x44\x84\x01"


def test_antfs_pairing_rejected_and_pairing_off():
    for mode, delay in (("reject", 1.5), ("off", 0.0)):
        w = watch(pairing=mode)
        h = FsHost([w])
        beacon = h.connect()
        assert bool(beacon[1] & 0x08) == (mode != "off")
        h.link()
        t0 = h.t
        assert h.burst(bytes([0x44, 0x04, 2, 2]) + struct.pack("<I", FsHost.HOST_SERIAL) + b"hg" + bytes(6)) == 5
        assert h.reply()[8:11] == b"\x44\x84\x02"
        assert h.t - t0 >= delay


def test_antfs_link_without_retuning_loses_the_watch():
    h = FsHost([watch()])
    h.connect()
    assert h.ack(bytes([0x44, 0x02, 19, 4]) + struct.pack("<I", FsHost.HOST_SERIAL)) == 5
    h.take()
    h.run(2)  # still on 2450 MHz: the watch is on 2419 MHz now
    codes = [f.payload[2] for _, f in h.take() if f.msg_id == 0x40 and f.payload[1] == 1]
    assert codes[:5] == [2, 2, 2, 2, 8]


# ---------------------------------------------------------------------------------------------
# faults
# ---------------------------------------------------------------------------------------------
def test_fault_no_startup_ignores_the_next_resets():
    h = Host()
    h.model.set_fault("no-startup", 2)
    for _ in range(2):
        h.send(0x4A, 0)
        h.run(1)
        assert h.replies() == []
    h.send(0x4A, 0)
    h.run(1)
    assert h.replies() == [(0x6F, b"\x20")]
    assert h.model.stats["resets_ignored"] == 2


def test_fault_hang_until_a_bus_reset():
    h = Host()
    h.start()
    h.send(0x4D, 0, 0x54)
    assert [r[0] for r in h.replies()] == [0x54]
    h.model.set_fault("hang", 1)
    h.send(0x4D, 0, 0x54)  # a hung stick answers nothing, not even a reset
    h.send(0x4A, 0)
    h.run(2)
    assert h.replies() == []
    assert h.model.armed_faults()["hang"] == 1
    h.model.bus_reset(h.t)  # the host resets the port: the stick starts again, knowing nothing
    assert h.model.armed_faults()["hang"] == 0
    assert h.model.stats["power_cycles"] == 1 and h.model.stats["bus_resets"] == 1
    h.send(0x4A, 0)
    h.run(1)
    assert h.replies() == [(0x6F, b"\x20")]
    h.model.bus_reset(h.t)  # a working stick carries on after a bus reset
    assert h.model.stats["power_cycles"] == 1 and h.model.stats["bus_resets"] == 2


def test_fault_rx_fail_burst_and_bad_crc_during_a_download():
    h = FsHost([watch(passkey=bytes(range(8)))])
    h.connect()
    h.link()
    assert h.burst(bytes([0x44, 0x04, 3, 8]) + struct.pack("<I", FsHost.HOST_SERIAL) + bytes(range(8))) == 5
    assert h.reply()[8:11] == b"\x44\x84\x01"
    fit = open(os.path.join(FIT, "antfs-dump-63.fit"), "rb").read()
    h.model.set_fault("rx-fail-burst", 1)
    data, blocks = h.download(1, max_block=1024)
    assert data == fit
    assert blocks[0] == {"failed": True}  # the burst broke off: event 4; the same request again
    assert [b["offset"] for b in blocks[1:]] == [0, 1024]
    h.model.set_fault("bad-crc", 1)
    data, blocks = h.download(1, max_block=1024, retry_on=("bad-crc",))
    assert data == fit
    assert blocks[0]["crc_ok"] is False and blocks[1]["crc_ok"] is True
    assert blocks[0]["offset"] == blocks[1]["offset"] == 0
    assert h.model.armed_faults() == {"no-startup": 0, "tx-fail": 0, "rx-fail-burst": 0, "bad-crc": 0, "hang": 0}
    assert any(r.get("event") == "download" and r.get("crc_wrong") for r in h.log)


def test_fault_tx_fail_and_power_cycle_forget_everything():
    h = Host([hrm()])
    h.start()
    h.open_channel()
    h.run(2)
    assert h.broadcasts(0)
    h.model.power_cycle(h.t)
    h.run(2)
    assert h.take() == []
    h.send(0x4D, 0, 0x52)
    assert h.replies() == [(0x52, bytes([0, 0]))]
    config = StickConfig(startup_on_power=True)
    assert Host(config=config).model.power_cycle(0.0) == [P.frame(0x6F, [0])]


def test_usb_descriptors_and_transfer_packing():
    d = descriptors()
    magic, length, flags, fs_count, hs_count = struct.unpack_from("<IIIII", d)
    assert (magic, length, flags, fs_count, hs_count) == (3, len(d), 3, 3, 3)  # full- and high-speed sets
    fs = d[20:20 + 23]
    assert fs[:9] == bytes([9, 4, 0, 0, 2, 0xFF, 0, 0, 0])
    assert fs[9:16] == bytes([7, 5, 0x81, 2, 64, 0, 1]) and fs[16:23] == bytes([7, 5, 0x01, 2, 64, 0, 1])
    frames = [P.frame(0x4E, bytes(18)), P.frame(0x40, [0, 1, 2]), P.frame(0x4E, bytes(9)), P.frame(0x50, bytes(9))] * 5
    transfers = pack_transfers(frames)
    assert b"".join(transfers) == b"".join(frames)
    assert all(len(t) <= 63 for t in transfers) and any(len(P.parse_frames(t)) > 1 for t in transfers)
    assert all(P.FrameParser().feed(t) and sum(len(f.raw) for f in P.parse_frames(t)) == len(t) for t in transfers)


# ---------------------------------------------------------------------------------------------
# the program on a TCP byte stream: control channel, sent log, unplug/replug
# ---------------------------------------------------------------------------------------------
class Program:
    def __init__(self, tmp_path, *extra: str) -> None:
        self.sent_log = str(tmp_path / "sent.jsonl")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "ant_stick.py"), "--listen", "tcp:127.0.0.1:0",
             "--control", "tcp:127.0.0.1:0", "--sent-log", self.sent_log, *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        ready, _, _ = select.select([self.proc.stdout], [], [], 10)
        assert ready, "no ready line"
        self.info = json.loads(self.proc.stdout.readline())
        self.ctl = socket.create_connection((self.info["control"]["host"], self.info["control"]["port"]), 5)
        self.ctl_file = self.ctl.makefile("rb")

    def connect(self) -> socket.socket:
        s = socket.create_connection((self.info["listen"]["host"], self.info["listen"]["port"]), 5)
        s.settimeout(3)
        return s

    def control(self, line: str) -> dict:
        self.ctl.sendall(line.encode() + b"\n")
        return json.loads(self.ctl_file.readline())

    def close(self) -> int:
        self.proc.stdin.close()
        try:
            return self.proc.wait(10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


def read_frames(sock: socket.socket, pred, timeout: float = 3.0) -> list[P.Frame]:
    parser, got, end = P.FrameParser(), [], time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            data = sock.recv(4096)
        except socket.timeout:
            break
        if not data:
            break
        got += [f for f in parser.feed(data) if isinstance(f, P.Frame)]
        if pred(got):
            return got
    raise AssertionError(f"timed out; got {[(f.msg_id, f.payload.hex()) for f in got]}")


def test_program_control_channel_sent_log_and_unplug(tmp_path):
    prog = Program(tmp_path, "--ant-plus-key", PLUS_KEY.hex(), "--sensor", "hrm,device=0x12345,rr=800/900",
                   "--sensor", "power,off")
    try:
        assert prog.info["sensors"][0]["device_number"] == 0x2345 and prog.info["sensors"][0]["trans_type"] == 0x11
        s = prog.connect()
        s.sendall(P.frame(0x4A, [0]) + bytes(3))
        read_frames(s, lambda g: any(f.msg_id == 0x6F for f in g))
        s.sendall(P.frame(0x46, bytes([0]) + PLUS_KEY) + P.frame(0x42, [0, 0, 0]) + P.frame(0x43, [0, 0x86, 0x1F])
                  + P.frame(0x45, [0, 57]) + P.frame(0x66, [0, 1]) + P.frame(0x4B, [0]))
        got = read_frames(s, lambda g: sum(f.msg_id == 0x4E for f in g) >= 4, timeout=6)
        status = prog.control("status")
        assert status["ok"] and status["stick"]["channels"][0]["state"] == "tracking"
        stopped = prog.control("stop hrm")
        assert stopped["ok"] and stopped["on"] is False and stopped["sent"] >= 4
        assert prog.control("start power")["on"] is True
        assert prog.control("start nobody")["ok"] is False
        assert prog.control("fault stall")["ok"] is False
        assert prog.control("fault no-startup 1")["faults"]["no-startup"] == 1
        assert prog.control("nonsense")["ok"] is False
        assert prog.control("unplug") == {"ok": True, "cmd": "unplug", "plugged": False}
        assert s.recv(100) == b""
        assert prog.control("replug")["plugged"] is True
        s = prog.connect()
        s.sendall(P.frame(0x4D, [0, 0x52]))
        got = read_frames(s, lambda g: any(f.msg_id == 0x52 for f in g))
        assert got[-1].payload == bytes([0, 0])  # the replugged stick knows nothing
        records = [json.loads(line) for line in open(prog.sent_log)]
        hrm_records = [r for r in records if r["device"] == "hrm"]
        assert hrm_records and all({"t", "sim_t", "page", "rx", "fields"} <= set(r) for r in hrm_records)
        assert {rr for r in hrm_records for rr in r["fields"]["rr"]} <= {800, 900}
        assert prog.control("shutdown")["ok"]
        assert prog.proc.wait(10) == 0
    finally:
        prog.close()
