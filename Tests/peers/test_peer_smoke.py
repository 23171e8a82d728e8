"""Smoke tests of the BLE test peer, driven by the raw H4 host in smoke_client.py.

Run: python3 -m pytest -q Tests/peers
Every wait is bounded; each test starts its own peer and kills it at the end.
"""
from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ble_peer  # noqa: E402  (encoders, to check the sent log's fields against its bytes)
from smoke_client import (  # noqa: E402
    EVT_COMMAND_COMPLETE, EVT_COMMAND_STATUS, EVT_LE_META, OP_LE_CREATE_CONNECTION, OP_LE_SET_PHY, OP_READ_BD_ADDR,
    OP_READ_REMOTE_VERSION, OP_RESET, CommandTimeout, Disconnected, H4Host, addr_to_bytes, opcode, read_sent_log,
)

PEER = os.path.join(HERE, "ble_peer.py")
HR, CSC, BIKE = "C0:4E:47:00:00:01", "C0:4E:47:00:00:02", "C0:4E:47:00:00:03"


class PeerProcess:
    def __init__(self, tmp_path, *extra: str):
        self.sent_log = str(tmp_path / "sent.jsonl")
        self.snoop = str(tmp_path / "h4.btsnoop")
        cmd = [sys.executable, PEER, "--listen", "tcp:127.0.0.1:0", "--control", "tcp:127.0.0.1:0",
               "--sent-log", self.sent_log, "--snoop", self.snoop, *extra]
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        ready, _, _ = select.select([self.proc.stdout], [], [], 5.0)
        if not ready:
            self.kill()
            raise AssertionError("peer printed no ready line within 5 s")
        line = self.proc.stdout.readline()
        self.ready_s = time.monotonic() - self.t0
        if not line:
            err = self.proc.stderr.read().decode()
            raise AssertionError(f"peer exited: {err}")
        self.info = json.loads(line)
        self.ctl = socket.create_connection((self.info["control"]["host"], self.info["control"]["port"]), 2)
        self.ctl_file = self.ctl.makefile("rb")
        self.hosts: list[H4Host] = []

    def control(self, line: str) -> dict:
        self.ctl.sendall(line.encode() + b"\n")
        reply = self.ctl_file.readline()
        assert reply, "control channel closed"
        return json.loads(reply)

    def host(self) -> H4Host:
        h = H4Host(self.info["h4"]["host"], self.info["h4"]["port"])
        self.hosts.append(h)
        return h

    def sent(self, peripheral: str | None = None) -> list[dict]:
        return [r for r in read_sent_log(self.sent_log) if peripheral in (None, r["peripheral"])]

    def kill(self) -> None:
        for h in getattr(self, "hosts", []):
            h.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(3)


@pytest.fixture
def peer_factory(tmp_path):
    peers: list[PeerProcess] = []

    def start(*extra: str) -> PeerProcess:
        p = PeerProcess(tmp_path, *extra)
        peers.append(p)
        return p
    yield start
    for p in peers:
        p.kill()


@pytest.fixture(autouse=True)
def hard_timeout():
    """Safety net on top of the bounded waits: no test may run for more than 30 s."""
    def on_alarm(*_):
        raise TimeoutError("test exceeded 30 s")
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def connect_subscribed(h: H4Host, address: str, service: int, char: int):
    found = h.scan(2.0, stop_when=lambda f: address in f)
    assert address in found, f"{address} not advertising; saw {list(found)}"
    c = h.connect(address, found[address].address_type)
    assert h.exchange_mtu(c, 185) == 185
    gmap = h.gatt_map(c)
    vh = h.subscribe(c, gmap, service, char)
    return c, gmap, vh


def assert_matches_sent_log(peer: PeerProcess, pid: str, got, vh: int) -> list[dict]:
    """The notifications received are exactly the first ones the peer logged, byte for byte."""
    deadline = time.monotonic() + 2
    while True:
        sent = [r for r in peer.sent(pid) if r["malformed"] is None]
        if len(sent) >= len(got) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert [v.hex() for _, v, _ in got] == [r["hex"] for r in sent[:len(got)]]
    assert all(handle == vh for handle, _, _ in got)
    assert [r["seq"] for r in sent[:len(got)]] == list(range(len(got)))
    for r in sent[:len(got)]:
        assert r["handle"] == vh
        # the logged fields encode to exactly the logged bytes
        assert ble_peer.ENCODERS[r["kind"]](r["fields"]).hex() == r["hex"]
    return sent[:len(got)]


# ---------------------------------------------------------------------------------------------
def test_ready_line_describes_peer(peer_factory):
    p = peer_factory("--peripheral", "hr", "--peripheral", "csc:My CSC",
                     "--peripheral", "ftms-bike::C1:22:33:44:55:66")
    info = p.info
    assert info["ready"] is True and info["protocol"] == 1 and info["pid"] == p.proc.pid
    assert info["h4"]["kind"] == "tcp" and info["h4"]["port"] > 0
    assert info["control"]["port"] > 0 and info["control"]["port"] != info["h4"]["port"]
    periph = {x["id"]: x for x in info["peripherals"]}
    assert periph["hr"]["name"] == "HG HR" and periph["hr"]["address"] == HR
    assert periph["csc"]["name"] == "My CSC" and periph["csc"]["address"] == CSC
    assert periph["ftms-bike"]["address"] == "C1:22:33:44:55:66"
    assert periph["hr"]["services"] == ["180D", "180F", "180A"]
    assert periph["ftms-bike"]["measurement"] == {"service": "1826", "characteristic": "2AD2"}
    # and all three advertise their name, UUIDs (and FTMS service data) over the H4 link
    h = p.host()
    info2 = h.init()
    assert info2 == {"bd_addr": "F0:F1:F2:F3:F4:F5", "le_acl_len": 27, "le_acl_num": 64}
    found = h.scan(2.0, stop_when=lambda f: len(f) >= 3)
    assert found[HR].ad["name"] == "HG HR" and found[HR].address_type == 1
    assert found[HR].ad["uuids16"] == [0x180D, 0x180F, 0x180A]
    assert found[CSC].ad["name"] == "My CSC" and 0x1816 in found[CSC].ad["uuids16"]
    bike = found["C1:22:33:44:55:66"].ad
    assert 0x1826 in bike["uuids16"] and bike["service_data"] == ["261801" + "2000"]
    assert {r.subevent for r in found.values()} <= {0x02, 0x0D}


def test_hr_notifications_match_sent_log(peer_factory):
    p = peer_factory("--peripheral", "hr", "--rate", "20")
    h = p.host()
    h.init()
    c, gmap, vh = connect_subscribed(h, HR, 0x180D, 0x2A37)
    assert set(gmap) >= {0x1800, 0x180D, 0x180F, 0x180A}
    got = h.notifications(c, 12, timeout=5)
    assert len(got) >= 5, f"only {len(got)} notifications"
    sent = assert_matches_sent_log(p, "hr", got, vh)
    # RR intervals are in 1/1024 s and plausible for the bpm (not the upstream integer-second bug)
    rr_checked = 0
    for r in sent:
        f = r["fields"]
        for rr in f["rr"]:
            assert abs(rr / 1024 - 60 / f["bpm"]) < 0.05
            rr_checked += 1
    assert rr_checked >= 5
    value = bytes.fromhex(sent[0]["hex"])
    assert value[0] & 0x18 == 0x18  # sample 0 carries energy expended and RR intervals
    # static characteristics
    chars = gmap[0x180A]["chars"]
    assert h.read(c, chars[0x2A29][0]) == b"HealthGate Test Peer"
    assert h.read(c, chars[0x2A24][0]) == b"HG-HR"
    assert h.read(c, chars[0x2A25][0]) == b"47000001"
    assert h.read(c, chars[0x2A26][0]) == b"1.0.0"
    assert h.read(c, gmap[0x180F]["chars"][0x2A19][0]) == bytes([87])
    assert h.read(c, gmap[0x180D]["chars"][0x2A38][0]) == bytes([1])
    assert h.disconnect(c) == 0x16  # connection terminated by local host


def test_two_peripherals_at_once(peer_factory):
    p = peer_factory("--peripheral", "hr", "--peripheral", "csc", "--rate", "20")
    h = p.host()
    h.init()
    c_hr, _, vh_hr = connect_subscribed(h, HR, 0x180D, 0x2A37)
    c_csc, gmap, vh_csc = connect_subscribed(h, CSC, 0x1816, 0x2A5B)
    assert c_hr.handle != c_csc.handle
    assert h.read(c_csc, gmap[0x1816]["chars"][0x2A5C][0]) == b"\x03\x00"
    got_hr = h.notifications(c_hr, 6, timeout=5)
    got_csc = h.notifications(c_csc, 6, timeout=5)
    assert len(got_hr) >= 5 and len(got_csc) >= 5
    assert_matches_sent_log(p, "hr", got_hr, vh_hr)
    sent = assert_matches_sent_log(p, "csc", got_csc, vh_csc)
    for _, v, _ in got_csc:
        assert v[0] == 0x03 and len(v) == 11  # wheel and crank data
    # counters start near their rollovers
    assert any(r["fields"]["crank_event"] < 2048 for r in sent)
    status = p.control("status")
    assert status["ok"] and all(len(x["connections"]) == 1 and x["connections"][0]["subscribed"]
                                for x in status["peripherals"].values())


def test_ftms_bike(peer_factory):
    p = peer_factory("--peripheral", "ftms-bike", "--rate", "20")
    h = p.host()
    h.init()
    c, gmap, vh = connect_subscribed(h, BIKE, 0x1826, 0x2AD2)
    feature = h.read(c, gmap[0x1826]["chars"][0x2ACC][0])
    assert struct.unpack("<II", feature) == ((1 << 1) | (1 << 10) | (1 << 14), 0)
    got = h.notifications(c, 5, timeout=5)
    assert len(got) == 5
    sent = assert_matches_sent_log(p, "ftms-bike", got, vh)
    for (_, v, _), r in zip(got, sent):
        flags, speed, cadence, power, hr = struct.unpack("<HHHhB", v)
        assert flags == 0x0244
        f = r["fields"]
        assert speed == round(f["speed_kmh"] * 100) and cadence == f["cadence_rpm"] * 2
        assert power == f["power_w"] and hr == f["heart_rate"]


def test_values_file_drives_exact_bytes(peer_factory, tmp_path):
    values = tmp_path / "values.json"
    values.write_text(json.dumps({"hr": [
        {"bpm": 61, "rr": [1007], "energy_kj": 300, "contact": "detected"},
        {"bpm": 300, "rr": []},
        {"hex": "00ff"},
    ]}))
    p = peer_factory("--peripheral", "hr", "--rate", "20", "--values", str(values))
    h = p.host()
    h.init()
    c, _, _ = connect_subscribed(h, HR, 0x180D, 0x2A37)
    got = [v.hex() for _, v, _ in h.notifications(c, 4, timeout=5)]
    assert got == ["1e3d2c01ef03", "072c01", "00ff", "1e3d2c01ef03"]


def test_stop_start_and_reconnect(peer_factory):
    p = peer_factory("--peripheral", "hr", "--rate", "20")
    h = p.host()
    h.init()
    c, _, _ = connect_subscribed(h, HR, 0x180D, 0x2A37)
    assert len(h.notifications(c, 2, timeout=3)) == 2
    reply = p.control("stop hr")
    assert reply == {"ok": True, "cmd": "stop", "peripheral": "hr", "advertising": False, "connections": 0}
    assert c.disconnected.wait(2) and c.disconnect_reason == 0x13
    assert HR not in h.scan(0.6)
    assert p.control("status")["peripherals"]["hr"]["advertising"] is False
    assert p.control("start hr") == {"ok": True, "cmd": "start", "peripheral": "hr", "advertising": True}
    c2, _, vh = connect_subscribed(h, HR, 0x180D, 0x2A37)
    got = h.notifications(c2, 3, timeout=3)
    assert len(got) == 3 and all(handle == vh for handle, _, _ in got)
    assert p.control("status")["peripherals"]["hr"]["connections_total"] == 2


def test_create_connection_cancel_ends_the_attempt(peer_factory):
    """LE Create Connection Cancel as the specification says (Bumble alone leaves the attempt
    pending, refusing every later create with Command Disallowed): Command Complete (success),
    then LE Connection Complete with status Unknown Connection Identifier (0x02); a cancel with
    nothing pending is disallowed; a new attempt is accepted and connects."""
    p = peer_factory("--peripheral", "hr", "--rate", "20")
    h = p.host()
    h.init()
    cancel = opcode(0x08, 0x000E)
    assert p.control("stop hr")["advertising"] is False
    params = struct.pack("<HHBB6sBHHHHHH", 0x0010, 0x0010, 0, 1, addr_to_bytes(HR), 1, 0x0018, 0x0028, 0, 0x01F4, 0, 0)
    assert h.command(OP_LE_CREATE_CONNECTION, params)[:2] == (EVT_COMMAND_STATUS, 0)  # pending: nobody advertises
    assert h.command(cancel)[:2] == (EVT_COMMAND_COMPLETE, 0)
    _, ev = h.wait_event(lambda code, ev: code == EVT_LE_META and ev[0] in (0x01, 0x0A))
    assert ev[1] == 0x02  # Unknown Connection Identifier
    assert h.command(cancel)[:2] == (EVT_COMMAND_COMPLETE, 0x0C)  # nothing pending: Command Disallowed
    assert p.control("start hr")["advertising"] is True
    c = h.connect(HR)
    assert c.peer == HR and h.disconnect(c) == 0x16


def test_pause_and_resume_keep_the_link(peer_factory):
    p = peer_factory("--peripheral", "hr", "--rate", "20")
    h = p.host()
    h.init()
    c, _, vh = connect_subscribed(h, HR, 0x180D, 0x2A37)
    got = h.notifications(c, 3, timeout=3)
    reply = p.control("pause hr")
    assert reply["ok"] and reply["paused"] is True
    # everything sent before the reply is logged, and nothing more comes while paused
    got += h.notifications(c, 1000, timeout=0.5)
    assert len(got) == reply["sent"] == len(p.sent("hr"))
    assert h.notifications(c, 1, timeout=0.5) == []
    assert p.control("status")["peripherals"]["hr"]["paused"] is True
    assert p.control("resume hr")["paused"] is False
    got += h.notifications(c, 3, timeout=3)
    assert_matches_sent_log(p, "hr", got, vh)
    assert not c.disconnected.is_set()


def test_enhanced_connection_complete_when_the_host_asks_for_it(peer_factory):
    """Linux sets LE event mask bit 9 and waits for LE Enhanced Connection Complete (0x0A); a host
    that does not set it gets the legacy event (0x01)."""
    p = peer_factory("--peripheral", "hr", "--peripheral", "csc", "--rate", "20")
    h = p.host()
    h.init()  # LE event mask 0xFFFFF: bit 9 set
    found = h.scan(2.0, stop_when=lambda f: HR in f and CSC in f)
    c = h.connect(HR, found[HR].address_type)
    assert c.complete_subevent == 0x0A and c.peer == HR
    h.ok(0x2001, struct.pack("<Q", 0x1F))  # LE Set Event Mask: the default, bit 9 clear
    c2 = h.connect(CSC, found[CSC].address_type)
    assert c2.complete_subevent == 0x01 and c2.peer == CSC
    assert h.disconnect(c) == 0x16 and h.disconnect(c2) == 0x16


def test_host_connecting_from_its_public_address(peer_factory):
    """bluetoothd connects from the controller's public address by default: data must flow both
    ways on that link too (Bumble's LocalLink sent it from the random address, reaching nothing)."""
    p = peer_factory("--peripheral", "hr", "--rate", "20")
    h = p.host()
    h.init()
    found = h.scan(2.0, stop_when=lambda f: HR in f)
    c = h.connect(HR, found[HR].address_type, own_address_type=0)
    assert h.exchange_mtu(c, 185) == 185
    vh = h.subscribe(c, h.gatt_map(c), 0x180D, 0x2A37)
    got = h.notifications(c, 3, timeout=3)
    assert len(got) == 3
    assert_matches_sent_log(p, "hr", got, vh)
    assert p.control("status")["peripherals"]["hr"]["connections"][0]["central"] == "F0:F1:F2:F3:F4:F5/P"  # public


def test_silence_commands_then_recover(peer_factory):
    p = peer_factory("--peripheral", "hr")
    h = p.host()
    h.init()
    assert p.control("silence-commands on") == {"ok": True, "cmd": "silence-commands", "silence": True}
    t0 = time.monotonic()
    with pytest.raises(CommandTimeout):
        h.command(OP_READ_BD_ADDR, timeout=2.0)
    assert 2.0 <= time.monotonic() - t0 < 2.5
    assert p.control("status")["commands_silenced"] == 1
    assert p.control("silence-commands off")["silence"] is False
    code, status, rp = h.command(OP_READ_BD_ADDR)
    assert (code, status, rp[:6]) == (EVT_COMMAND_COMPLETE, 0, bytes.fromhex("F5F4F3F2F1F0"))
    # the host can carry on: reset and find the peripheral
    h.init()
    assert HR in h.scan(2.0, stop_when=lambda f: HR in f)


def test_unknown_and_unanswered_commands_get_status_0x01(peer_factory):
    p = peer_factory("--peripheral", "hr")
    h = p.host()
    h.init()
    # vendor opcode: unknown to the controller
    assert h.command(0xFC01, b"\x00") == (EVT_COMMAND_COMPLETE, 0x01, b"")
    # LE Set PHY and Read Remote Version Information: known commands bumble leaves unanswered
    code, status, _ = h.command(OP_LE_SET_PHY, struct.pack("<HBBBH", 1, 0, 1, 1, 0))
    assert (code, status) == (EVT_COMMAND_STATUS, 0x01)
    code, status, _ = h.command(OP_READ_REMOTE_VERSION, struct.pack("<H", 1))
    assert (code, status) == (EVT_COMMAND_STATUS, 0x01)
    # LE Read Channel Map: a "complete" command bumble leaves unanswered
    assert h.command(0x2015, struct.pack("<H", 1))[:2] == (EVT_COMMAND_COMPLETE, 0x01)
    # truncated parameters: Invalid HCI Command Parameters
    assert h.command(0x2005, b"\x01\x02")[:2] == (EVT_COMMAND_COMPLETE, 0x12)
    assert p.control("status")["commands_answered_by_peer"] == 5


def test_reset_and_host_restart_drop_links(peer_factory):
    p = peer_factory("--peripheral", "hr", "--rate", "10")
    h = p.host()
    h.init()
    connect_subscribed(h, HR, 0x180D, 0x2A37)
    code, status, _ = h.command(OP_RESET)
    assert (code, status) == (EVT_COMMAND_COMPLETE, 0)
    # the peripheral saw the link drop and advertises again
    h.init()
    c, _, _ = connect_subscribed(h, HR, 0x180D, 0x2A37)
    assert len(h.notifications(c, 2, timeout=3)) == 2
    # a host that dies without disconnecting: the next host finds the peripheral advertising
    h.close()
    h2 = p.host()
    h2.init(random_address="C2:00:00:00:00:02")
    c2, _, _ = connect_subscribed(h2, HR, 0x180D, 0x2A37)
    assert len(h2.notifications(c2, 2, timeout=3)) == 2
    st = p.control("status")
    assert st["resets"] >= 3 and st["h4_clients_total"] == 2
    assert st["peripherals"]["hr"]["connections_total"] == 3
    assert [x["central"] for x in st["peripherals"]["hr"]["connections"]] == ["C2:00:00:00:00:02"]
    # a new client replaces a live one: the old link is dropped, the old socket closed
    h3 = p.host()
    deadline = time.monotonic() + 2
    while p.control("status")["peripherals"]["hr"]["connections"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert p.control("status")["peripherals"]["hr"]["connections"] == []
    h3.init(random_address="C2:00:00:00:00:03")
    assert HR in h3.scan(2.0, stop_when=lambda f: HR in f)
    h2.thread.join(2)
    assert not h2.thread.is_alive()  # the peer closed the replaced client's socket


def test_disconnect_during_discovery(peer_factory):
    p = peer_factory("--peripheral", "csc")
    h = p.host()
    h.init()
    assert p.control("disconnect-during-discovery csc")["armed"] is True
    found = h.scan(2.0, stop_when=lambda f: CSC in f)
    c = h.connect(CSC, found[CSC].address_type)
    h.exchange_mtu(c)
    with pytest.raises(Disconnected):
        h.discover_services(c)
    assert c.disconnect_reason == 0x13
    st = p.control("status")["peripherals"]["csc"]
    assert st["disconnect_during_discovery_fired"] == 1 and not st["disconnect_during_discovery_armed"]
    # one-shot: the next connection discovers normally
    c2, gmap, _ = connect_subscribed(h, CSC, 0x1816, 0x2A5B)
    assert 0x1816 in gmap


def test_malformed_notifications(peer_factory):
    p = peer_factory("--peripheral", "hr", "--rate", "2")
    h = p.host()
    h.init()
    c, _, vh = connect_subscribed(h, HR, 0x180D, 0x2A37)
    reply = p.control('{"cmd": "malformed", "args": ["hr"]}')
    assert reply["ok"] and len(reply["sent"]) == 4
    expected = [x["hex"] for x in reply["sent"]]
    got = [v.hex() for handle, v, _ in h.notifications(c, 8, timeout=3)]
    assert [g for g in got if g in expected] == expected  # in order, interleaved with good ones
    logged = [r for r in p.sent("hr") if r["malformed"]]
    assert [r["hex"] for r in logged] == expected and all(r["fields"] is None for r in logged)
    assert p.control("status")["peripherals"]["hr"]["malformed_sent"] == 4


def test_control_errors(peer_factory):
    p = peer_factory("--peripheral", "hr")
    assert p.control("ping") == {"ok": True, "cmd": "ping"}
    r = p.control("stop nosuch")
    assert r["ok"] is False and "nosuch" in r["error"]
    r = p.control("frobnicate")
    assert r["ok"] is False and r["cmd"] == "frobnicate"
    assert p.control("malformed hr") == {"ok": False, "cmd": "malformed", "peripheral": "hr",
                                         "error": "no subscribed connection"}
    assert p.control("silence-commands maybe")["ok"] is False


def test_snoop_direction_flags(peer_factory):
    p = peer_factory("--peripheral", "hr")
    h = p.host()
    h.init()
    h.close()
    p.kill()
    data = open(p.snoop, "rb").read()
    assert data[:8] == b"btsnoop\0" and struct.unpack(">II", data[8:16]) == (1, 1002)
    records, k = [], 16
    while k < len(data):
        orig, incl, flags, _drops, _ts = struct.unpack_from(">IIIIQ", data, k)
        records.append((flags, data[k + 24:k + 24 + incl]))
        k += 24 + incl
    # first the Reset command, sent by the host (flags: sent=0, command/event=2)
    assert records[0] == (0x02, bytes.fromhex("01030c00"))
    # then its Command Complete, received from the controller
    assert records[1] == (0x03, bytes.fromhex("040e0401030c00"))
    assert all(f in (0x02, 0x03) for f, _ in records)
    assert all((f & 1) == (pkt[0] == 0x04) for f, pkt in records)


def test_exits_on_sigterm_and_stdin_eof(peer_factory):
    p = peer_factory("--peripheral", "hr")
    p.proc.send_signal(signal.SIGTERM)
    assert p.proc.wait(3) == 0
    p2 = peer_factory("--peripheral", "hr")
    p2.proc.stdin.close()
    assert p2.proc.wait(3) == 0


def test_seeded_samples_are_the_same_in_every_process():
    def seq():
        out = []
        for k in ble_peer.KINDS:
            script = ble_peer.SeededScript(k, "1:" + k)
            out += [ble_peer.ENCODERS[k](script.next()).hex() for _ in range(50)]
        return out
    code = ("import sys, json; sys.path.insert(0, %r); import ble_peer\n"
            "out = []\n"
            "for k in ble_peer.KINDS:\n"
            "    s = ble_peer.SeededScript(k, '1:' + k)\n"
            "    out += [ble_peer.ENCODERS[k](s.next()).hex() for _ in range(50)]\n"
            "print(json.dumps(out))") % HERE
    expected = seq()
    assert len(set(expected)) > 100  # the samples vary
    for hashseed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hashseed)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                             timeout=10, check=True).stdout
        assert json.loads(out) == expected


def test_unix_socket_endpoints(tmp_path):
    h4_path, ctl_path = str(tmp_path / "h4.sock"), str(tmp_path / "ctl.sock")
    proc = subprocess.Popen([sys.executable, PEER, "--listen", f"unix:{h4_path}", "--control", f"unix:{ctl_path}"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert select.select([proc.stdout], [], [], 5.0)[0]
        info = json.loads(proc.stdout.readline())
        assert info["h4"] == {"kind": "unix", "path": h4_path}
        assert info["control"] == {"kind": "unix", "path": ctl_path}
        ctl = socket.socket(socket.AF_UNIX)
        ctl.settimeout(2)
        ctl.connect(ctl_path)
        ctl.sendall(b"ping\n")
        assert json.loads(ctl.makefile("rb").readline()) == {"ok": True, "cmd": "ping"}
        h4 = socket.socket(socket.AF_UNIX)
        h4.settimeout(2)
        h4.connect(h4_path)
        h4.sendall(bytes.fromhex("01030c00"))  # HCI Reset
        assert h4.recv(7) == bytes.fromhex("040e0401030c00")
        ctl.close()
        h4.close()
    finally:
        proc.stdin.close()
        assert proc.wait(3) == 0
    assert not os.path.exists(h4_path) and not os.path.exists(ctl_path)


# ---------------------------------------------------------------------------------------------
# The health and fitness kinds added after hr/csc/ftms-bike
# ---------------------------------------------------------------------------------------------
RSC, POWER, SCALE, BP, THERMO, PLX = (f"C0:4E:47:00:00:{k:02X}" for k in range(4, 10))
# kind: (default address, service, measurement characteristic, indicated?)
NEW_KINDS = {
    "rsc": (RSC, 0x1814, 0x2A53, False),
    "power": (POWER, 0x1818, 0x2A63, False),
    "scale": (SCALE, 0x181D, 0x2A9D, True),
    "bp": (BP, 0x1810, 0x2A35, True),
    "thermometer": (THERMO, 0x1809, 0x2A1C, True),
    "plx": (PLX, 0x1822, 0x2A5F, False),
}


# Decoders written here from the GATT specifications, independently of ble_peer's encoders.
def dec_sfloat(raw: int) -> float:
    mantissa, exponent = raw & 0x0FFF, raw >> 12
    mantissa -= 0x1000 if mantissa & 0x800 else 0
    exponent -= 0x10 if exponent & 0x8 else 0
    return mantissa * 10.0 ** exponent


def dec_float(raw: int) -> float:
    mantissa, exponent = raw & 0xFFFFFF, raw >> 24
    mantissa -= 0x1000000 if mantissa & 0x800000 else 0
    exponent -= 0x100 if exponent & 0x80 else 0
    return mantissa * 10.0 ** exponent


def dec_date_time(b: bytes) -> str:
    year, month, day, hour, minute, second = struct.unpack("<HBBBBB", b)
    return f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}"


class Reader:
    def __init__(self, v: bytes):
        self.v, self.k = v, 0

    def take(self, fmt: str):
        out = struct.unpack_from("<" + fmt, self.v, self.k)
        self.k += struct.calcsize("<" + fmt)
        return out[0] if len(out) == 1 else out

    def date_time(self) -> str:
        self.k += 7
        return dec_date_time(self.v[self.k - 7:self.k])

    def done(self) -> None:
        assert self.k == len(self.v), f"{len(self.v) - self.k} bytes left over in {self.v.hex()}"


def decode(kind: str, v: bytes) -> dict:
    """The value's fields, named as in the sent log (absent optional fields: None)."""
    r = Reader(v)
    if kind == "rsc":
        flags = r.take("B")
        out = {"speed_mps": r.take("H") / 256, "cadence_spm": r.take("B"),
               "stride_m": r.take("H") / 100 if flags & 0x01 else None,
               "distance_m": r.take("I") / 10 if flags & 0x02 else None,
               "running": bool(flags & 0x04)}
    elif kind == "power":
        flags = r.take("H")
        out = {"power_w": r.take("h")}
        assert flags & 0x01 == (flags & 0x02) >> 1  # balance always referenced to the left pedal
        out["balance_pct"] = r.take("B") / 2 if flags & 0x01 else None
        out["crank_revs"], out["crank_event"] = r.take("HH") if flags & 0x20 else (None, None)
        assert flags & ~0x0023 == 0
    elif kind == "scale":
        flags = r.take("B")
        assert flags & 0x01 == 0  # SI units
        out = {"weight_kg": r.take("H") * 0.005,
               "timestamp": r.date_time() if flags & 0x02 else None,
               "user_id": r.take("B") if flags & 0x04 else None}
        bmi, height = r.take("HH") if flags & 0x08 else (None, None)
        out["bmi"] = bmi * 0.1 if bmi is not None else None
        out["height_m"] = height * 0.001 if height is not None else None
    elif kind == "bp":
        flags = r.take("B")
        out = {"systolic": dec_sfloat(r.take("H")), "diastolic": dec_sfloat(r.take("H")),
               "map": dec_sfloat(r.take("H")), "unit": "kPa" if flags & 0x01 else "mmHg",
               "timestamp": r.date_time() if flags & 0x02 else None,
               "pulse_bpm": dec_sfloat(r.take("H")) if flags & 0x04 else None,
               "user_id": r.take("B") if flags & 0x08 else None,
               "status": r.take("H") if flags & 0x10 else None}
    elif kind == "thermometer":
        flags = r.take("B")
        assert flags & 0x01 == 0  # Celsius
        out = {"temperature_c": dec_float(r.take("I")),
               "timestamp": r.date_time() if flags & 0x02 else None,
               "type": r.take("B") if flags & 0x04 else None}
    elif kind == "plx":
        assert r.take("B") == 0
        out = {"spo2_pct": dec_sfloat(r.take("H")), "pulse_bpm": dec_sfloat(r.take("H"))}
    else:
        raise ValueError(kind)
    r.done()
    return out


def assert_same_fields(decoded: dict, logged: dict) -> None:
    assert set(decoded) == set(logged), (decoded, logged)
    for k, v in decoded.items():
        if isinstance(v, float):
            assert logged[k] == pytest.approx(v, abs=1e-9), (k, decoded, logged)
        else:
            assert logged[k] == v, (k, decoded, logged)


def test_new_kinds_ready_line_and_advertising(peer_factory):
    p = peer_factory("--peripheral", "hr", *[a for k in NEW_KINDS for a in ("--peripheral", k)])
    periph = {x["id"]: x for x in p.info["peripherals"]}
    # the existing kinds keep their entries; the new ones continue the address scheme
    assert periph["hr"]["address"] == HR
    assert periph["hr"]["measurement"] == {"service": "180D", "characteristic": "2A37"}
    names = {"rsc": "HG RSC", "power": "HG Power", "scale": "HG Scale", "bp": "HG BP",
             "thermometer": "HG Thermo", "plx": "HG PLX"}
    for kind, (addr, svc, char, indicated) in NEW_KINDS.items():
        e = periph[kind]
        assert (e["kind"], e["name"], e["address"], e["address_type"]) == (kind, names[kind], addr, "random")
        assert e["services"] == [f"{svc:04X}", "180F", "180A"]
        expected = {"service": f"{svc:04X}", "characteristic": f"{char:04X}"}
        if indicated:
            expected["indicate"] = True
        assert e["measurement"] == expected
    h = p.host()
    h.init()
    found = h.scan(3.0, stop_when=lambda f: len(f) >= 7)
    for kind, (addr, svc, _, _) in NEW_KINDS.items():
        assert found[addr].ad["name"] == names[kind] and found[addr].address_type == 1
        assert found[addr].ad["uuids16"] == [svc, 0x180F, 0x180A]


def check_new_kind_values(p: PeerProcess, h: H4Host, kinds: list[str], count: int = 5) -> dict:
    """Connect to each kind, subscribe as the characteristic allows, receive `count` values and
    check them against the sent log, byte for byte and decoded field by field."""
    links = {}
    for kind in kinds:
        addr, svc, char, indicated = NEW_KINDS[kind]
        c, gmap, vh = connect_subscribed(h, addr, svc, char)
        props = gmap[svc]["chars"][char][1]
        assert props & 0x30 == (0x20 if indicated else 0x10)
        assert set(gmap) >= {0x1800, svc, 0x180F, 0x180A}
        assert h.read(c, gmap[0x180F]["chars"][0x2A19][0]) == bytes([87])
        assert h.read(c, gmap[0x180A]["chars"][0x2A25][0]) == addr.replace(":", "")[-8:].encode()
        links[kind] = (c, gmap, vh)
    for kind in kinds:
        c, gmap, vh = links[kind]
        got = h.notifications(c, count, timeout=5)
        assert len(got) == count, f"{kind}: {len(got)} values"
        sent = assert_matches_sent_log(p, kind, got, vh)
        for (_, v, _), r in zip(got, sent):
            assert_same_fields(decode(kind, v), r["fields"])
        indicated = NEW_KINDS[kind][3]
        if indicated:
            assert c.notifications_received == 0 and c.indications_received >= count
            assert c.confirmations_sent >= count  # (more values may be arriving meanwhile)
        else:
            assert c.indications_received == 0 and c.notifications_received >= count
    return links


def test_new_notifying_kinds_match_sent_log(peer_factory):
    p = peer_factory("--peripheral", "rsc", "--peripheral", "power", "--peripheral", "plx", "--rate", "20")
    h = p.host()
    h.init()
    links = check_new_kind_values(p, h, ["rsc", "power", "plx"], count=6)
    c, gmap, _ = links["rsc"]
    assert struct.unpack("<H", h.read(c, gmap[0x1814]["chars"][0x2A54][0]))[0] == 0x0007
    assert h.read(c, gmap[0x1814]["chars"][0x2A5D][0]) == bytes([2])
    c, gmap, _ = links["power"]
    assert struct.unpack("<I", h.read(c, gmap[0x1818]["chars"][0x2A65][0]))[0] == 0x00000009
    assert h.read(c, gmap[0x1818]["chars"][0x2A5D][0]) == bytes([5])
    c, gmap, _ = links["plx"]
    assert h.read(c, gmap[0x1822]["chars"][0x2A60][0]) == b"\x00\x00"
    # the scripted variations are on the air: walking/stride/distance and balance come and go
    rsc = [r["fields"] for r in p.sent("rsc")[:6]]
    assert {f["stride_m"] is None for f in rsc} == {True, False}
    assert {f["distance_m"] is None for f in rsc} == {True, False}
    power = [r["fields"] for r in p.sent("power")[:6]]
    assert {f["balance_pct"] is None for f in power} == {True, False}
    assert any(f["crank_event"] < 4096 for f in power)  # event time rolled over


def test_new_indicating_kinds_confirmed_and_match_sent_log(peer_factory):
    p = peer_factory("--peripheral", "scale", "--peripheral", "bp", "--peripheral", "thermometer",
                     "--rate", "20")
    h = p.host()
    h.init()
    # a CCCD asking for notifications does not start an indicate-only characteristic
    found = h.scan(2.0, stop_when=lambda f: SCALE in f)
    c0 = h.connect(SCALE, found[SCALE].address_type)
    gmap0 = h.gatt_map(c0)
    h.subscribe(c0, gmap0, 0x181D, 0x2A9D, cccd_value=0x0001)
    assert h.notifications(c0, 1, timeout=0.4) == []
    assert p.control("status")["peripherals"]["scale"]["connections"][0]["subscribed"] is False
    assert struct.unpack("<I", h.read(c0, gmap0[0x181D]["chars"][0x2A9E][0]))[0] == 0x000001BF
    assert h.disconnect(c0) == 0x16
    links = check_new_kind_values(p, h, ["scale", "bp", "thermometer"], count=6)
    c, gmap, _ = links["bp"]
    assert struct.unpack("<H", h.read(c, gmap[0x1810]["chars"][0x2A49][0]))[0] == 0x0005
    st = p.control("status")["peripherals"]
    for kind in ("scale", "bp", "thermometer"):
        assert st[kind]["indications_confirmed"] >= 6 and st[kind]["indication_timeouts"] == 0
    # time stamps: 2026-11-01 07:00 plus the sample index in minutes, where present
    for kind in ("scale", "bp", "thermometer"):
        sent = p.sent(kind)[:6]
        stamps = [(r["seq"], r["fields"]["timestamp"]) for r in sent]
        assert any(t is None for _, t in stamps) and stamps[0] == (0, "2026-11-01T07:00:00")
        assert all(t is None or t == f"2026-11-01T07:{seq:02d}:00" for seq, t in stamps)


def test_indications_wait_for_the_confirmation(peer_factory):
    p = peer_factory("--peripheral", "thermometer", "--rate", "20", "--indication-timeout", "1")
    h = p.host()
    h.init()
    found = h.scan(2.0, stop_when=lambda f: THERMO in f)
    c = h.connect(THERMO, found[THERMO].address_type)
    c.auto_confirm = False
    gmap = h.gatt_map(c)
    vh = h.subscribe(c, gmap, 0x1809, 0x2A1C)
    first = h.notifications(c, 1, timeout=2)
    assert len(first) == 1 and first[0][0] == vh
    # nothing more until the host confirms (ATT: one indication in flight), however high the rate
    assert h.notifications(c, 1, timeout=0.4) == []
    st = p.control("status")["peripherals"]["thermometer"]
    assert st["sent"] == 1 and st["connections"][0]["indication_pending"] is True
    h.confirm(c)
    second = h.notifications(c, 1, timeout=1)
    assert len(second) == 1
    t_second = second[0][2]
    # the second is never confirmed: after --indication-timeout the peer drops the link
    assert c.disconnected.wait(3) and c.disconnect_reason == 0x13
    assert 0.9 <= time.time() - t_second < 2.5
    st = p.control("status")["peripherals"]["thermometer"]
    assert (st["sent"], st["indications_confirmed"], st["indication_timeouts"]) == (2, 1, 1)
    assert [r["seq"] for r in p.sent("thermometer")] == [0, 1]
    assert [bytes.fromhex(r["hex"]) for r in p.sent("thermometer")] == [first[0][1], second[0][1]]


def test_new_kinds_control_commands(peer_factory):
    p = peer_factory(*[a for k in NEW_KINDS for a in ("--peripheral", k)], "--rate", "2")
    h = p.host()
    h.init()
    links = {}
    for kind, (addr, svc, char, _) in NEW_KINDS.items():
        links[kind] = connect_subscribed(h, addr, svc, char)
    # malformed: each kind's broken values of its own characteristic, in order, logged
    for kind in NEW_KINDS:
        reply = p.control(f"malformed {kind}")
        assert reply["ok"] and len(reply["sent"]) == 3, reply
        expected = [x["hex"] for x in reply["sent"]]
        assert expected == [v.hex() for _, v in ble_peer.MALFORMED[kind]]
        c, _, vh = links[kind]
        got, deadline = [], time.monotonic() + 3
        while [g for g in got if g in expected] != expected and time.monotonic() < deadline:
            got += [v.hex() for handle, v, _ in h.notifications(c, 1, timeout=0.2) if handle == vh]
        assert [g for g in got if g in expected] == expected, (kind, got)
        logged = [r for r in p.sent(kind) if r["malformed"]]
        assert [r["hex"] for r in logged] == expected and all(r["fields"] is None for r in logged)
        assert [r["malformed"] for r in logged] == [d for d, _ in ble_peer.MALFORMED[kind]]
    st = p.control("status")["peripherals"]
    assert all(st[k]["malformed_sent"] == 3 for k in NEW_KINDS)
    for kind in ("scale", "bp", "thermometer"):  # confirmed before the reply came
        assert st[kind]["indications_confirmed"] >= 3
    # stop/start an indicating kind
    c, _, _ = links["scale"]
    assert p.control("stop scale")["connections"] == 0
    assert c.disconnected.wait(2) and c.disconnect_reason == 0x13
    assert p.control("start scale")["advertising"] is True
    c2, _, vh = connect_subscribed(h, SCALE, 0x181D, 0x2A9D)
    got = h.notifications(c2, 1, timeout=2)
    assert len(got) == 1 and got[0][0] == vh and c2.indications_received == 1
    # disconnect-during-discovery on a new kind
    c, _, _ = links["plx"]
    assert p.control("disconnect-during-discovery plx")["armed"] is True
    h.disconnect(c)
    found = h.scan(2.0, stop_when=lambda f: PLX in f)
    c3 = h.connect(PLX, found[PLX].address_type)
    with pytest.raises(Disconnected):
        h.discover_services(c3)
    c4, gmap, _ = connect_subscribed(h, PLX, 0x1822, 0x2A5F)
    assert 0x1822 in gmap


def test_new_kinds_values_file(peer_factory, tmp_path):
    values = tmp_path / "values.json"
    values.write_text(json.dumps({
        "rsc": [{"speed_mps": 3.5, "cadence_spm": 170, "stride_m": 1.24, "distance_m": 1234.5, "running": True},
                {"speed_mps": 1.5, "cadence_spm": 110, "running": False}],
        "scale": [{"weight_kg": 72.4, "timestamp": "2026-11-01T07:30:00", "user_id": 3, "bmi": 23.6,
                   "height_m": 1.752},
                  {"weight_lb": 160.5}],
    }))
    p = peer_factory("--peripheral", "rsc", "--peripheral", "scale", "--rate", "20", "--values", str(values))
    h = p.host()
    h.init()
    c_rsc, _, _ = connect_subscribed(h, RSC, 0x1814, 0x2A53)
    c_scale, _, _ = connect_subscribed(h, SCALE, 0x181D, 0x2A9D)
    assert [v.hex() for _, v, _ in h.notifications(c_rsc, 3, timeout=3)] == [
        "07" "8003" "aa" "7c00" "39300000", "00" "8001" "6e", "07" "8003" "aa" "7c00" "39300000"]
    assert [v.hex() for _, v, _ in h.notifications(c_scale, 2, timeout=3)] == [
        "0e" "9038" "ea070b01071e00" "03" "ec00" "d806", "01" "b23e"]


def test_new_encoders_against_hand_computed_bytes():
    """Byte strings worked out by hand from the GATT specifications."""
    cases = [
        ("rsc", {"speed_mps": 3.5, "cadence_spm": 170, "stride_m": 1.24, "distance_m": 1234.5, "running": True},
         "07" "8003" "aa" "7c00" "39300000"),
        ("rsc", {"speed_mps": 1.5, "cadence_spm": 110, "running": False}, "00" "8001" "6e"),
        ("power", {"power_w": 250, "balance_pct": 51.5, "crank_revs": 1000, "crank_event": 2048},
         "2300" "fa00" "67" "e803" "0008"),
        ("power", {"power_w": -5}, "0000" "fbff"),
        ("scale", {"weight_kg": 72.4, "timestamp": "2026-11-01T07:30:00", "user_id": 3, "bmi": 23.6,
                   "height_m": 1.752}, "0e" "9038" "ea070b01071e00" "03" "ec00" "d806"),
        ("scale", {"weight_lb": 160.5}, "01" "b23e"),
        ("scale", {"weight_lb": 160.5, "bmi": 23.6, "height_in": 69.0}, "09" "b23e" "ec00" "b202"),
        ("bp", {"systolic": 121, "diastolic": 79, "map": 93.0, "pulse_bpm": 64, "user_id": 2},
         "0c" "7900" "4f00" "5d00" "4000" "02"),
        ("bp", {"systolic": 16.1, "diastolic": 10.5, "map": 12.4, "unit": "kPa"}, "01" "a1f0" "69f0" "7cf0"),
        ("bp", {"systolic": 120, "diastolic": 80, "map": 93.3, "timestamp": "2026-11-01T07:00:00", "status": 4},
         "12" "7800" "5000" "a5f3" "ea070b01070000" "0400"),
        ("thermometer", {"temperature_c": 36.85, "timestamp": "2026-11-01T07:05:00", "type": 6},
         "06" "650e00fe" "ea070b01070500" "06"),
        ("thermometer", {"temperature_f": 98.6}, "01" "da0300ff"),
        ("thermometer", {"temperature_c": 37}, "00" "25000000"),
        ("plx", {"spo2_pct": 97, "pulse_bpm": 72}, "00" "6100" "4800"),
        ("plx", {"spo2_pct": 97, "pulse_bpm": 72.5}, "00" "6100" "d5f2"),
        ("plx", {"spo2_pct": None, "pulse_bpm": 72}, "00" "ff07" "4800"),  # NaN
    ]
    for kind, fields, expected in cases:
        assert ble_peer.ENCODERS[kind](fields).hex() == expected, (kind, fields)
    assert ble_peer.sfloat16(2500).hex() == "fa10"  # 250 x 10^1
    assert ble_peer.float32(-40.5).hex() == "6bfeffff"  # -405 x 10^-1


def test_new_kinds_seeded_samples_are_realistic():
    ranges = {
        "rsc": {"speed_mps": (2.5, 4.5), "cadence_spm": (110, 200), "stride_m": (0.7, 1.8)},
        "power": {"power_w": (100, 300), "balance_pct": (47, 53)},
        "scale": {"weight_kg": (60, 90), "bmi": (18, 32), "height_m": (1.5, 2.0)},
        "bp": {"systolic": (105, 140), "diastolic": (65, 90), "map": (75, 110), "pulse_bpm": (55, 90)},
        "thermometer": {"temperature_c": (36.1, 37.5)},
        "plx": {"spo2_pct": (94, 100), "pulse_bpm": (55, 90)},
    }
    for kind, limits in ranges.items():
        script = ble_peer.SeededScript(kind, "1:" + kind)
        samples = [script.next() for _ in range(300)]
        for i, s in enumerate(samples):
            for key, (lo, hi) in limits.items():
                assert s[key] is None or lo <= s[key] <= hi, (kind, i, key, s)
            if s.get("timestamp") is not None:
                h, m = divmod(7 * 60 + i, 60)
                assert s["timestamp"] == f"2026-11-{1 + h // 24:02d}T{h % 24:02d}:{m:02d}:00"
            assert_same_fields(decode(kind, ble_peer.ENCODERS[kind](s)), s)
        for key in limits:  # the values move (height: one per scale user)
            distinct = len({s[key] for s in samples if s[key] is not None})
            assert distinct == 2 if key == "height_m" else distinct > 3, (kind, key)
        if kind == "bp":
            assert all(s["systolic"] - s["diastolic"] >= 30 for s in samples)
        if kind == "rsc":
            assert {s["running"] for s in samples} == {True, False}
            assert all(s["running"] or s["speed_mps"] <= 2.75 for s in samples)


def test_extra_advertising_fields(peer_factory):
    """--service-data, --manufacturer-data and --tx-power add AD structures to one peripheral's
    advertising (the others keep theirs); bad values and too much data are refused."""
    p = peer_factory("--peripheral", "hr", "--peripheral", "csc", "--service-data", "hr=181C:0102",
                     "--manufacturer-data", "hr=0059:cafe", "--tx-power", "csc=-8")
    h = p.host()
    h.init()
    found = h.scan(3.0, stop_when=lambda f: HR in f and CSC in f)
    data = found[HR].data
    assert bytes.fromhex("05161c180102") in data          # Service Data: UUID 0x181C, 01 02
    assert bytes.fromhex("05ff5900cafe") in data          # Manufacturer Specific Data: 0x0059, ca fe
    assert found[HR].ad["uuids16"] == [0x180D, 0x180F, 0x180A]
    assert "service_data" not in found[CSC].ad
    assert bytes.fromhex("020af8") in found[CSC].data     # TX Power Level -8 dBm
    assert bytes.fromhex("020af8") not in data
    for bad in (["--service-data", "hr=XYZ:01"], ["--manufacturer-data", "10000:00"], ["--tx-power", "50"],
                ["--manufacturer-data", "0059:" + "00" * 8, "--service-data", "181C:0102"]):
        r = subprocess.run([sys.executable, PEER, *bad], capture_output=True, text=True, timeout=20)
        assert r.returncode != 0 and ("error" in r.stderr or "too long" in r.stderr)


def test_a_second_controller_on_the_same_link(peer_factory):
    """--also-listen: a second external controller (the next public address) on its own socket
    reaches the same peripherals: a host on it connects and gets the notifications the sent log
    lists."""
    p = peer_factory("--peripheral", "hr", "--rate", "20", "--also-listen", "tcp:127.0.0.1:0")
    (also,) = p.info["h4_also"]
    assert also["kind"] == "tcp" and also["controller_address"] == "F0:F1:F2:F3:F4:F6"
    h = H4Host(also["host"], also["port"])
    p.hosts.append(h)
    h.init()
    c, _, vh = connect_subscribed(h, HR, 0x180D, 0x2A37)
    got = h.notifications(c, 5, timeout=5)
    assert len(got) == 5
    sent = assert_matches_sent_log(p, "hr", got, vh)
    assert len({r["central"] for r in sent}) == 1
    # the first controller stays free for another host
    assert p.control("status")["h4_client"] is False
# ---------------------------------------------------------------------------------------------
# Bonding required, and the glucose meter's Record Access Control Point, against a Bumble central
# (the raw H4 host does no SMP): the central runs over the peer's H4 socket like any host.
# ---------------------------------------------------------------------------------------------
GLUCOSE = "C0:4E:47:00:00:0A"


def run_central(peer: PeerProcess, body, io=None, passkey: int | None = None, confirm: bool = True):
    """Runs `body(device, connection)` on a Bumble central connected over the peer's H4 socket to
    the peripheral `body.address`; its pairing delegate has capability `io` and answers a
    passkey request with `passkey` and a comparison with `confirm`."""
    import asyncio

    from bumble import hci as bhci
    from bumble import pairing as bpairing
    from bumble.device import Device
    from bumble.transport import open_transport

    class Delegate(bpairing.PairingDelegate):
        async def get_number(self):
            return passkey

        async def compare_numbers(self, number, digits):
            return confirm

    async def main():
        h4 = peer.info["h4"]
        async with await open_transport(f"tcp-client:{h4['host']}:{h4['port']}") as (source, sink):
            device = Device.with_hci("central", bhci.Address("F0:F1:F2:F3:F4:F5"), source, sink)
            device.pairing_config_factory = lambda _c: bpairing.PairingConfig(
                sc=True, mitm=True, bonding=True,
                delegate=Delegate(io_capability=io or bpairing.PairingDelegate.NO_OUTPUT_NO_INPUT))
            await device.power_on()
            connection = await asyncio.wait_for(
                device.connect(bhci.Address(body.address, bhci.Address.RANDOM_DEVICE_ADDRESS)), 10)
            try:
                return await asyncio.wait_for(body(device, connection), 20)
            finally:
                await connection.disconnect()
    return asyncio.run(main())


def characteristic(peer_device, uuid16: int):
    from bumble.core import UUID
    found = peer_device.get_characteristics_by_uuid(UUID.from_16_bits(uuid16))
    assert found, f"no characteristic {uuid16:04X}"
    return found[0]


@pytest.mark.parametrize("mode, io, passkey, confirm", [
    ("just-works", None, None, True),
    ("passkey:246810", "KEYBOARD_INPUT_ONLY", 246810, True),
    ("numeric", "DISPLAY_OUTPUT_AND_YES_NO_INPUT", None, True),
])
def test_bonding_required_then_paired(peer_factory, mode, io, passkey, confirm):
    """A peripheral with --pairing refuses subscriptions on an unencrypted link (insufficient
    encryption or authentication); after pairing in its mode the link is encrypted, the central
    is listed as bonded and the subscription works."""
    from bumble import att as batt
    from bumble import pairing as bpairing
    from bumble.device import Peer as BPeer
    peer = peer_factory("--peripheral", "bp", "--pairing", f"bp={mode}")
    bp = "C0:4E:47:00:00:07"

    async def body(device, connection):
        remote = BPeer(connection)
        await remote.discover_services()
        await remote.discover_characteristics()
        measurement = characteristic(remote, 0x2A35)
        with pytest.raises(batt.ATT_Error) as refused:
            await remote.subscribe(measurement, lambda _v: None, prefer_notify=False)
        assert refused.value.error_code in (batt.ATT_INSUFFICIENT_ENCRYPTION_ERROR,
                                            batt.ATT_INSUFFICIENT_AUTHENTICATION_ERROR)
        await connection.pair()
        assert connection.is_encrypted
        values = []
        await remote.subscribe(measurement, values.append, prefer_notify=False)
        import asyncio
        for _ in range(100):
            if values:
                break
            await asyncio.sleep(0.1)
        return values
    body.address = bp
    values = run_central(peer, body, io=getattr(bpairing.PairingDelegate, io) if io else None,
                                        passkey=passkey, confirm=confirm)
    assert values, "no indication after pairing"
    status = peer.control("status")["peripherals"]["bp"]["pairing"]
    assert status["mode"] == mode.split(":")[0]
    assert status["pairings"] == 1 and status["failures"] == 0
    assert status["bonded"] == ["F0:F1:F2:F3:F4:F5"]


def test_wrong_passkey_fails_and_bonds_nothing(peer_factory):
    from bumble import pairing as bpairing
    peer = peer_factory("--peripheral", "scale", "--pairing", "scale=passkey:111111")

    async def body(device, connection):
        try:
            await connection.pair()
        except Exception as e:  # noqa: BLE001
            return type(e).__name__
        return None
    body.address = "C0:4E:47:00:00:06"
    failure = run_central(peer, body, io=bpairing.PairingDelegate.KEYBOARD_INPUT_ONLY, passkey=222222)
    assert failure is not None, "pairing with a wrong passkey succeeded"
    status = peer.control("status")["peripherals"]["scale"]["pairing"]
    assert status["bonded"] == [] and status["failures"] == 1
    assert peer.control("passkey scale 222222")["passkey"] == 222222  # commanded passkey: now right
    body.address = "C0:4E:47:00:00:06"
    assert run_central(peer, body, io=bpairing.PairingDelegate.KEYBOARD_INPUT_ONLY, passkey=222222) is None
    assert peer.control("status")["peripherals"]["scale"]["pairing"]["bonded"] == ["F0:F1:F2:F3:F4:F5"]


def test_glucose_meter_answers_racp(peer_factory):
    """Report number / all / >= N / no records found; records added later; a meter going silent
    mid-transfer; the records' bytes equal the sent log and decode to its fields."""
    import asyncio

    from bumble.device import Peer as BPeer
    peer = peer_factory("--peripheral", "glucose", "--glucose-records", "4")

    async def body(device, connection):
        remote = BPeer(connection)
        await remote.discover_services()
        await remote.discover_characteristics()
        got: list[tuple[str, bytes]] = []
        await remote.subscribe(characteristic(remote, 0x2A18), lambda v: got.append(("2A18", bytes(v))))
        await remote.subscribe(characteristic(remote, 0x2A34), lambda v: got.append(("2A34", bytes(v))))
        answers: asyncio.Queue = asyncio.Queue()
        await remote.subscribe(characteristic(remote, 0x2A52), lambda v: answers.put_nowait(bytes(v)), prefer_notify=False)
        racp = characteristic(remote, 0x2A52)

        async def ask(request: bytes, timeout: float = 5) -> bytes | None:
            await remote.write_value(racp, request, with_response=True)
            try:
                return await asyncio.wait_for(answers.get(), timeout)
            except asyncio.TimeoutError:
                return None
        out = {"count_all": await ask(bytes([4, 1]))}
        out["all"] = await ask(bytes([1, 1]))
        out["all_values"], got[:] = list(got), []
        out["count_ge3"] = await ask(bytes([4, 3, 1, 3, 0]))
        out["ge3"] = await ask(bytes([1, 3, 1, 3, 0]))
        out["ge3_values"], got[:] = list(got), []
        out["ge9"] = await ask(bytes([1, 3, 1, 9, 0]))
        out["bad_op"] = await ask(bytes([9, 1]))
        peer.control("add-records glucose 2")
        out["count_ge5"] = await ask(bytes([4, 3, 1, 5, 0]))
        peer.control("racp-stop-after glucose 1")
        out["silent"] = await ask(bytes([1, 1]), timeout=2)
        await asyncio.sleep(0.3)
        out["silent_values"] = list(got)
        return out
    body.address = GLUCOSE
    out = run_central(peer, body)
    assert out["count_all"] == bytes([5, 0, 4, 0])
    assert out["all"] == bytes([6, 0, 1, 1])
    records = [r for r in peer.sent("glucose")]
    assert [(c, v.hex()) for c, v in out["all_values"]] == [(r["characteristic"], r["hex"]) for r in records[:5]]
    assert [r["seq"] for r in records[:5]] == [1, 2, 3, 3, 4]  # record 3 has a context
    for r in records[:5]:
        if r["characteristic"] == "2A18":
            b = bytes.fromhex(r["hex"])
            assert struct.unpack_from("<H", b, 1)[0] == r["fields"]["sequence"]
            sfloat = struct.unpack_from("<H", b, 10)[0]
            assert sfloat >> 12 == 0xC and (sfloat & 0xFFF) / 10 == r["fields"]["mmol_l"]
            assert ble_peer.ENCODERS["glucose"](r["fields"]).hex() == r["hex"]
    assert out["count_ge3"] == bytes([5, 0, 2, 0])
    assert out["ge3"] == bytes([6, 0, 1, 1])
    assert [struct.unpack_from("<H", v, 1)[0] for c, v in out["ge3_values"] if c == "2A18"] == [3, 4]
    assert out["ge9"] == bytes([6, 0, 1, 6])
    assert out["bad_op"] == bytes([6, 0, 9, 2])
    assert out["count_ge5"] == bytes([5, 0, 2, 0])
    assert out["silent"] is None
    assert [struct.unpack_from("<H", v, 1)[0] for c, v in out["silent_values"] if c == "2A18"] == [1]
    status = peer.control("status")["peripherals"]["glucose"]
    assert status["records"] == 6 and status["racp_stop_after"] == 1


def test_glucose_meter_reset_starts_its_sequence_numbers_again(peer_factory):
    """`reset-records`: the meter forgets its records and holds new ones from sequence number 1,
    none at the time of the earlier record with its sequence number; `add-records` goes on after
    them."""
    peer = peer_factory("--peripheral", "glucose", "--glucose-records", "4")
    before = [ble_peer.glucose_record("1:glucose", seq)["fields"] for seq in range(1, 5)]
    reset = peer.control("reset-records glucose 2")
    assert reset["ok"] and reset["records"] == 2
    assert [f["sequence"] for f in reset["added"]] == [1, 2]
    assert all(f["time"] > b["time"] for f, b in zip(reset["added"], before))
    added = peer.control("add-records glucose 1")
    assert added["records"] == 3 and [f["sequence"] for f in added["added"]] == [3]
    assert added["added"][0]["time"] > before[2]["time"]
    assert peer.control("status")["peripherals"]["glucose"]["records"] == 3
