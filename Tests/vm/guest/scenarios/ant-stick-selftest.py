"""The emulated ANT USB stick on the guest's real USB stack, checked by an independent host.

``dummy_hcd`` (full speed) is the bus; Tests/peers/ant_stick.py makes the stick a FunctionFS
gadget on it with a heart-rate strap and an ANT-FS watch serving FIT files from the fixtures.
The host here is written from the ANT protocol facts with pyusb (Debian's python3-usb, on the
guest's libusb), not from the emulator's code: it finds 0fcf:1008 with lsusb and libusb, checks
the descriptors, claims interface 0 and talks ANT over bulk 0x01/0x81 with a reader thread.

1. reset -> startup; capabilities, version, serial number; a network key of the test's own
   (random, passed to both sides); extended data on.
2. a heart-rate channel: 8 or more broadcasts at the strap's period (rx time stamps in steps of
   8070/32768 s, wall-clock spacing near 0.25 s), each with the channel id, RSSI and time stamp;
   after the close every page received equals the sent log's pages heard on that channel, and
   the RR intervals the host computes from the beat times equal the logged ones.
3. ANT-FS on a second network with its own random key: link beacon, LINK and retune, serial,
   pairing (accepted after the simulated user's delay, a passkey), the directory, one FIT file in
   512-byte blocks whose chained CRC-16 the host checks, byte-identical to the fixture; a second
   session authenticated with the passkey.
4. the stall fault: the host's read fails with a pipe error, it clears the halt, and the reply
   it is waiting for arrives.
5. unplug: the device leaves lsusb and libusb (ENODEV); replug: it is back, and powers up
   knowing nothing (channel 0 unassigned).
6. the stick exits and removes its gadget; a second one (the USB-m, 0fcf:1009) runs in the same
   boot.
"""
from __future__ import annotations

import errno
import json
import os
import struct
import sys
import threading
import time

import usb.core
import usb.util

from vmant import (FIT, RESULTS, Stick, bus_address, load_dummy_hcd, random_key, start_udevd, step, stop, timings,
                   wait_for, wait_for_device)

HRM_PERIOD = 8070
HOST_SERIAL = 0x48474154
FILES = ["antfs-dump-63.fit", "fitsdk-Activity.fit", "fitsdk-WeightScaleMultiUser.fit"]


# ---------------------------------------------------------------------------------------------
# the host: ANT over pyusb
# ---------------------------------------------------------------------------------------------
def ant_message(msg_id: int, data: bytes) -> bytes:
    """A4, length, id, data, then the XOR of all of those."""
    out = bytearray([0xA4, len(data), msg_id]) + data
    check = 0
    for b in out:
        check ^= b
    return bytes(out + bytes([check]))


CRC_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ 0xA001 if _c & 1 else _c >> 1
    CRC_TABLE.append(_c)


def crc16(data: bytes, crc: int) -> int:
    """CRC-16/ARC (reflected 0x8005), table-driven, continued from ``crc``."""
    for b in data:
        crc = (crc >> 8) ^ CRC_TABLE[(crc ^ b) & 0xFF]
    return crc


class Gone(Exception):
    pass


class Host:
    """One claimed stick: a reader thread turns IN transfers into (time, id, data) messages."""

    def __init__(self, product: int = 0x1008) -> None:
        def current():
            where = bus_address(0x0FCF, product)
            return where and usb.core.find(idVendor=0x0FCF, idProduct=product,
                                           custom_match=lambda d: (d.bus, d.address) == where)
        self.dev = wait_for(current, 15, "libusb to see the stick")
        d = self.dev
        self.info = {"bcdUSB": d.bcdUSB, "bMaxPacketSize0": d.bMaxPacketSize0, "speed": d.speed,
                     "manufacturer": usb.util.get_string(d, d.iManufacturer),
                     "product": usb.util.get_string(d, d.iProduct), "serial": usb.util.get_string(d, d.iSerialNumber)}
        self.detached = False
        if d.is_kernel_driver_active(0):  # usb_serial_simple claims 0fcf:1008 when udev loads it
            d.detach_kernel_driver(0)
            self.detached = True
        d.set_configuration()
        usb.util.claim_interface(d, 0)
        intf = d.get_active_configuration()[(0, 0)]
        self.info["interface"] = {"class": intf.bInterfaceClass, "endpoints": [
            {"address": e.bEndpointAddress, "attributes": e.bmAttributes, "max_packet": e.wMaxPacketSize}
            for e in intf.endpoints()]}
        self.ep_in = next(e.bEndpointAddress for e in intf.endpoints() if e.bEndpointAddress & 0x80)
        self.ep_out = next(e.bEndpointAddress for e in intf.endpoints() if not e.bEndpointAddress & 0x80)
        self.messages: list[tuple[float, int, bytes]] = []
        self.cursor = 0
        self.cv = threading.Condition()
        self.pipe_errors = 0
        self.halts_cleared = 0
        self.gone = False
        self.errors: list[str] = []
        self.running = True
        self.thread = threading.Thread(target=self._read_loop, daemon=True)
        self.thread.start()

    def _read_loop(self) -> None:
        pending = bytearray()
        while self.running:
            try:
                data = bytes(self.dev.read(self.ep_in, 64, timeout=250))
            except usb.core.USBError as e:
                if e.errno == errno.ETIMEDOUT or isinstance(e, getattr(usb.core, "USBTimeoutError", ())):
                    continue
                if e.errno == errno.EPIPE:
                    self.pipe_errors += 1
                    try:
                        self.dev.clear_halt(self.ep_in)
                        self.halts_cleared += 1
                    except usb.core.USBError as e2:
                        self.errors.append(f"clear_halt: {e2}")
                    continue
                if e.errno in (errno.ENODEV, errno.ENOENT, errno.ESHUTDOWN) or "No such device" in str(e):
                    with self.cv:
                        self.gone = True
                        self.cv.notify_all()
                    return
                self.errors.append(str(e))
                time.sleep(0.05)
                continue
            now = time.monotonic()
            pending += data
            while True:
                start = pending.find(0xA4)
                if start < 0:
                    pending.clear()
                    break
                del pending[:start]
                if len(pending) < 4 or len(pending) < pending[1] + 4:
                    break
                size = pending[1]
                msg = bytes(pending[:size + 4])
                check = 0
                for b in msg[:-1]:
                    check ^= b
                if check != msg[-1]:
                    self.errors.append(f"bad checksum {msg.hex()}")
                    del pending[:1]
                    continue
                del pending[:size + 4]
                with self.cv:
                    self.messages.append((now, msg[2], msg[3:-1]))
                    self.cv.notify_all()

    def send(self, msg_id: int, *data: int, pad: int = 0) -> None:
        self.dev.write(self.ep_out, ant_message(msg_id, bytes(data)) + bytes(pad), timeout=2000)

    def wait(self, pred, timeout: float, what: str) -> tuple[float, int, bytes]:
        """The next message (after the last one waited for) that satisfies pred(id, data)."""
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                while self.cursor < len(self.messages):
                    t, mid, data = self.messages[self.cursor]
                    self.cursor += 1
                    if pred(mid, data):
                        return t, mid, data
                if self.gone:
                    raise Gone(what)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
                self.cv.wait(left)

    def response(self, ch: int, mid: int, timeout: float = 5) -> int:
        return self.wait(lambda i, d: i == 0x40 and d[0] == ch and d[1] == mid, timeout, f"response to {mid:#x}")[2][2]

    def configure(self, ch: int, mid: int, *data: int) -> None:
        self.send(mid, ch, *data)
        code = self.response(ch, mid)
        if code != 0:
            raise AssertionError(f"message {mid:#x} on channel {ch}: response code {code}")

    def event(self, ch: int, codes, timeout: float = 10) -> int:
        """The next channel event on ``ch`` among ``codes`` (others, like RX fails, are skipped)."""
        return self.wait(lambda i, d: i == 0x40 and d[0] == ch and d[1] == 1 and d[2] in codes, timeout,
                         f"event {codes} on channel {ch}")[2][2]

    def start(self) -> None:
        self.send(0x4A, 0, pad=5)  # padded like some hosts do
        self.wait(lambda i, d: i == 0x6F, 5, "the startup message")

    def close(self) -> None:
        self.running = False
        self.thread.join(5)
        try:
            usb.util.release_interface(self.dev, 0)
        except usb.core.USBError:
            pass
        usb.util.dispose_resources(self.dev)


# ---------------------------------------------------------------------------------------------
# ANT-FS over the host
# ---------------------------------------------------------------------------------------------
class AntFs:
    """ANT-FS on one channel of a Host: commands out as acks or bursts, replies reassembled."""

    def __init__(self, host: Host, ch: int) -> None:
        self.h = host
        self.ch = ch

    def beacon(self, state: int, timeout: float = 15) -> bytes:
        return self.h.wait(lambda i, d: i == 0x4E and d[0] == self.ch and d[1] == 0x43 and d[3] & 0x0F == state,
                           timeout, f"an ANT-FS beacon in state {state}")[2][1:9]

    def command(self, data: bytes) -> None:
        """Sends a command and waits for the stick's transfer result (5 = done, 6 = failed: sent
        again)."""
        for attempt in range(5):
            if len(data) == 8:
                self.h.send(0x4F, self.ch, *data)
            else:
                data += bytes(-len(data) % 8)
                packets = len(data) // 8
                for i in range(packets):
                    seq = 0 if i == 0 else (i - 1) % 3 + 1
                    if i == packets - 1:
                        seq |= 4
                    self.h.send(0x50, (seq << 5) | self.ch, *data[8 * i:8 * i + 8])
            if self.h.event(self.ch, (5, 6), 10) == 5:
                return
        raise AssertionError(f"command {data[:2].hex()} failed 5 times")

    def reply(self, timeout: float = 20) -> bytes:
        """The watch's next burst (beacon + response); raises on a broken burst (event 4)."""
        out = bytearray()
        expect = 0
        while True:
            _, mid, d = self.h.wait(lambda i, d: (i == 0x50 and d[0] & 0x1F == self.ch)
                                    or (i == 0x40 and d[0] == self.ch and d[1] == 1 and d[2] == 4),
                                    timeout, "a burst from the watch")
            if mid == 0x40:
                raise ConnectionError("burst receive failed (event 4)")
            seq = d[0] >> 5
            if seq & 3 != expect:
                raise AssertionError(f"burst sequence {seq & 3} where {expect} was due")
            out += d[1:9]
            expect = expect % 3 + 1
            if seq & 4:
                return bytes(out)

    def download(self, index: int, max_block: int) -> tuple[bytes, list[dict]]:
        data, crc, blocks = b"", 0, []
        while True:
            self.command(struct.pack("<BBHIxBHI", 0x44, 0x09, index, len(data), 0 if data else 1, crc, max_block))
            response = self.reply()[8:]
            if response[:2] != b"\x44\x89" or response[2] != 0:
                raise AssertionError(f"download {index} at {len(data)}: {response[:16].hex()}")
            remaining, offset, size = struct.unpack_from("<III", response, 4)
            block = response[16:16 + remaining]
            block_crc = struct.unpack_from("<H", response, len(response) - 2)[0]
            if offset != len(data) or crc16(block, crc) != block_crc:
                raise AssertionError(f"block at {offset}: CRC {block_crc:#06x}, computed {crc16(block, crc):#06x}")
            blocks.append({"offset": offset, "length": remaining, "crc": block_crc})
            data += block
            crc = block_crc
            if len(data) >= size:
                return data, blocks


# ---------------------------------------------------------------------------------------------
def main() -> int:
    result: dict = {}
    plus_key, fs_key = random_key(), random_key()
    load_dummy_hcd()
    step("dummy_hcd loaded (full speed)")
    udevd = start_udevd()
    step("udevd started")
    stick = Stick(["--ant-plus-key", plus_key.hex(), "--sensor", "hrm", "--watch-pair-delay", "1.0",
                   "--serial", "2345678"], watch_files=FILES, ant_fs_key=fs_key)
    result["ready"] = stick.info
    host = None
    try:
        step("stick ready")
        line = wait_for_device()
        result["lsusb"] = line
        assert "0fcf:1008" in line, line
        with open(os.path.join(RESULTS, "lsusb-v.txt"), "w") as f:
            f.write(os.popen("lsusb -v -d 0fcf:1008 2>&1").read())
        step(f"lsusb: {line}")

        host = Host()
        info = host.info
        result["device"] = info
        result["kernel_driver_detached"] = host.detached
        assert info["bcdUSB"] == 0x0200 and info["speed"] == 2, info  # full speed
        assert (info["manufacturer"], info["product"], info["serial"]) == (
            "Dynastream Innovations", "ANT USBStick2", "2345678"), info
        # IN first, as on a real stick; dummy_hcd's UDC numbers the OUT endpoint 0x02 (a real
        # stick's is 0x01; see Tests/peers/ANT.md): the host takes both from the descriptors
        eps = [(e["address"], e["attributes"] & 3, e["max_packet"]) for e in info["interface"]["endpoints"]]
        assert info["interface"]["class"] == 0xFF and eps == [(0x81, 2, 64), (0x02, 2, 64)], info
        step("claimed interface 0: vendor class, bulk IN 0x81 and OUT 0x02, 64 bytes, full speed")

        # 1. start-up
        t0 = time.monotonic()
        host.start()
        result["startup_s"] = round(time.monotonic() - t0, 3)
        host.send(0x4D, 0, 0x54)
        caps = host.wait(lambda i, d: i == 0x54, 5, "capabilities")[2]
        assert caps == bytes([8, 3, 0, 0xBA, 0x36, 0]), caps.hex()
        host.send(0x4D, 0, 0x3E)
        version = host.wait(lambda i, d: i == 0x3E, 5, "version")[2]
        assert version.rstrip(b"\0") == b"AP2USB1.05", version
        host.send(0x4D, 0, 0x61)
        serial = struct.unpack("<I", host.wait(lambda i, d: i == 0x61, 5, "serial number")[2])[0]
        assert serial == 2345678, serial
        host.configure(0, 0x46, *plus_key)
        host.configure(0, 0x6E, 0xE0)  # extended data: channel id, RSSI, rx time stamp
        step("reset, startup, capabilities, version, serial, network key")

        # 2. heart rate
        for mid, data in ((0x42, (0x00, 0)), (0x51, (0, 0, 120, 0)), (0x43, (HRM_PERIOD & 0xFF, HRM_PERIOD >> 8)),
                          (0x44, (10,)), (0x45, (57,)), (0x4B, ())):
            host.configure(0, mid, *data)
        got = []
        while len(got) < 16:
            got.append(host.wait(lambda i, d: i == 0x4E and d[0] == 0, 30, f"broadcast {len(got) + 1}"))
        step(f"{len(got)} heart-rate broadcasts")
        host.configure(0, 0x4C)
        host.event(0, (7,), 5)
        # every broadcast received on channel 0, up to the close (event 7 comes after them)
        heard = [(t, d) for t, i, d in host.messages if i == 0x4E and d[0] == 0]
        for _, d in heard:
            assert len(d) == 19 and d[9] == 0xE0, d.hex()
            assert d[12] == 120 and d[14] == 0x20, d.hex()
        stamps = [struct.unpack_from("<H", d, 17)[0] for _, d in heard]
        steps = [((b - a) % 65536) / HRM_PERIOD for a, b in zip(stamps, stamps[1:])]
        assert all(abs(s - round(s)) < 0.001 and round(s) >= 1 for s in steps), steps
        spacing = (heard[-1][0] - heard[0][0]) / (len(heard) - 1)
        result["hrm"] = {"received": len(heard), "mean_spacing_s": round(spacing, 4),
                         "timestamp_steps": sorted({round(s) for s in steps})}
        assert 0.12 < spacing < 0.5, spacing
        log = [r for r in stick.sent() if r.get("device") == "hrm" and "page" in r and 0 in r["rx"]]
        pages = [d[1:9].hex() for _, d in heard]
        if pages != [r["page"] for r in log]:
            raise AssertionError(f"received pages != sent log:\n{pages}\n{[r['page'] for r in log]}")
        rr_host = []
        for a, b in zip(pages, pages[1:]):
            pa, pb = bytes.fromhex(a), bytes.fromhex(b)
            if (pb[6] - pa[6]) % 256 == 1:
                rr_host.append((struct.unpack_from("<H", pb, 4)[0] - struct.unpack_from("<H", pa, 4)[0]) % 65536)
        rr_log = [rr for r in log[1:] for rr in r["fields"]["rr"]]
        assert rr_host == rr_log and rr_host, (rr_host, rr_log)
        result["hrm"]["rr"] = rr_host
        step(f"pages and {len(rr_host)} RR intervals equal the sent log")
        host.configure(0, 0x41)

        # 3. ANT-FS
        host.configure(1, 0x46, *fs_key)
        for mid, data in ((0x42, (0x00, 1)), (0x51, (0, 0, 1, 0)), (0x43, (0x00, 0x10)), (0x44, (255,)),
                          (0x45, (50,)), (0x49, (53, 0)), (0x4B, ())):
            host.configure(1, mid, *data)
        fs = AntFs(host, 1)
        beacon = fs.beacon(0)
        assert struct.unpack_from("<HH", beacon, 4) == (1018, 1), beacon.hex()
        step(f"ANT-FS link beacon {beacon.hex()}")
        fs.command(bytes([0x44, 0x02, 19, 4]) + struct.pack("<I", HOST_SERIAL))
        host.configure(1, 0x45, 19)
        beacon = fs.beacon(1)
        assert struct.unpack_from("<I", beacon, 4)[0] == HOST_SERIAL
        fs.command(bytes([0x44, 0x04, 1, 0]) + struct.pack("<I", HOST_SERIAL))
        reply = fs.reply()
        watch_serial = struct.unpack_from("<I", reply, 12)[0]
        watch_name = reply[16:16 + reply[11]].decode()
        assert watch_name == "Forerunner 310XT", reply.hex()
        step(f"linked on 2419 MHz; watch {watch_serial} '{watch_name}'")
        t0 = time.monotonic()
        name = b"HealthGate"
        fs.command(bytes([0x44, 0x04, 2, len(name)]) + struct.pack("<I", HOST_SERIAL) + name)
        reply = fs.reply()
        assert reply[8:12] == bytes([0x44, 0x84, 1, 8]), reply.hex()
        passkey = reply[16:24]
        result["pairing_s"] = round(time.monotonic() - t0, 2)
        step(f"paired after {result['pairing_s']} s (passkey {passkey.hex()})")
        directory, blocks = fs.download(0, 0)
        entries = [struct.unpack_from("<HBBHBBII", directory, off) for off in range(16, len(directory), 16)]
        sizes = [os.path.getsize(os.path.join(FIT, n)) for n in sorted(FILES)]
        assert [(e[0], e[1], e[6]) for e in entries] == [(i + 1, 0x80, s) for i, s in enumerate(sizes)], entries
        result["directory"] = [{"index": e[0], "subtype": e[2], "number": e[3], "flags": e[5], "size": e[6],
                                "date": e[7]} for e in entries]
        step(f"directory: {len(entries)} FIT files")
        target = sorted(FILES).index("antfs-dump-63.fit") + 1
        data, blocks = fs.download(target, 512)
        with open(os.path.join(FIT, "antfs-dump-63.fit"), "rb") as f:
            assert data == f.read(), "downloaded file differs from the fixture"
        result["download"] = {"index": target, "bytes": len(data), "blocks": blocks}
        step(f"file {target}: {len(data)} bytes in {len(blocks)} blocks, chained CRC checked, byte-identical")
        fs.command(bytes([0x44, 0x03, 0, 0, 0, 0, 0, 0]))
        host.configure(1, 0x45, 50)
        fs.beacon(0)
        fs.command(bytes([0x44, 0x02, 19, 4]) + struct.pack("<I", HOST_SERIAL))
        host.configure(1, 0x45, 19)
        fs.beacon(1)
        fs.command(bytes([0x44, 0x04, 3, 8]) + struct.pack("<I", HOST_SERIAL) + passkey)
        assert fs.reply()[8:11] == b"\x44\x84\x01"
        fs.command(bytes([0x44, 0x03, 0, 0, 0, 0, 0, 0]))
        host.configure(1, 0x4C)
        host.event(1, (7,), 5)
        step("disconnected; a second session authenticated with the passkey")

        # 4. stall
        before = host.pipe_errors
        stick.control("fault stall")
        wait_for(lambda: stick.control("status")["edge"]["stalls"] >= 1, 10, "the stick to halt its IN endpoint")
        host.send(0x4D, 0, 0x54)
        host.wait(lambda i, d: i == 0x54, 15, "capabilities after the stall")
        assert host.pipe_errors > before and host.halts_cleared >= 1, (host.pipe_errors, host.halts_cleared)
        result["stall"] = {"pipe_errors": host.pipe_errors - before, "halts_cleared": host.halts_cleared}
        step("stall: pipe error seen, halt cleared, the reply arrived")

        # 5. unplug / replug
        stick.control("unplug")
        wait_for_device(present=False)
        wait_for(lambda: host.gone, 10, "libusb to lose the device")
        step("unplugged: gone from lsusb and libusb")
        host.close()
        host = None
        stick.control("replug")
        wait_for_device()
        host = Host()
        host.start()
        host.send(0x4D, 0, 0x52)
        status = host.wait(lambda i, d: i == 0x52, 5, "channel status")[2]
        assert status == bytes([0, 0]), status.hex()
        step("replugged: back in lsusb, fresh (channel 0 unassigned)")
        result["stick_status"] = stick.control("status")
        host.close()
        host = None
        rc = stick.close()
        assert rc == 0, rc
        assert not os.path.exists("/sys/kernel/config/usb_gadget/hgstick"), "gadget left behind"
        wait_for_device(present=False)
        step("the stick exited and removed its gadget")

        # 6. a second stick in the same boot: the USB-m
        stick = Stick(["--product", "0x1009"], name="stick2")
        assert "0fcf:1009" in wait_for_device(product=0x1009)
        host = Host(0x1009)
        assert host.info["product"] == "ANT USB-m Stick"
        host.start()
        host.send(0x4D, 0, 0x54)
        caps = host.wait(lambda i, d: i == 0x54, 5, "capabilities")[2]
        assert caps == bytes([8, 8, 0, 0xBA, 0x36, 0, 0xDF]), caps.hex()
        host.close()
        host = None
        assert stick.close() == 0
        step("a second stick (0fcf:1009) in the same boot")
        result["host_errors"] = []
        return 0
    finally:
        if host is not None:
            result["host_errors"] = host.errors
            host.close()
        stick.close()
        stop(udevd)
        result["timings"] = timings
        with open(os.path.join(RESULTS, "result.json"), "w") as f:
            json.dump(result, f, indent=1, default=str)


if __name__ == "__main__":
    sys.exit(main())
