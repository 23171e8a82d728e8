"""A real PostgreSQL server for the server tests: Debian's binaries, a folder of its own, a free
loopback port, trust authentication for the superuser `postgres`. PostgreSQL refuses to run as
root: under root the tools run as the system user `postgres` (created by Debian's package) and the
folder is given to it. Missing PostgreSQL is an error (`.ci/setup` installs it), never a skip.
The Swift tests' Tests/TestSupport/PostgresCluster.swift does the same for the Swift suites."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path


def _binaries() -> Path:
    root = Path("/usr/lib/postgresql")
    versions = sorted(int(p.name) for p in root.iterdir() if p.name.isdigit()) if root.is_dir() else []
    if not versions or not (root / str(versions[-1]) / "bin" / "initdb").exists():
        raise AssertionError("PostgreSQL is not installed (no /usr/lib/postgresql/VERSION/bin/initdb): run .ci/setup")
    return root / str(versions[-1]) / "bin"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresCluster:
    def __init__(self) -> None:
        self.bin = _binaries()
        self.as_user = "postgres" if os.getuid() == 0 else None
        self.folder = Path(tempfile.mkdtemp(prefix="hg-pg-py-"))
        if self.as_user:
            entry = pwd.getpwnam(self.as_user)
            os.chown(self.folder, entry.pw_uid, entry.pw_gid)
        self.port = _free_port()
        self._run("initdb", "-D", str(self.folder / "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                  "--locale=C.UTF-8", "--no-sync")
        self.start()

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.bin / tool), *args]
        if self.as_user:
            command = ["runuser", "-u", self.as_user, "--", *command]
        # Output into a file: the server pg_ctl leaves running keeps what it inherited open.
        with tempfile.TemporaryFile() as out:
            result = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd="/", close_fds=True)
            out.seek(0)
            if result.returncode != 0:
                raise AssertionError(f"{tool} failed: {out.read().decode(errors='replace')}")

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-l", str(self.folder / "postgres.log"), "-w", "-o",
                  f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200",
                  "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", mode, "-w", "stop")

    def psql(self, database: str, sql: str) -> str:
        result = subprocess.run([str(self.bin / "psql"), "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", str(self.folder),
                                 "-p", str(self.port), "-U", "postgres", "-d", database, "-c", sql],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise AssertionError(f"psql failed: {result.stderr}")
        return result.stdout.strip()

    def dump(self, database: str) -> bytes:
        return subprocess.run([str(self.bin / "pg_dump"), "-h", str(self.folder), "-p", str(self.port), "-U", "postgres",
                               database], capture_output=True, check=True).stdout

    def create_database(self) -> str:
        name = "hg_" + uuid.uuid4().hex[:16]
        self.psql("postgres", f"CREATE DATABASE {name}")
        return name

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}?sslmode=disable"

    def close(self) -> None:
        try:
            self.stop("immediate")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
