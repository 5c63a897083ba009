"""The terminal chat's start-up (issue 18): the prompt comes first; the browser, the extra MCP servers and
the agent start in the background (their modules load on a thread of their own, `ui.startup`), and a
command that needs a part still starting waits for it under a status line. Leaving stops what is still
starting and closes what started. A mixin of `ChatApp` (ui/chat.py)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from browser_copilot.agent.factory import make_context
from browser_copilot.agent.storage import open_checkpointer
from browser_copilot.config import Settings
from browser_copilot.events import EventSink
from browser_copilot.llm.provider import HOW_TO_CONFIGURE, LlmEndpoint, build_chat_model, detect_local
from browser_copilot.ui.chat_commands import Part
from browser_copilot.ui.render import render_outcome, show
from browser_copilot.ui.startup import AGENT_MODULES, BROWSER_MODULES, load_in_background

if TYPE_CHECKING:
    from browser_copilot.agent.runner import AgentRunner
    from browser_copilot.browser.session import BrowserSession
    from browser_copilot.extras.servers import ExtraServers

WAITING: dict[Part, str] = {
    "browser": "Starting the browser…",
    "extras": "Starting the extra MCP servers…",
    "agent": "Starting the agent…",
    "modules": "Starting the agent…",
}
LAUNCH_WAIT = 30.0
"""On leaving while a browser is being launched: how long to let it come up, so it is closed, not left."""

CHAT_MODE = "[notice]Chat mode: every line goes to the agent. /exit (or any command) leaves it.[/notice]"


def _builtin_specs() -> list[dict[str, Any]]:
    """The built-in tools' schemas (imported when the extra servers' budget is checked, not before)."""
    from browser_copilot.agent.tools import builtin_specs

    return builtin_specs()


class ChatStart:
    """The start-up half of `ChatApp` (what it declares here, `ChatApp` has)."""

    settings: Settings
    console: Console
    mode: str
    mode_chosen: bool
    goal_told: bool
    runner: AgentRunner | None
    browser: BrowserSession | None
    extras: ExtraServers | None
    llm: LlmEndpoint | None
    turn: asyncio.Future[Any] | None
    starting: dict[Part, asyncio.Future[None]]
    stack: contextlib.AsyncExitStack
    above_prompt: Callable[[], contextlib.AbstractContextManager[None]]

    def notice(self, text: str) -> None:
        raise NotImplementedError

    def sink(self, session: str) -> EventSink:
        raise NotImplementedError

    def browser_line(self) -> str:
        raise NotImplementedError

    def browser_session(self) -> BrowserSession:
        """The browser session (created on first use, once its modules are loaded); closed on leaving."""
        if self.browser is None:
            from browser_copilot.browser.session import BrowserSession

            self.browser = BrowserSession(self.settings, notice=self.notice)
            self.stack.push_async_callback(self.browser.close)
        return self.browser

    def extra_servers(self) -> ExtraServers:
        """The extra MCP servers of MCP_SERVERS_FILE (`ConfigError` when it is invalid); closed on leaving."""
        if self.extras is None:
            from browser_copilot.extras.servers import ExtraServers

            # The agent's modules load in the background meanwhile (ui/startup.py): the built-in schemas
            # are imported only when the servers' budget is checked, not here.
            settings, notice = self.settings, self.notice
            self.extras = ExtraServers.from_settings(settings, notice=notice, builtin=_builtin_specs)
            self.stack.push_async_callback(self.extras.close)
        return self.extras

    def start(self, session: str) -> None:
        """Start the browser, the extra servers and the agent in the background; their modules load on a
        thread of their own, the browser's first."""
        browser_modules, agent_modules = load_in_background(
            asyncio.get_running_loop(), (BROWSER_MODULES, AGENT_MODULES)
        )
        self.starting = {
            "browser": asyncio.create_task(self.start_browser(browser_modules), name="start-browser"),
            "extras": asyncio.create_task(self.start_extras(browser_modules), name="start-extras"),
            "agent": asyncio.create_task(self.start_agent(session, agent_modules), name="start-agent"),
            "modules": agent_modules,
        }

    async def start_browser(self, modules: asyncio.Future[None]) -> None:
        await modules
        browser = self.browser_session()
        await browser.open()
        with self.above_prompt():
            self.console.print(self.browser_line())

    async def start_extras(self, modules: asyncio.Future[None]) -> None:
        await modules
        await self.extra_servers().start()

    async def start_agent(self, session: str, modules: asyncio.Future[None]) -> None:
        """The model (looked for on this machine when none is configured), then the checkpointer, the
        memory and the graph; then what the session was doing: its mode, its goal, a pending question."""
        if self.llm is None:
            self.llm = await asyncio.to_thread(detect_local)
            with self.above_prompt():
                if self.llm is None:
                    show(
                        self.console,
                        Panel(escape(HOW_TO_CONFIGURE), title="Set up a model", border_style="warn"),
                    )
                else:
                    self.console.print(f"[ok]Model[/ok]    {escape(self.llm.describe())}")
            if self.llm is None:
                return
        await modules
        from browser_copilot.agent.memory import open_memory
        from browser_copilot.agent.runner import AgentRunner, compile_graph

        saver = await self.stack.enter_async_context(open_checkpointer(self.settings))
        memory = await self.stack.enter_async_context(open_memory(self.settings))
        context = make_context(
            self.settings,
            llm=build_chat_model(self.settings, self.llm),
            browser=self.browser_session(),
            events=self.sink(session),
            extras=self.extra_servers(),
            memory=memory,
        )
        runner = AgentRunner(compile_graph(saver), context, session_id=session)
        resumed, pending = await runner.values(), await runner.pending()
        outcome = await runner.outcome() if pending is not None else None
        self.runner = runner
        if self.mode_chosen:
            if pending is None:
                await runner.remember({"mode": self.mode})
        else:
            self.mode = str(resumed.get("mode") or "command")
        with self.above_prompt():
            goal = resumed.get("current_goal")
            if goal and not self.goal_told:
                self.console.print(f"[ok]Session[/ok]  resuming {session}: {escape(str(goal)[:80])}")
            if self.mode == "chat" and not self.mode_chosen:
                self.console.print(CHAT_MODE)
            if outcome is not None:
                self.console.print("[notice]The agent is waiting for your answer:[/notice]")
                render_outcome(self.console, outcome)

    async def stop(self) -> None:
        """Stop what is still starting, then close what started. A browser being launched is let come up
        first (for at most LAUNCH_WAIT), so that it is closed rather than left running."""
        starting = list(self.starting.values())
        try:
            browser = self.starting.get("browser")
            if browser is not None and not browser.done() and self.browser and self.browser.endpoint is None:
                await asyncio.wait([browser], timeout=LAUNCH_WAIT)
            for task in starting:
                task.cancel()
            if starting:
                await asyncio.wait(starting)
        finally:
            await self.stack.aclose()
        for task in starting:  # retrieved: a failure was reported already, or the app is leaving anyway
            if not task.cancelled():
                task.exception()

    async def wait_for(self, *parts: Part) -> bool:
        """Wait until `parts` have started, under a status line that says what is awaited; False when
        Ctrl+C stopped the wait (the start goes on). A part that failed to start raises its error."""
        for part in parts:
            started = self.starting.get(part)
            if started is None:
                continue
            if not started.done():
                waiting = asyncio.ensure_future(asyncio.shield(started))
                self.turn = waiting
                try:
                    with self.console.status(WAITING[part]):
                        await waiting
                except asyncio.CancelledError:
                    if asyncio.current_task() is not None and asyncio.current_task().cancelling():  # type: ignore[union-attr]
                        raise
                    self.console.print(
                        "[warn]Stopped waiting.[/warn] [muted]It goes on starting in the background; "
                        "try again in a moment.[/muted]"
                    )
                    return False
                finally:
                    self.turn = None
            started.result()
        return True

    def failed_start(self) -> BaseException | None:
        """The error of the first part that failed to start, if one did."""
        for started in self.starting.values():
            if started.done() and not started.cancelled() and started.exception() is not None:
                return started.exception()
        return None


__all__ = ["CHAT_MODE", "LAUNCH_WAIT", "WAITING", "ChatStart"]
