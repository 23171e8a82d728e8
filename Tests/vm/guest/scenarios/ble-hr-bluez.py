"""BLE through the guest's real bluetoothd: a Bumble heart-rate peripheral on /dev/vhci is
discovered and connected over D-Bus (org.bluez), its Heart Rate Measurement is subscribed first
with StartNotify (values arrive as PropertiesChanged signals), then with AcquireNotify (a socket,
one recv per notification), and everything received equals the peer's sent log byte for byte.
Then Device1.Disconnect returns and the link is down on both sides.

Exact comparison: the peer is paused (control command `pause hr`: no new samples, the link and
the subscription stay) before each unsubscription, and the scenario waits until it has received
as many notifications as the peer logged, so no notification is in flight when BlueZ unsubscribes.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

from vmpeer import BLUEZ, HR_ADDRESS, RESULTS, Peer, step, timings

HR_SERVICE = "0000180d-0000-1000-8000-00805f9b34fb"
HR_MEASUREMENT = "00002a37-0000-1000-8000-00805f9b34fb"
PER_PHASE = 8  # notifications received in each phase before pausing the peer

dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
GLib.timeout_add(50, lambda: True)  # wakes the waits below at least every 50 ms


def wait_for(pred, timeout: float, what: str):
    """Runs the GLib main loop (D-Bus signals) until pred() is true; fails after timeout."""
    ctx = GLib.MainContext.default()
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        ctx.iteration(True)


def managed_objects(bus) -> dict:
    manager = dbus.Interface(bus.get_object(BLUEZ, "/"), "org.freedesktop.DBus.ObjectManager")
    return manager.GetManagedObjects()


def prop(bus, path: str, interface: str, name: str):
    props = dbus.Interface(bus.get_object(BLUEZ, path), "org.freedesktop.DBus.Properties")
    return props.Get(interface, name)


def main() -> int:
    peer = Peer(["hr"], rate=10)
    step("peer ready")
    bluetoothd_log = open(os.path.join(RESULTS, "bluetoothd.log"), "w")
    bluetoothd = subprocess.Popen(["/usr/libexec/bluetooth/bluetoothd", "-n", "-d"],
                                  stdout=bluetoothd_log, stderr=subprocess.STDOUT)
    bus = dbus.SystemBus()
    result: dict = {"peer": peer.info}
    try:
        adapter_path = f"/org/bluez/hci{peer.info['h4']['index']}"
        wait_for(lambda: bus.name_has_owner(BLUEZ) and "org.bluez.Adapter1" in managed_objects(bus).get(adapter_path, {}),
                 30, f"bluetoothd to publish {adapter_path}")
        step("adapter published")
        adapter = dbus.Interface(bus.get_object(BLUEZ, adapter_path), "org.bluez.Adapter1")
        adapter_props = dbus.Interface(bus.get_object(BLUEZ, adapter_path), "org.freedesktop.DBus.Properties")
        # bluetoothd powers new adapters on by itself (AutoEnable, the default): setting Powered
        # meanwhile answers Busy. Ask only if it has not happened after a while.
        try:
            wait_for(lambda: prop(bus, adapter_path, "org.bluez.Adapter1", "Powered"), 10, "AutoEnable")
        except TimeoutError:
            adapter_props.Set("org.bluez.Adapter1", "Powered", dbus.Boolean(True))
            wait_for(lambda: prop(bus, adapter_path, "org.bluez.Adapter1", "Powered"), 20, "the adapter to power on")
        step("adapter powered")

        device_path = f"{adapter_path}/dev_{HR_ADDRESS.replace(':', '_')}"
        adapter.SetDiscoveryFilter({"Transport": "le", "UUIDs": dbus.Array([HR_SERVICE], signature="s")})
        adapter.StartDiscovery()
        wait_for(lambda: "org.bluez.Device1" in managed_objects(bus).get(device_path, {}), 30,
                 f"discovery of {HR_ADDRESS}")
        adapter.StopDiscovery()
        step("discovered")
        device = dbus.Interface(bus.get_object(BLUEZ, device_path), "org.bluez.Device1")
        device.Connect(timeout=60)
        wait_for(lambda: prop(bus, device_path, "org.bluez.Device1", "ServicesResolved"), 30, "ServicesResolved")
        step("connected, services resolved")

        objects = managed_objects(bus)
        char_path = next(p for p, ifaces in objects.items()
                         if p.startswith(device_path + "/")
                         and ifaces.get("org.bluez.GattCharacteristic1", {}).get("UUID") == HR_MEASUREMENT)
        char = dbus.Interface(bus.get_object(BLUEZ, char_path), "org.bluez.GattCharacteristic1")
        flags = [str(f) for f in objects[char_path]["org.bluez.GattCharacteristic1"]["Flags"]]
        result["characteristic"] = {"path": char_path, "flags": flags}

        received: list[str] = []

        def drain(what: str) -> None:
            """Pause the peer, then wait until every notification it logged has arrived."""
            sent = peer.control("pause hr")["sent"]
            wait_for(lambda: len(received) >= sent, 15, f"{what}: {sent} notifications (have {len(received)})")
            if len(received) != sent:
                raise AssertionError(f"{what}: received {len(received)}, the peer sent {sent}")

        # Phase 1: StartNotify, values as PropertiesChanged(Value) signals.
        def on_changed(interface, changed, _invalidated):
            if interface == "org.bluez.GattCharacteristic1" and "Value" in changed:
                received.append(bytes(changed["Value"]).hex())
        match = bus.add_signal_receiver(on_changed, "PropertiesChanged", "org.freedesktop.DBus.Properties",
                                        BLUEZ, char_path)
        char.StartNotify()
        wait_for(lambda: len(received) >= PER_PHASE, 30, f"{PER_PHASE} notifications through StartNotify")
        drain("StartNotify")
        char.StopNotify()
        match.remove()
        phase1 = len(received)
        step(f"StartNotify: {phase1} notifications")

        # Phase 2: AcquireNotify, one SOCK_SEQPACKET recv per notification.
        fd, mtu = char.AcquireNotify(dbus.Dictionary({}, signature="sv"))
        sock = socket.socket(fileno=fd.take())
        result["acquire_notify_mtu"] = int(mtu)
        sock.setblocking(False)

        def read_socket():
            try:
                while True:
                    data = sock.recv(1024)
                    if not data:
                        raise AssertionError("AcquireNotify socket closed by BlueZ")
                    received.append(data.hex())
            except BlockingIOError:
                pass
            return True
        watch = GLib.io_add_watch(sock.fileno(), GLib.IO_IN, lambda *_: read_socket())
        peer.control("resume hr")
        wait_for(lambda: len(received) >= phase1 + PER_PHASE, 30, f"{PER_PHASE} notifications through AcquireNotify")
        drain("AcquireNotify")
        GLib.source_remove(watch)
        sock.close()  # unsubscribes
        step(f"AcquireNotify: {len(received) - phase1} notifications (MTU {int(mtu)})")

        sent = [r for r in peer.sent() if r["peripheral"] == "hr"]
        result["received"] = len(received)
        result["sent"] = len(sent)
        if received != [r["hex"] for r in sent]:
            raise AssertionError(f"received != sent log:\n{received}\n{[r['hex'] for r in sent]}")
        if [r["seq"] for r in sent] != list(range(len(sent))):
            raise AssertionError("sent log seq is not 0..n-1")
        step("received == sent log")

        t0 = time.monotonic()
        device.Disconnect(timeout=30)
        wait_for(lambda: not prop(bus, device_path, "org.bluez.Device1", "Connected"), 15, "Connected to be false")
        result["disconnect_s"] = round(time.monotonic() - t0, 2)
        wait_for(lambda: not peer.control("status")["peripherals"]["hr"]["connections"], 10,
                 "the peripheral to see the link down")
        status = peer.control("status")["peripherals"]["hr"]
        result["peer_connections_total"] = status["connections_total"]
        step("disconnected")
        return 0
    finally:
        result["timings"] = timings
        with open(os.path.join(RESULTS, "result.json"), "w") as f:
            json.dump(result, f, indent=1)
        peer.close()
        bluetoothd.terminate()
        try:
            bluetoothd.wait(10)
        except subprocess.TimeoutExpired:
            bluetoothd.kill()
        subprocess.run(["cp", peer.sent_log, RESULTS], check=False)


if __name__ == "__main__":
    sys.exit(main())
