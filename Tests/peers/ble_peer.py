#!/usr/bin/env python3
"""HealthGate BLE test peer.

Emulated Bluetooth LE sensors for the host stack's end-to-end tests, built on Bumble's virtual
controllers. One virtual controller (the "external" controller) is exposed as an H4 byte stream
on a TCP or Unix socket to the host under test; each peripheral is an in-process Bumble Device
on its own virtual controller on the same virtual link.

See Tests/peers/README.md for the command line, the ready line, the control protocol and the
sent-log format. Everything the Swift harness depends on is described there.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import logging
import math
import os
import random
import signal
import socket
import struct
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from bumble import gatt, hci, ll, pairing
from bumble.controller import Controller
from bumble.core import PhysicalTransport
from bumble.device import Device, DeviceConfiguration
from bumble.host import Host
from bumble.link import LocalLink
from bumble.profiles.battery_service import BatteryService
from bumble.profiles.device_information_service import DeviceInformationService
from bumble.snoop import BtSnooper, Snooper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_common import exits_on_stdin_eof  # noqa: E402

PROTOCOL_VERSION = 1
log = logging.getLogger("ble_peer")

# HCI status codes used by the external controller
STATUS_UNKNOWN_COMMAND = 0x01
STATUS_INVALID_PARAMETERS = 0x12
STATUS_REMOTE_USER_TERMINATED = 0x13
STATUS_UNSPECIFIED = 0x1F

H4_COMMAND, H4_ACL, H4_SCO, H4_EVENT, H4_ISO = 0x01, 0x02, 0x03, 0x04, 0x05


# ---------------------------------------------------------------------------------------------
# Value scripts and encoders
# ---------------------------------------------------------------------------------------------
CONTACT_BITS = {"unsupported": 0b00, "not-detected": 0b10, "detected": 0b11}


def encode_hr(s: dict) -> bytes:
    """Heart Rate Measurement (0x2A37). RR intervals are in 1/1024 s (field `rr`)."""
    bpm = int(s["bpm"])
    wide = bool(s.get("uint16", False)) or bpm > 255
    flags = (0x01 if wide else 0) | (CONTACT_BITS[s.get("contact", "detected")] << 1)
    out = bytearray()
    out += struct.pack("<H", bpm) if wide else struct.pack("<B", bpm)
    if s.get("energy_kj") is not None:
        flags |= 0x08
        out += struct.pack("<H", int(s["energy_kj"]))
    rr = s.get("rr") or []
    if rr:
        flags |= 0x10
        for v in rr:
            out += struct.pack("<H", int(v))
    return bytes([flags]) + bytes(out)


def encode_csc(s: dict) -> bytes:
    """CSC Measurement (0x2A5B): wheel (uint32 revs, uint16 1/1024 s), crank (uint16, uint16)."""
    flags = 0
    out = bytearray()
    if s.get("wheel_revs") is not None:
        flags |= 0x01
        out += struct.pack("<IH", int(s["wheel_revs"]) & 0xFFFFFFFF, int(s["wheel_event"]) & 0xFFFF)
    if s.get("crank_revs") is not None:
        flags |= 0x02
        out += struct.pack("<HH", int(s["crank_revs"]) & 0xFFFF, int(s["crank_event"]) & 0xFFFF)
    return bytes([flags]) + bytes(out)


def encode_ftms_bike(s: dict) -> bytes:
    """Indoor Bike Data (0x2AD2): speed (0.01 km/h), cadence (0.5 rpm), power (W), heart rate."""
    flags = 0  # bit 0 == 0: instantaneous speed present
    out = bytearray(struct.pack("<H", int(round(float(s["speed_kmh"]) * 100))))
    if s.get("cadence_rpm") is not None:
        flags |= 1 << 2
        out += struct.pack("<H", int(round(float(s["cadence_rpm"]) * 2)))
    if s.get("power_w") is not None:
        flags |= 1 << 6
        out += struct.pack("<h", int(s["power_w"]))
    if s.get("heart_rate") is not None:
        flags |= 1 << 9
        out += struct.pack("<B", int(s["heart_rate"]))
    return struct.pack("<H", flags) + bytes(out)


# ----- IEEE 11073-20601 numbers and the Date Time structure (used by the health profiles) -----
SFLOAT_NAN, FLOAT_NAN = 0x07FF, 0x007FFFFF


def _ieee11073(value: float | None, mantissa_max: int, exp_min: int, exp_max: int) -> tuple[int, int]:
    """(mantissa, exponent) with value == mantissa * 10**exponent, exactly if the value has few
    enough digits, else as precisely as the mantissa allows. Mantissas stay clear of the ranges
    reserved for NaN, NRes and +/-INF (|m| <= max - 2)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        raise ValueError("NaN")
    v = float(value)
    limit = mantissa_max - 2
    for e in range(0, exp_min - 1, -1):  # the shortest exact form, preferring exponent 0
        m = round(v / 10.0 ** e)
        if abs(m) <= limit and abs(m * 10.0 ** e - v) <= 1e-9 * max(1.0, abs(v)):
            return m, e
    for e in range(exp_min, exp_max + 1):  # not exact: the most precise form that fits
        m = round(v / 10.0 ** e)
        if abs(m) <= limit:
            return m, e
    raise ValueError(f"{value} does not fit")


def sfloat16(value: float | None) -> bytes:
    """IEEE-11073 16-bit SFLOAT: 4-bit signed exponent (high nibble), 12-bit signed mantissa.
    None gives NaN (0x07FF)."""
    if value is None:
        return struct.pack("<H", SFLOAT_NAN)
    m, e = _ieee11073(value, 0x7FF, -8, 7)
    return struct.pack("<H", ((e & 0x0F) << 12) | (m & 0x0FFF))


def float32(value: float | None) -> bytes:
    """IEEE-11073 32-bit FLOAT: 8-bit signed exponent (high byte), 24-bit signed mantissa.
    None gives NaN (0x007FFFFF)."""
    if value is None:
        return struct.pack("<I", FLOAT_NAN)
    m, e = _ieee11073(value, 0x7FFFFF, -128, 127)
    return struct.pack("<I", ((e & 0xFF) << 24) | (m & 0xFFFFFF))


def date_time(stamp: str) -> bytes:
    """Date Time (0x2A08): year uint16, month, day, hours, minutes, seconds (7 bytes), from
    an ISO 8601 local date-time string ("2026-11-01T07:00:00")."""
    d = datetime.datetime.fromisoformat(stamp)
    return struct.pack("<HBBBBB", d.year, d.month, d.day, d.hour, d.minute, d.second)


def encode_rsc(s: dict) -> bytes:
    """RSC Measurement (0x2A53): flags, speed uint16 (1/256 m/s), cadence uint8 (1/min),
    stride length uint16 (1/100 m, flag bit 0), total distance uint32 (1/10 m, bit 1);
    bit 2 set = running, clear = walking."""
    flags = 0x04 if s.get("running", True) else 0
    out = bytearray(struct.pack("<HB", int(round(float(s["speed_mps"]) * 256)), int(s["cadence_spm"])))
    if s.get("stride_m") is not None:
        flags |= 0x01
        out += struct.pack("<H", int(round(float(s["stride_m"]) * 100)))
    if s.get("distance_m") is not None:
        flags |= 0x02
        out += struct.pack("<I", int(round(float(s["distance_m"]) * 10)) & 0xFFFFFFFF)
    return bytes([flags]) + bytes(out)


def encode_power(s: dict) -> bytes:
    """Cycling Power Measurement (0x2A63): flags uint16, instantaneous power sint16 (W),
    pedal power balance uint8 (1/2 %, flag bits 0 and 1: present, left-pedal reference),
    crank revolution data (flag bit 5: uint16 revolutions, uint16 last event 1/1024 s)."""
    flags = 0
    out = bytearray(struct.pack("<h", int(s["power_w"])))
    if s.get("balance_pct") is not None:
        flags |= 0x0003
        out += struct.pack("<B", int(round(float(s["balance_pct"]) * 2)))
    if s.get("crank_revs") is not None:
        flags |= 0x0020
        out += struct.pack("<HH", int(s["crank_revs"]) & 0xFFFF, int(s["crank_event"]) & 0xFFFF)
    return struct.pack("<H", flags) + bytes(out)


def encode_scale(s: dict) -> bytes:
    """Weight Measurement (0x2A9D): flags, weight uint16 (SI: 0.005 kg; imperial, flag bit 0:
    0.01 lb), Date Time (bit 1), user id uint8 (bit 2), BMI uint16 (0.1 kg/m2) + height uint16
    (SI: 0.001 m, imperial: 0.1 in) (bit 3)."""
    imperial = s.get("weight_lb") is not None
    flags = 0x01 if imperial else 0
    if imperial:
        out = bytearray(struct.pack("<H", int(round(float(s["weight_lb"]) * 100))))
    else:
        out = bytearray(struct.pack("<H", int(round(float(s["weight_kg"]) * 200))))
    if s.get("timestamp") is not None:
        flags |= 0x02
        out += date_time(s["timestamp"])
    if s.get("user_id") is not None:
        flags |= 0x04
        out += struct.pack("<B", int(s["user_id"]))
    if s.get("bmi") is not None:
        flags |= 0x08
        height = (int(round(float(s["height_in"]) * 10)) if imperial
                  else int(round(float(s["height_m"]) * 1000)))
        out += struct.pack("<HH", int(round(float(s["bmi"]) * 10)), height)
    return bytes([flags]) + bytes(out)


def encode_bp(s: dict) -> bytes:
    """Blood Pressure Measurement (0x2A35): flags, systolic, diastolic, mean arterial pressure
    (SFLOAT, mmHg or kPa: flag bit 0), Date Time (bit 1), pulse rate SFLOAT (bit 2), user id uint8
    (bit 3), measurement status uint16 (bit 4)."""
    unit = s.get("unit", "mmHg")
    if unit not in ("mmHg", "kPa"):
        raise ValueError(f"unit {unit!r}")
    flags = 0x01 if unit == "kPa" else 0
    out = bytearray(sfloat16(s["systolic"]) + sfloat16(s["diastolic"]) + sfloat16(s["map"]))
    if s.get("timestamp") is not None:
        flags |= 0x02
        out += date_time(s["timestamp"])
    if s.get("pulse_bpm") is not None:
        flags |= 0x04
        out += sfloat16(s["pulse_bpm"])
    if s.get("user_id") is not None:
        flags |= 0x08
        out += struct.pack("<B", int(s["user_id"]))
    if s.get("status") is not None:
        flags |= 0x10
        out += struct.pack("<H", int(s["status"]))
    return bytes([flags]) + bytes(out)


def encode_thermometer(s: dict) -> bytes:
    """Temperature Measurement (0x2A1C): flags, temperature FLOAT (Celsius, or Fahrenheit with
    flag bit 0), Date Time (bit 1), temperature type uint8 (bit 2)."""
    fahrenheit = s.get("temperature_f") is not None
    flags = 0x01 if fahrenheit else 0
    out = bytearray(float32(s["temperature_f"] if fahrenheit else s["temperature_c"]))
    if s.get("timestamp") is not None:
        flags |= 0x02
        out += date_time(s["timestamp"])
    if s.get("type") is not None:
        flags |= 0x04
        out += struct.pack("<B", int(s["type"]))
    return bytes([flags]) + bytes(out)


def encode_plx(s: dict) -> bytes:
    """PLX Continuous Measurement (0x2A5F): flags 0 (only the normal SpO2PR field), SpO2 (%)
    and pulse rate (1/min), both SFLOAT."""
    return bytes([0]) + sfloat16(s["spo2_pct"]) + sfloat16(s["pulse_bpm"])


# Date-time of sample 0 in the seeded scripts that carry time stamps (sample i: plus i minutes)
SCRIPT_EPOCH = datetime.datetime(2026, 11, 1, 7, 0, 0)


class SeededScript:
    """Deterministic infinite sample sequence per peripheral (random.Random seeded by a string,
    which is stable across runs and Python processes)."""

    def __init__(self, kind: str, seed: str):
        self.kind = kind
        self.rng = random.Random(f"healthgate-ble-peer:{seed}")
        self.i = 0
        # HR state
        self.bpm = 72.0
        self.energy = 0
        # CSC state: start close to the counters' rollovers so tests see them early
        self.wheel_pos = float(0xFFFFFFFF - 40)  # fractional wheel revolutions
        self.crank_pos = float(0xFFFF - 20)
        self.t = 64.0 - 3.0  # sensor time in seconds (event times roll over at 64 s)
        self.wheel_event_t = self.t
        self.crank_event_t = self.t
        self.circumference_m = 2.105
        # RSC, power, thermometer and PLX state (random walks; no draws here, so adding a kind
        # never changes another kind's sequence)
        self.run_speed = 3.4
        self.distance_dm = 0.0
        self.power = 180.0
        self.temp_c = 36.8
        self.spo2 = 97
        self.pulse = 68
        self.users: dict[int, tuple[float, float]] = {}  # scale: user id -> (usual kg, height m)

    def timestamp(self, i: int) -> str:
        """Date-time of sample i: SCRIPT_EPOCH plus i minutes (local time, no zone)."""
        return (SCRIPT_EPOCH + datetime.timedelta(minutes=i)).isoformat()

    def next(self) -> dict:
        i = self.i
        self.i += 1
        r = self.rng
        if self.kind == "hr":
            self.bpm = min(185.0, max(50.0, self.bpm + r.uniform(-4, 4.5)))
            bpm = int(round(self.bpm))
            n_rr = 0 if i % 7 == 3 else (1 if i % 3 else 2)
            rr = [max(1, int(round((60.0 / bpm + r.uniform(-0.03, 0.03)) * 1024))) for _ in range(n_rr)]
            self.energy += r.randint(0, 2)
            s = {"bpm": bpm, "contact": "not-detected" if i % 20 == 19 else "detected", "rr": rr,
                 "energy_kj": self.energy if i % 10 == 0 else None, "uint16": i % 13 == 12}
            return s
        if self.kind == "csc":
            coasting = i % 40 >= 37
            speed_kmh = 0.0 if coasting else r.uniform(24, 34)
            cadence = 0.0 if coasting else r.uniform(78, 96)
            dt = 1.0  # one second of sensor time per sample, whatever the notification rate
            t0, t1 = self.t, self.t + dt
            w0 = self.wheel_pos
            w1 = w0 + speed_kmh / 3.6 * dt / self.circumference_m
            if math.floor(w1) > math.floor(w0):
                # time at which the last whole revolution completed
                self.wheel_event_t = t0 + (math.floor(w1) - w0) / (w1 - w0) * dt
            c0 = self.crank_pos
            c1 = c0 + cadence / 60.0 * dt
            if math.floor(c1) > math.floor(c0):
                self.crank_event_t = t0 + (math.floor(c1) - c0) / (c1 - c0) * dt
            self.t, self.wheel_pos, self.crank_pos = t1, w1, c1
            return {"wheel_revs": int(math.floor(w1)) & 0xFFFFFFFF,
                    "wheel_event": int(round(self.wheel_event_t * 1024)) & 0xFFFF,
                    "crank_revs": int(math.floor(c1)) & 0xFFFF,
                    "crank_event": int(round(self.crank_event_t * 1024)) & 0xFFFF}
        if self.kind == "ftms-bike":
            return {"speed_kmh": round(r.uniform(20, 40), 2),
                    "cadence_rpm": round(r.uniform(70, 100) * 2) / 2,
                    "power_w": r.randint(90, 320),
                    "heart_rate": r.randint(95, 175)}
        if self.kind == "rsc":
            if i % 10 == 9:  # a short walk break
                running, speed, cadence = False, r.uniform(2.5, 2.75), r.randint(120, 135)
            else:
                self.run_speed = min(4.5, max(2.8, self.run_speed + r.uniform(-0.2, 0.2)))
                running, speed = True, self.run_speed
                cadence = int(round(150 + (speed - 2.8) / 1.7 * 35 + r.uniform(-3, 3)))
            speed = round(speed * 256) / 256  # what the 1/256 m/s field carries
            self.distance_dm += speed * 10  # one second of sensor time per sample
            return {"speed_mps": speed, "cadence_spm": cadence,
                    "stride_m": round(speed * 60 / cadence, 2) if i % 4 != 3 else None,
                    "distance_m": math.floor(self.distance_dm) / 10 if i % 6 != 5 else None,
                    "running": running}
        if self.kind == "power":
            self.power = min(300.0, max(100.0, self.power + r.uniform(-15, 15)))
            cadence = r.uniform(75, 100)
            c0 = self.crank_pos
            c1 = c0 + cadence / 60.0  # one second of sensor time per sample
            if math.floor(c1) > math.floor(c0):
                self.crank_event_t = self.t + (math.floor(c1) - c0) / (c1 - c0)
            self.t, self.crank_pos = self.t + 1.0, c1
            balance = round(r.uniform(47, 53) * 2) / 2
            return {"power_w": int(round(self.power)),
                    "balance_pct": balance if i % 2 == 0 else None,
                    "crank_revs": int(math.floor(c1)) & 0xFFFF,
                    "crank_event": int(round(self.crank_event_t * 1024)) & 0xFFFF}
        if self.kind == "scale":
            if not self.users:
                self.users = {1: (r.uniform(74, 86), round(r.uniform(1.72, 1.90), 3)),
                              2: (r.uniform(61, 70), round(r.uniform(1.58, 1.72), 3))}
            user = 2 if i % 3 == 2 else 1
            usual, height = self.users[user]
            kg = min(90.0, max(60.0, usual + r.uniform(-0.4, 0.4)))
            kg = round(round(kg * 200) / 200, 3)  # what the 0.005 kg field carries
            known = i % 5 != 4  # every 5th weighing: the scale does not know who stood on it
            return {"weight_kg": kg, "timestamp": self.timestamp(i) if i % 4 != 3 else None,
                    "user_id": user if known else None,
                    "bmi": round(kg / height ** 2, 1) if known else None,
                    "height_m": height if known else None}
        if self.kind == "bp":
            systolic = r.randint(105, 140)
            diastolic = r.randint(65, min(90, systolic - 30))
            pulse = r.randint(55, 90)
            status = 0x0004 if i % 11 == 10 else 0x0001 if i % 13 == 12 else 0  # irregular pulse / body movement
            return {"systolic": systolic, "diastolic": diastolic,
                    "map": round((systolic + 2 * diastolic) / 3, 1), "unit": "mmHg",
                    "timestamp": self.timestamp(i) if i % 4 != 3 else None,
                    "pulse_bpm": pulse if i % 5 != 4 else None,
                    "user_id": 1 if i % 3 != 2 else None, "status": status}
        if self.kind == "thermometer":
            self.temp_c = min(37.5, max(36.1, self.temp_c + r.uniform(-0.15, 0.15)))
            return {"temperature_c": round(self.temp_c, 2),
                    "timestamp": self.timestamp(i) if i % 4 != 3 else None,
                    "type": (2, 6, 9)[i % 3] if i % 5 != 4 else None}  # body, mouth, tympanum
        if self.kind == "plx":
            self.spo2 = min(100, max(94, self.spo2 + r.choice((-1, 0, 0, 1))))
            self.pulse = min(90, max(55, self.pulse + r.randint(-3, 3)))
            return {"spo2_pct": self.spo2, "pulse_bpm": self.pulse}
        if self.kind == "glucose":
            return glucose_fields(r, i + 1)
        raise ValueError(self.kind)


class FileScript:
    """Samples from a JSON file, looped. Each sample is a field dict (see README) or
    {"hex": "..."} for exact bytes."""

    def __init__(self, samples: list[dict]):
        if not samples:
            raise ValueError("empty sample list")
        self.samples = samples
        self.i = 0

    def next(self) -> dict:
        s = self.samples[self.i % len(self.samples)]
        self.i += 1
        return dict(s)


# ---------------------------------------------------------------------------------------------
# The external controller: the one the host under test talks to over H4
# ---------------------------------------------------------------------------------------------
# LE event mask bit 9: the host wants LE Enhanced Connection Complete (LE Meta 0x0A) instead of
# LE Connection Complete (0x01). Bumble 0.0.236 always sends 0x01, though it announces LL privacy
# and extended advertising, so Linux enables and waits for 0x0A: the kernel's connect request then
# times out after 4 s and every later disconnect hangs. The external controller converts the event.
LE_ENHANCED_CONNECTION_COMPLETE_BIT = 1 << 9
NO_RPA = hci.Address("00:00:00:00:00:00", hci.Address.RANDOM_DEVICE_ADDRESS)


def enhanced_connection_complete(event: hci.HCI_LE_Connection_Complete_Event) -> hci.HCI_Packet:
    """The LE Enhanced Connection Complete event carrying the same connection (no resolvable
    private addresses: the peer does not use privacy)."""
    return hci.HCI_LE_Enhanced_Connection_Complete_Event(
        status=event.status, connection_handle=event.connection_handle, role=event.role,
        peer_address_type=event.peer_address_type, peer_address=event.peer_address,
        local_resolvable_private_address=NO_RPA, peer_resolvable_private_address=NO_RPA,
        connection_interval=event.connection_interval, peripheral_latency=event.peripheral_latency,
        supervision_timeout=event.supervision_timeout, central_clock_accuracy=event.central_clock_accuracy)


class PeerLink(LocalLink):
    """The virtual link, with LE data sent from the address the sender's connection uses. Bumble's
    LocalLink always sends from the sender's random address, so the data of a central that
    connected with its public address (bluetoothd does, by default) reaches no connection."""

    def send_acl_data(self, sender_controller: Controller, destination_address: hci.Address,
                      transport: PhysicalTransport, data: bytes):
        connection = sender_controller.le_connections.get(destination_address)
        if transport != PhysicalTransport.LE or connection is None:
            return super().send_acl_data(sender_controller, destination_address, transport, data)
        destination = self.find_le_controller(destination_address)
        if destination is not None:
            asyncio.get_running_loop().call_soon(destination.on_link_acl_data, connection.self_address,
                                                 transport, data)


class ExternalController(Controller):
    """Bumble Controller that never leaves a command unanswered (unless told to) and whose
    Reset drops links, stops scanning, advertising and pending connections."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.silence_commands = False
        self.commands_silenced = 0
        self.commands_answered_by_peer = 0  # fallback answers (status 0x01/0x12/0x1F)
        self.resets = 0
        self._answered: set[int] = set()

    # Track whether a command got its Command Complete/Status while being handled.
    def send_hci_packet(self, packet: hci.HCI_Packet) -> None:
        if isinstance(packet, (hci.HCI_Command_Complete_Event, hci.HCI_Command_Status_Event)):
            self._answered.add(packet.command_opcode)
        if isinstance(packet, hci.HCI_LE_Connection_Complete_Event) and self.le_event_mask & LE_ENHANCED_CONNECTION_COMPLETE_BIT:
            packet = enhanced_connection_complete(packet)
        super().send_hci_packet(packet)

    def on_packet(self, packet: bytes) -> None:
        if not packet:
            return
        if packet[0] != H4_COMMAND:
            try:
                super().on_packet(packet)
            except Exception:  # noqa: BLE001 - never let a bad ACL packet kill the peer
                log.exception("error handling packet from host")
            return
        if len(packet) < 4:
            return
        opcode = struct.unpack_from("<H", packet, 1)[0]
        if self.silence_commands:
            self.commands_silenced += 1
            log.info("silenced command 0x%04X", opcode)
            return
        if opcode >> 10 == 0x3F or opcode not in hci.HCI_Command.command_classes:  # vendor or unknown
            log.info("unknown command 0x%04X", opcode)
            self._answer(opcode, STATUS_UNKNOWN_COMMAND, complete=True)
            return
        try:
            command = hci.HCI_Packet.from_bytes(packet)
        except Exception:  # noqa: BLE001
            log.info("malformed command 0x%04X", opcode)
            self._answer(opcode, STATUS_INVALID_PARAMETERS, complete=True)
            return
        self._answered.discard(opcode)
        status = STATUS_UNKNOWN_COMMAND
        try:
            self.on_hci_packet(command)
        except Exception:  # noqa: BLE001
            log.exception("handler for command 0x%04X failed", opcode)
            status = STATUS_UNSPECIFIED
        if opcode not in self._answered:
            # Bumble leaves several commands without any reply; answer them instead.
            is_async = isinstance(command, hci.HCI_AsyncCommand) or (
                type(command) is not hci.HCI_Command and not isinstance(command, hci.HCI_SyncCommand))
            self._answer(opcode, status, complete=not is_async)

    def _answer(self, opcode: int, status: int, complete: bool) -> None:
        self.commands_answered_by_peer += 1
        if complete:
            event = bytes([H4_EVENT, 0x0E, 4, 1]) + struct.pack("<HB", opcode, status)
        else:
            event = bytes([H4_EVENT, 0x0F, 4, status, 1]) + struct.pack("<H", opcode)
        self._answered.add(opcode)
        if self.host:
            asyncio.get_running_loop().call_soon(self.host.on_packet, event)

    def drop_state(self) -> None:
        """What Reset (and a vanished host) must do: terminate links without reporting them to
        the host, stop scanning/advertising/initiating, forget the random address."""
        for peer, conn in list(self.le_connections.items()):
            try:
                conn.send_ll_control_pdu(ll.TerminateInd(STATUS_REMOTE_USER_TERMINATED))
            except Exception:  # noqa: BLE001 - peer controller may be gone
                pass
            self.le_connections.pop(peer, None)
        self.le_scan_enable = False
        self.pending_le_connection = None
        self.le_legacy_advertiser.stop()
        for s in self.advertising_sets.values():
            s.stop()
        self.advertising_sets.clear()
        self.event_mask = 0
        self.le_event_mask = 0
        self._random_address = hci.Address("00:00:00:00:00:00")

    def on_hci_disconnect_command(self, command):
        # A real controller reports "Connection Terminated by Local Host" (0x16) to the host
        # that asked; Bumble echoes the reason sent to the peer. The peer still gets the reason.
        self._local_disconnect = True
        try:
            return super().on_hci_disconnect_command(command)
        finally:
            self._local_disconnect = False

    def on_le_disconnected(self, connection, reason: int) -> None:
        if getattr(self, "_local_disconnect", False):
            reason = hci.HCI_ErrorCode.CONNECTION_TERMINATED_BY_LOCAL_HOST_ERROR
        super().on_le_disconnected(connection, reason)

    def on_hci_reset_command(self, command):
        self.resets += 1
        self.drop_state()
        return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.SUCCESS)

    def on_hci_le_create_connection_cancel_command(self, _command):
        """As the specification says (Vol 4, Part E, 7.8.13), where Bumble only answers success
        and goes on initiating (every later LE Create Connection is then refused with Command
        Disallowed until the device advertises again): a pending attempt ends, Command Complete
        (success) followed by LE Connection Complete with status Unknown Connection Identifier
        (0x02); with no attempt pending the command is disallowed."""
        pending = self.pending_le_connection
        if pending is None:
            return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.COMMAND_DISALLOWED_ERROR)
        self.pending_le_connection = None
        event = hci.HCI_LE_Connection_Complete_Event(
            status=hci.HCI_ErrorCode.UNKNOWN_CONNECTION_IDENTIFIER_ERROR, connection_handle=0, role=hci.Role.CENTRAL,
            peer_address_type=pending.peer_address_type, peer_address=pending.peer_address,
            connection_interval=0, peripheral_latency=0, supervision_timeout=0, central_clock_accuracy=0)
        # After the Command Complete, which Bumble sends when this returns.
        asyncio.get_running_loop().call_soon(self.send_hci_packet, event)
        return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.SUCCESS)


class H4Server:
    """Serves the external controller as H4 over TCP or a Unix socket, one host at a time.
    A new client replaces the previous one; when the host goes away the controller state is
    dropped as if it had been reset."""

    def __init__(self, controller: ExternalController, snooper: Snooper | None, snoop_file):
        self.controller = controller
        self.snooper = snooper
        self.snoop_file = snoop_file
        self.writer: asyncio.StreamWriter | None = None
        self.clients = 0
        self.server: asyncio.AbstractServer | None = None
        controller.host = self  # controller -> host packets come to on_packet

    def on_packet(self, packet: bytes) -> None:  # controller -> host
        if self.writer is None or self.writer.is_closing():
            return
        self._snoop(packet, Snooper.Direction.CONTROLLER_TO_HOST)
        self.writer.write(packet)

    def _snoop(self, packet: bytes, direction) -> None:
        if self.snooper:
            self.snooper.snoop(packet, direction)
            self.snoop_file.flush()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.writer is not None and not self.writer.is_closing():
            log.info("new H4 client replaces the previous one")
            self.writer.close()
            self.controller.drop_state()
        self.writer = writer
        self.clients += 1
        try:
            sock = writer.get_extra_info("socket")
            if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        buf = bytearray()
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                buf += data
                while True:
                    n = h4_packet_length(buf)
                    if n is None:
                        break
                    if n < 0:
                        raise ValueError(f"bad H4 packet type 0x{buf[0]:02X}")
                    packet = bytes(buf[:n])
                    del buf[:n]
                    self._snoop(packet, Snooper.Direction.HOST_TO_CONTROLLER)
                    self.controller.on_packet(packet)
        except (ConnectionError, ValueError) as e:
            log.info("H4 client error: %s", e)
        finally:
            if self.writer is writer:
                self.writer = None
                self.controller.drop_state()
            writer.close()

    @property
    def connected(self) -> bool:
        return self.writer is not None and not self.writer.is_closing()


class VHCITransport:
    """Serves the external controller to the local kernel through /dev/vhci (Linux's virtual HCI
    driver): the kernel registers a new hciN for it, and bluetoothd or any HCI socket user drives
    it. Each read of the device is one H4 packet from the host; each write, one to the host.
    Closing the device removes hciN."""

    def __init__(self, controller: ExternalController, snooper: Snooper | None, snoop_file, path: str):
        self.controller = controller
        self.snooper = snooper
        self.snoop_file = snoop_file
        self.path = path
        self.fd: int | None = None
        self.writer = None  # no stream (kept for the shape shared with H4Server)
        self.clients = 0
        controller.host = self

    def open(self) -> dict:
        """Create the hci device (vendor packet 0xFF, opcode 0x00 = primary controller) and
        return the endpoint for the ready line, with the kernel's index of the new device."""
        self.fd = os.open(self.path, os.O_RDWR)
        os.write(self.fd, bytes([0xFF, 0x00]))
        reply = os.read(self.fd, 4)
        if len(reply) != 4 or reply[0] != 0xFF:
            raise SystemExit(f"{self.path}: unexpected reply {reply.hex()} to the create request")
        index = struct.unpack_from("<H", reply, 2)[0]
        os.set_blocking(self.fd, False)
        asyncio.get_running_loop().add_reader(self.fd, self._readable)
        self.clients = 1
        return {"kind": "vhci", "path": self.path, "index": index}

    def on_packet(self, packet: bytes) -> None:  # controller -> host
        if self.fd is None:
            return
        if self.snooper:
            self.snooper.snoop(packet, Snooper.Direction.CONTROLLER_TO_HOST)
            self.snoop_file.flush()
        os.write(self.fd, packet)

    def _readable(self) -> None:  # host -> controller
        try:
            packet = os.read(self.fd, 4096)
        except BlockingIOError:
            return
        if not packet:
            return
        if self.snooper:
            self.snooper.snoop(packet, Snooper.Direction.HOST_TO_CONTROLLER)
            self.snoop_file.flush()
        self.controller.on_packet(packet)

    @property
    def connected(self) -> bool:
        return self.fd is not None

    def close(self) -> None:
        if self.fd is not None:
            asyncio.get_running_loop().remove_reader(self.fd)
            os.close(self.fd)
            self.fd = None


def h4_packet_length(buf: bytearray) -> int | None:
    """Total length of the first H4 packet in buf, None if incomplete, -1 if bad type."""
    if not buf:
        return None
    t = buf[0]
    if t in (H4_COMMAND, H4_SCO):
        return 4 + buf[3] if len(buf) >= 4 else None
    if t in (H4_ACL, H4_ISO):
        if len(buf) < 5:
            return None
        ln = struct.unpack_from("<H", buf, 3)[0]
        return 5 + (ln & 0x3FFF if t == H4_ISO else ln)
    if t == H4_EVENT:
        return 3 + buf[2] if len(buf) >= 3 else None
    return -1


# ---------------------------------------------------------------------------------------------
# Peripherals
# ---------------------------------------------------------------------------------------------
KINDS = {
    # kind: (default name, advertised 16-bit UUIDs, measurement (service, characteristic))
    "hr": ("HG HR", [0x180D, 0x180F, 0x180A], (0x180D, 0x2A37)),
    "csc": ("HG CSC", [0x1816, 0x180A], (0x1816, 0x2A5B)),
    "ftms-bike": ("HG Bike", [0x1826, 0x180A], (0x1826, 0x2AD2)),
    "rsc": ("HG RSC", [0x1814, 0x180F, 0x180A], (0x1814, 0x2A53)),
    "power": ("HG Power", [0x1818, 0x180F, 0x180A], (0x1818, 0x2A63)),
    "scale": ("HG Scale", [0x181D, 0x180F, 0x180A], (0x181D, 0x2A9D)),
    "bp": ("HG BP", [0x1810, 0x180F, 0x180A], (0x1810, 0x2A35)),
    "thermometer": ("HG Thermo", [0x1809, 0x180F, 0x180A], (0x1809, 0x2A1C)),
    "plx": ("HG PLX", [0x1822, 0x180F, 0x180A], (0x1822, 0x2A5F)),
    # a meter with stored records, read through its Record Access Control Point (no live values)
    "glucose": ("HG Glucose", [0x1808, 0x180F, 0x180A], (0x1808, 0x2A18)),
}
# Kinds whose measurement is indicated (the host confirms each value) rather than notified.
INDICATING = {"scale", "bp", "thermometer"}
ENCODERS: dict[str, Callable[[dict], bytes]] = {
    "hr": encode_hr, "csc": encode_csc, "ftms-bike": encode_ftms_bike, "rsc": encode_rsc,
    "power": encode_power, "scale": encode_scale, "bp": encode_bp, "thermometer": encode_thermometer,
    "plx": encode_plx}
# Values of the read-only characteristics of the newer kinds (checked by the smoke tests)
RSC_FEATURE = 0x0007          # stride length, total distance, walking/running status
POWER_FEATURE = 0x00000009    # pedal power balance, crank revolution data
SCALE_FEATURE = 0x01BF        # time stamp, multiple users, BMI; weight 0.005 kg (7), height 0.001 m (3)
BP_FEATURE = 0x0005           # body movement detection, irregular pulse detection
BATTERY_LEVEL = 87
GLUCOSE_FEATURE = 0x0000      # no optional features
GLUCOSE_EPOCH = datetime.datetime(2026, 11, 20, 7, 30)


def att_permission(name: str) -> int:
    return int(getattr(gatt.Attribute, name))


def glucose_fields(r: random.Random, seq: int, epoch: datetime.datetime = GLUCOSE_EPOCH) -> dict:
    """A glucose reading with sequence number `seq`: 4.0 to 9.9 mmol/L, every 3 hours from
    `epoch` (plus up to 59 minutes); every third one has a context."""
    tenths = r.randint(40, 99)
    stamp = (epoch + datetime.timedelta(hours=3 * seq, minutes=r.randint(0, 59))).isoformat()
    return {"sequence": seq, "mmol_l": tenths / 10, "time": stamp, "context": seq % 3 == 0}


def encode_glucose(s: dict) -> bytes:
    """Glucose Measurement (0x2A18): flags (concentration + type/sample location, mol/L, context
    follows when `context`), sequence number, base time, concentration as SFLOAT mantissa x 10^-4
    mol/L (mmol/L = mantissa / 10 exactly), type/location (capillary whole blood, finger)."""
    flags = 0x02 | 0x04 | (0x10 if s.get("context") else 0)
    sfloat = ((-4 & 0xF) << 12) | int(round(s["mmol_l"] * 10))
    return (struct.pack("<BH", flags, s["sequence"]) + date_time(s["time"]) + struct.pack("<H", sfloat)
            + bytes([0x11]))


ENCODERS["glucose"] = encode_glucose  # a meter's live reading; its stored records go out through RACP


def glucose_record(seed: str, seq: int, resets: int = 0) -> dict:
    """Stored record `seq` of a glucose meter: deterministic from the seed and the sequence
    number (a record added later never changes the earlier ones); a record with a context has
    meal: preprandial. After `resets` resets (`reset-records`) the records are new ones, dated
    90 minutes per reset after those with the same sequence number before (never the same time,
    and still in the past: HealthGate refuses readings dated in the future)."""
    if resets:
        seed += f":reset{resets}"
    fields = glucose_fields(random.Random(f"healthgate-ble-peer:{seed}:glucose:{seq}"), seq,
                            GLUCOSE_EPOCH + datetime.timedelta(minutes=90 * resets))
    context = struct.pack("<BHB", 0x02, seq, 1) if fields["context"] else None
    return {"seq": seq, "measurement": encode_glucose(fields), "context": context, "fields": fields}

# Malformed notifications per kind: (description, bytes)
MALFORMED = {
    "hr": [("empty", b""),
           ("truncated: uint16 bpm flag with one byte", bytes([0x01, 0x48])),
           ("wrong flags: energy+RR flagged, energy cut short", bytes([0x18, 0x48, 0x10])),
           ("wrong flags: RR flagged, odd RR byte count", bytes([0x10, 0x48, 0x00, 0x04, 0x01]))],
    "csc": [("empty", b""),
            ("truncated: wheel flag with 3 data bytes", bytes([0x01, 0x10, 0x00, 0x00])),
            ("wrong flags: wheel+crank flagged, crank missing", bytes([0x03]) + struct.pack("<IH", 100, 2048))],
    "ftms-bike": [("empty", b""),
                  ("truncated: one flags byte", bytes([0x44])),
                  ("wrong flags: cadence+power+HR flagged, only speed present", struct.pack("<HH", 0x0244, 2500))],
    "rsc": [("empty", b""),
            ("truncated: speed without cadence", bytes([0x04]) + struct.pack("<H", 870)),
            ("wrong flags: stride+distance flagged, distance missing",
             bytes([0x07]) + struct.pack("<HBH", 870, 170, 120))],
    "power": [("empty", b""),
              ("truncated: one flags byte", bytes([0x20])),
              ("wrong flags: crank flagged, crank data cut short", struct.pack("<Hh", 0x0020, 200) + bytes([0x10, 0x00]))],
    "scale": [("empty", b""),
              ("truncated: weight with one byte", bytes([0x00, 0x10])),
              ("wrong flags: time stamp+user flagged, time stamp cut short",
               bytes([0x06]) + struct.pack("<H", 15000) + struct.pack("<HB", 2026, 11))],
    "bp": [("empty", b""),
           ("truncated: systolic only", bytes([0x00]) + sfloat16(120)),
           ("wrong flags: time stamp+pulse flagged, pulse missing",
            bytes([0x06]) + sfloat16(120) + sfloat16(80) + sfloat16(93.3) + date_time("2026-11-01T07:00:00"))],
    "thermometer": [("empty", b""),
                    ("truncated: 3-byte FLOAT", bytes([0x00, 0x70, 0x0E, 0x00])),
                    ("wrong flags: time stamp+type flagged, type missing",
                     bytes([0x06]) + float32(36.8) + date_time("2026-11-01T07:00:00"))],
    "plx": [("empty", b""),
            ("truncated: SpO2 without pulse rate", bytes([0x00]) + sfloat16(97)),
            ("wrong flags: fast+slow fields flagged, only the normal one present",
             bytes([0x03]) + sfloat16(97) + sfloat16(68))],
}


def adv_structure(ad_type: int, payload: bytes) -> bytes:
    return bytes([len(payload) + 1, ad_type]) + payload


class Link:
    """Per-connection state of an indicating peripheral: ATT allows one indication in flight per
    bearer, so sends are serialised by `lock`; `gone` is set when the link drops."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.gone = asyncio.Event()


@dataclass
class Peripheral:
    id: str
    kind: str
    name: str
    address: hci.Address
    rate: float
    script: Any
    controller: Controller | None = None
    device: Device | None = None
    measurement: gatt.Characteristic | None = None
    service_uuid: int = 0
    char_uuid: int = 0
    stopped: bool = False
    paused: bool = False  # `pause`: no new samples; links and subscriptions stay
    send_lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # held while a sample goes out
    sent: int = 0
    malformed_sent: int = 0
    seq: int = 0
    connections_total: int = 0
    ddd_armed: bool = False
    ddd_fired: int = 0
    task: asyncio.Task | None = None
    energy_reset: int = 0
    links: dict = field(default_factory=dict)  # connection -> Link (indicating kinds)
    indications_confirmed: int = 0
    indication_timeouts: int = 0
    # extra advertising (--service-data, --manufacturer-data, --tx-power)
    service_data: list = field(default_factory=list)  # [(uuid16, bytes)]
    manufacturer_data: list = field(default_factory=list)  # [(company, bytes)]
    tx_power: int | None = None
    # --pairing: None (open), "just-works", "passkey" or "numeric"; the links must be encrypted
    # (authenticated for passkey and numeric) before the host may subscribe
    pairing: str | None = None
    passkey: int = 123456
    pairings: int = 0
    pairing_failures: int = 0
    last_pairing_failure: str | None = None
    bonded: list = field(default_factory=list)  # central addresses that paired with bonding
    # glucose: the stored records, the RACP and context characteristics, the requests seen
    records: list = field(default_factory=list)
    racp: gatt.Characteristic | None = None
    context: gatt.Characteristic | None = None
    racp_requests: list = field(default_factory=list)
    racp_stop_after: int | None = None  # `racp-stop-after`: go silent after this many records
    resets: int = 0  # `reset-records`: how often the meter forgot its records

    @property
    def indicate(self) -> bool:
        return self.kind in INDICATING

    def advertising_data(self) -> bytes:
        uuids = KINDS[self.kind][1]
        data = adv_structure(0x01, bytes([0x06]))  # LE General Discoverable, BR/EDR not supported
        data += adv_structure(0x03, b"".join(struct.pack("<H", u) for u in uuids))
        if self.kind == "ftms-bike":
            # FTMS Service Data: flags (machine available), machine type (bit 5: indoor bike)
            data += adv_structure(0x16, struct.pack("<HBH", 0x1826, 0x01, 1 << 5))
        for uuid, payload in self.service_data:
            data += adv_structure(0x16, struct.pack("<H", uuid) + payload)
        for company, payload in self.manufacturer_data:
            data += adv_structure(0xFF, struct.pack("<H", company) + payload)
        if self.tx_power is not None:
            data += adv_structure(0x0A, struct.pack("<b", self.tx_power))
        data += adv_structure(0x09, self.name.encode())
        return data


class Peer:
    def __init__(self, args):
        self.args = args
        self.link = PeerLink()
        self.peripherals: dict[str, Peripheral] = {}
        self.sent_log = open(args.sent_log, "a", encoding="utf-8") if args.sent_log else None
        self.snoop_file = open(args.snoop, "wb") if args.snoop else None
        self.external: ExternalController | None = None
        self.h4: H4Server | VHCITransport | None = None
        self.stop_event = asyncio.Event()
        self.unix_paths: list[str] = []
        self.extra_h4: list[H4Server] = []
        self.tasks: set[asyncio.Task] = set()  # indications waiting for their confirmation
        self.started = time.monotonic()

    # ----- set-up -----
    async def start(self, specs: list[tuple[str, str, str | None, str | None]], rates: dict[str, float],
                    values: dict | None) -> dict:
        ext = ExternalController("external", link=self.link,
                                 public_address=hci.Address(self.args.controller_address,
                                                            hci.Address.PUBLIC_DEVICE_ADDRESS))
        self.external = ext
        snooper = BtSnooper(self.snoop_file) if self.snoop_file else None
        scheme, _, vhci_path = self.args.listen.partition(":")
        if scheme == "vhci":
            self.h4 = VHCITransport(ext, snooper, self.snoop_file, vhci_path or "/dev/vhci")
            h4_info = self.h4.open()
        else:
            self.h4 = H4Server(ext, snooper, self.snoop_file)
            h4_info = await self._listen(self.args.listen, self.h4.handle)
            self.h4.server = h4_info.pop("_server")

        occurrence: dict[str, int] = {}
        for pid, kind, name, addr in specs:
            # default address: C0:4E:47:00:<n-th of this kind, from 0>:<01 hr, 02 csc, 03 ftms-bike>
            n = occurrence[kind] = occurrence.get(kind, -1) + 1
            default = f"C0:4E:47:00:{n:02X}:{list(KINDS).index(kind) + 1:02X}"
            address = hci.Address(addr or default, hci.Address.RANDOM_DEVICE_ADDRESS)
            if not address.is_static:
                raise SystemExit(f"{pid}: {address} is not a random static address (top two bits 11)")
            if values is not None and (pid in values or kind in values):
                script = FileScript(values.get(pid, values.get(kind)))
            else:
                script = SeededScript(kind, f"{self.args.seed}:{pid}")
            p = Peripheral(pid, kind, name or KINDS[kind][0], address,
                           rates.get(pid, rates.get("*", 1.0)), script)
            p.service_data = [(u, b) for key, u, b in self.args.service_data if key in (pid, "*")]
            p.manufacturer_data = [(c, b) for key, c, b in self.args.manufacturer_data if key in (pid, "*")]
            p.tx_power = next((v for key, v in reversed(self.args.tx_power) if key in (pid, "*")), None)
            if len(p.advertising_data()) > 31:
                raise SystemExit(f"{pid}: name {p.name!r} too long for the 31-byte advertising data")
            for spec in self.args.pairing:
                key, _, mode = spec.partition("=")
                if key in (pid, kind):
                    mode, _, number = mode.partition(":")
                    if mode not in ("just-works", "passkey", "numeric") or (number and mode != "passkey"):
                        raise SystemExit(f"--pairing {spec}: MODE is just-works, passkey[:N] or numeric")
                    p.pairing = mode
                    if number:
                        p.passkey = int(number)
            self.peripherals[pid] = p
        await asyncio.gather(*(self._start_peripheral(p) for p in self.peripherals.values()))

        # --also-listen: more external controllers on the same link (another host, e.g. a second
        # backend under test, sees and connects to the same peripherals), each on its own socket.
        also_info = []
        for n, spec in enumerate(self.args.also_listen, start=1):
            address = bytearray(ext.public_address.address_bytes)  # little-endian: [0] is the last octet
            address[0] = (address[0] + n) & 0xFF
            extra = ExternalController(f"external-{n}", link=self.link,
                                       public_address=hci.Address(bytes(address), hci.Address.PUBLIC_DEVICE_ADDRESS))
            server = H4Server(extra, None, None)
            info = await self._listen(spec, server.handle)
            server.server = info.pop("_server")
            info["controller_address"] = extra.public_address.to_string(False)
            self.extra_h4.append(server)
            also_info.append(info)

        control_info = None
        if self.args.control:
            control_info = await self._listen(self.args.control, self._handle_control)
            control_info.pop("_server")
        return {
            "ready": True,
            "protocol": PROTOCOL_VERSION,
            "pid": os.getpid(),
            "h4": h4_info,
            "h4_also": also_info,
            "control": control_info,
            "controller_address": ext.public_address.to_string(False),
            "peripherals": [
                {"id": p.id, "kind": p.kind, "name": p.name, "address": str(p.address),
                 "address_type": "random", "services": [f"{u:04X}" for u in KINDS[p.kind][1]],
                 "measurement": {"service": f"{p.service_uuid:04X}", "characteristic": f"{p.char_uuid:04X}",
                                 **({"indicate": True} if p.indicate else {})},
                 "rate_hz": p.rate}
                for p in self.peripherals.values()],
            "startup_s": round(time.monotonic() - self.started, 3),
        }

    async def _listen(self, spec: str, handler) -> dict:
        scheme, _, rest = spec.partition(":")
        if scheme == "tcp":
            host, _, port = rest.rpartition(":")
            server = await asyncio.start_server(handler, host or "127.0.0.1", int(port))
            sockname = server.sockets[0].getsockname()
            return {"kind": "tcp", "host": sockname[0], "port": sockname[1], "_server": server}
        if scheme == "unix":
            if os.path.exists(rest):
                os.unlink(rest)
            server = await asyncio.start_unix_server(handler, rest)
            self.unix_paths.append(rest)
            return {"kind": "unix", "path": rest, "_server": server}
        raise SystemExit(f"unsupported listen spec {spec!r} (use tcp:HOST:PORT or unix:PATH)")

    async def _start_peripheral(self, p: Peripheral) -> None:
        controller = Controller(f"peripheral-{p.id}", link=self.link)
        host = Host(controller_source=controller, controller_sink=controller)
        config = DeviceConfiguration(name=p.name, address=p.address)
        config.advertising_interval_min = config.advertising_interval_max = self.args.adv_interval_ms
        config.advertising_data = p.advertising_data()
        config.scan_response_data = b""
        device = Device(config=config, host=host)
        p.controller, p.device = controller, device

        notify = gatt.Characteristic.Properties.NOTIFY
        read = gatt.Characteristic.Properties.READ
        serial = str(p.address).replace(":", "")[-8:]
        dis = DeviceInformationService(manufacturer_name="HealthGate Test Peer",
                                       model_number=f"HG-{p.kind.upper()}", serial_number=serial,
                                       firmware_revision="1.0.0", software_revision="ble_peer/1")
        p.service_uuid, p.char_uuid = KINDS[p.kind][2]
        indicate = gatt.Characteristic.Properties.INDICATE
        p.measurement = gatt.Characteristic(gatt.UUID.from_16_bits(p.char_uuid), indicate if p.indicate else notify,
                                            gatt.Characteristic.Permissions(0), b"")

        def readable(uuid16: int, value: bytes) -> gatt.Characteristic:
            return gatt.Characteristic(gatt.UUID.from_16_bits(uuid16), read, gatt.Characteristic.READABLE, value)

        def battery() -> BatteryService:
            return BatteryService(lambda _connection: BATTERY_LEVEL)
        if p.kind == "hr":
            def on_control_point(connection, value: bytes) -> None:
                if value[:1] == b"\x01":
                    p.energy_reset += 1
            services = [
                gatt.Service(gatt.UUID.from_16_bits(0x180D), [
                    p.measurement,
                    gatt.Characteristic(gatt.UUID.from_16_bits(0x2A38), read,
                                        gatt.Characteristic.READABLE, bytes([1])),  # chest
                    gatt.Characteristic(gatt.UUID.from_16_bits(0x2A39),
                                        gatt.Characteristic.Properties.WRITE, gatt.Characteristic.WRITEABLE,
                                        gatt.CharacteristicValue(write=on_control_point)),
                ]),
                BatteryService(lambda _connection: 87),
                dis,
            ]
        elif p.kind == "csc":
            services = [
                gatt.Service(gatt.UUID.from_16_bits(0x1816), [
                    p.measurement,
                    gatt.Characteristic(gatt.UUID.from_16_bits(0x2A5C), read, gatt.Characteristic.READABLE,
                                        struct.pack("<H", 0x0003)),  # wheel + crank supported
                    gatt.Characteristic(gatt.UUID.from_16_bits(0x2A5D), read, gatt.Characteristic.READABLE,
                                        bytes([12])),  # sensor location: rear wheel
                ]),
                dis,
            ]
        elif p.kind == "rsc":
            services = [
                gatt.Service(gatt.UUID.from_16_bits(0x1814), [
                    p.measurement,
                    readable(0x2A54, struct.pack("<H", RSC_FEATURE)),
                    readable(0x2A5D, bytes([2])),  # sensor location: in shoe
                ]),
                battery(), dis,
            ]
        elif p.kind == "power":
            services = [
                gatt.Service(gatt.UUID.from_16_bits(0x1818), [
                    p.measurement,
                    readable(0x2A65, struct.pack("<I", POWER_FEATURE)),
                    readable(0x2A5D, bytes([5])),  # sensor location: left crank
                ]),
                battery(), dis,
            ]
        elif p.kind == "scale":
            services = [
                gatt.Service(gatt.UUID.from_16_bits(0x181D), [
                    readable(0x2A9E, struct.pack("<I", SCALE_FEATURE)),
                    p.measurement,
                ]),
                battery(), dis,
            ]
        elif p.kind == "bp":
            services = [
                gatt.Service(gatt.UUID.from_16_bits(0x1810), [
                    p.measurement,
                    readable(0x2A49, struct.pack("<H", BP_FEATURE)),
                ]),
                battery(), dis,
            ]
        elif p.kind == "thermometer":
            services = [gatt.Service(gatt.UUID.from_16_bits(0x1809), [p.measurement]), battery(), dis]
        elif p.kind == "plx":
            services = [
                gatt.Service(gatt.UUID.from_16_bits(0x1822), [
                    readable(0x2A60, struct.pack("<H", 0x0000)),  # no optional features
                    p.measurement,
                ]),
                battery(), dis,
            ]
        elif p.kind == "glucose":
            def on_racp(connection, value: bytes) -> None:
                task = asyncio.get_running_loop().create_task(self._racp(p, connection, bytes(value)))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
            p.context = gatt.Characteristic(gatt.UUID.from_16_bits(0x2A34), notify, gatt.Characteristic.Permissions(0), b"")
            p.racp = gatt.Characteristic(gatt.UUID.from_16_bits(0x2A52),
                                         gatt.Characteristic.Properties.WRITE | indicate, gatt.Characteristic.WRITEABLE,
                                         gatt.CharacteristicValue(write=on_racp))
            services = [
                gatt.Service(gatt.UUID.from_16_bits(0x1808), [
                    p.measurement, p.context,
                    readable(0x2A51, struct.pack("<H", GLUCOSE_FEATURE)),
                    p.racp,
                ]),
                battery(), dis,
            ]
            p.records = [glucose_record(f"{self.args.seed}:{p.id}", seq) for seq in range(1, self.args.glucose_records + 1)]
        else:  # ftms-bike
            features = (1 << 1) | (1 << 10) | (1 << 14)  # cadence, heart rate, power measurement
            services = [
                gatt.Service(gatt.UUID.from_16_bits(0x1826), [
                    gatt.Characteristic(gatt.UUID.from_16_bits(0x2ACC), read, gatt.Characteristic.READABLE,
                                        struct.pack("<II", features, 0)),
                    p.measurement,
                ]),
                dis,
            ]
        device.add_services(services)
        if p.pairing:
            self._require_pairing(p, device)

        # disconnect-during-discovery hook: drop the link instead of answering discovery
        server = device.gatt_server
        for name in ("on_att_read_by_group_type_request", "on_att_find_by_type_value_request"):
            original = getattr(server, name)

            def hooked(bearer, pdu, _original=original):
                if p.ddd_armed:
                    p.ddd_armed = False
                    p.ddd_fired += 1
                    log.info("%s: dropping link during discovery", p.id)
                    asyncio.get_running_loop().create_task(self._disconnect(p, bearer))
                    return
                _original(bearer, pdu)
            setattr(server, name, hooked)

        def on_connection(connection) -> None:
            p.connections_total += 1

            def on_disconnection(_reason) -> None:
                link = p.links.pop(connection, None)
                if link:
                    link.gone.set()  # ends a wait for a confirmation that cannot come
                asyncio.get_running_loop().create_task(self._readvertise(p))
            connection.on(connection.EVENT_DISCONNECTION, on_disconnection)
        device.on(device.EVENT_CONNECTION, on_connection)

        await device.power_on()
        await device.start_advertising(own_address_type=hci.OwnAddressType.RANDOM)
        if p.kind != "glucose":  # a meter sends its records when asked (RACP), nothing live
            p.task = asyncio.get_running_loop().create_task(self._notify_loop(p))

    def _require_pairing(self, p: Peripheral, device: Device) -> None:
        """Bonding required: the CCCDs of the peripheral's characteristics need an encrypted
        link (just-works) or an authenticated one (passkey, numeric comparison), and the
        peripheral pairs with the capability of its mode: NoInputNoOutput (just-works),
        DisplayOnly showing `p.passkey` (passkey), DisplayYesNo confirming (numeric)."""
        need = (att_permission("WRITE_REQUIRES_ENCRYPTION") if p.pairing == "just-works"
                else att_permission("WRITE_REQUIRES_AUTHENTICATION") | att_permission("WRITE_REQUIRES_ENCRYPTION"))
        for attribute in device.gatt_server.attributes:
            if attribute.type == gatt.GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR:
                attribute.permissions |= need
        io = {"just-works": pairing.PairingDelegate.NO_OUTPUT_NO_INPUT,
              "passkey": pairing.PairingDelegate.DISPLAY_OUTPUT_ONLY,
              "numeric": pairing.PairingDelegate.DISPLAY_OUTPUT_AND_YES_NO_INPUT}[p.pairing]

        class Delegate(pairing.PairingDelegate):
            async def generate_passkey(self) -> int:
                return p.passkey

            async def display_number(self, number: int, digits: int) -> None:
                log.info("%s: pairing passkey %06d", p.id, number)

            async def compare_numbers(self, number: int, digits: int) -> bool:
                log.info("%s: numeric comparison %06d: confirmed", p.id, number)
                return True
        device.pairing_config_factory = lambda _connection: pairing.PairingConfig(
            sc=True, mitm=p.pairing != "just-works", bonding=True, delegate=Delegate(io_capability=io))

        def on_connection(connection) -> None:
            def paired(_keys) -> None:
                p.pairings += 1
                central = connection.peer_address.to_string(False)
                if central not in p.bonded:
                    p.bonded.append(central)

            def failed(reason) -> None:
                p.pairing_failures += 1
                p.last_pairing_failure = str(reason)
            connection.on(connection.EVENT_PAIRING, paired)
            connection.on(connection.EVENT_PAIRING_FAILURE, failed)
        device.on(device.EVENT_CONNECTION, on_connection)

    async def _settle(self, p: Peripheral) -> bool:
        """Before a stop takes the links down: no new value (paused; answers whether it was
        paused before, for the caller to restore once the links are down), and every value
        logged as sent delivered (an indication confirmed or timed out, a notification's packets
        completed by the controller). Without this a value sent just before the stop could be
        lost with the link though the log counts it (a recording test waited for it in vain)."""
        async with p.send_lock:  # no tick half done, none after this
            was_paused, p.paused = p.paused, True
        for link in list(p.links.values()):
            if link.lock.locked():
                try:
                    await asyncio.wait_for(link.lock.acquire(), self.args.indication_timeout + 1.0)
                    link.lock.release()
                except asyncio.TimeoutError:
                    pass
        host = p.device.host
        queue = host.le_acl_packet_queue or host.acl_packet_queue
        for conn in list(p.device.connections.values()):
            try:
                await asyncio.wait_for(queue.drain(conn.handle), 2.0)
            except (ValueError, asyncio.TimeoutError):
                pass  # nothing ever sent on it, or the link is already failing
        return was_paused

    async def _disconnect(self, p: Peripheral, connection) -> None:
        try:
            await asyncio.wait_for(connection.disconnect(STATUS_REMOTE_USER_TERMINATED), 2.0)
        except Exception as e:  # noqa: BLE001
            log.info("%s: disconnect failed: %s", p.id, e)

    async def _readvertise(self, p: Peripheral) -> None:
        if p.stopped or not p.device or p.device.is_advertising:
            return
        try:
            await p.device.start_advertising(own_address_type=hci.OwnAddressType.RANDOM)
        except Exception as e:  # noqa: BLE001
            log.warning("%s: re-advertising failed: %s", p.id, e)

    # ----- notifications -----
    def _subscribed(self, p: Peripheral) -> list:
        """Links whose CCCD enables what the measurement does: bit 0 (notifications) or, for the
        indicating kinds, bit 1 (indications)."""
        server = p.device.gatt_server
        bit = 0x02 if p.indicate else 0x01
        out = []
        for conn in list(p.device.connections.values()):
            cccd = server.subscribers.get(conn, {}).get(p.measurement.handle)
            if cccd and len(cccd) == 2 and cccd[0] & bit:
                out.append(conn)
        return out

    def _link(self, p: Peripheral, conn) -> Link:
        link = p.links.get(conn)
        if link is None:
            link = p.links[conn] = Link()
        return link

    def _ready(self, p: Peripheral) -> list:
        """Subscribed links that can take a value now: for indications, those with none in flight."""
        conns = self._subscribed(p)
        if p.indicate:
            conns = [c for c in conns if not self._link(p, c).lock.locked()]
        return conns

    async def _notify_loop(self, p: Peripheral) -> None:
        period = 1.0 / p.rate
        loop = asyncio.get_running_loop()
        next_t = loop.time() + period
        while True:
            await asyncio.sleep(max(0.0, next_t - loop.time()))
            next_t += period
            if next_t < loop.time():  # fell behind: do not burst
                next_t = loop.time() + period
            async with p.send_lock:
                await self._tick(p, loop)

    async def _tick(self, p: Peripheral, loop) -> None:
        """One sample to every ready link (none while paused)."""
        conns = self._ready(p)
        if not conns or p.paused:
            return
        sample = p.script.next()
        seq = p.seq
        p.seq += 1
        if "hex" in sample:
            value, fields = bytes.fromhex(sample["hex"]), None
        else:
            value, fields = ENCODERS[p.kind](sample), sample
        for conn in conns:
            if p.indicate:
                # take the link now (so the next tick skips it until the host confirms) and
                # wait for the confirmation in a task: a slow host must not stall the others
                link = self._link(p, conn)
                await link.lock.acquire()
                task = loop.create_task(self._indicate_locked(p, conn, link, value, seq, fields))
                self.tasks.add(task)  # keep a reference until it is done
                task.add_done_callback(self.tasks.discard)
            else:
                await self._send(p, conn, value, seq=seq, fields=fields)

    async def _indicate_locked(self, p: Peripheral, conn, link: Link, value: bytes, seq: int | None,
                               fields: dict | None) -> None:
        try:
            await self._send(p, conn, value, seq=seq, fields=fields)
        finally:
            link.lock.release()

    async def _send(self, p: Peripheral, conn, value: bytes, seq: int | None, fields: dict | None,
                    malformed: str | None = None) -> None:
        """Notify (or indicate and wait for the confirmation) one value on one link and log it.
        Indications are logged when they go out, before the confirmation."""
        value = value[: conn.att_mtu - 3]  # what actually goes on the air
        if p.indicate:
            link = p.links.get(conn)
            if link is None or link.gone.is_set():  # dropped meanwhile: nothing goes out
                return
            self._count_and_log(p, conn, value, seq, fields, malformed)
            await self._indicate(p, conn, link, value)
            return
        await p.device.notify_subscriber(conn, p.measurement, value, force=True)
        self._count_and_log(p, conn, value, seq, fields, malformed)

    async def _indicate(self, p: Peripheral, conn, link: Link, value: bytes) -> None:
        """Send one indication and wait for the host's Handle Value Confirmation, at most
        --indication-timeout seconds; after a timeout the link is dropped (reason 0x13), since
        ATT allows nothing more on a bearer whose transaction timed out."""
        indication = asyncio.ensure_future(p.device.indicate_subscriber(conn, p.measurement, value, force=True))
        gone = asyncio.ensure_future(link.gone.wait())
        try:
            done, _ = await asyncio.wait({indication, gone}, timeout=self.args.indication_timeout,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
        if indication in done and indication.exception() is None:
            p.indications_confirmed += 1
            return
        if not indication.done():
            indication.cancel()
        if link.gone.is_set():
            log.info("%s: link dropped with an indication unconfirmed", p.id)
            return
        p.indication_timeouts += 1
        log.info("%s: no confirmation within %.1f s, dropping the link", p.id, self.args.indication_timeout)
        await self._disconnect(p, conn)

    def _count_and_log(self, p: Peripheral, conn, value: bytes, seq: int | None, fields: dict | None,
                       malformed: str | None) -> None:
        if malformed is None:
            p.sent += 1
        else:
            p.malformed_sent += 1
        if self.sent_log:
            rec = {"t": round(time.time(), 6), "peripheral": p.id, "kind": p.kind, "address": str(p.address),
                   "central": str(conn.peer_address), "service": f"{p.service_uuid:04X}",
                   "characteristic": f"{p.char_uuid:04X}", "handle": p.measurement.handle,
                   "seq": seq, "hex": value.hex(), "fields": fields, "malformed": malformed}
            self.sent_log.write(json.dumps(rec, separators=(",", ":")) + "\n")
            self.sent_log.flush()

    # ----- glucose: Record Access Control Point -----
    async def _racp(self, p: Peripheral, conn, value: bytes) -> None:
        """One RACP request: report the number of stored records, or report the records (each a
        measurement notification, followed by its context when it has one) and end with a
        response code; all records or those with a sequence number >= the operand."""
        op = value[0] if value else 0
        operator = value[1] if len(value) > 1 else 0
        p.racp_requests.append(value.hex())

        def selected() -> list | None:
            if operator == 1:
                return list(p.records)
            if operator == 3 and len(value) >= 5 and value[2] == 0x01:
                first = struct.unpack_from("<H", value, 3)[0]
                return [r for r in p.records if r["seq"] >= first]
            return None
        if op == 4:  # report number of stored records
            records = selected()
            answer = (bytes([6, 0, op, 4 if operator in (2, 3, 4, 5, 6) else 3]) if records is None
                      else struct.pack("<BBH", 5, 0, len(records)))
        elif op == 1:  # report stored records
            records = selected()
            if records is None:
                answer = bytes([6, 0, op, 4 if operator in (2, 3, 4, 5, 6) else 3])
            elif not records:
                answer = bytes([6, 0, op, 6])  # no records found
            else:
                for i, r in enumerate(records):
                    if p.racp_stop_after is not None and i >= p.racp_stop_after:
                        log.info("%s: RACP: going silent after %d records", p.id, i)
                        return
                    await p.device.notify_subscriber(conn, p.measurement, r["measurement"], force=True)
                    self._log_record(p, conn, r, "2A18", r["measurement"])
                    if r["context"] is not None:
                        await p.device.notify_subscriber(conn, p.context, r["context"], force=True)
                        self._log_record(p, conn, r, "2A34", r["context"])
                answer = bytes([6, 0, op, 1])
        elif op == 3:  # abort
            answer = bytes([6, 0, op, 1])
        else:
            answer = bytes([6, 0, op, 2])  # op code not supported
        try:
            await asyncio.wait_for(p.device.indicate_subscriber(conn, p.racp, answer, force=True),
                                   self.args.indication_timeout)
        except Exception as e:  # noqa: BLE001
            log.info("%s: RACP response not confirmed: %s", p.id, e)

    def _log_record(self, p: Peripheral, conn, record: dict, characteristic: str, value: bytes) -> None:
        if characteristic == "2A18":
            p.sent += 1
        if self.sent_log:
            rec = {"t": round(time.time(), 6), "peripheral": p.id, "kind": p.kind, "address": str(p.address),
                   "central": str(conn.peer_address), "service": "1808", "characteristic": characteristic,
                   "seq": record["seq"], "hex": value.hex(), "fields": record["fields"], "malformed": None}
            self.sent_log.write(json.dumps(rec, separators=(",", ":")) + "\n")
            self.sent_log.flush()

    # ----- control channel -----
    async def _handle_control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                text = line.decode("utf-8", "replace").strip()
                if not text:
                    continue
                try:
                    if text.startswith("{"):
                        req = json.loads(text)
                        words = [req.get("cmd", "")] + [str(a) for a in req.get("args", [])]
                    else:
                        words = text.split()
                    reply = await self.command(words)
                except Exception as e:  # noqa: BLE001
                    reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
                reply.setdefault("cmd", words[0] if words else "")
                writer.write((json.dumps(reply, separators=(",", ":")) + "\n").encode())
                await writer.drain()
                if reply.get("cmd") == "shutdown" and reply.get("ok"):
                    self.stop_event.set()
        except ConnectionError:
            pass
        finally:
            writer.close()

    def _find(self, key: str) -> Peripheral:
        for p in self.peripherals.values():
            if key in (p.id, p.name) or key.upper() == str(p.address):
                return p
        raise KeyError(f"no peripheral {key!r}")

    async def command(self, words: list[str]) -> dict:
        cmd, args = words[0], words[1:]
        if cmd == "ping":
            return {"ok": True, "cmd": cmd}
        if cmd == "status":
            return {"ok": True, "cmd": cmd, **self.status()}
        if cmd == "silence-commands":
            if args not in (["on"], ["off"]):
                raise ValueError("usage: silence-commands on|off")
            self.external.silence_commands = args[0] == "on"
            return {"ok": True, "cmd": cmd, "silence": self.external.silence_commands}
        if cmd == "shutdown":
            return {"ok": True, "cmd": cmd}
        if cmd in ("add-records", "racp-stop-after", "passkey", "reset-records"):
            if len(args) != 2:
                raise ValueError(f"usage: {cmd} <peripheral> <n>")
            p, n = self._find(args[0]), int(args[1])
            if cmd == "passkey":
                if not 0 <= n <= 999999:
                    raise ValueError("a passkey is 0 to 999999")
                p.passkey = n
                return {"ok": True, "cmd": cmd, "peripheral": p.id, "passkey": n}
            if p.kind != "glucose":
                raise ValueError(f"{p.id} is no glucose meter")
            if cmd == "racp-stop-after":
                p.racp_stop_after = n if n >= 0 else None
                return {"ok": True, "cmd": cmd, "peripheral": p.id, "racp_stop_after": p.racp_stop_after}
            if cmd == "reset-records":  # the meter forgets its records; sequence numbers start again at 1
                p.resets += 1
                p.records = []
            first = (p.records[-1]["seq"] + 1) if p.records else 1
            added = [glucose_record(f"{self.args.seed}:{p.id}", seq, p.resets) for seq in range(first, first + n)]
            p.records += added
            return {"ok": True, "cmd": cmd, "peripheral": p.id, "records": len(p.records),
                    "added": [r["fields"] for r in added]}
        if cmd in ("stop", "start", "pause", "resume", "malformed", "disconnect-during-discovery"):
            if len(args) != 1:
                raise ValueError(f"usage: {cmd} <peripheral>")
            p = self._find(args[0])
            if cmd == "stop":
                p.stopped = True
                await p.device.stop_advertising()
                was_paused = await self._settle(p)
                for conn in list(p.device.connections.values()):
                    await self._disconnect(p, conn)
                p.paused = was_paused
                return {"ok": True, "cmd": cmd, "peripheral": p.id, "advertising": p.device.is_advertising,
                        "connections": len(p.device.connections)}
            if cmd == "start":
                p.stopped = False
                if not p.device.is_advertising:
                    await p.device.start_advertising(own_address_type=hci.OwnAddressType.RANDOM)
                return {"ok": True, "cmd": cmd, "peripheral": p.id, "advertising": p.device.is_advertising}
            if cmd in ("pause", "resume"):
                p.paused = cmd == "pause"
                if p.paused:
                    async with p.send_lock:  # a value going out now is logged before the reply
                        await asyncio.sleep(0)  # (an indication's task logs when it first runs)
                return {"ok": True, "cmd": cmd, "peripheral": p.id, "paused": p.paused, "sent": p.sent}
            if cmd == "disconnect-during-discovery":
                p.ddd_armed = True
                return {"ok": True, "cmd": cmd, "peripheral": p.id, "armed": True}
            # malformed
            conns = self._subscribed(p)
            if not conns:
                return {"ok": False, "cmd": cmd, "peripheral": p.id, "error": "no subscribed connection"}
            if p.indicate:
                # one link at a time, each value confirmed before the next; the reply comes after
                # the last confirmation (or timeout)
                for conn in conns:
                    link = self._link(p, conn)
                    async with link.lock:
                        for desc, value in MALFORMED[p.kind]:
                            await self._send(p, conn, value, seq=None, fields=None, malformed=desc)
            else:
                for desc, value in MALFORMED[p.kind]:
                    for conn in conns:
                        await self._send(p, conn, value, seq=None, fields=None, malformed=desc)
            sent = [{"malformed": desc, "hex": value.hex()} for desc, value in MALFORMED[p.kind]]
            return {"ok": True, "cmd": cmd, "peripheral": p.id, "sent": sent}
        raise ValueError(f"unknown command {cmd!r}")

    def status(self) -> dict:
        ext = self.external
        return {
            "uptime_s": round(time.monotonic() - self.started, 3),
            "h4_client": self.h4.connected,
            "h4_clients_total": self.h4.clients,
            "silence": ext.silence_commands,
            "commands_silenced": ext.commands_silenced,
            "commands_answered_by_peer": ext.commands_answered_by_peer,
            "resets": ext.resets,
            "peripherals": {
                p.id: {
                    "advertising": p.device.is_advertising,
                    "stopped": p.stopped,
                    "paused": p.paused,
                    "connections": [{"central": str(c.peer_address), "handle": c.handle, "mtu": c.att_mtu,
                                     "subscribed": c in self._subscribed(p),
                                     "indication_pending": c in p.links and p.links[c].lock.locked()}
                                    for c in p.device.connections.values()],
                    "connections_total": p.connections_total,
                    "sent": p.sent, "malformed_sent": p.malformed_sent, "next_seq": p.seq,
                    "disconnect_during_discovery_armed": p.ddd_armed,
                    "disconnect_during_discovery_fired": p.ddd_fired,
                    "energy_resets": p.energy_reset,
                    "indications_confirmed": p.indications_confirmed,
                    "indication_timeouts": p.indication_timeouts,
                    **({"pairing": {"mode": p.pairing, "passkey": p.passkey, "pairings": p.pairings,
                                    "failures": p.pairing_failures, "last_failure": p.last_pairing_failure,
                                    "bonded": p.bonded,
                                    "encrypted": [c.peer_address.to_string(False) for c in p.device.connections.values()
                                                  if c.encryption]}} if p.pairing else {}),
                    **({"records": len(p.records), "racp_requests": p.racp_requests,
                        "racp_stop_after": p.racp_stop_after} if p.kind == "glucose" else {}),
                } for p in self.peripherals.values()},
        }

    def close(self) -> None:
        for p in self.peripherals.values():
            if p.task:
                p.task.cancel()
        for task in list(self.tasks):
            task.cancel()
        if isinstance(self.h4, VHCITransport):
            self.h4.close()
        elif self.h4 and self.h4.writer:
            self.h4.writer.close()
        for extra in self.extra_h4:
            if extra.writer:
                extra.writer.close()
        for f in (self.sent_log, self.snoop_file):
            if f:
                f.close()
        for path in self.unix_paths:
            try:
                os.unlink(path)
            except OSError:
                pass


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------
def parse_peripheral(spec: str) -> tuple[str, str | None, str | None]:
    """KIND[:NAME[:ADDR]] where ADDR is AA:BB:CC:DD:EE:FF (it may contain colons)."""
    kind, _, rest = spec.partition(":")
    if kind not in KINDS:
        raise argparse.ArgumentTypeError(f"unknown peripheral kind {kind!r} (one of {', '.join(KINDS)})")
    name, _, addr = rest.partition(":")
    return kind, name or None, addr or None


def parse_rate(spec: str) -> tuple[str, float]:
    key, _, hz = spec.rpartition("=")
    value = float(hz)
    if not 0.01 <= value <= 1000:
        raise argparse.ArgumentTypeError("rate must be between 0.01 and 1000 Hz")
    return key or "*", value


def parse_adv_bytes(spec: str) -> tuple[str, int, bytes]:
    """[ID=]NUMBER:HEX (NUMBER in hex: a 16-bit service UUID or company identifier)."""
    key, _, rest = spec.rpartition("=")
    number, _, payload = rest.partition(":")
    try:
        value = int(number, 16)
        data = bytes.fromhex(payload)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected [ID=]XXXX:HEXBYTES, got {spec!r}") from None
    if not 0 <= value <= 0xFFFF:
        raise argparse.ArgumentTypeError(f"{number!r} is not a 16-bit number")
    return key or "*", value, data


def parse_tx_power(spec: str) -> tuple[str, int]:
    key, _, dbm = spec.rpartition("=")
    value = int(dbm)
    if not -127 <= value <= 20:
        raise argparse.ArgumentTypeError("TX power must be between -127 and 20 dBm")
    return key or "*", value


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description="HealthGate BLE test peer (Bumble virtual controllers)")
    ap.add_argument("--listen", default="tcp:127.0.0.1:0",
                    help="H4 endpoint for the host under test: tcp:HOST:PORT (0 = free port), unix:PATH, "
                         "or vhci[:PATH] (the local kernel's virtual HCI driver, default /dev/vhci)")
    ap.add_argument("--control", default=None, help="control channel endpoint: tcp:HOST:PORT or unix:PATH")
    ap.add_argument("--also-listen", action="append", default=[], metavar="SPEC",
                    help="one more external controller on the same link, as H4 on tcp:HOST:PORT or unix:PATH "
                         "(its address is --controller-address with the last octet + n; repeatable)")
    ap.add_argument("--service-data", action="append", type=parse_adv_bytes, default=[], metavar="[ID=]UUID16:HEX",
                    help="advertise Service Data for this 16-bit UUID (hex), on peripheral ID or all (repeatable)")
    ap.add_argument("--manufacturer-data", action="append", type=parse_adv_bytes, default=[], metavar="[ID=]COMPANY:HEX",
                    help="advertise Manufacturer Specific Data for this company identifier (hex) (repeatable)")
    ap.add_argument("--tx-power", action="append", type=parse_tx_power, default=[], metavar="[ID=]DBM",
                    help="advertise this TX Power Level (dBm)")
    ap.add_argument("--peripheral", action="append", type=parse_peripheral, default=[],
                    metavar="KIND[:NAME[:ADDR]]", help=f"{', '.join(KINDS)}; repeatable")
    ap.add_argument("--rate", action="append", type=parse_rate, default=[], metavar="[ID=]HZ",
                    help="notification rate, for all peripherals or one (repeatable); default 1")
    ap.add_argument("--values", default=None, help="JSON file with samples per peripheral id or kind")
    ap.add_argument("--seed", default="1", help="seed of the generated samples (default 1)")
    ap.add_argument("--sent-log", default=None, help="append one JSON line per notification sent")
    ap.add_argument("--snoop", default=None, help="write a btsnoop capture of the H4 link")
    ap.add_argument("--controller-address", default="F0:F1:F2:F3:F4:F5",
                    help="public BD_ADDR of the external controller")
    ap.add_argument("--adv-interval-ms", type=float, default=100.0, help="advertising interval (default 100)")
    ap.add_argument("--indication-timeout", type=float, default=30.0, metavar="S",
                    help="seconds to wait for the host to confirm an indication before dropping the link "
                         "(default 30, the ATT transaction timeout)")
    ap.add_argument("--pairing", action="append", default=[], metavar="ID=MODE",
                    help="require bonding on a peripheral: just-works, passkey[:N] (it shows N, default 123456) "
                         "or numeric (numeric comparison); repeatable")
    ap.add_argument("--glucose-records", type=int, default=5, metavar="N",
                    help="records a glucose meter holds at start (default 5)")
    ap.add_argument("--stdin-eof", choices=["auto", "exit", "ignore"], default="auto",
                    help="exit when stdin reaches EOF: auto = only if stdin is a pipe or socket")
    ap.add_argument("-v", "--verbose", action="count", default=0)
    return ap


def assign_ids(specs) -> list[tuple[str, str, str | None, str | None]]:
    counts: dict[str, int] = {}
    out = []
    for kind, name, addr in specs:
        counts[kind] = counts.get(kind, 0) + 1
        pid = kind if counts[kind] == 1 else f"{kind}-{counts[kind]}"
        out.append((pid, kind, name, addr))
    return out


async def amain(args) -> int:
    values = None
    if args.values:
        with open(args.values, encoding="utf-8") as f:
            values = json.load(f)
    peer = Peer(args)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, peer.stop_event.set)
    watch_stdin = exits_on_stdin_eof(args.stdin_eof)
    if watch_stdin:
        def on_stdin() -> None:
            try:
                data = os.read(sys.stdin.fileno(), 4096)
            except OSError:
                data = b""
            if not data:
                loop.remove_reader(sys.stdin.fileno())
                peer.stop_event.set()
        loop.add_reader(sys.stdin.fileno(), on_stdin)
    rates = dict(args.rate)
    try:
        ready = await asyncio.wait_for(peer.start(assign_ids(args.peripheral), rates, values), 10.0)
        sys.stdout.write(json.dumps(ready, separators=(",", ":")) + "\n")
        sys.stdout.flush()
        await peer.stop_event.wait()
    finally:
        peer.close()
    return 0


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if not args.peripheral:
        args.peripheral = [("hr", None, None)]
    logging.basicConfig(stream=sys.stderr, format="ble_peer %(levelname)s %(name)s: %(message)s",
                        level=[logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)])
    if args.verbose < 2:
        # Bumble logs expected conditions (unsupported commands, dropped packets) as warnings.
        logging.getLogger("bumble").setLevel(logging.ERROR)
    return asyncio.run(amain(args))


if __name__ == "__main__":
    sys.exit(main())
