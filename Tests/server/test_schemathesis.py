"""Schemathesis against the real healthgate-server, driven by openapi/healthgate-sync.yaml.

Run: make server-test (builds the server first), or
     python3 -m pytest -q -p no:cacheprovider Tests/server
The binary is $HEALTHGATE_SERVER, else .build/debug/healthgate-server. One server process (port 0,
a temporary database, bcrypt at its minimum cost) serves every operation; each case is checked
for server errors and for conformance of status code, content type, headers and body with the
document. Examples are bounded so the run takes seconds (HEALTHGATE_SCHEMATHESIS_EXAMPLES per
operation and mode, 40 by default) and the generator is derandomized.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import schemathesis
import yaml
from openapi_spec_validator import validate
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "openapi" / "healthgate-sync.yaml"
BINARY = os.environ.get("HEALTHGATE_SERVER", str(ROOT / ".build" / "debug" / "healthgate-server"))
EMAIL, PASSWORD = "schemathesis@example.org", "correct horse battery staple"
# Tokens logged in up front: each logout case spends one (logins from this address are rate
# limited once schemathesis has tried enough wrong passwords).
SPARE_TOKENS = 24
MAX_EXAMPLES = int(os.environ.get("HEALTHGATE_SCHEMATHESIS_EXAMPLES", "40"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance,
          response_schema_conformance]


class Server:
    def __init__(self, tmp: Path):
        if not os.access(BINARY, os.X_OK):
            raise AssertionError(f"{BINARY} is not built: run `swift build --product healthgate-server`")
        self.db = tmp / "server.sqlite"
        self.log_path = tmp / "server.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([BINARY, "--db", str(self.db), "--port", "0", "--bcrypt-cost", "4",
                                      # The fuzzer registers far more accounts than a person would.
                                      "--registrations-per-hour", "100000"],
                                     stdout=subprocess.PIPE, stderr=self.log)
        ready, _, _ = select.select([self.proc.stdout], [], [], 20.0)
        line = self.proc.stdout.readline().decode() if ready else ""
        if "listening on " not in line:
            self.stop()
            raise AssertionError(f"no listening line from the server: {line!r}: {self.log_path.read_text()}")
        self.url = line.strip().rsplit(" ", 1)[-1]

    def request(self, method: str, path: str, body: dict | None = None, token: str | None = None) -> tuple[int, dict]:
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")

    def login(self, name: str) -> str:
        status, body = self.request("POST", "/v1/sessions", {"email": EMAIL, "password": PASSWORD, "device_name": name})
        assert status == 201, body
        return body["token"]

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = Server(tmp_path_factory.mktemp("healthgate-server"))
    status, body = server.request("POST", "/v1/accounts", {"email": EMAIL, "password": PASSWORD})
    assert status == 201, body
    server.token = server.login("schemathesis")
    server.spare = [server.login(f"spare-{i}") for i in range(SPARE_TOKENS)]
    # Something to read back: one record of each kind.
    records = [
        {"id": "6f1c0d8e-3b5a-4c1e-9a57-000000000001", "version": 1, "type": "workout",
         "data": {"id": "6f1c0d8e-3b5a-4c1e-9a57-000000000001", "version": 1, "sport": "running",
                  "start": "2025-03-03T07:00:00Z", "end": "2025-03-03T08:00:00.250Z", "elapsed_s": 3600.25,
                  "distance_m": 10000, "laps": [], "samples": [{"time": "2025-03-03T07:00:01Z", "heart_rate": 120}],
                  "rr_intervals": [0.5], "lengths": [], "source": {"driver": "fit", "device": "watch"}}},
        {"id": "6f1c0d8e-3b5a-4c1e-9a57-000000000002", "version": 1, "type": "sleep",
         "data": {"id": "6f1c0d8e-3b5a-4c1e-9a57-000000000002", "version": 1, "start": "2025-03-03T22:00:00Z",
                  "end": "2025-03-04T06:00:00Z", "stages": [], "source": {"driver": "fit"}}},
        {"id": "6f1c0d8e-3b5a-4c1e-9a57-000000000003", "version": 1, "type": "habit",
         "data": {"id": "6f1c0d8e-3b5a-4c1e-9a57-000000000003", "version": 1, "habit": "hydration",
                  "time": "2025-03-04T08:00:00Z", "value": 250, "unit": "ml", "source": {"driver": "csv"}}},
        {"id": "6f1c0d8e-3b5a-4c1e-9a57-000000000004", "version": 1, "type": "measurement",
         "data": {"id": "6f1c0d8e-3b5a-4c1e-9a57-000000000004", "version": 1, "kind": "blood_pressure",
                  "time": "2025-03-04T08:00:00Z", "value": 120, "extra": {"diastolic": 80}, "source": {"driver": "ble"}}},
    ]
    status, body = server.request("POST", "/v1/records", {"records": records}, token=server.token)
    assert status == 200 and [r["status"] for r in body["results"]] == ["accepted"] * 4, body
    yield server
    status = server.stop()
    log = server.log_path.read_bytes()
    db = b"".join(p.read_bytes() for p in server.db.parent.glob("server.sqlite*"))
    for secret in [PASSWORD, server.token, *server.spare]:
        assert secret.encode() not in log, "a secret is in the server log"
        assert secret.encode() not in db, "a secret is in the database"
    assert status == 0, f"the server exited with {status}"


@pytest.fixture(scope="module")
def api_schema(server):
    schema = schemathesis.openapi.from_path(str(SPEC))
    schema.config.update(base_url=server.url, request_timeout=10)
    schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
                                    max_examples=MAX_EXAMPLES, with_security_parameters=False)
    return schema


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
def test_api_conforms_to_the_document(case, server):
    if case.operation.definition.raw.get("security", None) != []:
        token = server.token
        if case.method == "DELETE":
            # Logging out revokes the token: spend a spare one (or get 401s once they run out).
            token = server.spare.pop() if server.spare else server.token
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {token}"}
    if (case.headers or {}).get("Content-Encoding") == "gzip":
        # Schemathesis sends the body as it is: drop the header (gzip uploads are tested in
        # HealthGateServerTests) rather than spend the upload examples on 400s.
        del case.headers["Content-Encoding"]
    response = case.call()
    case.validate_response(response, checks=CHECKS)


def test_unknown_routes_and_methods_answer_json(server):
    status, body = server.request("GET", "/v1/nothing")
    assert status == 404 and body["error"]["code"] == "not_found"
    status, body = server.request("PATCH", "/v1/records")
    assert status == 405 and body["error"]["code"] == "method_not_allowed"


def test_the_document_is_valid_openapi():
    validate(yaml.safe_load(SPEC.read_text()))
