"""The downloads the browser reports (its own events on the network policy's connection): which began in
the agent's tabs, where they were saved, and waiting for them (`read_download`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class Download:
    """A download the browser began in one of the agent's tabs, as the browser reported it."""

    guid: str
    name: str
    url: str
    state: str = "started"
    path: str | None = None
    read: bool = False
    """Whether `read_download` gave its text already (without a name it reads the newest not yet read)."""


class Downloads:
    """Every download the browser began since the connection opened, and the agent's tabs' own."""

    def __init__(self) -> None:
        self.begun = 0
        """Downloads any tab began (`browser.look`)."""
        self._running: set[str] = set()
        self._mine: dict[str, Download] = {}
        self._moved = asyncio.Event()

    @property
    def running(self) -> bool:
        return bool(self._running)

    def stopped(self) -> None:
        """The connection closed: no event about the running ones will come."""
        self._running.clear()

    def began(self, params: dict[str, Any], *, agent: bool) -> None:
        """`Browser.downloadWillBegin`; `agent`: it began in a frame of the agent's tabs."""
        guid = str(params.get("guid"))
        self.begun += 1
        self._running.add(guid)
        if agent:
            name = str(params.get("suggestedFilename") or "download")
            self._mine[guid] = Download(guid, name, str(params.get("url") or ""))
            self._moved.set()

    def progressed(self, params: dict[str, Any]) -> None:
        """`Browser.downloadProgress`."""
        guid = str(params.get("guid"))
        state = str(params.get("state") or "")
        if state in ("completed", "canceled"):
            self._running.discard(guid)
        known = self._mine.get(guid)
        if known is not None and state:
            known.state = state
            known.path = str(params.get("filePath") or "") or known.path
            self._moved.set()

    async def one_begun(self, timeout: float) -> None:
        """Wait, up to `timeout` seconds, until a download of the agent's tabs begins."""
        known = len(self._mine)
        await self._until(lambda: len(self._mine) > known, timeout)

    async def all_finished(self, timeout: float) -> None:
        """Wait, up to `timeout` seconds, until no download of the agent's tabs is still coming."""
        coming = ("completed", "canceled")
        await self._until(lambda: all(d.state in coming for d in self._mine.values()), timeout)

    async def _until(self, done: Callable[[], bool], timeout: float) -> None:
        """Wait on the browser's download events until `done()`, or `timeout` seconds."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while not done():
                    self._moved.clear()
                    await self._moved.wait()

    def mine(self) -> list[Download]:
        """The downloads of the agent's tabs, oldest first."""
        return list(self._mine.values())
