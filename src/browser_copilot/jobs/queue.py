"""The job queue: procrastinate on the `DATABASE_URL` database, and the tables of this package.

A job is one turn of a session: `start` (the user's message) or `resume` (the answer to the question or
card the session waits on), with the browser tab (`client`) that sent it. Jobs of one session carry the
session id as procrastinate's `lock`, so they run one after another, never two at once; the worker also
holds the session's lock (`agent.locks`) for the run.

Schema: procrastinate's own tables (applied on first use when absent) and ours, under an advisory lock so
processes starting together set it up once:
- `browser_copilot_job_events`: each job's events (redacted), announced on `EVENTS_CHANNEL`;
- `browser_copilot_job_takes`: a row per job a worker started, with the session's checkpoint then (a
  second take means the first worker died; a moved checkpoint, that the run had started);
- `browser_copilot_approved_runs`: the approved actions about to run (`ledger`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal

import psycopg
from procrastinate import App, PsycopgConnector
from procrastinate.exceptions import ConnectorException
from procrastinate.jobs import Status
from procrastinate.schema import SchemaManager

from browser_copilot.agent.storage import ensure_schema
from browser_copilot.config import Settings
from browser_copilot.errors import ConfigError, StorageError

TASK = "browser_copilot.run_session"
EVENTS_TABLE = "browser_copilot_job_events"
TAKES_TABLE = "browser_copilot_job_takes"
APPROVED_TABLE = "browser_copilot_approved_runs"
EVENTS_CHANNEL = "browser_copilot_job_events"
JobKind = Literal["start", "resume"]
_SETUP_LOCK = 0x62632D6A6F6273  # "bc-jobs"
_SETUP_WAIT = 60.0

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {EVENTS_TABLE} (
    id BIGSERIAL PRIMARY KEY,
    session_id TEXT NOT NULL,
    job_id BIGINT,
    at DOUBLE PRECISION NOT NULL,
    kind TEXT NOT NULL,
    data JSONB NOT NULL
);
CREATE INDEX IF NOT EXISTS {EVENTS_TABLE}_session ON {EVENTS_TABLE} (session_id, id);
CREATE TABLE IF NOT EXISTS {TAKES_TABLE} (
    job_id BIGINT PRIMARY KEY,
    session_id TEXT NOT NULL,
    takes INTEGER NOT NULL DEFAULT 1,
    checkpoint TEXT NOT NULL DEFAULT '',
    first_taken TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS {APPROVED_TABLE} (
    session_id TEXT NOT NULL,
    token TEXT NOT NULL,
    claimed TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, token)
);
"""

_ready: set[str] = set()


@dataclass(frozen=True)
class Job:
    session: str
    kind: JobKind
    text: str
    client: str | None = None
    mode: str | None = None

    def arguments(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "kind": self.kind,
            "text": self.text,
            "client": self.client,
            "mode": self.mode,
        }


def queue_url(settings: Settings, *, what: str) -> str:
    """The database of the job queue, or a `ConfigError` naming the fix."""
    url = settings.database
    if url is None:
        raise ConfigError(
            [
                f"DATABASE_URL: {what} needs the job queue, which lives in PostgreSQL. Fix: set "
                "DATABASE_URL=postgresql://USER:PASSWORD@HOST:PORT/DATABASE (README: Workers)."
            ]
        )
    return url


async def ensure_queue_schema(url: str) -> None:
    """The checkpoints' schema (`storage.ensure_schema`), procrastinate's and this package's tables, once
    per process and database."""
    if url in _ready:
        return
    await ensure_schema(url)
    try:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    except psycopg.Error as exc:
        raise StorageError(f"cannot reach the database of DATABASE_URL: {exc}") from exc
    async with conn:
        deadline = time.monotonic() + _SETUP_WAIT
        while not await _try_lock(conn):
            if time.monotonic() > deadline:
                raise StorageError(
                    f"another process has been setting up the job queue for over {_SETUP_WAIT:.0f} s"
                )
            await asyncio.sleep(0.1)
        try:
            row = await (await conn.execute("SELECT to_regclass('procrastinate_jobs')")).fetchone()
            if row is None or row[0] is None:
                await conn.execute(SchemaManager.get_schema())
            await conn.execute(_SCHEMA)
        finally:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK,))
    _ready.add(url)


async def _try_lock(conn: psycopg.AsyncConnection[Any]) -> bool:
    row = await (await conn.execute("SELECT pg_try_advisory_lock(%s)", (_SETUP_LOCK,))).fetchone()
    return bool(row and row[0])


class JobQueue:
    """procrastinate's app on the queue's database; `submit` defers a job (the server, `run --detach`),
    `worker.run_worker` registers the task and runs it."""

    def __init__(self, url: str, *, pool_size: int = 4) -> None:
        self.url = url
        self.app = App(connector=PsycopgConnector(conninfo=url, min_size=1, max_size=pool_size))

    async def submit(self, job: Job) -> int:
        """Put `job` in the queue; its id. Jobs of one session run in the order they were submitted."""
        try:
            return await self.app.configure_task(TASK, lock=job.session).defer_async(**job.arguments())
        except ConnectorException as exc:
            raise StorageError(f"cannot put the task into the job queue: {exc}") from exc

    async def cancel(self, job_id: int) -> bool:
        """Ask for a job to stop: a queued one is dropped, a running one is aborted (the run is marked
        cancelled, like Stop in the page). True when it had not started (nothing will report it)."""
        manager = self.app.job_manager
        try:
            await manager.cancel_job_by_id_async(job_id, abort=True)
            return await manager.get_job_status_async(job_id) is Status.CANCELLED
        except ConnectorException as exc:
            raise StorageError(f"cannot cancel the job: {exc}") from exc


@contextlib.asynccontextmanager
async def open_queue(url: str, *, pool_size: int = 4) -> AsyncIterator[JobQueue]:
    """The queue with its schema set up, open while the block runs."""
    await ensure_queue_schema(url)
    queue = JobQueue(url, pool_size=pool_size)
    try:
        await queue.app.open_async()
    except (ConnectorException, psycopg.Error) as exc:
        raise StorageError(f"cannot reach the job queue's database: {exc}") from exc
    try:
        yield queue
    finally:
        await queue.app.close_async()
