"""What the watch scenarios share (not a scenario: run.py lists those): an emulated Garmin watch
that speaks MTP (Debian's umtp-responder serving a folder through a FunctionFS gadget on
``dummy_hcd``, with Garmin's vendor and product ids), its GARMIN/ tree of real FIT fixtures, and
the daemon under test.

    watch = MTPWatch(serial="3991234567")      # a gadget on dummy_udc.0, not plugged in yet
    watch.add("GARMIN/Activity", "garmin-fenix5-run.fit")
    watch.plug(); ...; watch.unplug(); watch.close()
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

from vmant import FIT, load_dummy_hcd, lsusb, run, start_udevd, stop  # noqa: F401  (re-exported)
from vmpeer import RESULTS, WORK, Daemon, step, stored, timings, wait_for  # noqa: F401  (re-exported)

BIN = os.environ.get("HG_BIN", "")
GARMIN, FR245_MUSIC = 0x091E, 0x4C05
CONFIGFS = "/sys/kernel/config"
# An hour ago: the files stand still (the fetch planner leaves files modified in the last seconds).
PAST = time.time() - 3600

CONF = """# written by vmwatch.py
loop_on_disconnect 0
storage "{folder}" "Primary" "ro"
manufacturer "Garmin"
product "{product}"
serial "{serial}"
firmware_version "9.10"
interface "MTP"
usb_vendor_id  0x{vid:04x}
usb_product_id 0x{pid:04x}
usb_class 0x6
usb_subclass 0x1
usb_protocol 0x1
usb_dev_version 0x0100
usb_functionfs_mode 0x1
usb_dev_path   "{ffs}/ep0"
usb_epin_path  "{ffs}/ep1"
usb_epout_path "{ffs}/ep2"
usb_epint_path "{ffs}/ep3"
usb_max_packet_size 0x40
"""


def write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


class ConfigfsGadget:
    """A configfs USB gadget (``/sys/kernel/config/usb_gadget/NAME``) of Garmin's vendor id with one
    configuration holding one function (``ffs.NAME``, ``mass_storage.0`` ...): made on creation,
    bound to a UDC by ``bind``, removed by ``remove``."""

    def __init__(self, name: str, product_id: int, serial: str, product: str, function: str, configuration: str) -> None:
        self.path, self.function = f"{CONFIGFS}/usb_gadget/{name}", function
        if not os.path.ismount(CONFIGFS):
            subprocess.run(["mount", "-t", "configfs", "none", CONFIGFS], check=True)
        g = self.path
        for folder in ("strings/0x409", "configs/c.1/strings/0x409", f"functions/{function}"):
            os.makedirs(f"{g}/{folder}", exist_ok=True)
        for key, value in (("idVendor", f"0x{GARMIN:04x}"), ("idProduct", f"0x{product_id:04x}"), ("bcdUSB", "0x0200"),
                           ("strings/0x409/serialnumber", serial), ("strings/0x409/manufacturer", "Garmin"),
                           ("strings/0x409/product", product), ("configs/c.1/strings/0x409/configuration", configuration)):
            write(f"{g}/{key}", value)

    def link(self) -> None:
        """Puts the function in the configuration (after the function is set up)."""
        if not os.path.exists(f"{self.path}/configs/c.1/{self.function}"):
            os.symlink(f"{self.path}/functions/{self.function}", f"{self.path}/configs/c.1/{self.function}")

    def bound(self) -> bool:
        with open(f"{self.path}/UDC") as f:
            return f.read().strip() != ""

    def bind(self, udc: str) -> None:
        write(f"{self.path}/UDC", udc)

    def unbind(self) -> None:
        """(Writing nothing does nothing: the kernel needs a line.)"""
        if self.bound():
            write(f"{self.path}/UDC", "\n")

    def remove(self) -> None:
        g = self.path
        try:
            self.unbind()
        except OSError:
            pass
        if os.path.islink(f"{g}/configs/c.1/{self.function}"):
            os.unlink(f"{g}/configs/c.1/{self.function}")
        for folder in ("configs/c.1/strings/0x409", "configs/c.1", f"functions/{self.function}", "strings/0x409", ""):
            try:
                os.rmdir(f"{g}/{folder}".rstrip("/"))
            except OSError:
                pass


class MTPWatch:
    """umtprd serving ``folder`` (WORK/NAME) as a Forerunner 245 Music (091e:4c05) with
    ``serial``, through a configfs gadget with one FunctionFS function on ``udc``. ``plug()`` binds
    the gadget to the UDC (the host sees the device arrive), ``unplug()`` unbinds it."""

    def __init__(self, serial: str = "3991234567", name: str = "hgmtp", udc: str = "dummy_udc.0", product_id: int = FR245_MUSIC,
                 product: str = "Forerunner 245 Music") -> None:
        self.serial, self.name, self.udc, self.product_id = serial, name, udc, product_id
        self.folder = os.path.join(WORK, f"{name}-storage")
        os.makedirs(self.folder, exist_ok=True)
        self.ffs = f"/dev/ffs-{name}"
        self.proc: subprocess.Popen | None = None
        for module in ("libcomposite", "usb_f_fs"):
            out = run(["modprobe", module])
            if out.returncode != 0:
                raise RuntimeError(f"modprobe {module}: {out.stderr}")
        self.gadget = ConfigfsGadget(name, product_id, serial, product, f"ffs.{name}", "MTP")
        self.gadget.link()
        os.makedirs(self.ffs, exist_ok=True)
        if not os.path.ismount(self.ffs):
            subprocess.run(["mount", "-t", "functionfs", name, self.ffs], check=True)
        self.conf = os.path.join(WORK, f"{name}-umtprd.conf")
        write(self.conf, CONF.format(folder=self.folder, serial=serial, vid=GARMIN, pid=product_id, ffs=self.ffs, product=product))
        self.log = open(os.path.join(RESULTS, f"{name}-umtprd.log"), "a")
        self._start_responder()

    def _start_responder(self) -> None:
        self.proc = subprocess.Popen(["umtprd", "-conf", self.conf], stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        # umtprd writes the FunctionFS descriptors; the gadget can be bound once ep1 exists.
        wait_for(lambda: os.path.exists(f"{self.ffs}/ep1"), 20, "umtprd to write its FunctionFS descriptors")

    def _stop_responder(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        # FunctionFS drops the endpoint files when ep0 closes.
        wait_for(lambda: not os.path.exists(f"{self.ffs}/ep1"), 20, "FunctionFS to drop umtprd's endpoints")

    def add(self, folder: str, fixture: str, name: str | None = None, mtime: float = PAST) -> str:
        """Copies a fixture (a path, or a name in Fixtures/fit) to FOLDER/NAME on the watch; returns
        the path on the watch's storage."""
        src = fixture if os.path.isabs(fixture) else os.path.join(FIT, fixture)
        dest_dir = os.path.join(self.folder, folder)
        os.makedirs(dest_dir, exist_ok=True)
        dest = os.path.join(dest_dir, name or os.path.basename(fixture))
        shutil.copyfile(src, dest)
        os.utime(dest, (mtime, mtime))
        return dest

    def plug(self) -> float:
        """Binds the gadget (umtprd has written its descriptors: ep1 exists) and waits for the host
        to list it; returns the time.monotonic() of the bind (the plug-in)."""
        wait_for(lambda: os.path.exists(f"{self.ffs}/ep1"), 20, "umtprd's FunctionFS endpoints")
        bound = time.monotonic()
        self.gadget.bind(self.udc)
        wait_for(lambda: lsusb(GARMIN, self.product_id) or None, 30, f"the watch (091e:{self.product_id:04x}) to appear", interval=0.3)
        return bound

    def unplug(self) -> None:
        """The watch goes away: umtprd is stopped (closing FunctionFS's ep0 makes the kernel unbind
        the gadget: the host sees the device go), then started again, as a real watch's MTP side
        starts over when its USB link goes. Not a write of the UDC attribute while umtprd runs:
        umtprd waits for ep0 events in a blocking read, which holds FunctionFS's lock, and the
        kernel's unbind needs that lock after it queued UNBIND, so the write could block for ever
        (a guest run that never reported). Stopped, umtprd also cannot answer the next session
        with the rest of a transfer the unplug cut off."""
        self._stop_responder()
        try:
            wait_for(lambda: not lsusb(GARMIN, self.product_id), 30, f"the watch (091e:{self.product_id:04x}) to go", interval=0.3)
        except TimeoutError:
            dmesg = run(["dmesg"]).stdout.splitlines()[-30:]
            print(f"unplug: bound={self.gadget.bound()}; lsusb: {lsusb(GARMIN, self.product_id)}; dmesg:\n" + "\n".join(dmesg), file=sys.stderr)
            raise
        self.gadget.unbind()  # already done by the kernel; no responder runs, so it cannot block
        self._start_responder()

    def close(self) -> None:
        self._stop_responder()  # unbinds the gadget (see unplug)
        self.log.close()
        subprocess.run(["umount", self.ffs], capture_output=True)
        self.gadget.remove()


class MassStorageWatch:
    """A watch that mounts as USB mass storage: a FAT image (made with mkfs.vfat, filled through a
    loop mount) exported read-only by the kernel's mass-storage gadget function
    (usb_f_mass_storage) as a Garmin device (091e:0003) on ``udc``. ``plug()`` binds it and mounts
    the disk the host sees at ``mount_point`` (read-only, as a desktop would); ``unplug()``
    unmounts and unbinds."""

    def __init__(self, files: dict[str, str], device_xml: str, name: str = "hgmsc", udc: str = "dummy_udc.1",
                 mount_point: str = "/media/GARMIN") -> None:
        self.name, self.udc, self.mount_point = name, udc, mount_point
        self.image = os.path.join(WORK, f"{name}.img")
        for module in ("libcomposite", "usb_f_mass_storage", "loop", "vfat"):
            run(["modprobe", module])
        subprocess.run(["mkfs.vfat", "-C", "-n", "GARMIN", self.image, "16384"], check=True, capture_output=True)
        fill = os.path.join(WORK, f"{name}-fill")
        os.makedirs(fill, exist_ok=True)
        subprocess.run(["mount", "-o", "loop", self.image, fill], check=True)
        try:
            for path, fixture in files.items():
                os.makedirs(os.path.join(fill, os.path.dirname(path)), exist_ok=True)
                shutil.copyfile(os.path.join(FIT, fixture), os.path.join(fill, path))
                os.utime(os.path.join(fill, path), (PAST, PAST))
            write(os.path.join(fill, "GARMIN", "GarminDevice.xml"), device_xml)
        finally:
            subprocess.run(["umount", fill], check=True)
        self.gadget = ConfigfsGadget(name, 0x0003, "0000e1a2b3c4", "Forerunner 735XT", "mass_storage.0", "Mass Storage")
        lun = f"{self.gadget.path}/functions/mass_storage.0/lun.0"
        write(f"{lun}/removable", "1")
        write(f"{lun}/ro", "1")
        write(f"{lun}/file", self.image)
        self.gadget.link()

    def disk(self) -> str | None:
        """The host's disk of this watch (/dev/sdX), found through sysfs by the gadget's USB ids."""
        base = "/sys/block"
        for name in sorted(os.listdir(base)):
            device = os.path.realpath(f"{base}/{name}/device")
            parts = device.split("/")
            for i in range(len(parts), 0, -1):
                top = "/".join(parts[:i])
                if os.path.exists(f"{top}/idVendor"):
                    with open(f"{top}/idVendor") as v, open(f"{top}/idProduct") as p:
                        if v.read().strip() == f"{GARMIN:04x}" and p.read().strip() == "0003":
                            return f"/dev/{name}"
                    break
        return None

    def plug(self) -> None:
        self.gadget.bind(self.udc)
        disk = wait_for(lambda: self.disk() if self.disk() and os.path.exists(self.disk()) else None, 60,
                        "the watch's disk (091e:0003) to appear")
        os.makedirs(self.mount_point, exist_ok=True)
        wait_for(lambda: subprocess.run(["mount", "-o", "ro", "-t", "vfat", disk, self.mount_point],
                                        capture_output=True).returncode == 0, 30, f"{disk} to mount")

    def unplug(self) -> None:
        if os.path.ismount(self.mount_point):
            subprocess.run(["umount", self.mount_point], check=True)
        self.gadget.unbind()
        wait_for(lambda: self.disk() is None, 30, "the watch's disk to go")

    def close(self) -> None:
        try:
            self.unplug()
        except Exception as e:  # noqa: BLE001  (cleanup: say it, go on)
            print(f"mass-storage watch: {e}", file=sys.stderr)
        self.gadget.remove()
