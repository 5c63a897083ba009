"""A real PostgreSQL for the tests: Debian's binaries, a temporary data dir, a free port on 127.0.0.1.

`postgres_server` (session scope) runs `initdb -A trust` and `pg_ctl start`, polls until the server takes
connections, and stops it (and removes the data dir) at the end; as root it runs them as `postgres`.
`postgres_url` gives each test a database of its own on that server. Missing binaries FAIL the tests
(CI installs Debian's `postgresql`; `.ci/run` and `scripts/dev.sh test` do it when it is missing).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.support.ports import free_port
from tests.support.waiting import wait_until

HOW_TO_INSTALL = (
    "PostgreSQL is not installed, and the Postgres tests need its server binaries (initdb, pg_ctl). "
    "Fix: `apt-get install -y postgresql` (Debian/Ubuntu), or set PG_BIN=/path/to/postgresql/bin."
)


def find_bin_dir() -> Path | None:
    """PG_BIN, else `pg_config --bindir`, else the newest /usr/lib/postgresql/*/bin with initdb."""
    candidates: list[str] = []
    if os.environ.get("PG_BIN"):
        candidates.append(os.environ["PG_BIN"])
    if shutil.which("pg_config"):
        with contextlib.suppress(OSError, subprocess.CalledProcessError):
            candidates.append(
                subprocess.run(
                    ["pg_config", "--bindir"], capture_output=True, text=True, check=True
                ).stdout.strip()
            )
    candidates += sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name or 0), reverse=True
    )
    for candidate in candidates:
        if candidate and (Path(candidate) / "initdb").is_file() and (Path(candidate) / "pg_ctl").is_file():
            return Path(candidate)
    return None


class LocalPostgres:
    """One PostgreSQL server on a temporary data dir, owned by the test run."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.folder = Path(tempfile.mkdtemp(prefix="bc-postgres-"))
        self.data = self.folder / "data"
        self.log = self.folder / "postgres.log"
        self.port = free_port()
        self.as_postgres = os.geteuid() == 0  # initdb and postgres refuse to run as root

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://test@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin_dir / args[0]), *args[1:]]
        if self.as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    def _check(self, done: subprocess.CompletedProcess[str], what: str) -> None:
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-3000:] if self.log.is_file() else ""
            pytest.fail(f"PostgreSQL {what} failed ({done.returncode}):\n{done.stdout}{done.stderr}\n{log}")

    def start(self) -> None:
        if self.as_postgres:
            shutil.chown(self.folder, user="postgres", group="postgres")
        self._check(self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "test", "-N"), "initdb")
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        # -W: do not let pg_ctl wait; the poll below does, with a bound and a clear failure.
        self._check(
            self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.log), "-W", "start"),
            "pg_ctl start",
        )
        try:
            wait_until(self.accepts_connections, timeout=60, what=f"PostgreSQL on port {self.port}")
        except AssertionError:
            log = self.log.read_text(errors="replace")[-3000:] if self.log.is_file() else "(no log)"
            self.stop()
            pytest.fail(f"PostgreSQL did not accept connections on port {self.port}:\n{log}")

    def accepts_connections(self) -> bool:
        try:
            with psycopg.connect(self.url(), connect_timeout=2) as conn:
                conn.execute("SELECT 1")
        except psycopg.OperationalError:
            return False
        return True

    def create_database(self) -> str:
        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[LocalPostgres]:
    bin_dir = find_bin_dir()
    if bin_dir is None:
        pytest.fail(HOW_TO_INSTALL)
    server = LocalPostgres(bin_dir)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server: LocalPostgres) -> str:
    """A fresh database on the shared server: its URL (`postgresql://test@127.0.0.1:PORT/t_…`)."""
    return postgres_server.create_database()
