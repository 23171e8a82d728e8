"""The emulated ANT USB stick as a pure state machine (no I/O, no clock of its own).

``StickModel.feed(data, now)`` takes the host's OUT bytes (any chunking; zero padding and frames
straddling transfers are fine) and returns the IN frames to send; ``tick(now)`` advances simulated
time and returns the frames that became due (broadcasts, events, delayed replies);
``next_deadline()`` says when the next one is due. ``now`` is in seconds on any monotonic clock.

The radio world is a set of masters (``sensors.Sensor``, ``antfs.Watch``) that transmit in their
own slots whether or not a channel listens. A stick channel hears a master when it is open, on the
master's frequency, its network's key equals the master's key and its channel id matches (0 is a
wildcard for the device number, the device type and the transmission type; a channel with the
pairing bit set only finds masters that transmit it). A searching channel syncs to the first
such master that transmits ``search_delay_s`` or more after the search began; a tracking channel
expects a message every channel period and reports each one missed (event 2) until
``rx_fail_limit`` are missed in a row (event 8, back to search). A search ends after the low- and
high-priority search timeouts (2.5 s units, 255 = never) with events 1 and 7.
"""
from __future__ import annotations

import heapq
import itertools
import random
import struct
from dataclasses import dataclass, field
from typing import Callable

from . import protocol as P
from .antfs import Watch
from .sensors import Master, Transmission

VERSION_STRING = b"AP2USB1.05\x00"
CAPABILITIES = {0x1008: bytes([8, 3, 0, 0xBA, 0x36, 0x00]), 0x1009: bytes([8, 8, 0, 0xBA, 0x36, 0x00, 0xDF])}
RSSI_THRESHOLD = -100
FAULTS = ("no-startup", "tx-fail", "rx-fail-burst", "bad-crc", "hang")


@dataclass
class StickConfig:
    """What the stick is and how it behaves in time."""
    product: int = 0x1008  # 0x1008 USB2 stick, 0x1009 USB-m
    serial: int = 0x0DF3A2B1  # answered to a serial number request (0x61)
    channels: int = 8
    startup_delay_s: float = 0.05  # reset to the startup message
    close_delay_s: float = 0.01  # close response to the channel-closed event
    search_delay_s: float = 0.5  # an open channel finds a master no sooner than this
    rx_fail_limit: int = 4  # messages missed in a row before going back to search
    burst_gap_s: float = 0.003  # between burst packets on the air
    startup_on_power: bool = False  # queue 6F 00 when the stick is plugged in

    @property
    def networks(self) -> int:
        return CAPABILITIES.get(self.product, CAPABILITIES[0x1008])[1]


@dataclass
class Channel:
    number: int
    state: int = P.STATE_UNASSIGNED
    type: int = P.TYPE_SLAVE
    network: int = 0
    ext_assign: int = 0
    device_number: int = 0
    device_type: int = 0
    trans_type: int = 0
    period: int = 8192
    rf: int = 66
    search_timeout: int = 10
    lp_search_timeout: int = 2
    waveform: int = 0x53
    scan: bool = False
    master: Master | None = None  # the master tracked
    found: tuple[int, int, int] | None = None  # its channel id, kept while the channel is open
    search_started: float = 0.0
    gen: int = 0  # bumped to cancel this channel's scheduled timers
    misses: int = 0
    sync_slot: int = 0
    pending: tuple[str, bytes] | None = None  # host data waiting for the next slot
    sending: bool = False  # pending is on the air
    burst_in: bytearray | None = None
    burst_next: int = 0
    tx_payload: bytes = bytes(8)  # a master channel's broadcast
    received: int = 0
    closing: bool = False  # close answered, channel-closed event not yet sent
    events: dict = field(default_factory=dict)

    def configured_id(self) -> tuple[int, int, int]:
        return self.device_number, self.device_type, self.trans_type

    def period_s(self) -> float:
        return self.period / 32768

    def is_open(self) -> bool:
        return self.state >= P.STATE_SEARCHING

    def listening(self) -> bool:
        return self.is_open() and not self.closing

    def status_byte(self) -> int:
        return (self.type & 0xF0) | ((self.network & 0x03) << 2) | (self.state & 0x03)

    def search_budget(self) -> float | None:
        """Seconds of search before a timeout: low- then high-priority; None = never."""
        if self.search_timeout == 255 or self.lp_search_timeout == 255:
            return None
        return 2.5 * (self.lp_search_timeout + self.search_timeout)


def id_matches(want: tuple[int, int, int], master: Master) -> bool:
    """Channel id matching: 0 is a wildcard for each part; a wanted pairing bit must be sent."""
    dev, dtype, trans = want
    mdev, mtype, mtrans = master.channel_id()
    if dev and dev != mdev:
        return False
    if dtype & 0x7F and (dtype & 0x7F) != (mtype & 0x7F):
        return False
    if dtype & 0x80 and not mtype & 0x80:
        return False
    return not trans or trans == mtrans


def period_ratio(channel_period: int, master_period: int) -> int | None:
    """How many master messages make one channel period: 1 when the channel is as fast or
    faster, k when the channel period is k master periods (±1 count), None when they do not fit."""
    if channel_period <= master_period + 1:
        return 1
    k = round(channel_period / master_period)
    return k if abs(channel_period - k * master_period) <= 1 else None


class StickModel:
    """The stick: see the module docstring. ``log`` receives one dict per sent-log record."""

    def __init__(self, config: StickConfig | None = None, masters: list[Master] | None = None,
                 log: Callable[[dict], None] | None = None, seed: str = "1", now: float = 0.0) -> None:
        self.config = config or StickConfig()
        self.masters: dict[str, Master] = {}
        self.log_sink = log
        self.seed = seed
        self.rng = random.Random(f"ant-stick:{seed}:stick")
        self.queue: list = []
        self.counter = itertools.count()
        self.now = now
        self.out: list[bytes] = []
        self.parser = P.FrameParser()
        self.faults = {name: 0 for name in FAULTS}
        self.stats = {"resets": 0, "resets_ignored": 0, "startups": 0, "frames_in": 0, "frames_out": 0,
                      "bad_checksums": 0, "power_cycles": 0, "bus_resets": 0, "frames_lost_hung": 0}
        self.slot_counts: dict[str, int] = {}
        self._clear_state()
        for m in masters or []:
            self.add_master(m, now)
        if self.config.startup_on_power:
            self.out.append(P.frame(P.STARTUP, [P.STARTUP_POWER_ON]))

    # ----- scheduling -----
    def at(self, t: float, fn: Callable, *args) -> None:
        heapq.heappush(self.queue, (t, next(self.counter), fn, args))

    def next_deadline(self) -> float | None:
        return self.queue[0][0] if self.queue else None

    def tick(self, now: float) -> list[bytes]:
        """Runs everything due up to ``now``; returns the frames to send to the host."""
        while self.queue and self.queue[0][0] <= now:
            t, _, fn, args = heapq.heappop(self.queue)
            self.now = max(self.now, t)
            fn(t, *args)
        self.now = max(self.now, now)
        return self._take()

    def _take(self) -> list[bytes]:
        out, self.out = self.out, []
        if self.faults["hang"]:
            self.stats["frames_lost_hung"] += len(out)
            return []  # a hung stick says nothing
        self.stats["frames_out"] += len(out)
        return out

    def emit(self, frame: bytes) -> None:
        self.out.append(frame)

    def event(self, ch: Channel, code: int) -> None:
        ch.events[code] = ch.events.get(code, 0) + 1
        self.emit(P.event(ch.number, code))

    # ----- state -----
    def _clear_state(self) -> None:
        old = getattr(self, "channels", [])
        self.channels = [Channel(i) for i in range(self.config.channels)]
        for ch, before in zip(self.channels, old):
            before.gen += 1  # timers of the old channels never fire
            before.state = P.STATE_UNASSIGNED
            ch.gen = before.gen + 1
        self.keys = [bytes(8) for _ in range(self.config.networks)]
        self.ext_enabled = False
        self.lib_flags = 0
        self.resetting_until = -1.0

    def add_master(self, m: Master, now: float | None = None) -> None:
        """Puts a sensor or watch on the air; its first slot is a seeded fraction of a period away."""
        now = self.now if now is None else now
        if m.id in self.masters:
            raise ValueError(f"duplicate master id {m.id!r}")
        self.masters[m.id] = m
        self.slot_counts[m.id] = 0
        phase = random.Random(f"ant-stick:{self.seed}:{m.id}:phase").uniform(0, m.period_s())
        self.at(now + phase, self._slot, m)

    def power_cycle(self, now: float) -> list[bytes]:
        """The stick unplugged and plugged in again: everything is forgotten."""
        self.tick(now)
        self.out.clear()
        self.stats["power_cycles"] += 1
        self._clear_state()
        self.parser = P.FrameParser()
        if self.config.startup_on_power:
            self.emit(P.frame(P.STARTUP, [P.STARTUP_POWER_ON]))
        return self._take()

    def bus_reset(self, now: float) -> list[bytes]:
        """The host reset the stick on the USB bus: a hung stick starts again (as after a power
        cycle); a working one carries on."""
        self.stats["bus_resets"] += 1
        if not self.faults["hang"]:
            return self.tick(now)
        self.faults["hang"] = 0
        return self.power_cycle(now)

    def set_fault(self, name: str, count: int = 1) -> dict:
        """Arms a fault for the next ``count`` occasions (0 disarms it): ``no-startup`` resets
        ignored, ``tx-fail`` host acks or bursts failed (event 6), ``rx-fail-burst`` bursts from a
        master broken off halfway (event 4), ``bad-crc`` download blocks with a wrong CRC, ``hang`` the
        stick stops (sends nothing, hears nothing) until the host resets it on the USB bus or it is
        plugged in again."""
        if name not in self.faults:
            raise ValueError(f"unknown model fault {name!r} (one of {', '.join(FAULTS)})")
        if name == "bad-crc":
            watches = [m for m in self.masters.values() if isinstance(m, Watch)]
            if not watches and count:
                raise ValueError("bad-crc needs a watch")
            for w in watches:
                w.bad_crc = count
        self.faults[name] = count
        return self.armed_faults()

    def armed_faults(self) -> dict:
        """What is still armed (the watch counts its own bad-CRC blocks down)."""
        faults = dict(self.faults)
        faults["bad-crc"] = sum(getattr(m, "bad_crc", 0) for m in self.masters.values())
        return faults

    def start_master(self, id: str, now: float) -> Master:
        m = self.master(id)
        if not m.on:
            restart = getattr(m, "restart", None)
            if restart:
                restart(now)
            m.on = True
        return m

    def stop_master(self, id: str) -> Master:
        m = self.master(id)
        m.on = False
        return m

    def master(self, id: str) -> Master:
        if id not in self.masters:
            raise KeyError(f"no sensor or watch {id!r} (have {', '.join(self.masters)})")
        return self.masters[id]

    # ----- host bytes -----
    def feed(self, data: bytes, now: float) -> list[bytes]:
        """The host's OUT bytes at ``now``; returns the IN frames due by then, replies included."""
        due = self.tick(now)  # what the sensors sent meanwhile goes out first
        for item in self.parser.feed(data):
            if isinstance(item, P.BadFrame):
                self.stats["bad_checksums"] += 1
                self.emit(P.frame(P.SERIAL_ERROR, bytes([P.SERIAL_ERROR_BAD_CHECKSUM]) + item.raw[:16]))
                continue
            self.stats["frames_in"] += 1
            if self.faults["hang"]:
                continue  # nor does it hear the host
            if now < self.resetting_until:
                continue  # busy resetting: a real stick drops these too
            self.handle(item.msg_id, item.payload, now)
        return due + self._take()

    MIN_LENGTH = {P.UNASSIGN_CHANNEL: 1, P.ASSIGN_CHANNEL: 3, P.CHANNEL_PERIOD: 3, P.SEARCH_TIMEOUT: 2,
                  P.RF_FREQUENCY: 2, P.NETWORK_KEY: 9, P.SEARCH_WAVEFORM: 3, P.RESET_SYSTEM: 0, P.OPEN_CHANNEL: 1,
                  P.CLOSE_CHANNEL: 1, P.REQUEST: 2, P.CHANNEL_ID: 5, P.OPEN_RX_SCAN: 1, P.LP_SEARCH_TIMEOUT: 2,
                  P.ENABLE_EXT_RX: 2, P.LIB_CONFIG: 2, P.BROADCAST_DATA: 9, P.ACKNOWLEDGED_DATA: 9,
                  P.BURST_DATA: 9}

    def handle(self, mid: int, p: bytes, t: float) -> None:
        first = p[0] if p else 0
        if mid not in self.MIN_LENGTH or len(p) < self.MIN_LENGTH[mid]:
            self.emit(P.response(first, mid, P.INVALID_MESSAGE))
            return
        if mid == P.RESET_SYSTEM:
            self.reset(t)
            return
        if mid == P.NETWORK_KEY:
            if first >= len(self.keys):
                self.emit(P.response(first, mid, P.INVALID_NETWORK_NUMBER))
            else:
                self.keys[first] = bytes(p[1:9])
                self.emit(P.response(first, mid, P.NO_ERROR))
            return
        if mid == P.ENABLE_EXT_RX:
            self.ext_enabled = bool(p[1])
            self.emit(P.response(first, mid, P.NO_ERROR))
            return
        if mid == P.LIB_CONFIG:
            self.lib_flags = p[1] & (P.EXT_CHANNEL_ID | P.EXT_RSSI | P.EXT_TIMESTAMP)
            self.emit(P.response(first, mid, P.NO_ERROR))
            return
        if mid == P.REQUEST:
            self.request(first, p[1])
            return
        if mid == P.BURST_DATA:
            first &= 0x1F  # the top 3 bits are the burst sequence
        if first >= len(self.channels):
            self.emit(P.response(first, mid, P.INVALID_MESSAGE))
            return
        ch = self.channels[first]
        if mid in (P.BROADCAST_DATA, P.ACKNOWLEDGED_DATA, P.BURST_DATA):
            self.host_data(ch, mid, bytes(p[1:9]) if mid != P.BURST_DATA else bytes(p), t)
            return
        self.configure(ch, mid, p, t)

    def request(self, ch_no: int, what: int) -> None:
        if what == P.CAPABILITIES:
            self.emit(P.frame(P.CAPABILITIES, CAPABILITIES.get(self.config.product, CAPABILITIES[0x1008])))
        elif what == P.VERSION:
            self.emit(P.frame(P.VERSION, VERSION_STRING))
        elif what == P.SERIAL_NUMBER:
            self.emit(P.frame(P.SERIAL_NUMBER, struct.pack("<I", self.config.serial)))
        elif what in (P.CHANNEL_STATUS, P.CHANNEL_ID) and ch_no < len(self.channels):
            ch = self.channels[ch_no]
            if what == P.CHANNEL_STATUS:
                self.emit(P.frame(P.CHANNEL_STATUS, [ch_no, ch.status_byte()]))
            else:
                dev, dtype, trans = ch.found if (ch.found and ch.is_open()) else ch.configured_id()
                self.emit(P.frame(P.CHANNEL_ID, [ch_no, dev & 0xFF, dev >> 8, dtype, trans]))
        else:
            self.emit(P.response(ch_no, P.REQUEST, P.INVALID_MESSAGE))

    def reset(self, t: float) -> None:
        if self.faults["no-startup"] > 0:
            self.faults["no-startup"] -= 1
            self.stats["resets_ignored"] += 1
            return
        self.stats["resets"] += 1
        self._clear_state()
        self.resetting_until = t + self.config.startup_delay_s

        def startup(_t: float) -> None:
            self.stats["startups"] += 1
            self.emit(P.frame(P.STARTUP, [P.STARTUP_COMMAND_RESET]))
        self.at(t + self.config.startup_delay_s, startup)

    def configure(self, ch: Channel, mid: int, p: bytes, t: float) -> None:
        n = ch.number
        ok = lambda: self.emit(P.response(n, mid, P.NO_ERROR))  # noqa: E731
        wrong_state = lambda: self.emit(P.response(n, mid, P.CHANNEL_IN_WRONG_STATE))  # noqa: E731
        if mid == P.ASSIGN_CHANNEL:
            if ch.state != P.STATE_UNASSIGNED:
                return wrong_state()
            if p[2] >= len(self.keys):
                return self.emit(P.response(n, mid, P.INVALID_NETWORK_NUMBER))
            gen = ch.gen
            fresh = Channel(n, gen=gen + 1)
            fresh.state, fresh.type, fresh.network = P.STATE_ASSIGNED, p[1], p[2]
            fresh.ext_assign = p[3] if len(p) > 3 else 0
            self.channels[n] = fresh
            return ok()
        if ch.state == P.STATE_UNASSIGNED and mid != P.OPEN_RX_SCAN:
            return wrong_state()
        if mid == P.UNASSIGN_CHANNEL:
            if ch.state != P.STATE_ASSIGNED:
                return wrong_state()
            self.channels[n] = Channel(n, gen=ch.gen + 1)
            return ok()
        if mid == P.CHANNEL_ID:
            if ch.is_open():
                return wrong_state()
            ch.device_number = p[1] | p[2] << 8
            ch.device_type, ch.trans_type = p[3], p[4]
            return ok()
        if mid == P.CHANNEL_PERIOD:
            period = p[1] | p[2] << 8
            if period == 0:
                return self.emit(P.response(n, mid, P.INVALID_PARAMETER_PROVIDED))
            ch.period = period
            return ok()
        if mid == P.SEARCH_TIMEOUT:
            ch.search_timeout = p[1]
            return ok()
        if mid == P.LP_SEARCH_TIMEOUT:
            ch.lp_search_timeout = p[1]
            return ok()
        if mid == P.RF_FREQUENCY:
            if p[1] > 124:
                return self.emit(P.response(n, mid, P.INVALID_PARAMETER_PROVIDED))
            ch.rf = p[1]
            return ok()
        if mid == P.SEARCH_WAVEFORM:
            ch.waveform = p[1] | p[2] << 8
            return ok()
        if mid == P.OPEN_CHANNEL:
            if ch.state != P.STATE_ASSIGNED:
                return wrong_state()
            if ch.type in (P.TYPE_MASTER, P.TYPE_SHARED_MASTER, P.TYPE_MASTER_TX_ONLY):
                if not ch.device_number or not ch.device_type & 0x7F:
                    return self.emit(P.response(n, mid, P.CHANNEL_ID_NOT_SET))
                ch.state = P.STATE_TRACKING
                ok()
                self.at(t + ch.period_s(), self._master_channel_tx, ch, ch.gen)
                return None
            ok()
            self.begin_search(ch, t)
            return None
        if mid == P.OPEN_RX_SCAN:
            if n != 0 or ch.state != P.STATE_ASSIGNED or ch.type not in (P.TYPE_SLAVE, P.TYPE_SLAVE_RX_ONLY) \
                    or any(c.is_open() for c in self.channels):
                return wrong_state()
            ch.scan = True
            ch.state = P.STATE_SEARCHING
            return ok()
        if mid == P.CLOSE_CHANNEL:
            if not ch.listening():
                return wrong_state()
            ok()
            self.close(ch, t, timed_out=False)
            return None
        return self.emit(P.response(n, mid, P.INVALID_MESSAGE))

    # ----- channel life -----
    def begin_search(self, ch: Channel, t: float) -> None:
        ch.gen += 1
        ch.state = P.STATE_SEARCHING
        ch.master = None
        ch.misses = 0
        ch.search_started = t
        budget = ch.search_budget()
        if budget is not None:
            self.at(t + budget, self._search_timeout, ch, ch.gen)

    def _search_timeout(self, t: float, ch: Channel, gen: int) -> None:
        if ch.gen != gen or ch.state != P.STATE_SEARCHING:
            return
        self.event(ch, P.EVENT_RX_SEARCH_TIMEOUT)
        self.close(ch, t, timed_out=True)

    def close(self, ch: Channel, t: float, timed_out: bool) -> None:
        """Closes ``ch``: after a search timeout at once, after a close command when the
        channel-closed event goes out ``close_delay_s`` later (until then the channel is closing:
        it hears nothing, and unassigning it or opening it again is refused)."""
        ch.gen += 1
        failed = ch.pending is not None or ch.burst_in is not None
        ch.master, ch.scan, ch.pending, ch.sending, ch.burst_in = None, False, None, False, None
        if failed:
            self.event(ch, P.EVENT_TRANSFER_TX_FAILED)
        if timed_out:
            self._closed(t, ch, ch.gen)
        else:
            ch.closing = True
            self.at(t + self.config.close_delay_s, self._closed, ch, ch.gen)

    def _closed(self, t: float, ch: Channel, gen: int) -> None:
        if ch.gen != gen or self.channels[ch.number] is not ch:
            return
        ch.state, ch.closing, ch.found = P.STATE_ASSIGNED, False, None
        self.event(ch, P.EVENT_CHANNEL_CLOSED)

    def _master_channel_tx(self, t: float, ch: Channel, gen: int) -> None:
        if ch.gen != gen or not ch.listening():
            return
        self.event(ch, P.EVENT_TX)
        self.at(t + ch.period_s(), self._master_channel_tx, ch, gen)

    def _miss_check(self, t: float, ch: Channel, gen: int) -> None:
        if ch.gen != gen or ch.state != P.STATE_TRACKING:
            return
        ch.misses += 1
        self.event(ch, P.EVENT_RX_FAIL)
        if ch.misses >= self.config.rx_fail_limit:
            self.event(ch, P.EVENT_RX_FAIL_GO_TO_SEARCH)
            failed = ch.pending is not None
            found = ch.found
            self.begin_search(ch, t)
            ch.found = found  # the channel looks for the same master again
            if failed:
                ch.pending, ch.sending = None, False
                self.event(ch, P.EVENT_TRANSFER_TX_FAILED)
            return
        ch.gen += 1
        self.at(t + ch.period_s(), self._miss_check, ch, ch.gen)

    def _received(self, ch: Channel, t: float) -> None:
        """A message arrived on a tracking channel: the missed count starts again."""
        ch.misses = 0
        ch.received += 1
        ch.gen += 1
        self.at(t + 1.5 * ch.period_s(), self._miss_check, ch, ch.gen)

    # ----- the air -----
    def hears(self, ch: Channel, m: Master, t: float) -> bool:
        """Whether ``ch`` receives ``m``'s message sent at ``t`` (and syncs to it if searching)."""
        if not ch.listening() or ch.type in (P.TYPE_MASTER, P.TYPE_SHARED_MASTER, P.TYPE_MASTER_TX_ONLY):
            return False
        if ch.rf != m.rf or self.keys[ch.network] != m.key:
            return False
        if ch.scan:
            return id_matches(ch.configured_id(), m)
        if ch.state == P.STATE_TRACKING:
            if ch.master is not m:
                return False
            k = period_ratio(ch.period, m.period)
            return k is not None and (self.slot_counts[m.id] - ch.sync_slot) % k == 0
        want = ch.found or ch.configured_id()
        if t < ch.search_started + self.config.search_delay_s or not id_matches(want, m):
            return False
        if period_ratio(ch.period, m.period) is None:
            return False
        ch.state = P.STATE_TRACKING
        ch.master = m
        ch.found = m.channel_id()
        ch.sync_slot = self.slot_counts[m.id]
        return True

    def ext_data(self, ch: Channel, m: Master, t: float) -> bytes:
        flags = self.lib_flags | (P.EXT_CHANNEL_ID if self.ext_enabled or ch.scan else 0)
        if not flags:
            return b""
        out = bytearray([flags])
        if flags & P.EXT_CHANNEL_ID:
            dev, dtype, trans = m.channel_id()
            out += struct.pack("<HBB", dev, dtype, trans)
        if flags & P.EXT_RSSI:
            out += struct.pack("<Bbb", 0x20, max(-128, min(127, m.rssi)), RSSI_THRESHOLD)
        if flags & P.EXT_TIMESTAMP:
            out += struct.pack("<H", int(t * 32768) & 0xFFFF)
        return bytes(out)

    def _slot(self, t: float, m: Master) -> None:
        """One transmission slot of master ``m``."""
        next_t = t + m.period_s()
        tx = m.transmit(t) if m.on else None
        if tx is not None:
            heard = [ch for ch in self.channels if self.hears(ch, m, t)]
            if tx.burst:
                duration = self.send_burst(m, tx, heard, t)
                periods = max(1, -(-duration // m.period_s()))
                next_t = t + periods * m.period_s()
            else:
                for ch in heard:
                    self.emit(P.frame(P.BROADCAST_DATA, bytes([ch.number]) + tx.payload + self.ext_data(ch, m, t)))
                    if not ch.scan:
                        self._received(ch, t)
                        self._slave_reply(ch, m, t)
            self.log_transmission(m, tx, heard, t)
        self.slot_counts[m.id] += 1
        self.at(next_t, self._slot, m)

    def send_burst(self, m: Master, tx: Transmission, heard: list[Channel], t: float) -> float:
        """Schedules a master's burst to every channel that heard its first packet; returns its
        duration. With the ``rx-fail-burst`` fault the burst breaks off halfway (event 4)."""
        packets = len(tx.payload) // 8
        cut = None
        if heard and self.faults["rx-fail-burst"] > 0:
            self.faults["rx-fail-burst"] -= 1
            cut = max(1, packets // 2)
        for ch in heard:
            self._burst_packet(t, ch, m, P.burst_packets(ch.number, tx.payload), 0, cut)
        return packets * self.config.burst_gap_s

    def _burst_packet(self, t: float, ch: Channel, m: Master, payloads: list[bytes], i: int, cut: int | None) -> None:
        if self.channels[ch.number] is not ch or not ch.listening() or (ch.master is not m and not ch.scan):
            return
        if cut is not None and i == cut:
            self.event(ch, P.EVENT_TRANSFER_RX_FAILED)
            # the rest of the burst is lost, but the channel stays in sync with the master
            ch.gen += 1
            rest = (len(payloads) - i) * self.config.burst_gap_s
            self.at(t + rest + 1.5 * ch.period_s(), self._miss_check, ch, ch.gen)
            return
        self.emit(P.frame(P.BURST_DATA, payloads[i] + self.ext_data(ch, m, t)))
        if not ch.scan:
            self._received(ch, t)
        if i + 1 < len(payloads):
            self.at(t + self.config.burst_gap_s, self._burst_packet, ch, m, payloads, i + 1, cut)
        elif not ch.scan:
            self._slave_reply(ch, m, t)

    def _slave_reply(self, ch: Channel, m: Master, t: float) -> None:
        """After a message from its master, a slave sends what the host queued (ack or burst):
        the master gets it and the host gets event 5 once its packets are out, or event 6 with
        the ``tx-fail`` fault."""
        if ch.pending is None or ch.sending:
            return
        ch.sending = True
        packets = max(1, len(ch.pending[1]) // 8)
        self.at(t + self.config.burst_gap_s * packets, self._slave_reply_done, ch, m)

    def _slave_reply_done(self, t: float, ch: Channel, m: Master) -> None:
        if ch.pending is None or not ch.sending or self.channels[ch.number] is not ch:
            return
        (kind, data), ch.pending, ch.sending = ch.pending, None, False
        if self.faults["tx-fail"] > 0:
            self.faults["tx-fail"] -= 1
            self.event(ch, P.EVENT_TRANSFER_TX_FAILED)
            return
        m.receive(kind, data, t)
        self.log_record({"sim_t": round(t, 4), "device": m.id, "kind": m.kind, "from_host": kind,
                         "channel": ch.number, "hex": data.hex()})
        self.drain_master_records(m)
        self.event(ch, P.EVENT_TRANSFER_TX_COMPLETED)

    def host_data(self, ch: Channel, mid: int, data: bytes, t: float) -> None:
        n = ch.number
        if mid == P.BROADCAST_DATA:
            ch.tx_payload = data
            return
        if mid == P.ACKNOWLEDGED_DATA:
            if not ch.listening() or ch.scan:
                return self.emit(P.response(n, mid, P.CHANNEL_IN_WRONG_STATE))
            if ch.pending is not None or ch.burst_in is not None:
                return self.emit(P.response(n, mid, P.TRANSFER_IN_PROGRESS))
            return self.queue_transfer(ch, "ack", data, t)
        # burst packet: [seq<<5 | ch, 8 bytes]
        seq, body = data[0] >> 5, data[1:9]
        n = data[0] & 0x1F
        if n >= len(self.channels):
            return self.emit(P.response(n, mid, P.INVALID_MESSAGE))
        ch = self.channels[n]
        number, last = seq & 0x03, bool(seq & 0x04)
        if number == 0:
            if not ch.listening() or ch.scan:
                return self.emit(P.response(n, mid, P.CHANNEL_IN_WRONG_STATE))
            if ch.pending is not None:
                return self.emit(P.response(n, mid, P.TRANSFER_IN_PROGRESS))
            ch.burst_in = bytearray(body)
            ch.burst_next = 1
        elif ch.burst_in is None:
            return None  # the rest of a refused burst
        elif number != ch.burst_next:
            ch.burst_in = None
            return self.event(ch, P.TRANSFER_SEQUENCE_NUMBER_ERROR)
        else:
            ch.burst_in += body
            ch.burst_next = number % 3 + 1
        if last:
            whole, ch.burst_in = bytes(ch.burst_in), None
            self.queue_transfer(ch, "burst", whole, t)
        return None

    def queue_transfer(self, ch: Channel, kind: str, data: bytes, t: float) -> None:
        ch.pending = (kind, data)
        if ch.state != P.STATE_TRACKING:  # nobody to send it to: it fails after a period
            gen = ch.gen

            def fail(_t: float) -> None:
                if ch.gen == gen and ch.pending == (kind, data) and not ch.sending:
                    ch.pending = None
                    self.event(ch, P.EVENT_TRANSFER_TX_FAILED)
            self.at(t + ch.period_s(), fail)

    # ----- the sent log -----
    def log_record(self, record: dict) -> None:
        if self.log_sink:
            self.log_sink(record)

    def drain_master_records(self, m: Master) -> None:
        records = getattr(m, "records", None)
        while records:
            self.log_record({"device": m.id, "kind": m.kind, **records.pop(0)})

    def log_transmission(self, m: Master, tx: Transmission, heard: list[Channel], t: float) -> None:
        self.drain_master_records(m)
        if tx.fields is None:
            return
        record = {"sim_t": round(t, 4), "device": m.id, "kind": m.kind, "dev": m.device, "trans": m.trans_type,
                  "seq": m.sent - 1, "rx": [ch.number for ch in heard]}
        if tx.burst:
            record["burst"] = tx.payload.hex()
        else:
            record["page"] = tx.payload.hex()
        record["fields"] = tx.fields
        self.log_record(record)

    # ----- status -----
    def status(self) -> dict:
        chans = []
        for ch in self.channels:
            if ch.state == P.STATE_UNASSIGNED:
                continue
            chans.append({"channel": ch.number, "state": ["unassigned", "assigned", "searching", "tracking"][ch.state],
                          "type": ch.type, "network": ch.network, "id": list(ch.configured_id()),
                          "found": list(ch.found) if ch.found else None, "period": ch.period, "rf": ch.rf,
                          "search_timeout": ch.search_timeout, "lp_search_timeout": ch.lp_search_timeout,
                          "scan": ch.scan, "master": ch.master.id if ch.master else None, "received": ch.received,
                          "events": {str(k): v for k, v in ch.events.items()}})
        return {"product": f"0x{self.config.product:04x}", "serial": self.config.serial,
                "networks_set": [i for i, k in enumerate(self.keys) if k != bytes(8)],
                "ext": {"enabled": self.ext_enabled, "lib_flags": self.lib_flags}, "channels": chans,
                "faults": self.armed_faults(), "stats": dict(self.stats),
                "masters": {m.id: m.status() for m in self.masters.values()}}
