"""The USB edge of the emulated stick: a configfs gadget with one FunctionFS function, bound to
a UDC (in the project's guest, ``dummy_udc.0`` of ``dummy_hcd``), so the stick is a real USB
device on the local kernel's USB stack.

The gadget looks like a Dynastream stick: idVendor 0x0fcf, idProduct 0x1008 (or 0x1009),
bcdUSB 2.00, manufacturer "Dynastream Innovations", one configuration (bus powered, 100 mA) with
one vendor-class interface (0xFF) holding a bulk IN and a bulk OUT endpoint of 64 bytes (512 in
the high-speed descriptors, which a full-speed bus never uses), IN first as on the real stick.

Endpoint numbers: the UDC assigns them (usb_ep_autoconfig takes the first free endpoint of the
right type and direction). On dummy_hcd that is ``ep1in-bulk`` (0x81, as on the real stick) and
``ep2out-bulk``: the host sees **OUT 0x02, where a real stick has 0x01**. FunctionFS's
``FUNCTIONFS_VIRTUAL_ADDR`` would show 0x01 to the host, but Linux 6.1 then fails to enable the
endpoint (``config_ep_by_speed`` looks the descriptor up by the physical address: "returned -5",
and SET_CONFIGURATION stalls), so it is not used. FunctionFS names the endpoint files in
descriptor order: ``ep1`` is IN, ``ep2`` is OUT.

Needs root, configfs and the modules ``libcomposite`` and ``usb_f_fs``.
"""
from __future__ import annotations

import errno
import logging
import os
import select
import struct
import subprocess
import threading
import time

log = logging.getLogger("ant_stick.usb")

CONFIGFS = "/sys/kernel/config"
GADGETS = f"{CONFIGFS}/usb_gadget"

# include/uapi/linux/usb/functionfs.h
DESCRIPTORS_MAGIC_V2 = 3
STRINGS_MAGIC = 2
HAS_FS_DESC, HAS_HS_DESC = 1, 2
EVENT_NAMES = {0: "BIND", 1: "UNBIND", 2: "ENABLE", 3: "DISABLE", 4: "SETUP", 5: "SUSPEND", 6: "RESUME"}
EVENT_SIZE = 12  # struct usb_functionfs_event: usb_ctrlrequest (8), type, 3 pad bytes

PRODUCTS = {0x1008: "ANT USBStick2", 0x1009: "ANT USB-m Stick"}
IN_ADDRESS, OUT_ADDRESS = 0x81, 0x01  # as requested; the UDC picks the numbers (see above)
MAX_TRANSFER = 63  # IN transfers stay short packets, so a host reading more than 64 bytes gets each at once


def descriptors() -> bytes:
    """FunctionFS v2 descriptors: full speed (64-byte bulk) and high speed (512)."""
    def interface() -> bytes:
        return bytes([9, 4, 0, 0, 2, 0xFF, 0x00, 0x00, 0])

    def endpoint(address: int, size: int) -> bytes:
        return bytes([7, 5, address, 0x02]) + struct.pack("<H", size) + bytes([1 if size == 64 else 0])

    fs = interface() + endpoint(IN_ADDRESS, 64) + endpoint(OUT_ADDRESS, 64)
    hs = interface() + endpoint(IN_ADDRESS, 512) + endpoint(OUT_ADDRESS, 512)
    body = struct.pack("<II", 3, 3) + fs + hs
    flags = HAS_FS_DESC | HAS_HS_DESC
    return struct.pack("<III", DESCRIPTORS_MAGIC_V2, 12 + len(body), flags) + body


def strings() -> bytes:
    """No interface strings (the real stick has none)."""
    return struct.pack("<IIII", STRINGS_MAGIC, 16, 0, 0)


def write_attr(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def read_attr(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def pack_transfers(frames: list[bytes], limit: int = MAX_TRANSFER) -> list[bytes]:
    """Whole frames packed into IN transfers of at most ``limit`` bytes; no frame is split."""
    out: list[bytes] = []
    cur = b""
    for f in frames:
        if cur and len(cur) + len(f) > limit:
            out.append(cur)
            cur = b""
        cur += f
    if cur:
        out.append(cur)
    return out


class Gadget:
    """The configfs gadget and its FunctionFS instance; ``setup()`` builds, ``bind()`` plugs in,
    ``unbind()`` unplugs, ``teardown()`` removes everything (also what an earlier run left)."""

    def __init__(self, name: str = "antstick", product: int = 0x1008, serial: str = "1234567",
                 udc: str = "dummy_udc.0", manufacturer: str = "Dynastream Innovations") -> None:
        self.name = name
        self.product = product
        self.serial = serial
        self.udc = udc
        self.manufacturer = manufacturer
        self.path = f"{GADGETS}/{name}"
        self.mount = f"/dev/ffs-{name}"
        self.ep0: int | None = None

    def modules(self) -> None:
        for mod in ("configfs", "libcomposite", "usb_f_fs"):
            subprocess.run(["modprobe", mod], check=False, capture_output=True)
        if not os.path.isdir(GADGETS):
            if not os.path.ismount(CONFIGFS):
                subprocess.run(["mount", "-t", "configfs", "none", CONFIGFS], check=False, capture_output=True)
        if not os.path.isdir(GADGETS):
            raise RuntimeError(f"{GADGETS} is missing: configfs or libcomposite not available")

    def setup(self) -> None:
        self.modules()
        self.teardown()
        g = self.path
        os.makedirs(g)
        for attr, value in (("idVendor", "0x0fcf"), ("idProduct", f"0x{self.product:04x}"), ("bcdDevice", "0x0100"),
                            ("bcdUSB", "0x0200"), ("bDeviceClass", "0x00"), ("bDeviceSubClass", "0x00"),
                            ("bDeviceProtocol", "0x00")):
            write_attr(f"{g}/{attr}", value)
        os.makedirs(f"{g}/strings/0x409")
        write_attr(f"{g}/strings/0x409/manufacturer", self.manufacturer)
        write_attr(f"{g}/strings/0x409/product", PRODUCTS.get(self.product, "ANT USBStick2"))
        write_attr(f"{g}/strings/0x409/serialnumber", self.serial)
        os.makedirs(f"{g}/configs/c.1")
        write_attr(f"{g}/configs/c.1/MaxPower", "100")
        write_attr(f"{g}/configs/c.1/bmAttributes", "0x80")
        os.makedirs(f"{g}/functions/ffs.{self.name}")
        os.symlink(f"{g}/functions/ffs.{self.name}", f"{g}/configs/c.1/ffs.{self.name}")
        os.makedirs(self.mount, exist_ok=True)
        subprocess.run(["mount", "-t", "functionfs", self.name, self.mount], check=True)
        self.ep0 = os.open(f"{self.mount}/ep0", os.O_RDWR)
        os.write(self.ep0, descriptors())
        os.write(self.ep0, strings())

    def endpoint_paths(self) -> tuple[str, str]:
        """(IN, OUT): FunctionFS numbers the endpoint files in descriptor order, IN first."""
        names = set(os.listdir(self.mount))
        if not {"ep1", "ep2"} <= names:
            raise RuntimeError(f"no endpoint files ep1/ep2 in {self.mount}: {sorted(names)}")
        return f"{self.mount}/ep1", f"{self.mount}/ep2"

    def bind(self) -> None:
        write_attr(f"{self.path}/UDC", self.udc)

    def unbind(self) -> None:
        if read_attr(f"{self.path}/UDC"):
            write_attr(f"{self.path}/UDC", "\n")  # an empty write never reaches configfs

    def bound(self) -> bool:
        return bool(read_attr(f"{self.path}/UDC"))

    def teardown(self) -> None:
        """Unbinds and removes the gadget, the mount and the configfs entries (best effort: also
        cleans what a killed run left)."""
        g = self.path
        if os.path.isdir(g):
            try:
                self.unbind()
            except OSError as e:
                log.warning("unbind: %s", e)
        if self.ep0 is not None:
            try:
                os.close(self.ep0)
            except OSError:
                pass
            self.ep0 = None
        if os.path.ismount(self.mount):
            if subprocess.run(["umount", self.mount], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", self.mount], capture_output=True)
        for path, fn in ((f"{g}/configs/c.1/ffs.{self.name}", os.unlink), (f"{g}/configs/c.1/strings/0x409", os.rmdir),
                         (f"{g}/configs/c.1", os.rmdir), (f"{g}/functions/ffs.{self.name}", os.rmdir),
                         (f"{g}/strings/0x409", os.rmdir), (g, os.rmdir)):
            if os.path.lexists(path):
                try:
                    fn(path)
                except OSError as e:
                    log.warning("teardown: %s: %s", path, e)
        try:
            os.rmdir(self.mount)
        except OSError:
            pass


class UsbEdge:
    """Moves bytes between the gadget's endpoints and the stick, and handles ep0 events.

    - ``on_out(data)`` is called (from the OUT thread) with each OUT transfer;
    - ``send(frames)`` queues IN frames; a writer thread packs them into transfers;
    - ``stall()`` halts the IN endpoint before the next IN transfer (the host sees a pipe
      error until it clears the halt); ``unplug()`` / ``replug()`` unbind and bind the UDC.
    """

    MAX_QUEUED = 512  # IN frames held while the host does not read; older ones are dropped

    def __init__(self, gadget: Gadget, on_out, on_plug=None, on_bus_reset=None) -> None:
        self.gadget = gadget
        self.on_out = on_out
        self.on_plug = on_plug  # called after replug (the stick powers up fresh)
        self.on_bus_reset = on_bus_reset  # called when the host reset the device on the bus
        self.cv = threading.Condition()
        self.in_frames: list[bytes] = []
        self.stop_flag = False
        self.stall_pending = False
        self.plugged = False
        self.enabled = False
        self.disabled_while_plugged = False
        self.stats = {"bus_resets": 0, "out_transfers": 0, "out_bytes": 0, "in_transfers": 0, "in_bytes": 0, "in_dropped": 0,
                      "stalls": 0, "events": {}, "setups_stalled": 0, "io_errors": 0, "unplugs": 0, "replugs": 0}
        self.threads: list[threading.Thread] = []
        self.fd_in = self.fd_out = None

    def start(self) -> None:
        self.gadget.setup()
        ep_in, ep_out = self.gadget.endpoint_paths()
        self.fd_in = os.open(ep_in, os.O_RDWR)
        self.fd_out = os.open(ep_out, os.O_RDWR)
        for target, name in ((self._ep0_loop, "ep0"), (self._out_loop, "out"), (self._in_loop, "in")):
            th = threading.Thread(target=target, name=f"usb-{name}", daemon=True)
            th.start()
            self.threads.append(th)
        self.gadget.bind()
        self.plugged = True

    def status(self) -> dict:
        return {"plugged": self.plugged, "bound": self.gadget.bound(), "enabled": self.enabled,
                "udc": self.gadget.udc, "queued_in": len(self.in_frames), **self.stats}

    def send(self, frames: list[bytes]) -> None:
        if not frames:
            return
        with self.cv:
            if not self.plugged:
                return
            self.in_frames.extend(frames)
            extra = len(self.in_frames) - self.MAX_QUEUED
            if extra > 0:
                del self.in_frames[:extra]
                self.stats["in_dropped"] += extra
            self.cv.notify_all()

    def stall(self) -> None:
        with self.cv:
            self.stall_pending = True
            self.cv.notify_all()

    def unplug(self) -> None:
        with self.cv:
            self.plugged = False
            self.in_frames.clear()
            self.stall_pending = False
        self.gadget.unbind()
        self.stats["unplugs"] += 1

    def replug(self) -> None:
        with self.cv:
            self.in_frames.clear()
            self.plugged = True
        if self.on_plug:
            self.on_plug()
        self.gadget.bind()
        self.stats["replugs"] += 1

    def close(self) -> None:
        with self.cv:
            self.stop_flag = True
            self.cv.notify_all()
        try:
            self.gadget.unbind()  # ends transfers in flight; the I/O threads see stop_flag
        except OSError:
            pass
        for th in self.threads:
            th.join(timeout=2)
        for fd in (self.fd_in, self.fd_out):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.fd_in = self.fd_out = None
        self.gadget.teardown()

    # ----- threads -----
    def _ep0_loop(self) -> None:
        # ep0 is read without blocking, after poll() says an event is there: a blocking read of
        # ep0 waits for the next event holding FunctionFS's lock, and the kernel's unbind (a write
        # of the UDC attribute: unplug) takes that lock after it queued UNBIND. A reader that
        # went back to waiting after UNBIND before the unbind took the lock kept it for ever, and
        # the unplug never returned (seen in about one guest run in six).
        fd = self.gadget.ep0
        os.set_blocking(fd, False)
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while not self.stop_flag:
            try:
                if not poller.poll(200):
                    continue
                data = os.read(fd, EVENT_SIZE * 4)
            except OSError as e:
                if self.stop_flag or e.errno in (errno.EBADF,):
                    return
                if e.errno not in (errno.EINTR, errno.EAGAIN):
                    time.sleep(0.05)
                continue
            for off in range(0, len(data) - EVENT_SIZE + 1, EVENT_SIZE):
                setup, kind = data[off:off + 8], data[off + 8]
                name = EVENT_NAMES.get(kind, str(kind))
                self.stats["events"][name] = self.stats["events"].get(name, 0) + 1
                log.info("ep0 event %s", name)
                if name == "ENABLE":
                    # Enabled again after a DISABLE while plugged in: the host reset the port
                    # (USBDEVFS_RESET) and configured the device again.
                    reset = self.disabled_while_plugged
                    self.enabled, self.disabled_while_plugged = True, False
                    if reset:
                        self.stats["bus_resets"] += 1
                        if self.on_bus_reset:
                            self.on_bus_reset()
                elif name in ("DISABLE", "UNBIND"):
                    self.disabled_while_plugged = self.enabled and self.plugged and name == "DISABLE"
                    self.enabled = False
                elif name == "SETUP":
                    self._stall_setup(setup)

    def _stall_setup(self, setup: bytes) -> None:
        """The stick answers no class or vendor request: stall ep0 (FunctionFS stalls on I/O in
        the direction opposite to the data stage)."""
        request_type, request, value, index, length = struct.unpack("<BBHHH", setup)
        log.info("SETUP %02x %02x %04x %04x %d: stalled", request_type, request, value, index, length)
        self.stats["setups_stalled"] += 1
        try:
            if request_type & 0x80:
                os.read(self.gadget.ep0, 0)
            else:
                os.write(self.gadget.ep0, b"")
        except OSError:
            pass

    def _out_loop(self) -> None:
        while not self.stop_flag:
            try:
                data = os.read(self.fd_out, 64)
            except OSError as e:
                if self.stop_flag:
                    return
                self.stats["io_errors"] += 1
                log.debug("OUT: %s", e)
                time.sleep(0.02)
                continue
            if not data:
                continue
            self.stats["out_transfers"] += 1
            self.stats["out_bytes"] += len(data)
            self.on_out(data)

    def _in_loop(self) -> None:
        pending: list[bytes] = []
        while True:
            with self.cv:
                while not self.stop_flag and not self.in_frames and not pending and not self.stall_pending:
                    self.cv.wait()
                if self.stop_flag:
                    return
                if self.stall_pending:
                    self.stall_pending = False
                    do_stall = True
                else:
                    do_stall = False
                    if not pending:
                        pending = pack_transfers(self.in_frames)
                        self.in_frames.clear()
            if do_stall:
                self._halt_in()
                continue
            transfer = pending.pop(0)
            try:
                os.write(self.fd_in, transfer)
            except OSError as e:
                if self.stop_flag:
                    return
                self.stats["io_errors"] += 1
                log.debug("IN: %s (transfer dropped)", e)
                if not self.plugged:
                    pending.clear()
                time.sleep(0.02)
                continue
            self.stats["in_transfers"] += 1
            self.stats["in_bytes"] += len(transfer)

    def _halt_in(self) -> None:
        """I/O in the wrong direction on an endpoint file makes FunctionFS halt the endpoint;
        it answers EBADMSG when the halt took."""
        try:
            os.read(self.fd_in, 1)
        except OSError as e:
            if e.errno == errno.EBADMSG:
                self.stats["stalls"] += 1
                log.info("IN endpoint halted")
                return
            log.warning("halting IN failed: %s", e)
