"""Schemathesis against the real healthgate-server, driven by openapi/healthgate-sync.yaml.

Run: make server-test (builds the server first), or
     python3 -m pytest -q -p no:cacheprovider Tests/server
The binary is $HEALTHGATE_SERVER, else .build/debug/healthgate-server. One server process (port 0,
a temporary database, bcrypt at its minimum cost) serves every operation; each answer is checked
for server errors and for conformance of status code, content type, headers and body with the
document.

Two phases, in this order:
- every operation on its own (HEALTHGATE_SCHEMATHESIS_EXAMPLES cases per operation and mode,
  100 by default; the generator is derandomized);
- workflows that follow the document's links (register -> login -> revoke the new device,
  change the password, delete the account; history -> next page, delete a record; ...):
  HEALTHGATE_SCHEMATHESIS_SCENARIOS scenarios (150 by default) of up to 10 steps, with the
  stateful checks (use after free, resource availability) on top.

Operations that destroy credentials or data (logout, revoking a device, changing the password,
deleting the account, deleting records) never run on the main account: each stateless case of
them gets an account of its own, and every workflow runs on an account of its own (replaced
when a step logs it out or deletes it). At the end, the main token must still work and every
operation of the document must have been answered 2xx at least once, so that a run that only
saw 401s (a lost token) or 404s cannot pass.
"""
from __future__ import annotations

import collections
import itertools
import json
import os
import uuid
import select
import signal
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
import schemathesis
import yaml
import hypothesis
import jsonschema
from hypothesis import HealthCheck, Phase, settings
from openapi_spec_validator import validate
from pgcluster import PostgresCluster
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.specs.openapi.checks import ensure_resource_availability, use_after_free

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "openapi" / "healthgate-sync.yaml"
BINARY = os.environ.get("HEALTHGATE_SERVER", str(ROOT / ".build" / "debug" / "healthgate-server"))
EMAIL, PASSWORD = "schemathesis@example.org", "correct horse battery staple"
MAX_EXAMPLES = int(os.environ.get("HEALTHGATE_SCHEMATHESIS_EXAMPLES", "100"))
SCENARIOS = int(os.environ.get("HEALTHGATE_SCHEMATHESIS_SCENARIOS", "150"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance,
          response_schema_conformance]
STATEFUL_CHECKS = CHECKS + [use_after_free, ensure_resource_availability]
# Operations that revoke tokens or delete data: never with the main account's token.
DESTRUCTIVE = {"logout", "revokeDevice", "changePassword", "deleteAccount", "deleteRecord", "deleteAllRecords"}
RECORD_ID = "6f1c0d8e-3b5a-4c1e-9a57-0000000000{:02d}"

# Operation label ("DELETE /v1/devices/{id}") -> how many answers were 2xx, over both phases.
SUCCESSES: collections.Counter[str] = collections.Counter()
CALLS: collections.Counter[str] = collections.Counter()


def sample_records(first: int) -> list[dict]:
    """One record of each kind, with ids from `first` on."""
    ids = [RECORD_ID.format(first + i) for i in range(4)]
    return [
        {"id": ids[0], "version": 1, "type": "workout",
         "data": {"id": ids[0], "version": 1, "sport": "running",
                  "start": "2025-03-03T07:00:00Z", "end": "2025-03-03T08:00:00.250Z", "elapsed_s": 3600.25,
                  "distance_m": 10000, "laps": [], "samples": [{"time": "2025-03-03T07:00:01Z", "heart_rate": 120}],
                  "rr_intervals": [0.5], "lengths": [], "source": {"driver": "fit", "device": "watch"}}},
        {"id": ids[1], "version": 1, "type": "sleep",
         "data": {"id": ids[1], "version": 1, "start": "2025-03-03T22:00:00Z",
                  "end": "2025-03-04T06:00:00Z", "stages": [], "source": {"driver": "fit"}}},
        {"id": ids[2], "version": 1, "type": "habit",
         "data": {"id": ids[2], "version": 1, "habit": "hydration",
                  "time": "2025-03-04T08:00:00Z", "value": 250, "unit": "ml", "category": "glass",
                  "source": {"driver": "csv"}}},
        {"id": ids[3], "version": 1, "type": "measurement",
         "data": {"id": ids[3], "version": 1, "kind": "blood_pressure",
                  "time": "2025-03-04T08:00:00Z", "value": 120, "extra": {"diastolic": 80}, "source": {"driver": "ble"}}},
    ]


@dataclass
class Account:
    """A throwaway account: logged in on two devices, holding four records."""
    email: str
    password: str
    token: str
    device_id: str


class Server:
    def __init__(self, tmp: Path, postgres: PostgresCluster | None = None):
        if not os.access(BINARY, os.X_OK):
            raise AssertionError(f"{BINARY} is not built: run `swift build --product healthgate-server`")
        self.db = tmp / "server.sqlite"
        self.postgres = postgres
        self.database = postgres.create_database() if postgres else None
        store = ["--database", postgres.url(self.database)] if postgres else ["--db", str(self.db)]
        self.log_path = tmp / "server.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([BINARY, *store, "--port", "0", "--bcrypt-cost", "4",
                                      # The fuzzer registers and fails logins far more than people do.
                                      "--registrations-per-hour", "100000", "--login-failures-per-address", "100000"],
                                     stdout=subprocess.PIPE, stderr=self.log)
        ready, _, _ = select.select([self.proc.stdout], [], [], 20.0)
        line = self.proc.stdout.readline().decode() if ready else ""
        if "listening on " not in line:
            self.stop()
            raise AssertionError(f"no listening line from the server: {line!r}: {self.log_path.read_text()}")
        self.url = line.strip().rsplit(" ", 1)[-1]
        self.numbers = itertools.count(1)
        self.secrets: list[str] = [PASSWORD]

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

    def login(self, email: str, password: str, name: str) -> dict:
        status, body = self.request("POST", "/v1/sessions", {"email": email, "password": password, "device_name": name})
        assert status == 201, body
        self.secrets.append(body["token"])
        return body

    def throwaway(self) -> Account:
        """A new account with two devices and four records, for operations that destroy things."""
        n = next(self.numbers)
        email, password = f"throwaway-{n}@example.org", f"throwaway password {n}"
        status, body = self.request("POST", "/v1/accounts", {"email": email, "password": password})
        assert status == 201, body
        self.login(email, password, "second device")
        session = self.login(email, password, "workflow device")
        status, body = self.request("POST", "/v1/records", {"records": sample_records(1)}, token=session["token"])
        assert status == 200, body
        return Account(email, password, session["token"], session["device_id"])

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

    def database_bytes(self) -> bytes:
        """Every byte the store holds: the SQLite files, or pg_dump of the PostgreSQL database."""
        if self.postgres:
            return self.postgres.dump(self.database)
        return b"".join(p.read_bytes() for p in self.db.parent.glob("server.sqlite*"))


@pytest.fixture(scope="module")
def postgres():
    cluster = PostgresCluster()
    yield cluster
    cluster.close()


# Every test on the server runs against both stores: the SQLite file and PostgreSQL.
@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request, tmp_path_factory):
    cluster = request.getfixturevalue("postgres") if request.param == "postgres" else None
    server = Server(tmp_path_factory.mktemp("healthgate-server"), cluster)
    status, body = server.request("POST", "/v1/accounts", {"email": EMAIL, "password": PASSWORD})
    assert status == 201, body
    server.token = server.login(EMAIL, PASSWORD, "schemathesis")["token"]
    # Something to read back: one record of each kind.
    status, body = server.request("POST", "/v1/records", {"records": sample_records(1)}, token=server.token)
    assert status == 200 and [r["status"] for r in body["results"]] == ["accepted"] * 4, body
    yield server
    status = server.stop()
    log = server.log_path.read_bytes()
    db = server.database_bytes()
    for secret in server.secrets:
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


def needs_token(case) -> bool:
    return case.operation.definition.raw.get("security", None) != []


def prepare(case, token: str) -> None:
    if needs_token(case):
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {token}"}
    if (case.headers or {}).get("Content-Encoding") == "gzip":
        # Schemathesis sends the body as it is: drop the header (gzip uploads are tested in
        # HealthGateServerTests) rather than spend the upload examples on 400s.
        del case.headers["Content-Encoding"]


def count(case, response) -> None:
    CALLS[case.operation.label] += 1
    if 200 <= response.status_code < 300:
        SUCCESSES[case.operation.label] += 1


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
def test_each_operation_conforms_to_the_document(case, server):
    destructive = case.operation.definition.raw.get("operationId") in DESTRUCTIVE
    prepare(case, server.throwaway().token if destructive else server.token)
    response = case.call()
    count(case, response)
    case.validate_response(response, checks=CHECKS)


def test_workflows_along_the_links_conform_to_the_document(api_schema, server):
    """Schemathesis' stateful phase: scenarios that follow the document's links, each on an
    account of its own."""
    completed = collections.Counter()
    emails = itertools.count(1)
    # Only the document's links: schemathesis' guesses would take every upload result for a
    # stored record (a rejected one is not) and report the 404 of deleting it.
    api_schema.config.phases.stateful.inference.algorithms = []

    class Workflow(api_schema.as_state_machine()):
        def setup(self):
            self.account = server.throwaway()

        def teardown(self):
            completed["workflows"] += 1
            super().teardown()

        def before_call(self, case):
            prepare(case, self.account.token)
            if case.operation.definition.raw.get("operationId") == "register" and isinstance(case.body, dict) \
                    and "@" in str(case.body.get("email", "")):
                # Every registration is of a new email: a 409 for an email an earlier scenario
                # registered would make scenarios depend on each other.
                case.body = {**case.body, "email": f"w{next(emails)}.{case.body['email']}"}

        def after_call(self, response, case):
            super().after_call(response, case)
            count(case, response)
            if not 200 <= response.status_code < 300:
                return
            operation = case.operation.definition.raw.get("operationId")
            body = case.body if isinstance(case.body, dict) else {}
            if operation == "login":
                # The workflow goes on as the device that just logged in (its account may be
                # one the workflow registered).
                session = response.json()
                server.secrets.append(session["token"])
                self.account = Account(body.get("email", ""), body.get("password", ""), session["token"], session["device_id"])
            elif operation == "changePassword":
                self.account.password = body.get("new_password", "")
            elif operation in ("logout", "deleteAccount") or (
                    operation == "revokeDevice" and (case.path_parameters or {}).get("id", "").lower() == self.account.device_id):
                self.account = server.throwaway()

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            case.validate_response(response, checks=STATEFUL_CHECKS, transport_kwargs=kwargs or None, recorder=self.recorder)

    # The server's answers depend on what earlier scenarios did (an account is gone, a device was
    # revoked), so Hypothesis may find a replayed scenario going another way and stop with
    # Flaky: as schemathesis' own runner does, start again (with the next seed) until enough
    # scenarios ran.
    restarts = []
    for seed in range(50):
        done = completed["workflows"]
        if done >= SCENARIOS:
            break
        try:
            hypothesis.seed(seed)(Workflow).run(settings=settings(
                max_examples=SCENARIOS - done, stateful_step_count=10, deadline=None, database=None,
                phases=[Phase.generate], suppress_health_check=list(HealthCheck)))
        except hypothesis.errors.Flaky:
            restarts.append(seed)
            continue
        break
    done = completed["workflows"]
    print(f"\n{done} workflows ({len(restarts)} restart(s) after Flaky)")
    assert done >= SCENARIOS // 2, f"only {done} workflows ran"


def test_the_main_token_survived_and_every_operation_succeeded(server):
    """Destructive operations ran on throwaway accounts: the main token still works. And every
    operation was answered 2xx at least once (a run that saw only 401s or 404s proves nothing)."""
    status, body = server.request("GET", "/v1/devices", token=server.token)
    assert status == 200, body
    document = yaml.safe_load(SPEC.read_text())
    operations = {f"{method.upper()} {path}" for path, item in document["paths"].items() for method in item}
    missing = sorted(op for op in operations if SUCCESSES[op] == 0)
    assert not missing, f"operations never answered 2xx: {missing} (calls: {dict(CALLS)})"
    print("\n2xx answers per operation:", {op: f"{SUCCESSES[op]}/{CALLS[op]}" for op in sorted(operations)})


def test_unknown_routes_and_methods_answer_json(server):
    status, body = server.request("GET", "/v1/nothing")
    assert status == 404 and body["error"]["code"] == "not_found"
    status, body = server.request("PATCH", "/v1/records")
    assert status == 405 and body["error"]["code"] == "method_not_allowed"
    status, body = server.request("GET", "/v1/records/6f1c0d8e-3b5a-4c1e-9a57-000000000001")
    assert status == 405 and body["error"]["code"] == "method_not_allowed"


def test_definitions_and_uploaded_tombstones_conform(server):
    """A definition (its id derived from kind and name) and a device's deletion upload as the
    document says; in history the definition has its shape and the deletion is a tombstone. At
    equal versions the tombstone wins; older data after it is a duplicate."""
    account = server.throwaway()
    namespace = uuid.UUID("6f1c0d8e-3b5a-4c1e-9a57-2f4d8b6e1a93")
    habit_id = str(uuid.uuid5(namespace, "definition|habit|reading"))
    definition = {"id": habit_id, "version": 1, "type": "definition",
                  "data": {"id": habit_id, "version": 1, "name": "Reading", "time": "2025-03-01T09:00:00Z", "kind": "habit",
                           "habit": {"value_kind": "numeric", "unit": "pages",
                                     "target": {"amount": 20, "period": "day", "direction": "at_least"}},
                           "source": {"driver": "manual"}}}
    drink = sample_records(1)[2]
    tombstone = {"id": drink["id"], "version": 1, "type": "habit", "deleted": True}
    body = {"records": [definition, tombstone, drink]}
    document = yaml.safe_load(SPEC.read_text())
    components = document["components"]["schemas"]
    resolver = jsonschema.RefResolver.from_schema(document)
    jsonschema.validate(body, components["UploadRequest"], resolver=resolver)
    status, answer = server.request("POST", "/v1/records", body, token=account.token)
    assert status == 200, answer
    assert [r["status"] for r in answer["results"]] == ["accepted", "accepted", "duplicate"], answer
    status, page = server.request("GET", "/v1/records?after=0", token=account.token)
    assert status == 200, page
    jsonschema.validate(page, components["HistoryPage"], resolver=resolver)
    latest = {r["id"]: r for r in page["records"]}
    assert latest[habit_id]["data"]["habit"]["target"]["amount"] == 20
    assert latest[drink["id"]]["deleted"] is True and "data" not in latest[drink["id"]]


def test_the_document_is_valid_openapi():
    validate(yaml.safe_load(SPEC.read_text()))
