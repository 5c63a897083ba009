"""One run per session at a time, across processes: a lock held for the whole of `AgentRunner.send`.

- PostgreSQL (`DATABASE_URL`): a session-level advisory lock, `pg_try_advisory_lock(hashtextextended(id, 0))`,
  on a connection of its own for the run; the server drops it if the process dies.
- SQLite (the default): `fcntl.flock` on `DATA_DIR/locks/<session>.lock`; the OS drops it if the process
  dies. Without `fcntl` (Windows) an in-process lock, which still stops two runs in one server.
- Anything else (tests with an in-memory checkpointer): an in-process lock per checkpointer.

A run that finds its session locked raises `SessionBusy` at once; nothing runs, nothing waits.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import weakref
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Protocol

import psycopg

from browser_copilot.errors import SessionBusy, StorageError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

TRY_LOCK_SQL = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))"
UNLOCK_SQL = "SELECT pg_advisory_unlock(hashtextextended(%s, 0))"


class SessionLocks(Protocol):
    def hold(self, session_id: str) -> AbstractAsyncContextManager[None]:
        """Hold the session's lock for the block, or raise `SessionBusy` at once."""
        ...


class LocalLocks:
    """Sessions running in this process (no other process can see these)."""

    def __init__(self) -> None:
        self._held: set[str] = set()

    @contextlib.asynccontextmanager
    async def hold(self, session_id: str, *, key: str | None = None) -> AsyncIterator[None]:
        name = key or session_id
        if name in self._held:
            raise SessionBusy(session_id)
        self._held.add(name)
        try:
            yield
        finally:
            self._held.discard(name)


_IN_PROCESS = LocalLocks()


def lock_file_name(session_id: str) -> str:
    """A file name for any session id: readable, and unique by a hash of the id."""
    readable = re.sub(r"[^A-Za-z0-9_.-]", "_", session_id)[:40]
    digest = hashlib.sha256(session_id.encode()).hexdigest()[:12]
    return f"{readable}-{digest}.lock"


class FileLocks:
    """An OS lock (`flock`) on one file per session in `folder`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @contextlib.asynccontextmanager
    async def hold(self, session_id: str) -> AsyncIterator[None]:
        if fcntl is None:  # pragma: no cover - Windows
            async with _IN_PROCESS.hold(session_id, key=f"{self.folder}/{session_id}"):
                yield
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder / lock_file_name(session_id), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise SessionBusy(session_id) from None
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())  # for a curious human; the lock is the flock
            yield
        finally:
            os.close(fd)  # releases the flock


class PostgresLocks:
    """A session-level advisory lock per session, on a connection held for the run."""

    def __init__(self, url: str) -> None:
        self.url = url

    @contextlib.asynccontextmanager
    async def hold(self, session_id: str) -> AsyncIterator[None]:
        try:
            conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
        except psycopg.Error as exc:
            raise StorageError(f"cannot reach the database of DATABASE_URL: {exc}") from exc
        async with conn:
            row = await (await conn.execute(TRY_LOCK_SQL, (session_id,))).fetchone()
            if not row or not row[0]:
                raise SessionBusy(session_id)
            try:
                yield
            finally:
                with contextlib.suppress(psycopg.Error):  # closing the connection releases it too
                    await conn.execute(UNLOCK_SQL, (session_id,))


_BY_CHECKPOINTER: weakref.WeakKeyDictionary[object, SessionLocks] = weakref.WeakKeyDictionary()


def register_locks(checkpointer: object, locks: SessionLocks) -> None:
    """The locks runs on `checkpointer` take (set by `storage.open_checkpointer`)."""
    _BY_CHECKPOINTER[checkpointer] = locks


def locks_for(checkpointer: object) -> SessionLocks:
    """The locks registered for `checkpointer`; an in-process lock set for any other."""
    if checkpointer is None or isinstance(checkpointer, bool):
        return _IN_PROCESS
    found = _BY_CHECKPOINTER.get(checkpointer)
    if found is None:
        found = _BY_CHECKPOINTER[checkpointer] = LocalLocks()
    return found
