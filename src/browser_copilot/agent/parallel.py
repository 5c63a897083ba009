"""Several sessions' runs at once on one browser, for a caller that runs jobs (a worker, `jobs/`).

`ParallelRunners` owns the browser's pool of MCP server processes (`browser.pool`, MAX_PARALLEL_RUNS)
and lends a session an `AgentRunner` whose `BrowserSession` is its own for the run: a window of its
own in the browser (found again by its tab's CDP target id, `SessionTab`'s `target`), the network
policy with the sites of that session's task only, the shared per-site pacing ledger. The runner is
given back when the block ends; past the limit, `runner()` waits for a free place.

    runners = ParallelRunners(settings, browser=browser, graph=graph, context=context)
    async with runners.runner(session_id, events=sink) as runner:
        outcome = await runner.send(text)          # or runner.continue_run()
    await runners.close()                          # stops the pool's processes (not the browser)
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import replace

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.runner import AgentRunner, Graph
from browser_copilot.browser.pool import BrowserPool
from browser_copilot.browser.session import BrowserSession
from browser_copilot.config import Settings
from browser_copilot.events import EventSink, discard


class ParallelRunners:
    """Runners of different sessions that act in one browser at the same time."""

    def __init__(
        self, settings: Settings, *, browser: BrowserSession, graph: Graph, context: AgentContext
    ) -> None:
        self.pool = BrowserPool(settings, browser)
        self._graph = graph
        self._context = context
        self.tabs: dict[str, str] = {}
        """Each session's tab (CDP target id), as its last run left it."""
        self.sites: dict[str, set[str]] = {}
        """Each session's task sites (a site named in one session is never part of another's task)."""

    @property
    def running(self) -> int:
        return self.pool.running

    @contextlib.asynccontextmanager
    async def runner(self, session_id: str, *, events: EventSink = discard) -> AsyncIterator[AgentRunner]:
        """A runner for `session_id` on a browser session of the pool, in the session's own window."""
        async with self.pool.lease() as browser:
            await browser.session_tab(session_id, target=self.tabs.get(session_id))
            browser.use_sites(self.sites.setdefault(session_id, set()))
            context = replace(self._context, browser=browser).with_events(events)
            try:
                yield AgentRunner(self._graph, context, session_id=session_id)
            finally:
                if browser.agent_target:
                    self.tabs[session_id] = browser.agent_target

    async def close(self) -> None:
        """Stop the pool's MCP processes (the runs lent out must have ended)."""
        await self.pool.close()


__all__ = ["ParallelRunners"]
