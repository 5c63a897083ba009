"""A job's events, visible from any server process: kept in `EVENTS_TABLE` and announced with NOTIFY.

The worker's `EventPublisher` redacts each event (`safety.redaction.redact_data`, as every sink does),
writes it in a background task and announces the session on `EVENTS_CHANNEL`; the app's own records
(`outcome`: how the turn ended, `job_error`: why it could not run, `job`: taken, queued) go the same way.
A server's `EventRelay` LISTENs, reads what is new for the sessions it follows and hands it on; a
session it starts following is replayed from the table, so a page that connects later sees it all. A
missed notification (a reconnect) is caught up by a poll every `POLL` seconds."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from browser_copilot.errors import StorageError
from browser_copilot.events import Event, EventSink
from browser_copilot.jobs.queue import EVENTS_CHANNEL, EVENTS_TABLE
from browser_copilot.safety.redaction import redact_data

log = logging.getLogger(__name__)
POLL = 2.0
"""Seconds between catch-up reads of the followed sessions, whatever the notifications say."""
REPLAY = 5000
"""Events of a session read at most when a server starts following it (the newest)."""
QUIET_KINDS = frozenset({"node"})
"""Events kept in the worker's log only: each node's end, many per step."""

_INSERT = f"INSERT INTO {EVENTS_TABLE} (session_id, job_id, at, kind, data) VALUES (%s, %s, %s, %s, %s)"
_AFTER = (
    f"SELECT id, job_id, at, kind, data FROM {EVENTS_TABLE} WHERE session_id = %s AND id > %s "
    "ORDER BY id LIMIT 1000"
)
_LAST = f"SELECT COALESCE(MAX(id), 0) FROM {EVENTS_TABLE} WHERE session_id = %s"


@dataclass(frozen=True, slots=True)
class StoredEvent:
    id: int
    session: str
    job_id: int | None
    at: float
    kind: str
    data: dict[str, Any]


async def _connect(url: str) -> psycopg.AsyncConnection[Any]:
    try:
        return await psycopg.AsyncConnection.connect(url, autocommit=True)
    except psycopg.Error as exc:
        raise StorageError(f"cannot reach the database of DATABASE_URL: {exc}") from exc


def _json_safe(data: dict[str, Any]) -> dict[str, Any]:
    safe = json.loads(json.dumps(redact_data(data), default=str))
    return safe if isinstance(safe, dict) else {}


class EventPublisher:
    """The worker's writer of job events; `async with` it, then `sink(session, job)` per job."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._items: asyncio.Queue[tuple[str, int | None, float, str, dict[str, Any]]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._conn: psycopg.AsyncConnection[Any] | None = None

    async def __aenter__(self) -> EventPublisher:
        self._conn = await _connect(self.url)
        self._task = asyncio.create_task(self._write(), name="job-events")
        return self

    async def __aexit__(self, *_: object) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(10):
                await self.flush()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._conn is not None:
            await self._conn.close()

    def sink(self, session: str, job_id: int | None) -> EventSink:
        """The event sink of one job's run: cheap, never raises (the write happens in the background)."""

        def publish(event: Event) -> None:
            if event.kind not in QUIET_KINDS:
                self.record(session, job_id, event.kind, event.data, at=event.at)

        return publish

    def record(
        self, session: str, job_id: int | None, kind: str, data: dict[str, Any], *, at: float | None = None
    ) -> None:
        self._items.put_nowait((session, job_id, at or time.time(), kind, _json_safe(data)))

    async def flush(self) -> None:
        """Until everything recorded so far is written and announced."""
        await self._items.join()

    async def _write(self) -> None:
        while True:
            batch = [await self._items.get()]
            while not self._items.empty():
                batch.append(self._items.get_nowait())
            try:
                try:
                    await self._store(batch)
                except psycopg.OperationalError:  # a dropped connection: once more on a new one
                    self._conn = None
                    await self._store(batch)
            except Exception:  # the background task's top: a lost batch must not stop the worker
                log.exception("job events: %d not stored", len(batch))
            finally:
                for _ in batch:
                    self._items.task_done()

    async def _store(self, batch: list[tuple[str, int | None, float, str, dict[str, Any]]]) -> None:
        if self._conn is None or self._conn.closed:
            self._conn = await _connect(self.url)
        conn = self._conn
        async with conn.transaction():
            async with conn.cursor() as cur:
                await cur.executemany(_INSERT, [(s, j, at, k, Jsonb(d)) for s, j, at, k, d in batch])
            for session in dict.fromkeys(item[0] for item in batch):
                await conn.execute("SELECT pg_notify(%s, %s)", (EVENTS_CHANNEL, session))


Deliver = Callable[[StoredEvent], None]


class EventRelay:
    """A server's reader of job events: `follow(session)` replays a session's events and hands on every
    new one to `deliver`, in order, once."""

    def __init__(self, url: str, deliver: Deliver) -> None:
        self.url = url
        self.deliver = deliver
        self.followed: dict[str, int] = {}
        """Each followed session's last event id handed on."""
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> EventRelay:
        self._conn = await _connect(self.url)
        self._task = asyncio.create_task(self._listen(), name="job-events-relay")
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._conn is not None:
            await self._conn.close()

    async def follow(self, session: str, *, replay: bool = True) -> None:
        """Hand on `session`'s events from now on (and, with `replay`, the newest `REPLAY` before)."""
        if session in self.followed:
            return
        async with self._lock:
            conn = await self._reader()
            row = await (await conn.execute(_LAST, (session,))).fetchone()
            last = int(row[0]) if row else 0
            self.followed[session] = max(0, last - REPLAY) if replay else last
        await self.catch_up(session)

    async def catch_up(self, session: str) -> None:
        async with self._lock:
            if session not in self.followed:
                return
            conn = await self._reader()
            while True:
                rows = await (await conn.execute(_AFTER, (session, self.followed[session]))).fetchall()
                for id_, job_id, at, kind, data in rows:
                    self.followed[session] = int(id_)
                    self.deliver(StoredEvent(int(id_), session, job_id, float(at), str(kind), dict(data)))
                if len(rows) < 1000:
                    return

    async def _reader(self) -> psycopg.AsyncConnection[Any]:
        if self._conn is None or self._conn.closed:
            self._conn = await _connect(self.url)
        return self._conn

    async def _listen(self) -> None:
        while True:
            try:
                conn = await _connect(self.url)
                async with conn:
                    await conn.execute(f"LISTEN {EVENTS_CHANNEL}")
                    await self._catch_up_all()  # what came while (re)connecting
                    while True:
                        seen: set[str] = set()
                        async for note in conn.notifies(timeout=POLL, stop_after=1):
                            seen.add(note.payload)
                        for session in (seen & set(self.followed)) if seen else set(self.followed):
                            await self.catch_up(session)
            except asyncio.CancelledError:
                raise
            except Exception:  # the background task's top: reconnect, and catch up then
                log.exception("job events relay: reconnecting")
                await asyncio.sleep(POLL)

    async def _catch_up_all(self) -> None:
        for session in list(self.followed):
            await self.catch_up(session)
