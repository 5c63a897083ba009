"""Parallel runs in one browser (MAX_PARALLEL_RUNS): one `@playwright/mcp` server process per run.

The app's own `BrowserSession` (the one that found or launched the browser) is the pool's first slot
when `share_main`; every other run gets a `BrowserSession` of its own, attached to the same browser
through a server process of its own (`build_server_spec(instance=...)`: folders of its own in
`DATA_DIR/mcp/run-N`, confined exactly like the first), with a network guard of its own that covers
only its run's tab (`TabOwners`), the same URL policy, and the guard runtime installed on its first
guarded call. A run's tab is a window of its own (`BrowserSession.session_tab`): a background tab of a
shared window draws no frames, and its clicks would wait.

Started on demand, and one ahead: when a run takes a session and none is left free, one more is started (warm:
its first connection to the browser made) while fewer than the limit exist. Warm matters: Playwright's
first connection to a browser waits until every tab that is loading a page has committed it (Chromium
answers `Page.getFrameTree` only then), so a cold server started while another run's page loads would
wait for that page. A process idle for `MCP_IDLE_SECONDS` is stopped. While the pool has processes, the
per-site pacing counts of all of them go through one ledger (`PacingLedger`, on the app's session).
`lease()` waits while `limit` runs hold a session: the runs past the limit wait their turn, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from browser_copilot.browser.session import BrowserSession
from browser_copilot.config import Settings
from browser_copilot.errors import BrowserError, McpError, McpUnavailable

log = logging.getLogger(__name__)

Notice = Callable[[str], None]


@dataclass
class _Idle:
    session: BrowserSession
    since: float


class BrowserPool:
    """The MCP sessions of the parallel runs on `browser`'s browser; `async with pool.lease() as b:`."""

    def __init__(
        self,
        settings: Settings,
        browser: BrowserSession,
        *,
        share_main: bool = True,
        warm_ahead: bool = False,
        limit: int | None = None,
        notice: Notice | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.browser = browser
        self.limit = max(1, limit if limit is not None else settings.max_parallel_runs)
        """Runs that hold a session at the same time (the others wait in `lease`)."""
        self.idle_seconds = settings.mcp_idle_seconds
        self._notice = notice or (lambda text: log.info("%s", text))
        self._clock = clock
        self._share_main = share_main
        self._main_free = share_main
        self._idle: list[_Idle] = []
        self._leased: set[BrowserSession] = set()
        self._slots = asyncio.Semaphore(self.limit)
        self._waiting = 0
        self._held = 0
        self._closing: set[asyncio.Task[None]] = set()
        self._spare: asyncio.Task[BrowserSession] | None = None
        self._reaper: asyncio.Task[None] | None = None
        self._numbers = 0
        self._cold = 0
        self._wanted_more = warm_ahead or not share_main
        """A run has needed a process of the pool's own: from then on one is kept warm ahead (a user who
        never runs two at once never pays for a second process; a worker, there to run jobs side by side,
        keeps one warm from the start: `warm_ahead`)."""
        self._closed = False
        self.started = 0
        """Server processes the pool started so far (for the bench and the tests)."""

    # ----- what it holds ------------------------------------------------------------------------

    @property
    def running(self) -> int:
        """Runs holding a place now (their session started or starting)."""
        return self._held

    @property
    def waiting(self) -> int:
        """Runs waiting for a free slot."""
        return self._waiting

    @property
    def sessions(self) -> list[BrowserSession]:
        """The pool's own sessions (not the app's first one), leased or idle."""
        return [*self._leased, *(i.session for i in self._idle)]

    def server_pids(self) -> list[int]:
        return [pid for s in self.sessions if s.mcp is not None and (pid := s.mcp.server_pid()) is not None]

    # ----- leases --------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def lease(self) -> AsyncIterator[BrowserSession]:
        """A browser session for one run, held until the block ends; waits while `limit` are held."""
        if self._closed:
            raise McpUnavailable("the browser pool is closed")
        self._waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self._waiting -= 1
        self._held += 1  # from here its place is taken (also while its session starts)
        try:
            session = await self._take()
        except BaseException:
            self._held -= 1
            self._slots.release()
            raise
        try:
            yield session
        finally:
            self._held -= 1
            self._give_back(session)
            self._slots.release()

    async def _take(self) -> BrowserSession:
        if self._main_free:
            self._main_free = False
            self._warm_spare()
            return self.browser
        self._wanted_more = True
        if self._idle:
            session = self._idle.pop().session  # the most recently used: the others may go idle
        else:
            spare, self._spare = self._spare, None
            self._cold += 1  # counted while it starts: no other spare is started for it meanwhile
            try:
                session = await (spare if spare is not None else self._start())
            finally:
                self._cold -= 1
        self._leased.add(session)
        self._warm_spare()
        return session

    def _give_back(self, session: BrowserSession) -> None:
        if session is self.browser:
            self._main_free = True
            return
        self._leased.discard(session)
        if self._closed or session.mcp is None or not session.mcp.alive:
            self._stop_later(session)  # a server that died: the next run starts one
            return
        self._idle.append(_Idle(session, self._clock()))
        self._reap_later()

    async def _start(self) -> BrowserSession:
        """One more server process on the browser, connected (a cold server's first call waits for the
        browser's loading tabs: done here, not in the run)."""
        endpoint = self.browser.endpoint
        if endpoint is None:
            raise McpUnavailable("the browser session is not open")
        self._numbers += 1
        session = BrowserSession(
            self.settings,
            notice=self._notice,
            root=self.browser._root,  # the same node_modules as the first server
            attach=endpoint,
            instance=str(self._numbers),
            url_policy=self.browser.url_policy,
            owners=self.browser.tab_owners,
        )
        session.pacing_ledger = self.browser.pacing_ledger  # one ledger for the browser's sites
        self.browser.pacing_ledger.sharing = True
        await session.open()
        self.started += 1
        return session

    def _warm_spare(self) -> None:
        """One session started ahead while fewer than the limit exist (besides the app's own), once runs
        have needed more than the app's own."""
        if not self._wanted_more:
            return
        exist = len(self._leased) + len(self._idle) + self._cold + (1 if self._share_main else 0)
        if self._closed or self._spare is not None or self._idle or exist >= self.limit:
            return
        self._spare = asyncio.create_task(self._start(), name="mcp-pool-spare")
        self._spare.add_done_callback(self._spare_ready)

    def _spare_ready(self, task: asyncio.Task[BrowserSession]) -> None:
        if task is not self._spare:
            return  # taken by a run meanwhile
        self._spare = None
        if task.cancelled():
            return
        failure = task.exception()
        if failure is not None:
            log.warning("could not start a spare browser-tool process: %s", failure)
            return
        self._idle.append(_Idle(task.result(), self._clock()))
        self._reap_later()

    # ----- idle processes ------------------------------------------------------------------------

    def _stop_later(self, session: BrowserSession) -> None:
        task = asyncio.ensure_future(session.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def _reap_later(self) -> None:
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.create_task(self._reap(), name="mcp-pool-reaper")

    async def _reap(self) -> None:
        """Stop each session idle for `idle_seconds`; ends when none is idle."""
        while self._idle and not self._closed:
            oldest = min(i.since for i in self._idle)
            await asyncio.sleep(max(0.0, oldest + self.idle_seconds - self._clock()) + 0.01)
            now = self._clock()
            expired = [i for i in self._idle if now - i.since >= self.idle_seconds]
            self._idle = [i for i in self._idle if i not in expired]
            for item in expired:
                log.info("stopping an idle browser-tool process (%s)", item.session.instance)
                with contextlib.suppress(BrowserError, McpError, OSError):
                    await item.session.close()
            self.browser.pacing_ledger.sharing = bool(self.sessions) or self._spare is not None

    async def close(self) -> None:
        """Stop every process the pool started (a run still holding one ends first: its caller's job)."""
        self._closed = True
        tasks = [t for t in (self._spare, self._reaper) if t is not None]
        for task in tasks:
            task.cancel()
        done = await asyncio.gather(*tasks, return_exceptions=True)
        started = [r for r in done if isinstance(r, BrowserSession)]
        self._spare = self._reaper = None
        sessions = [*started, *self.sessions]
        self._idle.clear()
        self._leased.clear()
        await asyncio.gather(*(s.close() for s in sessions), *self._closing, return_exceptions=True)
        self.browser.pacing_ledger.sharing = False


__all__ = ["BrowserPool"]
