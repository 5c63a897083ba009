"""The terminal chat's slash commands that show or change something besides the conversation (F50-F54):
`/code`, `/memory` and `/forget`, `/tools`, `/tabs`, `/status`, `/bg` and `/jobs`, `/new`, and the error
snapshot. A mixin of `ChatApp` (ui/chat.py), which reads the line and sends it here."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from rich.console import Console
from rich.markup import escape

from browser_copilot.agent.metrics import Metrics
from browser_copilot.agent.storage import remember_session
from browser_copilot.agent.turns import new_session_id
from browser_copilot.config import Settings
from browser_copilot.errors import BrowserError, McpError
from browser_copilot.events import EventSink
from browser_copilot.llm.provider import LlmEndpoint
from browser_copilot.logs import save_snapshot
from browser_copilot.ui.render import EventPrinter
from browser_copilot.ui.status import render_status

if TYPE_CHECKING:
    from browser_copilot.agent.runner import AgentRunner
    from browser_copilot.browser.session import BrowserSession
    from browser_copilot.extras.servers import ExtraServers
    from browser_copilot.ui.jobs import Jobs

Part = Literal["browser", "extras", "agent", "modules"]
"""What starts in the background: the browser session, the extra MCP servers, the agent (model, graph,
checkpoint, memory), and the agent's modules alone (what `/tools` and `/memory` need)."""


class ChatCommands:
    """The commands' half of `ChatApp` (what it declares here, `ChatApp` has)."""

    settings: Settings
    console: Console
    mode: str
    metrics: Metrics
    printer: EventPrinter
    runner: AgentRunner | None
    browser: BrowserSession | None
    llm: LlmEndpoint | None
    jobs: Jobs | None
    stack: contextlib.AsyncExitStack
    above_prompt: Callable[[], contextlib.AbstractContextManager[None]]

    async def wait_for(self, *parts: Part) -> bool:
        raise NotImplementedError

    def sink(self, session: str) -> EventSink:
        raise NotImplementedError

    def browser_session(self) -> BrowserSession:
        raise NotImplementedError

    def extra_servers(self) -> ExtraServers:
        raise NotImplementedError

    async def _ready_to_run(self) -> AgentRunner | None:
        raise NotImplementedError

    def code(self, arg: str) -> None:
        """`/code`: show or hide each step's code; `/code N`: step N of the last task."""
        if arg.isdigit():
            if not self.printer.show_step(int(arg)):
                self.console.print(f"[muted]The last task has no step {escape(arg)}.[/muted]")
            return
        self.printer.show_code = not self.printer.show_code
        self.console.print(
            "[notice]Each step now shows its code and result.[/notice] [muted]/code hides them.[/muted]"
            if self.printer.show_code
            else "[notice]Steps in plain words only.[/notice] [muted]/code shows the code again; "
            "/code N shows step N.[/muted]"
        )

    async def snapshot(self) -> None:
        """On an error: save a screenshot and the page's HTML next to the log, and say where."""
        if self.browser is None:
            return
        code = (
            "async (page) => ({ html: await page.content(),"
            " png: (await page.screenshot({ type: 'png' })).toString('base64') })"
        )
        try:
            result = await self.browser.run_code(code, idempotent=True, timeout=20)
        except (BrowserError, McpError):
            return
        if result.ok and isinstance(result.value, dict):
            shot, page = await asyncio.to_thread(
                save_snapshot,
                self.settings.logs_dir / "snapshots",
                str(result.value["html"]),
                base64.b64decode(str(result.value["png"])),
            )
            self.console.print(f"[muted]Error snapshot: {shot} and {page}[/muted]")

    async def memory(self, command: str, rest: str) -> None:
        """`/memory`, `/forget N`."""
        if not await self.wait_for("agent", "modules"):
            return
        from browser_copilot.ui.memory import memory_command

        book = self.runner.context.memory if self.runner else None
        await memory_command(self.console, book, command, rest)

    async def show_tools(self) -> None:
        if not await self.wait_for("extras", "modules"):
            return
        from browser_copilot.agent.tools import builtin_specs
        from browser_copilot.extras.budget import schema_tokens
        from browser_copilot.ui.tools_view import render_tools

        extras = self.extra_servers()
        render_tools(self.console, extras, await asyncio.to_thread(schema_tokens, extras, builtin_specs()))

    async def show_tabs(self) -> None:
        if not await self.wait_for("browser"):
            return
        assert self.browser is not None
        for tab in await self.browser.tabs():
            marker = "*" if tab.current else " "
            self.console.print(
                f" {marker} {tab.index}: {escape(tab.title or '(no title)')}  [url]{escape(tab.url)}[/url]"
            )

    async def show_status(self) -> None:
        if not await self.wait_for("browser", "extras", "agent"):
            return
        assert self.browser is not None
        values = await self.runner.values() if self.runner else {}
        render_status(
            self.console,
            session=self.runner.session_id if self.runner else "-",
            mode=self.mode,
            values=values,
            metrics=self.metrics,
            browser=self.browser,
            model=self.llm.describe() if self.llm else "not configured",
        )

    async def background(self, task: str) -> None:
        """`/bg TASK`: the task runs as a job of its own while the prompt stays free."""
        if not task:
            self.console.print("[muted]/bg TASK runs TASK in the background; /jobs lists the jobs.[/muted]")
            return
        runner = await self._ready_to_run()
        if runner is None:
            return
        if self.jobs is None:
            from browser_copilot.ui.jobs import Jobs

            self.jobs = Jobs(
                self.settings,
                browser=self.browser_session(),
                graph=runner.graph,
                context=runner.context,
                console=self.console,
                above=self.above_prompt,
            )
            self.stack.push_async_callback(self.jobs.close)
        self.jobs.start(task)

    async def show_jobs(self, arg: str) -> None:
        """`/jobs`: each job's status; `/jobs N`: job N's steps, then it becomes the terminal's session
        (to answer it, or to go on with it)."""
        if self.jobs is None:
            self.console.print("[muted]No background jobs. /bg TASK starts one.[/muted]")
            return
        job = self.jobs.command(arg)
        if job is None:
            return
        assert self.runner is not None and self.browser is not None
        sink = self.sink(job.session_id)
        self.runner = await self.jobs.to_front(job, self.browser, sink, previous=self.runner.session_id)
        self.metrics = job.metrics  # /status: the job's run, as its end line said

    async def new_session(self) -> None:
        if not await self.wait_for("agent"):
            return
        if self.runner is None:
            self.console.print("[muted]No model configured: there is no session to renew.[/muted]")
            return
        session = new_session_id()
        self.runner.session_id = session
        self.runner.context = self.runner.context.with_events(self.sink(session))
        self.metrics = Metrics()
        self.mode = "command"
        await remember_session(self.settings, session)
        self.console.print(f"[notice]New session {session}.[/notice]")


__all__ = ["ChatCommands"]
