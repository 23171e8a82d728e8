"""ANT+ sensors: the masters the emulated stick hears.

Each sensor transmits one 8-byte data page every ``period`` (1/32768 s units, so 32768/period
Hz) on its RF channel (2400 + ``rf`` MHz) and network key, with a channel id of a 16-bit device
number, a device type (bit 7 = pairing bit) and a transmission type (its high nibble holds bits
16-19 of a 20-bit device number). ``transmit(t)`` is called at each slot with the model's time in
seconds and returns the page and the values it encodes (for the sent log).

Values follow seeded scripts (``random.Random`` seeded with the stick seed and the sensor id), so
a run is repeatable; heart-rate RR intervals can also come from a list (``rr_script``).
"""
from __future__ import annotations

import math
import random
import struct
from dataclasses import dataclass, field

# kind: (device type, period, default low nibble of the transmission type)
KINDS: dict[str, tuple[int, int, int]] = {
    "hrm": (120, 8070, 1),
    "power": (11, 8182, 5),
    "speed-cadence": (121, 8086, 1),
    "speed": (123, 8118, 1),
    "cadence": (122, 8102, 1),
    "stride": (124, 8134, 5),
    "fe": (17, 8192, 5),
    "scale": (119, 8192, 1),
}
ALIASES = {"hr": "hrm", "sc": "speed-cadence", "bike-power": "power", "sdm": "stride",
           "trainer": "fe", "weight": "scale"}
ANT_PLUS_RF = 57
MANUFACTURER_ID = 255  # "development" in the ANT+ manufacturer list
BACKGROUND_EVERY = 65  # a background (or common) page once in this many messages


@dataclass
class Transmission:
    """What a master sends in one slot: an 8-byte broadcast, or a burst (``burst`` true,
    ``payload`` a multiple of 8 bytes). ``fields`` go to the sent log; None: not logged."""
    payload: bytes
    burst: bool = False
    fields: dict | None = None


@dataclass
class Master:
    """Something on the air that a stick channel can find: its channel id, radio settings and
    network key. ``transmit`` is called at every slot while ``on``; ``receive`` gets the host's
    acknowledged or burst data sent on a channel tracking it."""
    id: str
    kind: str
    device: int  # 20-bit device number
    device_type: int
    trans_low: int
    period: int
    rf: int
    key: bytes
    pairing: bool = False
    rssi: int = -62
    on: bool = True
    sent: int = 0
    received: list = field(default_factory=list)

    @property
    def device_number(self) -> int:
        return self.device & 0xFFFF

    @property
    def trans_type(self) -> int:
        return ((self.device >> 16) & 0x0F) << 4 | (self.trans_low & 0x0F)

    @property
    def type_byte(self) -> int:
        return (self.device_type & 0x7F) | (0x80 if self.pairing else 0)

    def channel_id(self) -> tuple[int, int, int]:
        return self.device_number, self.type_byte, self.trans_type

    def period_s(self) -> float:
        return self.period / 32768

    def transmit(self, t: float) -> Transmission | None:
        raise NotImplementedError

    def receive(self, kind: str, data: bytes, t: float) -> None:
        """Host data (``kind`` is ``ack`` or ``burst``); sensors only keep it."""
        self.received.append({"t": t, "kind": kind, "hex": data.hex()})

    def status(self) -> dict:
        return {"kind": self.kind, "on": self.on, "device": self.device, "device_number": self.device_number,
                "device_type": self.device_type, "trans_type": self.trans_type, "pairing": self.pairing,
                "period": self.period, "rf": self.rf, "sent": self.sent, "received": len(self.received)}


class Sensor(Master):
    """An ANT+ sensor with a seeded script; subclasses build the pages."""

    def __init__(self, id: str, kind: str, device: int, key: bytes, seed: str, *, period: int | None = None,
                 rf: int = ANT_PLUS_RF, trans: int | None = None, pairing: bool = False, rssi: int = -62,
                 on: bool = True, serial: int | None = None, **_options) -> None:
        dtype, default_period, default_trans = KINDS[kind]
        super().__init__(id=id, kind=kind, device=device, device_type=dtype,
                         trans_low=default_trans if trans is None else trans,
                         period=period or default_period, rf=rf, key=key, pairing=pairing, rssi=rssi, on=on)
        self.rng = random.Random(f"ant-stick:{seed}:{id}")
        self.index = 0  # messages sent (the page rotation counts these)
        self.t_last: float | None = None
        self.clock_offset = self.rng.uniform(100, 5000)  # the sensor's own clock, in seconds
        self.serial = serial if serial is not None else 0x00A00000 + self.rng.randrange(1 << 16)

    def clock(self, t: float) -> float:
        return t + self.clock_offset

    def transmit(self, t: float) -> Transmission | None:
        dt = 0.0 if self.t_last is None else max(0.0, t - self.t_last)
        self.t_last = t
        self.advance(t, dt)
        page, fields = self.page(self.index, t)
        self.index += 1
        self.sent += 1
        return Transmission(payload=page, fields=fields)

    def advance(self, t: float, dt: float) -> None:
        """Moves the simulated quantities on by ``dt`` seconds."""

    def page(self, i: int, t: float) -> tuple[bytes, dict]:
        raise NotImplementedError

    def toggle(self, i: int) -> int:
        """Bit 7 of byte 0 on heart-rate and speed/cadence pages: flips every 4 messages."""
        return 0x80 if (i // 4) & 1 else 0

    def common_page(self, which: int) -> tuple[bytes, dict]:
        """ANT+ common pages 0x50 (manufacturer) and 0x51 (product)."""
        if which == 0x50:
            page = bytes([0x50, 0xFF, 0xFF, 1]) + struct.pack("<HH", MANUFACTURER_ID, self.device_type)
            return page, {"common": "manufacturer", "manufacturer": MANUFACTURER_ID, "model": self.device_type,
                          "hw_revision": 1}
        page = bytes([0x51, 0xFF, 0xFF, 12]) + struct.pack("<I", self.serial)
        return page, {"common": "product", "sw_revision": 12, "serial": self.serial}

    def rotating_common(self, i: int) -> int | None:
        """0x50 or 0x51 on one message in ``BACKGROUND_EVERY`` (alternately), else None."""
        if i % BACKGROUND_EVERY == BACKGROUND_EVERY - 1:
            return 0x50 if (i // BACKGROUND_EVERY) % 2 == 0 else 0x51
        return None


def walk(rng: random.Random, value: float, step: float, low: float, high: float) -> float:
    """One step of a bounded random walk."""
    value += rng.uniform(-step, step)
    return min(high, max(low, value))


class RevolutionCounter:
    """Revolutions at a changing rate: the count and the time of the last whole revolution
    (in 1/1024 s), as speed and cadence sensors report them."""

    def __init__(self, start_revs: int, start_time: float) -> None:
        self.revs = float(start_revs)
        self.event_time = start_time  # seconds on the sensor clock

    def advance(self, now: float, dt: float, rate_hz: float) -> None:
        if rate_hz <= 0 or dt <= 0:
            return
        before = math.floor(self.revs)
        self.revs += rate_hz * dt
        after = math.floor(self.revs)
        if after > before:
            self.event_time = now - (self.revs - after) / rate_hz

    @property
    def count(self) -> int:
        return math.floor(self.revs)

    def time_1024(self) -> int:
        return int(self.event_time * 1024) & 0xFFFF


class HeartRate(Sensor):
    """Heart-rate strap (device type 120, period 8070). Main page 4 (previous beat time in bytes
    2-3), page 7 (battery) once in 65 messages, the toggle bit flipping every 4 messages; every
    page ends with the last beat's time (1/1024 s), the beat count and the heart rate.
    ``legacy``: page-0 format only (no toggle, no previous beat time).

    Beats follow RR intervals (1/1024 s) from ``rr_script`` (repeated) or from a seeded random walk
    of the heart rate. The log of each message lists the RR intervals of the beats that are new in
    it (``rr``), so a host that computes RR from consecutive messages whose count rises by one
    gets exactly those values.
    """

    def __init__(self, *args, rr_script: list[int] | None = None, legacy: bool = False, battery: int = 87, **kw):
        super().__init__(*args, **kw)
        self.rr_script = [int(v) for v in rr_script] if rr_script else None
        self.rr_pos = 0
        self.legacy = legacy
        self.battery = battery
        self.bpm = self.rng.uniform(65, 95)
        self.beat_time: int | None = None  # 1/1024 s on the sensor clock, not wrapped
        self.prev_beat_time = 0
        self.beat_count = self.rng.randrange(256)
        self.pending_rr = 0
        self.next_beat = 0

    def next_rr(self) -> int:
        if self.rr_script:
            rr = self.rr_script[self.rr_pos % len(self.rr_script)]
            self.rr_pos += 1
            return rr
        self.bpm = walk(self.rng, self.bpm, 2.5, 55, 170)
        return max(300, round(61440 / self.bpm) + self.rng.randint(-12, 12))

    def restart(self, t: float) -> None:
        """Switched on again: the next beat comes one RR from now (no beats were counted while off)."""
        if self.beat_time is not None:
            now = int(self.clock(t) * 1024)
            if self.next_beat < now:
                self.next_beat = now + self.pending_rr

    def page(self, i: int, t: float) -> tuple[bytes, dict]:
        now = int(self.clock(t) * 1024)
        new_rr: list[int] = []
        if self.beat_time is None:  # the first message: a beat has just happened
            first = self.next_rr()
            self.beat_time = now - self.rng.randrange(0, 200)
            self.prev_beat_time = self.beat_time - first
            self.beat_count = (self.beat_count + 1) & 0xFF
            new_rr.append(first)
            self.pending_rr = self.next_rr()
            self.next_beat = self.beat_time + self.pending_rr
        while self.next_beat <= now:
            self.prev_beat_time, self.beat_time = self.beat_time, self.next_beat
            self.beat_count = (self.beat_count + 1) & 0xFF
            new_rr.append(self.pending_rr)
            self.pending_rr = self.next_rr()
            self.next_beat = self.beat_time + self.pending_rr
        last_rr = self.beat_time - self.prev_beat_time
        bpm = min(255, round(61440 / last_rr)) if last_rr > 0 else 0
        tail = struct.pack("<HBB", self.beat_time & 0xFFFF, self.beat_count, bpm)
        if self.legacy:
            head = bytes([0x00, 0xFF, 0xFF, 0xFF])
            page_no = 0
        elif i % BACKGROUND_EVERY == BACKGROUND_EVERY - 1:
            volts = 2.95
            head = bytes([0x07 | self.toggle(i), self.battery, round((volts % 1) * 256) & 0xFF, int(volts) | (2 << 4)])
            page_no = 7
        else:
            head = bytes([0x04 | self.toggle(i), 0xFF]) + struct.pack("<H", self.prev_beat_time & 0xFFFF)
            page_no = 4
        fields = {"bpm": bpm, "rr": new_rr, "beat_count": self.beat_count, "beat_time": self.beat_time & 0xFFFF,
                  "prev_beat_time": self.prev_beat_time & 0xFFFF, "page_no": page_no}
        if page_no == 7:
            fields["battery_pct"] = self.battery
        return head + tail, fields


class BikePower(Sensor):
    """Bike power meter (device type 11, period 8182): page 0x10 (power only: event count, cadence,
    accumulated and instantaneous power) and page 0x12 (crank torque: event count, crank ticks,
    cadence, accumulated crank period in 1/2048 s and torque in 1/32 N·m) alternate; common pages
    0x50/0x51 once in 65 messages."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.power = self.rng.uniform(150, 250)
        self.cadence = self.rng.uniform(80, 95)
        self.count10 = self.rng.randrange(256)
        self.acc_power = self.rng.randrange(65536)
        self.count12 = self.rng.randrange(256)
        self.crank_revs = float(self.rng.randrange(256))
        self.crank_ticks = math.floor(self.crank_revs)
        self.crank_period = self.rng.randrange(65536)
        self.torque_acc = self.rng.randrange(65536)

    def advance(self, t: float, dt: float) -> None:
        self.power = walk(self.rng, self.power, 8, 100, 400)
        self.cadence = walk(self.rng, self.cadence, 1.5, 70, 105)
        self.crank_revs += dt * self.cadence / 60

    def page(self, i: int, t: float) -> tuple[bytes, dict]:
        common = self.rotating_common(i)
        if common:
            return self.common_page(common)
        power, cadence = round(self.power), round(self.cadence)
        if i % 2 == 0:
            self.count10 = (self.count10 + 1) & 0xFF
            self.acc_power = (self.acc_power + power) & 0xFFFF
            page = bytes([0x10, self.count10, 0xFF, cadence]) + struct.pack("<HH", self.acc_power, power)
            return page, {"power_w": power, "cadence_rpm": cadence, "event_count": self.count10,
                          "accumulated_power": self.acc_power}
        revs = math.floor(self.crank_revs) - self.crank_ticks
        if revs > 0:
            self.crank_ticks += revs
            self.count12 = (self.count12 + revs) & 0xFF
            self.crank_period = (self.crank_period + round(revs * 60 / cadence * 2048)) & 0xFFFF
            torque = power / (2 * math.pi * cadence / 60)
            self.torque_acc = (self.torque_acc + round(32 * revs * torque)) & 0xFFFF
        page = bytes([0x12, self.count12, self.crank_ticks & 0xFF, cadence]) + struct.pack(
            "<HH", self.crank_period, self.torque_acc)
        return page, {"power_w": power, "cadence_rpm": cadence, "event_count": self.count12,
                      "crank_ticks": self.crank_ticks & 0xFF, "crank_period": self.crank_period,
                      "accumulated_torque": self.torque_acc}


class SpeedCadence(Sensor):
    """Speed and cadence sensors on a 2.096 m wheel. ``speed-cadence`` (121, period 8086) has no
    page byte: cadence event time and revolutions, then speed event time and wheel revolutions
    (1/1024 s and counts, rolling over at 65536). ``speed`` (123, 8118) and ``cadence`` (122,
    8102) send page 0 (with the toggle bit) carrying their event time and count in bytes 4-7, and
    pages 2 (manufacturer) and 3 (product) as background pages once in 65 messages."""

    WHEEL_M = 2.096

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.speed_kmh = self.rng.uniform(24, 34)
        self.cadence = self.rng.uniform(78, 96)
        start = self.clock_offset
        self.wheel = RevolutionCounter(65536 - 40, start)
        self.crank = RevolutionCounter(65536 - 20, start)

    def advance(self, t: float, dt: float) -> None:
        self.speed_kmh = walk(self.rng, self.speed_kmh, 0.6, 18, 40)
        self.cadence = walk(self.rng, self.cadence, 1.2, 70, 105)
        clock = self.clock(t)
        self.wheel.advance(clock, dt, self.speed_kmh / 3.6 / self.WHEEL_M)
        self.crank.advance(clock, dt, self.cadence / 60)

    def page(self, i: int, t: float) -> tuple[bytes, dict]:
        speed = {"speed_event_time": self.wheel.time_1024(), "wheel_revs": self.wheel.count & 0xFFFF,
                 "speed_kmh": round(self.speed_kmh, 2)}
        cadence = {"cadence_event_time": self.crank.time_1024(), "crank_revs": self.crank.count & 0xFFFF,
                   "cadence_rpm": round(self.cadence, 1)}
        if self.kind == "speed-cadence":
            page = struct.pack("<HHHH", cadence["cadence_event_time"], cadence["crank_revs"],
                               speed["speed_event_time"], speed["wheel_revs"])
            return page, {**cadence, **speed}
        values = speed if self.kind == "speed" else cadence
        tail = struct.pack("<HH", *list(values.values())[:2])
        if i % BACKGROUND_EVERY == BACKGROUND_EVERY - 1:
            if (i // BACKGROUND_EVERY) % 2 == 0:
                head = bytes([0x02 | self.toggle(i), MANUFACTURER_ID & 0xFF]) + struct.pack("<H", self.serial >> 16)
                values = {**values, "page_no": 2}
            else:
                head = bytes([0x03 | self.toggle(i), 1, 12, self.device_type])
                values = {**values, "page_no": 3}
        else:
            head = bytes([0x00 | self.toggle(i), 0xFF, 0xFF, 0xFF])
            values = {**values, "page_no": 0}
        return head + tail, values


class Stride(Sensor):
    """Stride-based speed and distance monitor (foot pod, device type 124, period 8134): page 1
    (time in 1/200 s, distance in 1/16 m, speed in 1/256 m/s, stride count) on three messages in
    four, page 2 (cadence in 1/16 strides per minute, speed, status) on the fourth, common pages
    0x50/0x51 once in 65."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.speed = self.rng.uniform(2.8, 3.8)  # m/s
        self.cadence = self.rng.uniform(82, 92)  # strides per minute
        self.time_s = 0.0
        self.distance = 0.0
        self.strides = 0.0

    def advance(self, t: float, dt: float) -> None:
        self.speed = walk(self.rng, self.speed, 0.05, 2.5, 4.5)
        self.cadence = walk(self.rng, self.cadence, 0.5, 78, 98)
        self.time_s += dt
        self.distance += self.speed * dt
        self.strides += self.cadence / 60 * dt

    def page(self, i: int, t: float) -> tuple[bytes, dict]:
        common = self.rotating_common(i)
        if common:
            return self.common_page(common)
        speed_256 = round(self.speed * 256)
        speed_int, speed_frac = (speed_256 >> 8) & 0x0F, speed_256 & 0xFF
        if i % 4 == 3:
            cad16 = round(self.cadence * 16)
            page = bytes([0x02, 0xFF, 0xFF, (cad16 >> 4) & 0xFF, ((cad16 & 0x0F) << 4) | speed_int, speed_frac,
                          0xFF, 0x01])
            return page, {"page_no": 2, "cadence_spm": cad16 / 16, "speed_mps": speed_256 / 256}
        t200 = round(self.time_s * 200)
        d16 = math.floor(self.distance * 16)
        page = bytes([0x01, t200 % 200, (t200 // 200) & 0xFF, (d16 >> 4) & 0xFF, ((d16 & 0x0F) << 4) | speed_int,
                      speed_frac, math.floor(self.strides) & 0xFF, 0])
        return page, {"page_no": 1, "time_s": t200 / 200, "distance_m": d16 / 16, "speed_mps": speed_256 / 256,
                      "strides": math.floor(self.strides)}


class FitnessEquipment(Sensor):
    """Fitness equipment, a trainer (device type 17, period 8192): page 0x10 (general: equipment
    type 25, elapsed time in 1/4 s, distance, speed in mm/s) on one message in three, page 0x19
    (trainer: event count, cadence, accumulated power, 12-bit instantaneous power) on the others,
    common pages 0x50/0x51 once in 65. FE state 3 (in use)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.power = self.rng.uniform(150, 220)
        self.cadence = self.rng.uniform(80, 95)
        self.speed = self.rng.uniform(7, 10)  # m/s
        self.elapsed = 0.0
        self.distance = 0.0
        self.count = self.rng.randrange(256)
        self.acc_power = self.rng.randrange(65536)

    def advance(self, t: float, dt: float) -> None:
        self.power = walk(self.rng, self.power, 6, 80, 400)
        self.cadence = walk(self.rng, self.cadence, 1.0, 60, 110)
        self.speed = walk(self.rng, self.speed, 0.1, 4, 14)
        self.elapsed += dt
        self.distance += self.speed * dt

    def page(self, i: int, t: float) -> tuple[bytes, dict]:
        common = self.rotating_common(i)
        if common:
            return self.common_page(common)
        if i % 3 == 0:
            q = math.floor(self.elapsed * 4)
            mm_s = round(self.speed * 1000)
            page = bytes([0x10, 25, q & 0xFF, math.floor(self.distance) & 0xFF]) + struct.pack("<H", mm_s) + bytes(
                [0xFF, 0x04 | (3 << 4)])
            return page, {"page_no": 0x10, "elapsed_s": q / 4, "distance_m": math.floor(self.distance),
                          "speed_mps": mm_s / 1000}
        power, cadence = round(self.power), round(self.cadence)
        self.count = (self.count + 1) & 0xFF
        self.acc_power = (self.acc_power + power) & 0xFFFF
        page = bytes([0x19, self.count, cadence]) + struct.pack("<H", self.acc_power) + bytes(
            [power & 0xFF, (power >> 8) & 0x0F, 3 << 4])
        return page, {"page_no": 0x19, "power_w": power, "cadence_rpm": cadence, "event_count": self.count,
                      "accumulated_power": self.acc_power}


class WeightScale(Sensor):
    """Weight scale (device type 119, period 8192). A weighing starts when the scale is switched
    on (at start-up unless ``off``, and at each ``start``): page 1 carries 0xFFFE ("computing")
    for ``compute_s`` seconds, then the final weight (0.01 kg); pages 2 (hydration and body fat,
    0.01 %) and 4 (muscle mass 0.01 kg, bone mass 0.1 kg) follow in turn with page 1, and common
    pages 0x50/0x51 once in 65. ``user``: the user profile sent in bytes 1-2 (0xFFFF: none)."""

    def __init__(self, *args, compute_s: float = 2.0, user: int = 1, **kw):
        super().__init__(*args, **kw)
        self.compute_s = compute_s
        self.user = user
        self.weighings = 0
        self.started_at: float | None = None
        self.new_weighing()

    def new_weighing(self) -> None:
        self.weighings += 1
        self.weight = round(self.rng.uniform(62, 88), 2)
        self.hydration = round(self.rng.uniform(50, 62), 2)
        self.fat = round(self.rng.uniform(14, 28), 2)
        self.muscle = round(self.weight * self.rng.uniform(0.38, 0.45), 2)
        self.bone = round(self.rng.uniform(2.6, 3.6), 1)
        self.started_at = None

    def restart(self, t: float) -> None:
        self.new_weighing()

    def page(self, i: int, t: float) -> tuple[bytes, dict]:
        if self.started_at is None:
            self.started_at = t
        common = self.rotating_common(i)
        if common:
            return self.common_page(common)
        user = struct.pack("<H", self.user)
        computing = t - self.started_at < self.compute_s
        step = i % 4
        if computing or step in (0, 2):
            raw = 0xFFFE if computing else round(self.weight * 100)
            caps = 0x01 if self.user != 0xFFFF else 0x00
            page = bytes([0x01]) + user + bytes([caps, 0xFF, 0xFF]) + struct.pack("<H", raw)
            return page, {"page_no": 1, "user": self.user, "weighing": self.weighings,
                          "weight_kg": None if computing else raw / 100, "computing": computing}
        if step == 1:
            page = bytes([0x02]) + user + bytes([0xFF]) + struct.pack("<HH", round(self.hydration * 100),
                                                                        round(self.fat * 100))
            return page, {"page_no": 2, "user": self.user, "weighing": self.weighings,
                          "hydration_pct": self.hydration, "fat_pct": self.fat}
        page = bytes([0x04]) + user + bytes([0xFF, 0xFF]) + struct.pack("<H", round(self.muscle * 100)) + bytes(
            [round(self.bone * 10)])
        return page, {"page_no": 4, "user": self.user, "weighing": self.weighings, "muscle_kg": self.muscle,
                      "bone_kg": self.bone}


CLASSES = {"hrm": HeartRate, "power": BikePower, "speed-cadence": SpeedCadence, "speed": SpeedCadence,
           "cadence": SpeedCadence, "stride": Stride, "fe": FitnessEquipment, "scale": WeightScale}


def default_device(kind: str, n: int) -> int:
    """Device numbers by kind: device type × 1000 + n + 1 (so 120001 for the first heart-rate
    strap: a 20-bit number with 1 in its high nibble)."""
    return KINDS[kind][0] * 1000 + n + 1


def make_sensor(kind: str, id: str, device: int, key: bytes, seed: str, **options) -> Sensor:
    kind = ALIASES.get(kind, kind)
    if kind not in KINDS:
        raise ValueError(f"unknown sensor kind {kind!r} (one of {', '.join(KINDS)})")
    if not 0 < device < (1 << 20):
        raise ValueError(f"{id}: a device number is 1 to 2^20-1")
    return CLASSES[kind](id, kind, device, key, seed, **options)
