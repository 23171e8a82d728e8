#!/usr/bin/env python3
"""A minimal raw H4 Bluetooth LE host in plain Python (sockets + struct, no Bumble).

It exists to prove the BLE test peer works the way the Swift host stack will use it: HCI
commands with timeouts, LE scanning (legacy 0x02 and extended 0x0D reports), LE Create
Connection, ACL with L2CAP fragmentation/reassembly, ATT MTU exchange, GATT discovery, CCCD
writes, notifications and indications (confirmed with Handle Value Confirmation). Used by test_peer_smoke.py; also runnable by hand:

    python3 Tests/peers/smoke_client.py HOST:PORT [SENT_LOG]
"""
from __future__ import annotations

import json
import queue
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass, field

H4_COMMAND, H4_ACL, H4_EVENT = 0x01, 0x02, 0x04
EVT_DISCONNECTION_COMPLETE, EVT_COMMAND_COMPLETE, EVT_COMMAND_STATUS = 0x05, 0x0E, 0x0F
EVT_NUM_COMPLETED_PACKETS, EVT_LE_META = 0x13, 0x3E
ATT_CID = 0x0004


def opcode(ogf: int, ocf: int) -> int:
    return (ogf << 10) | ocf


OP_RESET = opcode(0x03, 0x0003)
OP_SET_EVENT_MASK = opcode(0x03, 0x0001)
OP_READ_BD_ADDR = opcode(0x04, 0x0009)
OP_DISCONNECT = opcode(0x01, 0x0006)
OP_READ_REMOTE_VERSION = opcode(0x01, 0x001D)
OP_LE_SET_EVENT_MASK = opcode(0x08, 0x0001)
OP_LE_READ_BUFFER_SIZE = opcode(0x08, 0x0002)
OP_LE_SET_RANDOM_ADDRESS = opcode(0x08, 0x0005)
OP_LE_SET_SCAN_PARAMETERS = opcode(0x08, 0x000B)
OP_LE_SET_SCAN_ENABLE = opcode(0x08, 0x000C)
OP_LE_CREATE_CONNECTION = opcode(0x08, 0x000D)
OP_LE_SET_PHY = opcode(0x08, 0x0032)


class CommandTimeout(Exception):
    pass


class Disconnected(Exception):
    pass


def addr_to_bytes(addr: str) -> bytes:
    return bytes(reversed(bytes.fromhex(addr.replace(":", ""))))


def addr_from_bytes(b: bytes) -> str:
    return ":".join(f"{x:02X}" for x in reversed(b))


def parse_ad(data: bytes) -> dict:
    out: dict = {"uuids16": []}
    i = 0
    while i < len(data):
        ln = data[i]
        if ln == 0 or i + 1 + ln > len(data):
            break
        t, payload = data[i + 1], data[i + 2:i + 1 + ln]
        if t in (0x02, 0x03):
            out["uuids16"] += [struct.unpack_from("<H", payload, k)[0] for k in range(0, len(payload) - 1, 2)]
        elif t in (0x08, 0x09):
            out["name"] = payload.decode("utf-8", "replace")
        elif t == 0x16:
            out.setdefault("service_data", []).append(payload.hex())
        i += 1 + ln
    return out


@dataclass
class Report:
    address: str
    address_type: int
    data: bytes
    subevent: int

    @property
    def ad(self) -> dict:
        return parse_ad(self.data)


@dataclass
class Conn:
    handle: int
    peer: str
    mtu: int = 23
    att: "queue.Queue[bytes]" = field(default_factory=queue.Queue)
    notifications: "queue.Queue[tuple[int, bytes, float]]" = field(default_factory=queue.Queue)
    rx: bytearray = field(default_factory=bytearray)
    rx_len: int = 0
    disconnected: threading.Event = field(default_factory=threading.Event)
    disconnect_reason: int | None = None
    complete_subevent: int | None = None  # 0x01 LE Connection Complete or 0x0A the Enhanced one
    # Handle Value Indications also land in `notifications`; they are confirmed (0x1E) at once
    # unless auto_confirm is False (then confirm() sends the confirmation)
    auto_confirm: bool = True
    notifications_received: int = 0
    indications_received: int = 0
    confirmations_sent: int = 0


class H4Host:
    def __init__(self, host: str, port: int, timeout: float = 2.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(None)
        self.timeout = timeout
        self.events: "queue.Queue[tuple[int, bytes]]" = queue.Queue()
        self.reports: "queue.Queue[Report]" = queue.Queue()
        self.conns: dict[int, Conn] = {}
        self.le_acl_len = 27
        self.lock = threading.Lock()
        self.closed = threading.Event()
        self.errors: list[str] = []
        self.thread = threading.Thread(target=self._reader, daemon=True)
        self.thread.start()

    # ----- transport -----
    def close(self) -> None:
        self.closed.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.thread.join(2)

    def _recv_exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("peer closed")
            buf += chunk
        return buf

    def _reader(self) -> None:
        try:
            while not self.closed.is_set():
                t = self._recv_exact(1)[0]
                if t == H4_EVENT:
                    code, ln = self._recv_exact(2)
                    self._on_event(code, self._recv_exact(ln))
                elif t == H4_ACL:
                    hdr = self._recv_exact(4)
                    hf, ln = struct.unpack("<HH", hdr)
                    self._on_acl(hf & 0x0FFF, (hf >> 12) & 0x3, self._recv_exact(ln))
                else:
                    raise ValueError(f"unexpected H4 packet type {t:#x}")
        except (OSError, ConnectionError, ValueError) as e:
            if not self.closed.is_set():
                self.errors.append(str(e))

    def _on_event(self, code: int, params: bytes) -> None:
        if code == EVT_LE_META and params[0] in (0x02, 0x0D):
            self._on_reports(params[0], params[1:])
            return
        if code == EVT_NUM_COMPLETED_PACKETS:
            return
        if code == EVT_DISCONNECTION_COMPLETE:
            status, handle, reason = struct.unpack_from("<BHB", params)
            if status == 0 and (c := self.conns.get(handle)):
                c.disconnect_reason = reason
                c.disconnected.set()
        self.events.put((code, params))

    def _on_reports(self, sub: int, p: bytes) -> None:
        n, i = p[0], 1
        for _ in range(n):
            if sub == 0x02:  # legacy: event type, addr type, addr, len, data, rssi
                _evt, at = p[i], p[i + 1]
                addr = addr_from_bytes(p[i + 2:i + 8])
                ln = p[i + 8]
                data = p[i + 9:i + 9 + ln]
                i += 9 + ln + 1
            else:  # extended: event type(2) addr type addr phy phy sid tx rssi interval(2) dtype daddr len data
                at = p[i + 2]
                addr = addr_from_bytes(p[i + 3:i + 9])
                ln = p[i + 23]
                data = p[i + 24:i + 24 + ln]
                i += 24 + ln
            self.reports.put(Report(addr, at, bytes(data), sub))

    def _on_acl(self, handle: int, pb: int, data: bytes) -> None:
        c = self.conns.get(handle)
        if c is None:
            return
        if pb in (0x00, 0x02):  # start of an L2CAP PDU
            c.rx = bytearray(data)
            c.rx_len = struct.unpack_from("<H", data)[0] + 4 if len(data) >= 2 else 0
        else:  # continuation
            c.rx += data
        if c.rx_len and len(c.rx) >= c.rx_len:
            pdu = bytes(c.rx[:c.rx_len])
            c.rx = bytearray()
            _ln, cid = struct.unpack_from("<HH", pdu)
            if cid == ATT_CID:
                att = pdu[4:]
                if att[0] == 0x1B:  # Handle Value Notification
                    c.notifications_received += 1
                    c.notifications.put((struct.unpack_from("<H", att, 1)[0], att[3:], time.time()))
                elif att[0] == 0x1D:  # Handle Value Indication: the server waits for our confirmation
                    if c.auto_confirm:  # confirmed before the value is handed on
                        self.confirm(c)
                    c.indications_received += 1
                    c.notifications.put((struct.unpack_from("<H", att, 1)[0], att[3:], time.time()))
                else:
                    c.att.put(att)

    def _send(self, packet: bytes) -> None:
        with self.lock:
            self.sock.sendall(packet)

    # ----- HCI -----
    def command(self, op: int, params: bytes = b"", timeout: float | None = None) -> tuple[int, int, bytes]:
        """Send a command; return (event code, status, return parameters after status)."""
        self._send(struct.pack("<BHB", H4_COMMAND, op, len(params)) + params)
        deadline = time.monotonic() + (timeout if timeout is not None else self.timeout)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise CommandTimeout(f"no reply to command 0x{op:04X}")
            try:
                code, p = self.events.get(timeout=remaining)
            except queue.Empty:
                continue
            if code == EVT_COMMAND_COMPLETE and struct.unpack_from("<H", p, 1)[0] == op:
                return code, p[3], p[4:]
            if code == EVT_COMMAND_STATUS and struct.unpack_from("<H", p, 2)[0] == op:
                return code, p[0], b""
            self.events.put((code, p))  # not ours: keep it for wait_event
            time.sleep(0.001)

    def ok(self, op: int, params: bytes = b"") -> bytes:
        code, status, rp = self.command(op, params)
        if status != 0:
            raise RuntimeError(f"command 0x{op:04X} failed with status 0x{status:02X}")
        return rp

    def wait_event(self, pred, timeout: float = 2.0) -> tuple[int, bytes]:
        deadline = time.monotonic() + timeout
        skipped = []
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("event not received")
                try:
                    ev = self.events.get(timeout=remaining)
                except queue.Empty:
                    continue
                if pred(*ev):
                    return ev
                skipped.append(ev)
        finally:
            for ev in skipped:
                self.events.put(ev)

    def init(self, random_address: str = "C2:00:00:00:00:01") -> dict:
        self.ok(OP_RESET)
        self.ok(OP_SET_EVENT_MASK, struct.pack("<Q", 0x3DBFF807FFFBFFFF))
        self.ok(OP_LE_SET_EVENT_MASK, struct.pack("<Q", 0x00000000000FFFFF))
        bd_addr = addr_from_bytes(self.ok(OP_READ_BD_ADDR)[:6])
        self.le_acl_len, le_acl_num = struct.unpack("<HB", self.ok(OP_LE_READ_BUFFER_SIZE)[:3])
        self.ok(OP_LE_SET_RANDOM_ADDRESS, addr_to_bytes(random_address))
        return {"bd_addr": bd_addr, "le_acl_len": self.le_acl_len, "le_acl_num": le_acl_num}

    def scan(self, seconds: float = 1.0, stop_when=None) -> dict[str, Report]:
        while not self.reports.empty():
            self.reports.get_nowait()
        self.ok(OP_LE_SET_SCAN_PARAMETERS, struct.pack("<BHHBB", 1, 0x0010, 0x0010, 1, 0))
        self.ok(OP_LE_SET_SCAN_ENABLE, bytes([1, 0]))
        found: dict[str, Report] = {}
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline:
                try:
                    r = self.reports.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                found[r.address] = r
                if stop_when and stop_when(found):
                    break
        finally:
            self.ok(OP_LE_SET_SCAN_ENABLE, bytes([0, 0]))
        return found

    def connect(self, address: str, address_type: int = 1, timeout: float = 2.0, own_address_type: int = 1) -> Conn:
        params = struct.pack("<HHBB6sBHHHHHH", 0x0010, 0x0010, 0, address_type, addr_to_bytes(address), own_address_type,
                             0x0018, 0x0028, 0, 0x01F4, 0, 0)
        code, status, _ = self.command(OP_LE_CREATE_CONNECTION, params)
        if status != 0:
            raise RuntimeError(f"LE Create Connection status 0x{status:02X}")

        def is_complete(code, p):
            return code == EVT_LE_META and p[0] in (0x01, 0x0A)
        _code, p = self.wait_event(is_complete, timeout)
        status, handle = p[1], struct.unpack_from("<H", p, 2)[0]
        if status != 0:
            raise RuntimeError(f"connection failed 0x{status:02X}")
        peer = addr_from_bytes(p[6:12])
        c = Conn(handle, peer, complete_subevent=p[0])
        self.conns[handle] = c
        return c

    def disconnect(self, c: Conn, timeout: float = 2.0) -> int:
        self.command(OP_DISCONNECT, struct.pack("<HB", c.handle, 0x13))
        if not c.disconnected.wait(timeout):
            raise TimeoutError("no Disconnection Complete")
        return c.disconnect_reason

    # ----- ACL / ATT -----
    def send_att(self, c: Conn, pdu: bytes) -> None:
        l2cap = struct.pack("<HH", len(pdu), ATT_CID) + pdu
        first = True
        for k in range(0, len(l2cap), self.le_acl_len):
            frag = l2cap[k:k + self.le_acl_len]
            pb = 0x00 if first else 0x01
            self._send(struct.pack("<BHH", H4_ACL, c.handle | (pb << 12), len(frag)) + frag)
            first = False

    def confirm(self, c: Conn) -> None:
        """Handle Value Confirmation (0x1E) for the last indication."""
        self.send_att(c, b"\x1e")
        c.confirmations_sent += 1

    def att_request(self, c: Conn, pdu: bytes, timeout: float = 2.0) -> bytes:
        self.send_att(c, pdu)
        deadline = time.monotonic() + timeout
        while True:
            if c.disconnected.is_set():
                raise Disconnected(f"link dropped (reason 0x{c.disconnect_reason:02X})")
            try:
                return c.att.get(timeout=min(0.05, max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"no ATT response to {pdu[:1].hex()}")

    def exchange_mtu(self, c: Conn, mtu: int = 185) -> int:
        rsp = self.att_request(c, struct.pack("<BH", 0x02, mtu))
        assert rsp[0] == 0x03, rsp.hex()
        c.mtu = min(mtu, struct.unpack_from("<H", rsp, 1)[0])
        return c.mtu

    def discover_services(self, c: Conn) -> list[tuple[int, int, int]]:
        out, start = [], 1
        while start <= 0xFFFF:
            rsp = self.att_request(c, struct.pack("<BHHH", 0x10, start, 0xFFFF, 0x2800))
            if rsp[0] == 0x01:
                break
            assert rsp[0] == 0x11, rsp.hex()
            ln = rsp[1]
            for k in range(2, len(rsp), ln):
                s, e = struct.unpack_from("<HH", rsp, k)
                uuid = struct.unpack_from("<H", rsp, k + 4)[0] if ln == 6 else None
                out.append((s, e, uuid))
                start = e + 1
        return out

    def discover_characteristics(self, c: Conn, start: int, end: int) -> list[tuple[int, int, int]]:
        """[(value handle, properties, uuid16)]"""
        out = []
        while start <= end:
            rsp = self.att_request(c, struct.pack("<BHHH", 0x08, start, end, 0x2803))
            if rsp[0] == 0x01:
                break
            assert rsp[0] == 0x09, rsp.hex()
            ln = rsp[1]
            for k in range(2, len(rsp), ln):
                decl, props, vh = struct.unpack_from("<HBH", rsp, k)
                uuid = struct.unpack_from("<H", rsp, k + 5)[0] if ln == 7 else None
                out.append((vh, props, uuid))
                start = decl + 1
        return out

    def find_cccd(self, c: Conn, start: int, end: int) -> int | None:
        while start <= end:
            rsp = self.att_request(c, struct.pack("<BHH", 0x04, start, end))
            if rsp[0] == 0x01:
                return None
            fmt = rsp[1]
            step = 4 if fmt == 1 else 18
            for k in range(2, len(rsp), step):
                h = struct.unpack_from("<H", rsp, k)[0]
                if fmt == 1 and struct.unpack_from("<H", rsp, k + 2)[0] == 0x2902:
                    return h
                start = h + 1
        return None

    def read(self, c: Conn, handle: int) -> bytes:
        rsp = self.att_request(c, struct.pack("<BH", 0x0A, handle))
        if rsp[0] != 0x0B:
            raise RuntimeError(f"read 0x{handle:04X} failed: {rsp.hex()}")
        return rsp[1:]

    def write(self, c: Conn, handle: int, value: bytes) -> None:
        rsp = self.att_request(c, struct.pack("<BH", 0x12, handle) + value)
        if rsp[0] != 0x13:
            raise RuntimeError(f"write 0x{handle:04X} failed: {rsp.hex()}")

    def gatt_map(self, c: Conn) -> dict[int, dict]:
        """{service uuid16: {"range": (s, e), "chars": {uuid16: (value handle, props, cccd)}}}"""
        services = self.discover_services(c)
        out: dict[int, dict] = {}
        for s, e, su in services:
            chars = self.discover_characteristics(c, s, e)
            entry = {"range": (s, e), "chars": {}}
            for idx, (vh, props, cu) in enumerate(chars):
                char_end = chars[idx + 1][0] - 2 if idx + 1 < len(chars) else e
                cccd = self.find_cccd(c, vh + 1, char_end) if props & 0x30 and vh + 1 <= char_end else None
                entry["chars"][cu] = (vh, props, cccd)
            out[su] = entry
        return out

    def subscribe(self, c: Conn, gmap: dict, service: int, char: int, cccd_value: int | None = None) -> int:
        """Write the CCCD: 0x0001 (notifications) if the characteristic notifies, else 0x0002
        (indications) if it indicates; cccd_value forces a value."""
        vh, props, cccd = gmap[service]["chars"][char]
        if cccd_value is None:
            assert props & 0x30, "characteristic neither notifies nor indicates"
            cccd_value = 0x0001 if props & 0x10 else 0x0002
        assert cccd is not None, "no CCCD"
        self.write(c, cccd, struct.pack("<H", cccd_value))
        return vh

    def notifications(self, c: Conn, count: int, timeout: float = 3.0) -> list[tuple[int, bytes, float]]:
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                out.append(c.notifications.get(timeout=remaining))
            except queue.Empty:
                break
        return out


def read_sent_log(path: str) -> list[dict]:
    try:
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def main(argv: list[str]) -> int:
    hostport = argv[1] if len(argv) > 1 else "127.0.0.1:9000"
    host, _, port = hostport.rpartition(":")
    h = H4Host(host, int(port))
    info = h.init()
    print("controller", info)
    found = h.scan(1.0, stop_when=lambda f: any(0x180D in r.ad["uuids16"] for r in f.values()))
    hr = next(r for r in found.values() if 0x180D in r.ad["uuids16"])
    print("found", hr.address, hr.ad)
    c = h.connect(hr.address, hr.address_type)
    print("mtu", h.exchange_mtu(c))
    gmap = h.gatt_map(c)
    h.subscribe(c, gmap, 0x180D, 0x2A37)
    got = h.notifications(c, 5, timeout=10)
    for handle, value, t in got:
        print(f"notification 0x{handle:04X} {value.hex()}")
    if len(argv) > 2:
        sent = [r["hex"] for r in read_sent_log(argv[2]) if r["characteristic"] == "2A37"]
        print("matches sent log:", [v.hex() for _, v, _ in got] == sent[:len(got)])
    h.disconnect(c)
    h.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
