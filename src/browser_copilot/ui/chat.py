"""The terminal chat shell: attach the browser, say what is ready, read commands until /quit.

The agent graph plugs in here (issue 3); until then a task typed here is answered with what is
missing. Input is read on a daemon thread so that Ctrl+C and SIGTERM are handled by the event loop
and the browser session is always closed cleanly.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from browser_copilot import __version__
from browser_copilot.browser.session import BrowserSession
from browser_copilot.config import Settings
from browser_copilot.llm.provider import HOW_TO_CONFIGURE, LlmEndpoint, resolve_llm

PROMPT = "› "
HELP = """Commands:
  /help      this list
  /tabs      the browser's open tabs
  /status    browser endpoint, MCP server, model, data dir
  /quit      leave (Ctrl+C or Ctrl+D also work)
Anything else is a task for the agent."""


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


def render_banner(console: Console, browser: BrowserSession, llm: LlmEndpoint | None) -> None:
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
    lines.append("[muted]Type /help for commands, /quit to leave.[/muted]")
    console.print(Panel("\n".join(lines), title=f"Browser Copilot {__version__}", expand=False))
    if llm is None:
        console.print(Panel(escape(HOW_TO_CONFIGURE), title="Set up a model", border_style="warn"))


async def _show_tabs(console: Console, browser: BrowserSession) -> None:
    for tab in await browser.tabs():
        marker = "*" if tab.current else " "
        title = escape(tab.title or "(no title)")
        console.print(f" {marker} {tab.index}: {title}  [url]{escape(tab.url)}[/url]")


def _show_status(
    console: Console, browser: BrowserSession, settings: Settings, llm: LlmEndpoint | None
) -> None:
    endpoint, spec = browser.endpoint, browser.spec
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


async def run_chat(settings: Settings, console: Console, *, env_file: Path | None) -> int:
    """The interactive loop; returns the process exit code."""
    del env_file  # reserved for /status once sessions persist
    loop = asyncio.get_running_loop()
    console.print("[muted]Attaching to the browser...[/muted]")
    async with BrowserSession(
        settings, notice=lambda text: console.print(f"[notice]{escape(text)}[/notice]")
    ) as browser:
        llm = await asyncio.to_thread(resolve_llm, settings)
        render_banner(console, browser, llm)
        reader = LineReader(loop)
        while True:
            console.print(f"[prompt]{PROMPT}[/prompt]", end="")
            line = await reader.read()
            if line is None:
                console.print()
                break
            text = line.strip()
            if not text:
                continue
            if text in ("/quit", "/q"):
                break
            if text == "/help":
                console.print(HELP)
            elif text == "/tabs":
                await _show_tabs(console, browser)
            elif text == "/status":
                _show_status(console, browser, settings, llm)
            elif text.startswith("/"):
                console.print(
                    f"[warn]Unknown command {escape(text.split()[0])}.[/warn] Type /help for the list."
                )
            elif llm is None:
                console.print(
                    Panel(escape(HOW_TO_CONFIGURE), title="Set up a model first", border_style="warn")
                )
            else:
                console.print(
                    "[warn]The agent graph is not part of this build yet; the browser "
                    "and model are ready for it.[/warn]"
                )
    console.print("[muted]Bye.[/muted]")
    return 0
