#!/usr/bin/env python3
"""HealthGate ANT test peer: an emulated ANT USB stick (Dynastream USB2, 0fcf:1008).

The counterpart of ble_peer.py for ANT. A pure model of the stick (Tests/peers/antstick/model.py)
hears emulated ANT+ sensors and an ANT-FS watch; this program connects it to a host:

- ``--listen usb[:UDC]`` (default ``usb:dummy_udc.0``): a configfs/FunctionFS gadget bound to the
  UDC, so the stick is a real USB device on the local kernel (root; in the project's guest, on
  ``dummy_hcd``). The host drives it with libusb like a real stick.
- ``--listen tcp:HOST:PORT`` / ``unix:PATH``: the same byte stream (OUT bytes in, IN frames out)
  on a socket, one client at a time, for tests without a USB stack.

A control channel (JSON lines) switches sensors on and off, injects faults, adds files to the
watch, unplugs and replugs the stick; ``--sent-log`` records every page the sensors sent and what
the watch did. See Tests/peers/ANT.md for the command line, the control commands, the sent-log
format and the limits.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import queue
import signal
import socket
import socketserver
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from antstick.antfs import Watch, load_file, parse_flags  # noqa: E402
from antstick.model import FAULTS as MODEL_FAULTS  # noqa: E402
from antstick.model import StickConfig, StickModel  # noqa: E402
from antstick.sensors import ALIASES, KINDS, default_device, make_sensor  # noqa: E402
from peer_common import exits_on_stdin_eof  # noqa: E402

PROTOCOL_VERSION = 1
log = logging.getLogger("ant_stick")
EDGE_FAULTS = ("stall",)


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------
def parse_key(text: str) -> bytes:
    key = bytes.fromhex(text.replace(":", "").replace(" ", ""))
    if len(key) != 8:
        raise argparse.ArgumentTypeError("a network key is 8 bytes (16 hex digits)")
    return key


def parse_int(text: str) -> int:
    return int(text, 0)


def parse_sensor(spec: str) -> tuple[str, dict]:
    """``KIND[,opt=value]...``; see build_parser's help for the options."""
    kind, *opts = spec.split(",")
    kind = ALIASES.get(kind, kind)
    if kind not in KINDS:
        raise argparse.ArgumentTypeError(f"unknown sensor kind {kind!r} (one of {', '.join(KINDS)})")
    options: dict = {}
    for opt in opts:
        name, _, value = opt.partition("=")
        if name in ("device", "trans", "period", "rf", "rssi", "user", "battery"):
            options[name] = int(value, 0)
        elif name in ("pairing", "legacy"):
            options[name] = value in ("", "1", "true", "yes")
        elif name == "off":
            options["on"] = False
        elif name == "compute_s":
            options[name] = float(value)
        elif name == "id":
            options["id"] = value
        elif name == "rr":
            if os.path.exists(value):
                with open(value, encoding="utf-8") as f:
                    options["rr_script"] = [int(v) for v in json.load(f)]
            else:
                options["rr_script"] = [int(v) for v in value.split("/")]
        else:
            raise argparse.ArgumentTypeError(f"unknown sensor option {name!r}")
    return kind, options


def parse_endpoint(spec: str) -> tuple[str, object]:
    if spec.startswith("tcp:"):
        host, _, port = spec[4:].rpartition(":")
        return "tcp", (host or "127.0.0.1", int(port))
    if spec.startswith("unix:"):
        return "unix", spec[5:]
    if spec == "usb" or spec.startswith("usb:"):
        return "usb", spec[4:] or "dummy_udc.0"
    raise argparse.ArgumentTypeError(f"bad endpoint {spec!r} (usb[:UDC], tcp:HOST:PORT or unix:PATH)")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description="Emulated ANT USB stick (see Tests/peers/ANT.md)")
    ap.add_argument("--listen", default="usb", type=parse_endpoint,
                    help="usb[:UDC] (default usb:dummy_udc.0), tcp:HOST:PORT or unix:PATH")
    ap.add_argument("--control", type=parse_endpoint, help="control channel: tcp:HOST:PORT or unix:PATH")
    ap.add_argument("--sent-log", help="append one JSON line per page sent and per watch event")
    ap.add_argument("--product", type=parse_int, default=0x1008, choices=[0x1008, 0x1009],
                    help="0x1008 (USB2 stick, default) or 0x1009 (USB-m)")
    ap.add_argument("--serial", type=parse_int, default=1234567,
                    help="the stick's serial number (USB serial string and the 0x61 reply)")
    ap.add_argument("--gadget-name", default="antstick", help="configfs gadget and FunctionFS instance name")
    ap.add_argument("--ant-plus-key", type=parse_key, help="the network key the sensors use (16 hex digits)")
    ap.add_argument("--sensor", action="append", type=parse_sensor, default=[], metavar="KIND[,OPT=V...]",
                    help="a sensor: hrm, power, speed-cadence, speed, cadence, stride, fe, scale; options "
                         "id=, device= (20-bit), trans= (low nibble), period=, rf=, rssi=, pairing, off, "
                         "rr=FILE|A/B/C (hrm, 1/1024 s), legacy (hrm), battery= (hrm), user=, compute_s= (scale)")
    ap.add_argument("--watch", action="store_true", help="an ANT-FS watch (also implied by --watch-file(s))")
    ap.add_argument("--ant-fs-key", type=parse_key, help="the watch's network key (16 hex digits)")
    ap.add_argument("--watch-files", metavar="DIR", help="serve every *.fit in DIR (sorted by name)")
    ap.add_argument("--watch-file", action="append", default=[], metavar="PATH[:FLAGS]",
                    help="serve PATH; FLAGS letters r w e A a c (default r)")
    ap.add_argument("--watch-serial", type=parse_int, default=3862753215)
    ap.add_argument("--watch-name", default="Forerunner 310XT")
    ap.add_argument("--watch-device", type=parse_int, default=0x3039, help="the watch's ANT device number")
    ap.add_argument("--watch-passkey", type=lambda s: bytes.fromhex(s), help="already paired with this 8-byte passkey")
    ap.add_argument("--watch-pairing", choices=["accept", "reject", "off"], default="accept")
    ap.add_argument("--watch-pair-delay", type=float, default=1.0, help="seconds until the user answers (default 1)")
    ap.add_argument("--watch-rf", type=int, default=50, help="the watch's link frequency (default 50)")
    ap.add_argument("--watch-max-block", type=int, default=2048, help="largest download block (default 2048)")
    ap.add_argument("--watch-idle-timeout", type=float, default=60.0)
    ap.add_argument("--startup-delay", type=float, default=0.05, help="reset to startup message, s")
    ap.add_argument("--search-delay", type=float, default=0.5, help="open channel to first possible sync, s")
    ap.add_argument("--rx-fail-limit", type=int, default=4, help="messages missed before going to search")
    ap.add_argument("--startup-on-plug", action="store_true", help="send 6F 00 when plugged in, as at power-on")
    ap.add_argument("--seed", default="1")
    ap.add_argument("--stdin-eof", choices=["auto", "exit", "ignore"], default="auto",
                    help="exit on stdin EOF; auto (default) = only if stdin is a pipe or socket")
    ap.add_argument("-v", "--verbose", action="count", default=0)
    return ap


def build_world(args) -> tuple[StickConfig, list]:
    masters = []
    counts: dict[str, int] = {}
    if args.sensor and args.ant_plus_key is None:
        raise SystemExit("ant_stick: sensors need --ant-plus-key (the tests pass the key of their choice)")
    for kind, options in args.sensor:
        n = counts.get(kind, 0)
        counts[kind] = n + 1
        sid = options.pop("id", kind if n == 0 else f"{kind}-{n + 1}")
        device = options.pop("device", default_device(kind, n))
        masters.append(make_sensor(kind, sid, device, args.ant_plus_key, args.seed, **options))
    if args.watch or args.watch_files or args.watch_file:
        if args.ant_fs_key is None:
            raise SystemExit("ant_stick: the watch needs --ant-fs-key")
        files = []
        paths = []
        if args.watch_files:
            paths += [(os.path.join(args.watch_files, n), 0x80) for n in sorted(os.listdir(args.watch_files))
                      if n.lower().endswith(".fit")]
        for spec in args.watch_file:
            path, _, flags = spec.partition(":")
            paths.append((path, parse_flags(flags or "r")))
        for i, (path, flags) in enumerate(paths, start=1):
            files.append(load_file(path, i, flags))
        masters.append(Watch(device=args.watch_device, key=args.ant_fs_key, seed=args.seed, serial=args.watch_serial,
                             name=args.watch_name, passkey=args.watch_passkey, pairing=args.watch_pairing,
                             pair_delay_s=args.watch_pair_delay, beacon_rf=args.watch_rf,
                             idle_timeout_s=args.watch_idle_timeout, max_block=args.watch_max_block,
                             clock_base=int(time.time()) - 631065600 - int(time.monotonic()), files=files))
    config = StickConfig(product=args.product, serial=args.serial, startup_delay_s=args.startup_delay,
                         search_delay_s=args.search_delay, rx_fail_limit=args.rx_fail_limit,
                         startup_on_power=args.startup_on_plug)
    return config, masters


# ---------------------------------------------------------------------------------------------
# Transports
# ---------------------------------------------------------------------------------------------
class StreamEdge:
    """The stick's byte stream on a TCP or Unix socket, one client at a time. ``unplug`` drops
    the client and refuses new ones until ``replug``."""

    def __init__(self, kind: str, where, on_out, on_plug) -> None:
        self.on_out = on_out
        self.on_plug = on_plug
        self.plugged = True
        self.client: socket.socket | None = None
        self.lock = threading.Lock()
        self.stats = {"clients_total": 0, "out_bytes": 0, "in_bytes": 0, "unplugs": 0, "replugs": 0}
        if kind == "tcp":
            self.server = socket.create_server(where)
            host, port = self.server.getsockname()[:2]
            self.info = {"kind": "tcp", "host": host, "port": port}
        else:
            if os.path.exists(where):
                os.unlink(where)
            self.server = socket.socket(socket.AF_UNIX)
            self.server.bind(where)
            self.server.listen(1)
            self.info = {"kind": "unix", "path": where}
        self.thread = threading.Thread(target=self._accept, name="stream-accept", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            if not self.plugged:
                conn.close()
                continue
            with self.lock:
                if self.client:
                    self._drop(self.client)
                self.client = conn
            self.stats["clients_total"] += 1
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn: socket.socket) -> None:
        while True:
            try:
                data = conn.recv(4096)
            except OSError:
                data = b""
            if not data:
                with self.lock:
                    if self.client is conn:
                        self.client = None
                return
            self.stats["out_bytes"] += len(data)
            self.on_out(data)

    def send(self, frames: list[bytes]) -> None:
        if not frames:
            return
        data = b"".join(frames)
        with self.lock:
            if self.client is None or not self.plugged:
                return
            try:
                self.client.sendall(data)
                self.stats["in_bytes"] += len(data)
            except OSError:
                self.client = None

    def stall(self) -> None:
        raise ValueError("stall needs the USB edge (--listen usb)")

    @staticmethod
    def _drop(conn: socket.socket) -> None:
        try:
            conn.shutdown(socket.SHUT_RDWR)  # wakes the reader thread and tells the client
        except OSError:
            pass
        conn.close()

    def unplug(self) -> None:
        self.plugged = False
        with self.lock:
            if self.client:
                self._drop(self.client)
                self.client = None
        self.stats["unplugs"] += 1

    def replug(self) -> None:
        self.on_plug()
        self.plugged = True
        self.stats["replugs"] += 1

    def status(self) -> dict:
        return {"plugged": self.plugged, "client": self.client is not None, **self.stats}

    def close(self) -> None:
        self.server.close()
        if self.info["kind"] == "unix":
            try:
                os.unlink(self.info["path"])
            except OSError:
                pass


# ---------------------------------------------------------------------------------------------
# The stick process
# ---------------------------------------------------------------------------------------------
class Stick:
    """The model driven in real time by one engine thread, a transport and the control channel."""

    def __init__(self, args) -> None:
        self.args = args
        self.t0 = time.monotonic()
        self.sent_log = open(args.sent_log, "a", encoding="utf-8") if args.sent_log else None
        config, masters = build_world(args)
        self.lock = threading.RLock()
        self.model = StickModel(config, masters, log=self._log, seed=args.seed, now=time.monotonic())
        self.inbox: queue.Queue = queue.Queue()
        self.stop_event = threading.Event()
        self.wake = threading.Event()
        kind, where = args.listen
        if kind == "usb":
            from antstick.functionfs import Gadget, UsbEdge
            gadget = Gadget(name=args.gadget_name, product=args.product, serial=str(args.serial), udc=where)
            self.edge = UsbEdge(gadget, self.on_out, self.on_plug, self.on_bus_reset)
        else:
            self.edge = StreamEdge(kind, where, self.on_out, self.on_plug)
        self.engine = threading.Thread(target=self._engine, name="engine", daemon=True)
        self.edge_send_later: list[bytes] = []

    def _log(self, record: dict) -> None:
        if self.sent_log:
            self.sent_log.write(json.dumps({"t": round(time.time(), 6), **record}, separators=(",", ":")) + "\n")
            self.sent_log.flush()

    def on_out(self, data: bytes) -> None:
        self.inbox.put(data)

    def on_plug(self) -> None:
        """The stick is plugged in again: it powers up knowing nothing (what it then says, with
        --startup-on-plug, goes out with the engine's next frames)."""
        with self.lock:
            self.edge_send_later = self.model.power_cycle(time.monotonic())

    def on_bus_reset(self) -> None:
        """The host reset the stick on the USB bus (a hung stick starts again)."""
        with self.lock:
            self.edge_send_later = self.model.bus_reset(time.monotonic())

    def start(self) -> dict:
        self.edge.start()
        self.engine.start()
        usb = None
        if self.args.listen[0] == "usb":
            g = self.edge.gadget
            ep_in, ep_out = g.endpoint_paths()
            usb = {"vendor": "0x0fcf", "product": f"0x{self.args.product:04x}", "udc": g.udc, "gadget": g.path,
                   "functionfs": g.mount, "in": {"file": os.path.basename(ep_in)},
                   "out": {"file": os.path.basename(ep_out)}}
        return {"ready": True, "protocol": PROTOCOL_VERSION, "pid": os.getpid(),
                "listen": self.edge.info if usb is None else {"kind": "usb", **usb},
                "sensors": [{"id": m.id, "kind": m.kind, "device": m.device, "device_number": m.device_number,
                             "device_type": m.device_type, "trans_type": m.trans_type, "period": m.period,
                             "rf": m.rf} for m in self.model.masters.values() if m.kind != "antfs"],
                "watch": next(({"id": m.id, "device_number": m.device_number, "serial": m.serial,
                                "files": [f.status() for f in m.files]}
                               for m in self.model.masters.values() if m.kind == "antfs"), None)}

    def _engine(self) -> None:
        while not self.stop_event.is_set():
            with self.lock:
                deadline = self.model.next_deadline()
            timeout = 0.05 if deadline is None else min(0.05, max(0.0, deadline - time.monotonic()))
            try:
                data = self.inbox.get(timeout=timeout)
            except queue.Empty:
                data = None
            with self.lock:
                frames = self.model.feed(data, time.monotonic()) if data else self.model.tick(time.monotonic())
                while True:
                    try:
                        more = self.inbox.get_nowait()
                    except queue.Empty:
                        break
                    frames += self.model.feed(more, time.monotonic())
                if self.edge_send_later:
                    frames = self.edge_send_later + frames
                    self.edge_send_later = []
            self.edge.send(frames)

    # ----- control -----
    def command(self, words: list[str]) -> dict:
        cmd, args = words[0], words[1:]
        if cmd == "ping":
            return {"ok": True}
        if cmd == "status":
            with self.lock:
                st = self.model.status()
            return {"ok": True, "uptime_s": round(time.monotonic() - self.t0, 2), "stick": st,
                    "edge": self.edge.status()}
        if cmd in ("start", "stop"):
            if len(args) != 1:
                raise ValueError(f"usage: {cmd} SENSOR")
            with self.lock:
                m = (self.model.start_master(args[0], time.monotonic()) if cmd == "start"
                     else self.model.stop_master(args[0]))
                return {"ok": True, "device": m.id, "on": m.on, "sent": m.sent}
        if cmd == "fault":
            if not args:
                raise ValueError("usage: fault NAME [N]")
            name, count = args[0], int(args[1]) if len(args) > 1 else 1
            if name not in (*EDGE_FAULTS, *MODEL_FAULTS, "clear"):
                raise ValueError(f"unknown fault {name!r} (one of {', '.join((*MODEL_FAULTS, *EDGE_FAULTS))}, clear)")
            if name == "stall":
                self.edge.stall()
                return {"ok": True, "fault": name}
            if name == "clear":
                with self.lock:
                    for f in MODEL_FAULTS:
                        self.model.set_fault(f, 0)
                return {"ok": True, "fault": name, "faults": self.model.armed_faults()}
            with self.lock:
                faults = self.model.set_fault(name, count)
            return {"ok": True, "fault": name, "faults": faults}
        if cmd == "add-file":
            if not args:
                raise ValueError("usage: add-file PATH [FLAGS]")
            watch = self._watch()
            with self.lock:
                f = watch.add_file(args[0], parse_flags(args[1]) if len(args) > 1 else 0x80)
            return {"ok": True, "file": f.status()}
        if cmd == "pairing":
            if len(args) != 1 or args[0] not in ("accept", "reject", "off"):
                raise ValueError("usage: pairing accept|reject|off")
            watch = self._watch()
            with self.lock:
                watch.pairing_mode = args[0]
            return {"ok": True, "pairing": watch.pairing_mode}
        if cmd == "forget-passkey":
            watch = self._watch()
            with self.lock:
                watch.passkey = None
            return {"ok": True}
        if cmd == "unplug":
            self.edge.unplug()
            return {"ok": True, "plugged": False}
        if cmd == "replug":
            self.edge.replug()
            return {"ok": True, "plugged": True}
        if cmd == "shutdown":
            return {"ok": True}
        raise ValueError(f"unknown command {cmd!r}")

    def _watch(self) -> Watch:
        for m in self.model.masters.values():
            if isinstance(m, Watch):
                return m
        raise ValueError("no watch (start with --watch)")

    def close(self) -> None:
        self.stop_event.set()
        if self.engine.is_alive():
            self.engine.join(timeout=2)
        self.edge.close()
        if self.sent_log:
            self.sent_log.close()


def serve_control(stick: Stick, kind: str, where) -> tuple[socketserver.BaseServer, dict]:
    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            for raw in self.rfile:
                text = raw.decode("utf-8", "replace").strip()
                if not text:
                    continue
                words: list[str] = []
                try:
                    if text.startswith("{"):
                        req = json.loads(text)
                        words = [req.get("cmd", "")] + [str(a) for a in req.get("args", [])]
                    else:
                        words = text.split()
                    reply = stick.command(words)
                except Exception as e:  # noqa: BLE001 - every failure is a reply
                    reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
                reply.setdefault("cmd", words[0] if words else "")
                self.wfile.write((json.dumps(reply, separators=(",", ":")) + "\n").encode())
                self.wfile.flush()
                if reply["cmd"] == "shutdown" and reply.get("ok"):
                    stick.stop_event.set()

    if kind == "tcp":
        class TCPServer(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True
        server = TCPServer(where, Handler)
        host, port = server.server_address[:2]
        info = {"kind": "tcp", "host": host, "port": port}
    else:
        if os.path.exists(where):
            os.unlink(where)

        class UnixServer(socketserver.ThreadingUnixStreamServer):
            daemon_threads = True
        server = UnixServer(where, Handler)
        info = {"kind": "unix", "path": where}
    threading.Thread(target=server.serve_forever, name="control", daemon=True).start()
    return server, info


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(stream=sys.stderr, format="ant_stick %(levelname)s %(name)s: %(message)s",
                        level=[logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)])
    t0 = time.monotonic()
    stick = Stick(args)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stick.stop_event.set())
    watch_stdin = exits_on_stdin_eof(args.stdin_eof)
    if watch_stdin:
        def wait_eof() -> None:
            while os.read(sys.stdin.fileno(), 4096):
                pass
            stick.stop_event.set()
        threading.Thread(target=wait_eof, name="stdin", daemon=True).start()
    server = None
    try:
        ready = stick.start()
        ready["control"] = None
        if args.control:
            server, ready["control"] = serve_control(stick, *args.control)
        ready["startup_s"] = round(time.monotonic() - t0, 3)
        sys.stdout.write(json.dumps(ready, separators=(",", ":")) + "\n")
        sys.stdout.flush()
        while not stick.stop_event.wait(0.5):
            pass
    finally:
        if server:
            server.shutdown()
            server.server_close()
            if args.control[0] == "unix":
                try:
                    os.unlink(args.control[1])
                except OSError:
                    pass
        stick.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
