"""The terminal chat shell: attach the browser, say what is ready, and hand tasks to the agent.

Input is read on a daemon thread so that Ctrl+C and SIGTERM are handled by the event loop and the
browser session is always closed cleanly.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from browser_copilot import __version__
from browser_copilot.agent.factory import last_session, make_context, remember_session, sessions_db
from browser_copilot.agent.runner import (
    AgentRunner,
    TurnOutcome,
    compile_graph,
    new_session_id,
    sqlite_checkpointer,
)
from browser_copilot.browser.session import BrowserSession
from browser_copilot.config import Settings
from browser_copilot.llm.provider import HOW_TO_CONFIGURE, LlmEndpoint, build_chat_model, resolve_llm
from browser_copilot.ui.render import EventPrinter, render_outcome

PROMPT = "› "
HELP = """Commands:
  /help      this list
  /tabs      the browser's open tabs
  /plan      the working state: goal, plan, progress, facts
  /status    browser endpoint, MCP server, model, session
  /new       start a fresh session
  /yes /no   answer a pending confirmation
  /quit      leave (Ctrl+C or Ctrl+D also work)
Anything else is a task for the agent (or the answer to its question)."""


class LineReader:
    """Lines from stdin on a daemon thread; `None` at end of input."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._loop = loop
        threading.Thread(target=self._pump, name="stdin", daemon=True).start()

    def _pump(self) -> None:
        for line in sys.stdin:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, line.rstrip("\r\n"))
        self._loop.call_soon_threadsafe(self._queue.put_nowait, None)

    async def read(self) -> str | None:
        return await self._queue.get()


def render_banner(console: Console, browser: BrowserSession, llm: LlmEndpoint | None, session: str) -> None:
    endpoint = browser.endpoint
    assert endpoint is not None
    how = {"configured": "attached", "devtools-active-port": "attached", "launched": "launched"}
    lines = [
        f"[ok]Browser[/ok]  {how[endpoint.how]} at [url]{escape(endpoint.url)}[/url]"
        + (f" ({escape(endpoint.browser)})" if endpoint.browser else ""),
    ]
    if llm is not None:
        lines.append(f"[ok]Model[/ok]    {escape(llm.describe())}")
    else:
        lines.append("[warn]Model[/warn]    not configured")
    lines.append(f"[muted]Session {session}. Type /help for commands, /quit to leave.[/muted]")
    console.print(Panel("\n".join(lines), title=f"Browser Copilot {__version__}", expand=False))
    if llm is None:
        console.print(Panel(escape(HOW_TO_CONFIGURE), title="Set up a model", border_style="warn"))


async def _show_tabs(console: Console, browser: BrowserSession) -> None:
    for tab in await browser.tabs():
        marker = "*" if tab.current else " "
        title = escape(tab.title or "(no title)")
        console.print(f" {marker} {tab.index}: {title}  [url]{escape(tab.url)}[/url]")


async def _show_plan(console: Console, runner: AgentRunner | None) -> None:
    values = await runner.values() if runner else {}
    plan = values.get("plan") or []
    progress = values.get("progress") or {"current": 1, "done": [], "blocked": []}
    console.print(f"Goal: {escape(values.get('current_goal') or '(none yet)')}")
    for i, step in enumerate(plan, start=1):
        mark = "x" if i in progress["done"] else "!" if i in progress["blocked"] else " "
        console.print(f"  [{mark}] {i}. {escape(step)}")
    for fact in values.get("facts") or []:
        console.print(f"  - {escape(fact['fact'])} [muted]({escape(fact['source'])})[/muted]")


def _show_status(
    console: Console, browser: BrowserSession, settings: Settings, llm: LlmEndpoint | None, session: str
) -> None:
    endpoint, spec = browser.endpoint, browser.spec
    console.print(f"session    {session}")
    console.print(f"browser    {escape(endpoint.url if endpoint else '-')}")
    if spec is not None and browser.mcp is not None:
        sandbox = "sandboxed" if spec.sandboxed else "not sandboxed"
        console.print(
            f"mcp        @playwright/mcp {spec.version}, {browser.mcp.code_tool_name}, "
            f"{sandbox}; restarts: {browser.restarts}"
        )
    console.print(f"model      {escape(llm.describe()) if llm else 'not configured'}")
    console.print(f"data dir   {escape(str(settings.data_dir))}")
    console.print(f"step limit {settings.max_tool_steps}")


@contextlib.asynccontextmanager
async def agent_runner(
    settings: Settings, browser: BrowserSession, llm: LlmEndpoint | None, session: str, printer: EventPrinter
) -> AsyncIterator[AgentRunner | None]:
    if llm is None:
        yield None
        return
    async with sqlite_checkpointer(sessions_db(settings)) as saver:
        context = make_context(settings, llm=build_chat_model(settings, llm), browser=browser, events=printer)
        yield AgentRunner(compile_graph(saver), context, session_id=session)


async def run_chat(
    settings: Settings, console: Console, *, env_file: Path | None, session: str | None = None
) -> int:
    """The interactive loop; returns the process exit code."""
    del env_file
    loop = asyncio.get_running_loop()
    console.print("[muted]Attaching to the browser...[/muted]")
    session_id = session or last_session(settings) or new_session_id()
    remember_session(settings, session_id)
    printer = EventPrinter(console)
    async with BrowserSession(
        settings, notice=lambda text: console.print(f"[notice]{escape(text)}[/notice]")
    ) as browser:
        llm = await asyncio.to_thread(resolve_llm, settings)
        render_banner(console, browser, llm, session_id)
        reader = LineReader(loop)
        async with agent_runner(settings, browser, llm, session_id, printer) as runner:
            while True:
                console.print(f"[prompt]{PROMPT}[/prompt]", end="")
                line = await reader.read()
                if line is None:
                    console.print()
                    break
                text = line.strip()
                if not text:
                    continue
                if text in ("/quit", "/q", "/exit"):
                    break
                if text == "/help":
                    console.print(HELP)
                elif text == "/tabs":
                    await _show_tabs(console, browser)
                elif text == "/plan":
                    await _show_plan(console, runner)
                elif text == "/status":
                    _show_status(console, browser, settings, llm, session_id)
                elif text == "/new" and runner is not None:
                    runner.session_id = new_session_id()
                    remember_session(settings, runner.session_id)
                    console.print(f"[notice]New session {runner.session_id}.[/notice]")
                elif text.startswith("/") and text not in ("/yes", "/no"):
                    console.print(
                        f"[warn]Unknown command {escape(text.split()[0])}.[/warn] Type /help for the list."
                    )
                elif runner is None:
                    console.print(
                        Panel(escape(HOW_TO_CONFIGURE), title="Set up a model first", border_style="warn")
                    )
                else:
                    outcome: TurnOutcome = await runner.send(text)
                    render_outcome(console, outcome)
    console.print("[muted]Bye.[/muted]")
    return 0
