#!/usr/bin/env python3
"""A hostile HTTP proxy in front of a real healthgate-server, for the forwarder's tests.

It forwards requests to the upstream server, except that requests matching --match (by default
uploads, `POST /v1/records`) take the next fault from --faults, one fault per request, until the
list is used up; after that they pass through. What it did to each request is appended to --log
as one JSON line, so a test can check that every fault was actually played.

Faults (what a misconfigured proxy, captive portal or broken server answers):
  301 302 307 308      a redirect to https://SAME-HOST/PATH, with an HTML body (as nginx writes it)
  400 403 404 405 407 408 413 429 500 502 503 504
                       an HTML error page with that status (407 with Proxy-Authenticate, 405 with
                       Allow; --retry-after adds Retry-After to every answer the proxy makes)
  garbage              200 with Content-Type application/json and a body that is not JSON
  hang                 no answer until the client gives up (or --hang seconds)
  reset                the connection is reset (RST) without an answer
  ansi                 503 in the protocol's error format whose message carries terminal escape
                       sequences
  protocol-413         413 in the protocol's error format (payload_too_large) naming no record
  pass                 forwarded unchanged (a way to space faults out)

Other options change answers that are forwarded:
  --header 'Name: value'   add (or replace) this header on every answer, forwarded or not
  --stuck-history          history pages (GET /v1/records) say more=true and next=the request's
                           cursor, so a client that trusts them never gets anywhere
  --inject-history FILE    a JSON array of records put at the front of the first history page
                           served (records a newer server version or another install wrote)

Prints `hostile-proxy listening on http://127.0.0.1:PORT` once listening; exits when standard
input closes (so it dies with the test process that started it).
"""

import argparse
import http.client
import http.server
import json
import select
import socket
import socketserver
import struct
import sys
import threading
import time
import urllib.parse

STATUS_TEXT = {
    301: "Moved Permanently", 302: "Found", 307: "Temporary Redirect", 308: "Permanent Redirect",
    400: "Bad Request", 403: "Forbidden", 404: "Not Found", 405: "Not Allowed",
    407: "Proxy Authentication Required", 408: "Request Time-out", 413: "Request Entity Too Large",
    429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
    503: "Service Temporarily Unavailable", 504: "Gateway Time-out",
}
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"}


class Plan:
    """The faults still to play and the log of what was done, shared by the handler threads."""

    def __init__(self, faults, log_path, injected=None):
        self.faults = list(faults)
        self.injected = injected
        self.lock = threading.Lock()
        self.log_path = log_path

    def next_fault(self):
        with self.lock:
            return self.faults.pop(0) if self.faults else "pass"

    def take_injected(self):
        with self.lock:
            injected, self.injected = self.injected, None
            return injected

    def log(self, **entry):
        if not self.log_path:
            return
        with self.lock, open(self.log_path, "a") as f:
            f.write(json.dumps(entry) + "\n")


def make_handler(args, plan):
    upstream = urllib.parse.urlsplit(args.upstream)
    match_method, _, match_path = args.match.partition(" ")
    extra_headers = []
    for h in args.header:
        name, _, value = h.partition(":")
        extra_headers.append((name.strip(), value.strip()))

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "nginx"
        sys_version = ""

        def log_message(self, *a):  # quiet: the JSON log says what happened
            pass

        def read_body(self):
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def answer(self, status, body, content_type="text/html", headers=()):
            self.send_response(status, STATUS_TEXT.get(status))
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            names = set()
            for name, value in list(headers) + extra_headers:
                names.add(name.lower())
                self.send_header(name, value)
            if args.retry_after is not None and "retry-after" not in names:
                self.send_header("Retry-After", args.retry_after)
            self.end_headers()
            self.wfile.write(body)

        def html(self, status):
            text = f"{status} {STATUS_TEXT.get(status, '')}"
            return (f"<html>\r\n<head><title>{text}</title></head>\r\n<body>\r\n<center><h1>{text}</h1></center>\r\n"
                    f"<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n").encode()

        def play(self, fault, body):
            if fault == "pass":
                return self.forward(body)
            if fault in ("301", "302", "307", "308"):
                host = self.headers.get("Host", "localhost").split(":")[0]
                return self.answer(int(fault), self.html(int(fault)), headers=[("Location", f"https://{host}{self.path}")])
            if fault.isdigit():
                status = int(fault)
                headers = []
                if status == 407:
                    headers.append(("Proxy-Authenticate", 'Basic realm="proxy"'))
                if status == 405:
                    headers.append(("Allow", "GET, HEAD"))
                return self.answer(status, self.html(status), headers=headers)
            if fault == "garbage":
                return self.answer(200, b"<html>Welcome to the hotel network. Please sign in.</html>\x00\xff",
                                   content_type="application/json")
            if fault == "ansi":
                message = "\x1b[2J\x1b]0;owned\x07maintenance\x1b[31m in progress\r\nfake line"
                body = json.dumps({"error": {"code": "unavailable", "message": message}}).encode()
                return self.answer(503, body, content_type="application/json")
            if fault == "protocol-413":
                body = json.dumps({"error": {"code": "payload_too_large", "message": "too large"}}).encode()
                return self.answer(413, body, content_type="application/json")
            if fault == "hang":
                deadline = time.monotonic() + args.hang
                while time.monotonic() < deadline:
                    readable, _, _ = select.select([self.connection], [], [], 0.5)
                    if readable and not self.connection.recv(1, socket.MSG_PEEK):
                        break  # the client closed
                self.close_connection = True
                return
            if fault == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                return
            raise ValueError(f"unknown fault {fault}")

        def forward(self, body):
            connection = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=120)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP and k.lower() != "host"}
            headers["Host"] = f"{upstream.hostname}:{upstream.port}"
            connection.request(self.command, self.path, body=body if body else None, headers=headers)
            response = connection.getresponse()
            data = response.read()
            history = self.command == "GET" and self.path.startswith("/v1/records") and response.status == 200
            if history and args.stuck_history:
                page = json.loads(data)
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                page["next"] = int(query.get("after", ["0"])[0])
                page["more"] = True
                data = json.dumps(page).encode()
            injected = plan.take_injected() if history else None
            if injected:
                page = json.loads(data)
                page["records"] = injected + page["records"]
                data = json.dumps(page).encode()
            headers = [(k, v) for k, v in response.getheaders()
                       if k.lower() not in HOP_BY_HOP and k.lower() != "content-length"
                       and k.lower() not in {n.lower() for n, _ in extra_headers}]
            connection.close()
            self.send_response(response.status, response.reason)
            for name, value in headers + extra_headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def handle_any(self):
            body = self.read_body()
            matches = self.command == match_method and urllib.parse.urlsplit(self.path).path == match_path
            fault = plan.next_fault() if matches else "pass"
            plan.log(method=self.command, path=self.path, fault=fault)
            self.play(fault, body)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = handle_any

    return Handler


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream", required=True, help="the real server, http://HOST:PORT")
    parser.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT to listen on (port 0: any free one)")
    parser.add_argument("--faults", default="", help="comma-separated faults, played in order on matching requests")
    parser.add_argument("--match", default="POST /v1/records", help="'METHOD PATH' of the requests that take faults")
    parser.add_argument("--retry-after", default=None, help="Retry-After value on every answer the proxy makes itself")
    parser.add_argument("--header", action="append", default=[], help="'Name: value' added to every answer")
    parser.add_argument("--stuck-history", action="store_true", help="history pages never advance")
    parser.add_argument("--inject-history", help="JSON array of records put at the front of the first history page")
    parser.add_argument("--hang", type=float, default=600, help="longest a hang lasts, in seconds")
    parser.add_argument("--log", help="append one JSON line per request: method, path, fault")
    args = parser.parse_args()

    faults = [f.strip() for f in args.faults.split(",") if f.strip()]
    known = {"pass", "garbage", "hang", "reset", "ansi", "protocol-413"} | {str(s) for s in STATUS_TEXT}
    for fault in faults:
        if fault not in known:
            parser.error(f"unknown fault {fault!r}")
    host, _, port = args.listen.rpartition(":")
    injected = None
    if args.inject_history:
        with open(args.inject_history) as f:
            injected = json.load(f)
    server = Server((host, int(port)), make_handler(args, Plan(faults, args.log, injected)))
    print(f"hostile-proxy listening on http://{host}:{server.server_address[1]}", flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()  # until the test process closes the pipe (or dies)
    server.shutdown()


if __name__ == "__main__":
    main()
