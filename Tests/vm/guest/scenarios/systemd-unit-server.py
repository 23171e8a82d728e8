"""The tracking server's sample unit (systemd/healthgate-server.service), for real: `make
install-server` as README.md says, the system user made by systemd-sysusers, a certificate and key
in /etc/healthgate-server/tls (key 0640 root:healthgate-server), `systemctl enable --now
healthgate-server`: the server answers HTTPS on 8443 with that certificate, as the
healthgate-server user with no capabilities, its SQLite file in its state directory (0600, its
own); an account registers, logs in, uploads a record and pulls it back; Prometheus metrics answer
on 127.0.0.1:9465; `systemd-analyze security` on the running unit is at most 1.5 (make
systemd-check's bound). A renewed certificate and `systemctl reload`: the same process (no restart)
serves the new certificate to new connections while a connection opened before goes on. `systemctl
stop` ends it cleanly; `make uninstall-server` removes what was installed and keeps the data.

The guest's disk holds one static binary at a time: the daemon a scenario before installed is
uninstalled first (the next scenario installs it again), and the server is uninstalled at the end."""
from __future__ import annotations

import hashlib
import http.client
import json
import os
import pwd
import shutil
import ssl
import stat
import sys
import urllib.request
import uuid

from vmunit import run, running_exposure
from vmpeer import RESULTS, step, timings, wait_for

SERVER_BIN = os.environ["HG_SERVER_BIN"]
SHARE = os.environ["HG_SHARE"]
REPO = os.path.join(SHARE, "repo")
TLS = "/etc/healthgate-server/tls"
STATE = "/var/lib/healthgate-server"
MAX_EXPOSURE = 1.5
BASE = "https://127.0.0.1:8443"


def certificate(name: str) -> str:
    return os.path.join(SHARE, "tls", name, "cert.pem")


def place_certificate(name: str) -> None:
    """The certificate and key of `name` in the unit's configuration directory, as docs/server.md
    says: readable by the server's group only (the key)."""
    group = pwd.getpwnam("healthgate-server").pw_gid
    for file, mode in (("cert.pem", 0o644), ("key.pem", 0o640)):
        dest = os.path.join(TLS, file)
        shutil.copy(os.path.join(SHARE, "tls", name, file), dest + ".new")
        os.chown(dest + ".new", 0, group)
        os.chmod(dest + ".new", mode)
        os.replace(dest + ".new", dest)


def served_fingerprint() -> str:
    """SHA-256 of the certificate a new connection to the server gets."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    connection = http.client.HTTPSConnection("127.0.0.1", 8443, context=context, timeout=10)
    connection.connect()
    der = connection.sock.getpeercert(binary_form=True)
    connection.close()
    return hashlib.sha256(der).hexdigest()


def fingerprint(name: str) -> str:
    return hashlib.sha256(ssl.PEM_cert_to_DER_cert(open(certificate(name)).read())).hexdigest()


def request(connection: http.client.HTTPSConnection, method: str, path: str, body=None, token: str | None = None) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    connection.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
    response = connection.getresponse()
    text = response.read()
    return response.status, (json.loads(text) if text else {})


def main() -> int:
    result: dict = {}
    try:
        run("systemctl", "is-system-running", "--wait", check=False, timeout=150)
        # Room on the disk: the daemon a scenario before installed goes (the next installs it again).
        run("make", "-C", REPO, "uninstall", check=False)
        run("make", "-C", REPO, "install-server", f"SERVER_BINARY={SERVER_BIN}")
        run("systemd-sysusers")
        run("systemctl", "daemon-reload")
        if not os.path.isdir(TLS):
            raise AssertionError(f"make install-server did not make {TLS}")
        place_certificate("first")
        step("make install-server done, certificate and key in place")

        run("systemctl", "enable", "--now", "healthgate-server", timeout=120)
        wait_for(lambda: run("systemctl", "is-active", "healthgate-server", check=False, quiet=True).returncode == 0 or None,
                 60, "the unit to be active")
        context = ssl.create_default_context(cafile=certificate("first"))

        def healthy():
            try:
                with urllib.request.urlopen(f"{BASE}/v1/health", context=context, timeout=5) as answer:
                    return answer.status == 200 or None
            except OSError:
                return None
        wait_for(healthy, 120, "the server to answer /v1/health over HTTPS")
        show = run("systemctl", "show", "healthgate-server", "-p", "MainPID,NRestarts", quiet=True).stdout
        props = dict(line.split("=", 1) for line in show.splitlines() if "=" in line)
        pid = int(props["MainPID"])
        status = dict(line.split(":\t", 1) for line in open(f"/proc/{pid}/status").read().splitlines() if ":\t" in line)
        result["proc_status"] = {k: status[k].strip() for k in ("Uid", "CapEff", "CapPrm", "CapBnd")}
        if status["Uid"].split()[0] != str(pwd.getpwnam("healthgate-server").pw_uid) \
                or any(int(status[k], 16) != 0 for k in ("CapEff", "CapPrm", "CapBnd")):
            raise AssertionError(f"the server is not the healthgate-server user without capabilities: {result['proc_status']}")
        journal = run("journalctl", "-u", "healthgate-server", "--no-pager", check=False, quiet=True).stdout
        # errno=1 (EPERM): the system call filter refused setpriority, and the bulk lane would not
        # run at nice 10. (errno=13, EACCES, is libdispatch asking for a higher priority than an
        # unprivileged process may take: expected.)
        for unwanted in ("Failed to set thread priority for worker thread: pqc=", "private key"):
            lines = [line for line in journal.splitlines() if unwanted in line and not line.endswith("errno=13")]
            if lines:
                raise AssertionError(f"the server's journal says '{unwanted}' under the sample unit: {lines[:3]}")
        step(f"HTTPS on 8443 with the installed certificate, pid {pid} as healthgate-server, no capabilities, a quiet journal")

        # An account, a device, a record up and back.
        api = http.client.HTTPSConnection("127.0.0.1", 8443, context=context, timeout=30)
        status_code, _ = request(api, "POST", "/v1/accounts", {"email": "vm@example.org", "password": "a long vm passphrase"})
        if status_code not in (200, 201):
            raise AssertionError(f"register answered {status_code}")
        status_code, login = request(api, "POST", "/v1/sessions",
                                     {"email": "vm@example.org", "password": "a long vm passphrase", "device_name": "vm"})
        if status_code not in (200, 201):
            raise AssertionError(f"login answered {status_code}: {login}")
        token = login["token"]
        record_id = str(uuid.uuid4())
        record = {"id": record_id, "version": 1, "type": "habit",
                  "data": {"id": record_id, "version": 1, "habit": "water", "time": "2026-03-02T10:00:00Z", "value": 250,
                           "unit": "ml", "source": {"driver": "manual"}}}
        status_code, answer = request(api, "POST", "/v1/records", {"records": [record]}, token)
        if status_code != 200 or answer["results"][0]["status"] != "accepted":
            raise AssertionError(f"upload answered {status_code}: {answer}")
        status_code, history = request(api, "GET", "/v1/records?after=0", None, token)
        if status_code != 200 or [r["id"] for r in history["records"]] != [record_id]:
            raise AssertionError(f"history answered {status_code}: {history}")
        database = os.path.join(STATE, "server.sqlite")
        st = os.stat(database)
        result["database"] = {"mode": oct(stat.S_IMODE(st.st_mode)), "uid": st.st_uid}
        if st.st_uid != pwd.getpwnam("healthgate-server").pw_uid or stat.S_IMODE(st.st_mode) & 0o077:
            raise AssertionError(f"{database} is not the server's own: {result['database']}")
        step("registered, logged in, uploaded a record and pulled it back; the SQLite file is the server's, 0600")

        with urllib.request.urlopen("http://127.0.0.1:9465/metrics", timeout=10) as answer:
            metrics = answer.read().decode()
        if 'healthgate_server_records_total{outcome="accepted"} 1' not in metrics:
            raise AssertionError(f"the metrics do not count the accepted record: {metrics[:800]}")
        step("metrics on 127.0.0.1:9465 count the record")

        result["exposure"] = running_exposure(MAX_EXPOSURE, unit="healthgate-server")
        step(f"systemd-analyze security on the running unit: {result['exposure']}")

        # A renewed certificate: reload, same process; the connection opened before goes on.
        if served_fingerprint() != fingerprint("first"):
            raise AssertionError("the server does not serve the installed certificate")
        place_certificate("second")
        run("systemctl", "reload", "healthgate-server", timeout=60)
        wait_for(lambda: served_fingerprint() == fingerprint("second") or None, 60, "new connections to get the renewed certificate")
        status_code, _ = request(api, "GET", "/v1/records?after=0", None, token)
        if status_code != 200:
            raise AssertionError(f"the connection opened before the reload answered {status_code}")
        api.close()
        show = run("systemctl", "show", "healthgate-server", "-p", "MainPID,NRestarts", quiet=True).stdout
        after = dict(line.split("=", 1) for line in show.splitlines() if "=" in line)
        if after != {"MainPID": str(pid), "NRestarts": "0"}:
            raise AssertionError(f"the reload restarted the server: {after}")
        step("systemctl reload: the renewed certificate for new connections, the old connection kept, same pid")

        run("systemctl", "stop", "healthgate-server", timeout=90)
        show = run("systemctl", "show", "healthgate-server", "-p", "ActiveState,Result", quiet=True).stdout
        stopped = dict(line.split("=", 1) for line in show.splitlines() if "=" in line)
        if stopped != {"ActiveState": "inactive", "Result": "success"}:
            raise AssertionError(f"systemctl stop: {stopped}")
        step("systemctl stop: inactive, success")
        return 0
    finally:
        result["timings"] = timings
        with open(os.path.join(RESULTS, "result.json"), "w") as f:
            json.dump(result, f, indent=1)
        subprocess_log = run("journalctl", "-u", "healthgate-server", "--no-pager", "-o", "short-monotonic", check=False, quiet=True)
        with open(os.path.join(RESULTS, "unit-journal.log"), "w") as f:
            f.write(subprocess_log.stdout)
        run("systemctl", "disable", "--now", "healthgate-server", check=False, timeout=90)
        run("make", "-C", REPO, "uninstall-server", check=False)
        if os.path.exists("/usr/local/bin/healthgate-server"):
            print("make uninstall-server left /usr/local/bin/healthgate-server", flush=True)
            sys.exit(1)


if __name__ == "__main__":
    sys.exit(main())
