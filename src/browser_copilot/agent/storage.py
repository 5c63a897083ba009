"""Where sessions live: the checkpointer, the session list, and (through `locks`) one run per session.

Empty `DATABASE_URL` (the default): the embedded SQLite file `DATA_DIR/sessions.sqlite` (checkpoints and
a `browser_copilot_sessions` table), the last session in `DATA_DIR/last_session`, a file lock per session.
`DATABASE_URL=postgresql://…`: LangGraph's `AsyncPostgresSaver` on a connection pool, the same table in
PostgreSQL, and an advisory lock per session, so several processes on one database share every session
and never run one twice at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from browser_copilot.config import Settings
from browser_copilot.errors import StorageError

if TYPE_CHECKING:  # loaded where used: the session list is on the chat's start path, before its prompt
    import psycopg
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from psycopg.rows import DictRow
    from psycopg_pool import AsyncConnectionPool

LAST_SESSION = "last_session"
SESSIONS_TABLE = "browser_copilot_sessions"
POOL_SIZE = 10
# A constant advisory-lock key: processes starting together set the schema up one after the other.
_SETUP_LOCK = 0x62632D7365747570  # "bc-setup"
_SETUP_WAIT = 60.0  # seconds another process may take over the migrations

_CREATE_SESSIONS = f"""CREATE TABLE IF NOT EXISTS {SESSIONS_TABLE} (
    session_id TEXT PRIMARY KEY,
    goal TEXT,
    updated {{time}} NOT NULL
)"""
_UPSERT = f"""INSERT INTO {SESSIONS_TABLE} (session_id, goal, updated) VALUES ({{p}}, {{p}}, {{p}})
ON CONFLICT (session_id) DO UPDATE SET goal = COALESCE(excluded.goal, {SESSIONS_TABLE}.goal),
    updated = excluded.updated"""
_LIST = f"SELECT session_id, goal, updated FROM {SESSIONS_TABLE} ORDER BY updated DESC LIMIT {{p}}"
_DELETE = f"DELETE FROM {SESSIONS_TABLE} WHERE session_id = {{p}}"

_ready: set[str] = set()  # database URLs whose schema this process has set up
_pools: dict[str, tuple[asyncio.AbstractEventLoop, AsyncConnectionPool[Any]]] = {}
"""The open checkpointer's pool per database URL: the session list borrows from it (see `_connection`)."""


@dataclass(frozen=True)
class SessionInfo:
    session_id: str
    goal: str | None
    updated: datetime


SESSIONS_DB = "sessions.sqlite"


def sessions_db(settings: Settings) -> Path:
    return settings.data_dir / SESSIONS_DB


# ----- checkpoints ------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def sqlite_checkpointer(path: Path) -> AsyncIterator[AsyncSqliteSaver]:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path.parent.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
        yield saver


@contextlib.asynccontextmanager
async def open_checkpointer(settings: Settings) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """The checkpointer for `settings`: SQLite in the data dir, or PostgreSQL when `DATABASE_URL` is set.

    Runs of `AgentRunner`s on it take the matching per-session lock (`SessionBusy` when taken)."""
    from browser_copilot.agent.locks import FileLocks, PostgresLocks, register_locks

    url = settings.database
    if url is None:
        async with sqlite_checkpointer(sessions_db(settings)) as sqlite_saver:
            # The tables and WAL mode now, before parallel runs write their first checkpoints at once
            # (switching to WAL while another connection writes fails: "database is locked").
            await sqlite_saver.setup()
            register_locks(sqlite_saver, FileLocks(settings.data_dir / "locks"))
            yield sqlite_saver
        return
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    async with open_pool(url, POOL_SIZE) as pool:
        _pools[url] = (asyncio.get_running_loop(), pool)
        try:
            saver = AsyncPostgresSaver(cast("AsyncConnectionPool[psycopg.AsyncConnection[DictRow]]", pool))
            register_locks(saver, PostgresLocks(url))
            yield saver
        finally:
            if _pools.get(url, (None, None))[1] is pool:
                del _pools[url]


@contextlib.asynccontextmanager
async def open_pool(url: str, size: int) -> AsyncIterator[AsyncConnectionPool[psycopg.AsyncConnection[Any]]]:
    """An open pool on the `DATABASE_URL` database, its schema set up (`ensure_schema`): autocommit
    connections with dict rows, as LangGraph's Postgres saver and store want them."""
    import psycopg
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    await ensure_schema(url)
    pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] = AsyncConnectionPool(
        url,
        min_size=1,
        max_size=size,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        open=False,
    )
    try:
        await pool.open(wait=True, timeout=15)
    except psycopg.Error as exc:  # PoolTimeout is one
        await pool.close()
        raise StorageError(f"cannot reach the database of DATABASE_URL: {exc}") from exc
    try:
        yield pool
    finally:
        await pool.close()


@contextlib.asynccontextmanager
async def _connection(url: str) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    """A connection for the session list: from the open checkpointer's pool of this event loop (a
    server lists sessions often), else a short one of its own (`run`, `chat` before the checkpointer)."""
    from psycopg.rows import dict_row

    loop, pool = _pools.get(url, (None, None))
    if pool is not None and loop is asyncio.get_running_loop():
        async with pool.connection() as conn:
            yield conn
        return
    async with await _connect(url, row_factory=dict_row) as conn:
        yield conn


async def _connect(url: str, **kwargs: Any) -> psycopg.AsyncConnection[Any]:
    import psycopg

    try:
        return await psycopg.AsyncConnection.connect(url, autocommit=True, **kwargs)
    except psycopg.Error as exc:
        raise StorageError(f"cannot reach the database of DATABASE_URL: {exc}") from exc


async def ensure_schema(url: str) -> None:
    """LangGraph's checkpoint and store tables (`setup()`) and the session table, once per process and
    database; an advisory lock keeps processes starting together from running the migrations twice."""
    if url in _ready:
        return
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.store.postgres.aio import AsyncPostgresStore
    from psycopg.rows import dict_row

    conn = await _connect(url, prepare_threshold=0, row_factory=dict_row)
    async with conn:
        # Poll rather than wait in `pg_advisory_lock`: a statement waiting for the lock holds a snapshot, and
        # the holder's `CREATE INDEX CONCURRENTLY` waits for every snapshot to end — a deadlock.
        deadline = time.monotonic() + _SETUP_WAIT
        while True:
            cur = await conn.execute("SELECT pg_try_advisory_lock(%s) AS got", (_SETUP_LOCK,))
            row = await cur.fetchone()
            if row is not None and row["got"]:
                break
            if time.monotonic() > deadline:
                raise StorageError(
                    "another process has been setting up the database of DATABASE_URL"
                    f" for over {_SETUP_WAIT:.0f} s"
                )
            await asyncio.sleep(0.1)
        try:
            await AsyncPostgresSaver(cast("psycopg.AsyncConnection[DictRow]", conn)).setup()
            # The long-term memory's store (`agent.memory`): its migrations build an index CONCURRENTLY too.
            await AsyncPostgresStore(cast("psycopg.AsyncConnection[DictRow]", conn)).setup()
            await conn.execute(_CREATE_SESSIONS.format(time="TIMESTAMPTZ"))
        finally:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK,))
    _ready.add(url)


# ----- the session list -------------------------------------------------------------------


async def remember_session(settings: Settings, session_id: str, *, goal: str | None = None) -> None:
    """Record that `session_id` was used now (and its goal, when known): the last session to resume."""
    now = datetime.now(UTC)
    url = settings.database
    if url is not None:
        await ensure_schema(url)
        async with _connection(url) as conn:
            await conn.execute(_UPSERT.format(p="%s"), (session_id, goal or None, now))
        return
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    (settings.data_dir / LAST_SESSION).write_text(session_id + "\n", encoding="utf-8")
    await asyncio.to_thread(
        _sqlite, settings, _UPSERT.format(p="?"), (session_id, goal or None, now.isoformat())
    )


async def last_session(settings: Settings) -> str | None:
    """The session used last (by any process on the same database), or None."""
    found = await list_sessions(settings, limit=1) if settings.database else None
    if found is not None:
        return found[0].session_id if found else None
    try:
        text = (settings.data_dir / LAST_SESSION).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text or None


async def list_sessions(settings: Settings, *, limit: int = 50) -> list[SessionInfo]:
    """Known sessions, the most recently used first."""
    url = settings.database
    if url is not None:
        await ensure_schema(url)
        async with _connection(url) as conn:
            rows = await (await conn.execute(_LIST.format(p="%s"), (limit,))).fetchall()
        return [SessionInfo(str(r["session_id"]), r["goal"], r["updated"]) for r in rows]
    if not sessions_db(settings).is_file():
        return []
    rows = await asyncio.to_thread(_sqlite, settings, _LIST.format(p="?"), (limit,))
    return [SessionInfo(str(r[0]), r[1], datetime.fromisoformat(r[2])) for r in rows]


async def forget_session(settings: Settings, session_id: str) -> None:
    """Take `session_id` off the session list (a session deleted in the web page)."""
    url = settings.database
    if url is not None:
        await ensure_schema(url)
        async with _connection(url) as conn:
            await conn.execute(_DELETE.format(p="%s"), (session_id,))
        return
    if sessions_db(settings).is_file():
        await asyncio.to_thread(_sqlite, settings, _DELETE.format(p="?"), (session_id,))
    if await last_session(settings) == session_id:
        (settings.data_dir / LAST_SESSION).unlink(missing_ok=True)


def _sqlite(settings: Settings, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    path = sessions_db(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with contextlib.closing(sqlite3.connect(path, timeout=10)) as conn, conn:
            conn.execute(_CREATE_SESSIONS.format(time="TEXT"))
            return list(conn.execute(sql, params).fetchall())
    except sqlite3.Error as exc:
        raise StorageError(f"cannot use the session file {path}: {exc}") from exc
