"""An ANT-FS client: a watch (like a Forerunner 310XT) that serves FIT files.

The watch is an ANT master. In the **link** state it beacons at 8 Hz on its search frequency
(``beacon_rf``, default 50) with its ANT-FS network key; the beacon ``43 s1 s2 auth desc[4]``
carries its product (1018) and manufacturer (1). The host sends commands ``44 id ...`` as
acknowledged data (8 bytes) or bursts (longer); the watch answers, where a command has an answer,
with a burst of its beacon followed by the response.

- LINK ``44 02 freq period hostSerial``: the watch moves to 2400+freq MHz and the period of the
  code (4 = 8 Hz, 3 = 4 Hz, 2 = 2 Hz, 1 = 1 Hz, 0 = 0.5 Hz, 7 = unchanged) and beacons in the
  **authentication** state with the host serial.
- AUTH ``44 04 type len hostSerial data``: type 1 (serial) is answered with the watch's serial
  and name; type 2 (pairing, data = the host's name) is accepted after ``pair_delay_s`` (the user
  pressing accept) with an 8-byte passkey, or rejected (``pairing`` = ``reject``, or ``off``:
  pairing bit clear, rejected at once); type 3 (passkey) is accepted when the passkey equals the
  watch's, else rejected. Accepting moves to the **transport** state; after a rejection the watch
  stays in authentication (so a host can pair after a stale passkey).
- DOWNLOAD ``44 09 index offset 0 initial crcSeed maxBlock`` (transport): index 0 is the
  directory, built from the files; others are files. The answer ``44 89 resp 0 remaining offset
  size``, the block (padded to 8), then ``00×6 crc``: the CRC-16/ARC of the block continued from
  the host's seed. A request at an offset above 0 whose seed is not the CRC of everything before
  the offset gets resp 5 (bad CRC).
- ERASE ``44 0B index``: erases files flagged erasable (resp 0), else resp 1. UPLOAD ``44 0A``:
  resp 2 (not writable). PING ``44 05``: no answer. DISCONNECT ``44 03``: back to the link state.
- With no command for ``idle_timeout_s`` outside the link state, the watch returns to it.
"""
from __future__ import annotations

import os
import random
import struct
from dataclasses import dataclass

from .protocol import crc16_arc
from .sensors import Master, Transmission

FIT_EPOCH_UNIX = 631065600  # 1989-12-31T00:00:00Z
LINK, AUTH, TRANSPORT, BUSY = 0, 1, 2, 3
STATE_NAMES = {LINK: "link", AUTH: "auth", TRANSPORT: "transport", BUSY: "busy"}
PERIOD_CODES = {0: 65536, 1: 32768, 2: 16384, 3: 8192, 4: 4096}
FLAG_BITS = {"r": 0x80, "w": 0x40, "e": 0x20, "A": 0x10, "a": 0x08, "c": 0x04}
# AUTH request types and response codes
AUTH_PASS_THROUGH, AUTH_SERIAL, AUTH_PAIRING, AUTH_PASSKEY = 0, 1, 2, 3
AUTH_NA, AUTH_ACCEPT, AUTH_REJECT = 0, 1, 2
# DOWNLOAD response codes
DL_OK, DL_NOT_EXIST, DL_NOT_READABLE, DL_NOT_READY, DL_INVALID, DL_BAD_CRC = 0, 1, 2, 3, 4, 5


def parse_flags(text: str) -> int:
    """Directory flags from letters: r read, w write, e erase, A archived, a append, c crypt."""
    value = 0
    for ch in text:
        if ch not in FLAG_BITS:
            raise ValueError(f"unknown file flag {ch!r} (use r, w, e, A, a, c)")
        value |= FLAG_BITS[ch]
    return value


def fit_file_id(data: bytes) -> dict:
    """The file_id message (global number 0) of a FIT file: ``type`` (the directory's FIT
    subtype), ``time_created`` (seconds since 1989-12-31) and ``number`` when present. Reads
    records from the start until it finds one; {} when the file is not FIT or has none."""
    if len(data) < 12 or data[8:12] != b".FIT":
        return {}
    pos, end = data[0], min(len(data), data[0] + struct.unpack_from("<I", data, 4)[0])
    local: dict[int, tuple[int, str, list[tuple[int, int]], int]] = {}
    for _ in range(64):  # the file_id comes first in practice; do not walk whole files
        if pos >= end:
            return {}
        header = data[pos]
        pos += 1
        if header & 0x80:  # compressed-timestamp data message
            kind = (header >> 5) & 0x03
            if kind not in local:
                return {}
            pos += local[kind][3]
            continue
        kind = header & 0x0F
        if header & 0x40:  # definition
            arch = data[pos + 1]
            order = ">" if arch == 1 else "<"
            global_no = struct.unpack_from(order + "H", data, pos + 2)[0]
            count = data[pos + 4]
            pos += 5
            fields = [(data[pos + 3 * i], data[pos + 3 * i + 1]) for i in range(count)]
            pos += 3 * count
            size = sum(s for _, s in fields)
            if header & 0x20:  # developer fields
                dev = data[pos]
                pos += 1
                size += sum(data[pos + 3 * i + 1] for i in range(dev))
                pos += 3 * dev
            local[kind] = (global_no, order, fields, size)
            continue
        if kind not in local:
            return {}
        global_no, order, fields, size = local[kind]
        if global_no != 0:
            pos += size
            continue
        out, p = {}, pos
        for num, fsize in fields:
            raw = data[p:p + fsize]
            p += fsize
            if num == 0 and fsize == 1 and raw[0] != 0xFF:
                out["type"] = raw[0]
            elif num == 4 and fsize == 4:
                v = struct.unpack(order + "I", raw)[0]
                if v != 0xFFFFFFFF:
                    out["time_created"] = v
            elif num == 5 and fsize == 2:
                v = struct.unpack(order + "H", raw)[0]
                if v != 0xFFFF:
                    out["number"] = v
        return out
    return {}


@dataclass
class WatchFile:
    """One file in the watch's directory."""
    index: int
    name: str
    data: bytes
    subtype: int
    number: int
    date: int  # seconds since 1989-12-31
    flags: int

    def entry(self) -> bytes:
        """The 16-byte directory entry: index, data type 0x80 (FIT), subtype and file number,
        type flags, flags, size, date."""
        return struct.pack("<HBBHBBII", self.index, 0x80, self.subtype, self.number, 0, self.flags,
                           len(self.data), self.date)

    def status(self) -> dict:
        return {"index": self.index, "name": self.name, "size": len(self.data), "subtype": self.subtype,
                "number": self.number, "date": self.date, "flags": self.flags}


def load_file(path: str, index: int, flags: int = 0x80) -> WatchFile:
    """A FIT file as the watch lists it: subtype and date from its file_id (defaults: 4
    activity, the file's modification time)."""
    with open(path, "rb") as f:
        data = f.read()
    info = fit_file_id(data)
    date = info.get("time_created") or max(0, int(os.path.getmtime(path)) - FIT_EPOCH_UNIX)
    return WatchFile(index=index, name=os.path.basename(path), data=data, subtype=info.get("type", 4),
                     number=index, date=date, flags=flags)


class Watch(Master):
    """The ANT-FS client; see the module docstring for its behaviour."""

    def __init__(self, *, id: str = "watch", device: int = 0x3039, key: bytes, seed: str = "1",
                 serial: int = 3862753215, name: str = "Forerunner 310XT", passkey: bytes | None = None,
                 pairing: str = "accept", pair_delay_s: float = 1.0, beacon_rf: int = 50,
                 beacon_period: int = 4096, trans: int = 5, product: int = 1018, manufacturer: int = 1,
                 idle_timeout_s: float = 60.0, max_block: int = 2048, clock_base: int = 0,
                 files: list[WatchFile] | None = None, rssi: int = -55, on: bool = True) -> None:
        if pairing not in ("accept", "reject", "off"):
            raise ValueError("pairing is accept, reject or off")
        super().__init__(id=id, kind="antfs", device=device, device_type=1, trans_low=trans, period=beacon_period,
                         rf=beacon_rf, key=key, rssi=rssi, on=on)
        self.rng = random.Random(f"ant-stick:{seed}:{id}")
        self.serial = serial
        self.name = name
        self.passkey = passkey
        self.pairing_mode = pairing
        self.pair_delay_s = pair_delay_s
        self.beacon_rf = beacon_rf
        self.beacon_period = beacon_period
        self.product = product
        self.manufacturer = manufacturer
        self.idle_timeout_s = idle_timeout_s
        self.max_block = max_block
        self.clock_base = clock_base  # FIT seconds at model time 0
        self.files: list[WatchFile] = files or []
        self.state = LINK
        self.host_serial = 0
        self.last_command_t = 0.0
        self.reply: bytes | None = None
        self.reply_at = 0.0
        self.after_reply: int | None = None  # the state to enter once the reply is out
        self.directory_snapshot: bytes | None = None
        self.bad_crc = 0  # fault: the next N download blocks carry a wrong CRC
        self.records: list[dict] = []  # for the sent log (drained by the model)
        self.downloads = 0
        self.commands = 0

    # ----- what goes on the air -----
    def period_code(self) -> int:
        for code, period in PERIOD_CODES.items():
            if period == self.period:
                return code
        return 7

    def beacon(self) -> bytes:
        s1 = (0x20 if self.files else 0) | (0x08 if self.pairing_mode != "off" else 0) | self.period_code()
        if self.state == LINK:
            desc = struct.pack("<HH", self.product, self.manufacturer)
        else:
            desc = struct.pack("<I", self.host_serial)
        return bytes([0x43, s1, self.state & 0x0F, 3]) + desc

    def transmit(self, t: float) -> Transmission | None:
        if self.state != LINK and self.reply is None and t - self.last_command_t > self.idle_timeout_s:
            self.log(t, "idle-timeout", state=STATE_NAMES[self.state])
            self.to_link()
        self.sent += 1
        if self.reply is not None and t >= self.reply_at:
            if self.after_reply is not None:
                self.state = self.after_reply
                self.after_reply = None
            burst = self.beacon() + self.reply
            self.reply = None
            return Transmission(payload=burst, burst=True, fields={"reply": burst[8:].hex()})
        return Transmission(payload=self.beacon())  # beacons are not logged

    def to_link(self) -> None:
        self.state = LINK
        self.rf = self.beacon_rf
        self.period = self.beacon_period
        self.host_serial = 0
        self.reply = None
        self.after_reply = None

    def log(self, t: float, what: str, **fields) -> None:
        self.records.append({"sim_t": round(t, 4), "event": what, **fields})

    # ----- host commands -----
    def receive(self, kind: str, data: bytes, t: float) -> None:
        super().receive(kind, data, t)
        if len(data) < 2 or data[0] != 0x44:
            return
        cmd = data[1]
        self.commands += 1
        if self.state == LINK:
            if cmd == 0x02:
                freq, code, host = data[2], data[3], struct.unpack_from("<I", data, 4)[0]
                self.host_serial = host
                self.rf = freq
                if code in PERIOD_CODES:
                    self.period = PERIOD_CODES[code]
                self.state = AUTH
                self.last_command_t = t
                self.log(t, "link", rf=freq, period=self.period, host_serial=host)
            return
        self.last_command_t = t
        if cmd == 0x03:  # disconnect
            self.log(t, "disconnect", type=data[2] if len(data) > 2 else 0)
            self.to_link()
        elif cmd == 0x05:  # ping
            pass
        elif cmd == 0x04 and self.state == AUTH and self.reply is None:
            self.authenticate(data, t)
        elif cmd == 0x09 and self.state == TRANSPORT:
            self.download(data, t)
        elif cmd == 0x0B and self.state == TRANSPORT:
            index = data[2] | data[3] << 8 if len(data) >= 4 else 0
            target = next((f for f in self.files if f.index == index), None)
            ok = target is not None and target.flags & 0x20
            if ok:
                self.files.remove(target)
                self.directory_snapshot = None
            self.log(t, "erase", index=index, ok=bool(ok))
            self.answer(t, bytes([0x44, 0x8B, 0 if ok else 1, 0, 0, 0, 0, 0]))
        elif cmd == 0x0A and self.state == TRANSPORT:
            self.log(t, "upload-refused", index=data[2] | data[3] << 8 if len(data) >= 4 else 0)
            self.answer(t, bytes([0x44, 0x8A, 2, 0]) + bytes(12) + bytes(6) + b"\x00\x00")

    def answer(self, t: float, payload: bytes, delay: float = 0.0, then: int | None = None) -> None:
        if len(payload) % 8:
            payload += bytes(8 - len(payload) % 8)
        self.reply = payload
        self.reply_at = t + delay
        self.after_reply = then

    def authenticate(self, data: bytes, t: float) -> None:
        kind, length = data[2], data[3]
        host = struct.unpack_from("<I", data, 4)[0]
        payload = bytes(data[8:8 + length])
        serial = struct.pack("<I", self.serial)

        def reply(code: int, extra: bytes = b"") -> bytes:
            return bytes([0x44, 0x84, code, len(extra)]) + serial + extra

        if host != self.host_serial:
            self.log(t, "auth-other-host", host_serial=host)
        if kind == AUTH_SERIAL:
            name = self.name.encode()[:32]
            self.log(t, "auth-serial")
            self.answer(t, reply(AUTH_NA, name))
        elif kind == AUTH_PAIRING:
            if self.pairing_mode == "off":
                self.log(t, "pairing-refused", host_name=payload.decode(errors="replace"))
                self.answer(t, reply(AUTH_REJECT))
            elif self.pairing_mode == "reject":
                self.log(t, "pairing-rejected", host_name=payload.decode(errors="replace"))
                self.answer(t, reply(AUTH_REJECT), delay=self.pair_delay_s)
            else:
                if self.passkey is None:
                    self.passkey = bytes(self.rng.randrange(256) for _ in range(8))
                self.log(t, "pairing-accepted", host_name=payload.decode(errors="replace"), passkey=self.passkey.hex())
                self.answer(t, reply(AUTH_ACCEPT, self.passkey), delay=self.pair_delay_s, then=TRANSPORT)
        elif kind == AUTH_PASSKEY:
            ok = self.passkey is not None and payload == self.passkey
            self.log(t, "passkey-accepted" if ok else "passkey-rejected")
            self.answer(t, reply(AUTH_ACCEPT if ok else AUTH_REJECT), then=TRANSPORT if ok else None)
        else:
            self.log(t, "auth-rejected", type=kind)
            self.answer(t, reply(AUTH_REJECT))

    def directory(self, t: float) -> bytes:
        """Index 0: a 16-byte header (version 1.0, entry length 16, time format 0, system time,
        last modified) and one 16-byte entry per file."""
        now = self.clock_base + int(t)
        modified = max((f.date for f in self.files), default=0)
        head = struct.pack("<BBB5xII", 0x10, 16, 0, now, modified)
        return head + b"".join(f.entry() for f in sorted(self.files, key=lambda f: f.index))

    def download(self, data: bytes, t: float) -> None:
        if len(data) < 16:
            return
        index, offset, initial, seed, max_block = struct.unpack_from("<HIxBHI", data, 2)
        if index == 0:
            if offset == 0 or self.directory_snapshot is None:
                self.directory_snapshot = self.directory(t)
            content, readable = self.directory_snapshot, True
        else:
            f = next((f for f in self.files if f.index == index), None)
            if f is None:
                self.log(t, "download", index=index, offset=offset, response=DL_NOT_EXIST)
                self.answer(t, struct.pack("<BBBxIII", 0x44, 0x89, DL_NOT_EXIST, 0, offset, 0) + bytes(8))
                return
            content, readable = f.data, bool(f.flags & 0x80)
        size = len(content)
        if not readable:
            code = DL_NOT_READABLE
        elif offset > size:
            code = DL_INVALID
        elif offset > 0 and seed != crc16_arc(content[:offset]):
            code = DL_BAD_CRC
        else:
            code = DL_OK
        if code != DL_OK:
            self.log(t, "download", index=index, offset=offset, response=code)
            self.answer(t, struct.pack("<BBBxIII", 0x44, 0x89, code, 0, offset, size) + bytes(8))
            return
        limit = min(max_block or self.max_block, self.max_block)
        block = content[offset:offset + limit]
        crc = crc16_arc(block, seed)
        wrong = self.bad_crc > 0
        if wrong:
            self.bad_crc -= 1
            crc ^= 0xFFFF
        pad = bytes(-len(block) % 8)
        self.downloads += 1
        self.log(t, "download", index=index, offset=offset, length=len(block), size=size, crc=crc,
                 crc_wrong=wrong, initial=bool(initial), response=DL_OK)
        self.answer(t, struct.pack("<BBBxIII", 0x44, 0x89, DL_OK, len(block), offset, size) + block + pad
                    + bytes(6) + struct.pack("<H", crc))

    # ----- control -----
    def add_file(self, path: str, flags: int = 0x80) -> WatchFile:
        index = max((f.index for f in self.files), default=0) + 1
        f = load_file(path, index, flags)
        self.files.append(f)
        self.directory_snapshot = None
        return f

    def status(self) -> dict:
        return {**super().status(), "state": STATE_NAMES[self.state], "serial": self.serial, "name": self.name,
                "pairing_mode": self.pairing_mode, "paired": self.passkey is not None, "host_serial": self.host_serial,
                "files": [f.status() for f in self.files], "downloads": self.downloads, "commands": self.commands,
                "bad_crc_pending": self.bad_crc, "reply_pending": self.reply is not None}
