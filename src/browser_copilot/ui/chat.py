"""The terminal chat (F4, F50-F54): command mode by default, `/chat` for chat mode, live progress,
confirmation and hand-over cards, persistent sessions, Ctrl+C that cancels a run and keeps the session.

The UI renders the event stream and decides nothing: the agent's state lives in the checkpoint."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markdown import Markdown
from rich.markup import escape
from rich.panel import Panel

from browser_copilot import __version__
from browser_copilot.agent.factory import make_context
from browser_copilot.agent.memory import open_memory
from browser_copilot.agent.runner import AgentRunner, TurnOutcome, compile_graph, new_session_id
from browser_copilot.agent.storage import last_session, open_checkpointer, remember_session
from browser_copilot.browser.session import BrowserSession
from browser_copilot.config import Settings
from browser_copilot.errors import BrowserError, McpError, SessionBusy
from browser_copilot.events import EventSink, fan_out
from browser_copilot.extras.budget import schema_tokens
from browser_copilot.extras.servers import ExtraServers
from browser_copilot.llm.provider import HOW_TO_CONFIGURE, LlmEndpoint, build_chat_model, resolve_llm
from browser_copilot.logs import StepEventLog, save_snapshot
from browser_copilot.metrics import Metrics
from browser_copilot.ui.lines import LineReader
from browser_copilot.ui.memory import memory_command
from browser_copilot.ui.render import EventPrinter, render_outcome, render_plan, render_status
from browser_copilot.ui.tools_view import render_tools

PROMPT = "› "
HELP = """Commands (command mode is the default; in chat mode every other line goes to the agent):
  /chat            enter chat mode          /exit     leave chat mode (so does any other command)
  /ask TEXT        one message to the agent, from command mode
  /yes  /no        answer a pending confirmation
  /plan            the working state: goal, plan, progress, facts
  /tabs            the browser's open tabs
  /tools           the tools the agent can use (built-in, extra MCP servers: read-only or asks first)
  /memory          what the agent remembers about you   /forget N   remove one (/forget all)
  /status          session, steps, tokens, errors, browser, model
  /new             start a fresh session           /help   this list
  /quit            leave (Ctrl+D too; Ctrl+C cancels a running task, or leaves at the prompt)
A line ending in \\ continues on the next line."""


class ChatApp:
    def __init__(self, settings: Settings, console: Console) -> None:
        self.settings = settings
        self.console = console
        self.mode = "command"
        self.metrics = Metrics()
        self.printer = EventPrinter(console, limit=settings.max_tool_steps)
        self.runner: AgentRunner | None = None
        self.browser: BrowserSession | None = None
        self.extras = ExtraServers()
        self.llm: LlmEndpoint | None = None
        self.turn: asyncio.Task[TurnOutcome] | None = None

    # ----- set-up -------------------------------------------------------------------------

    def sink(self, session: str) -> EventSink:
        log = StepEventLog(self.settings.logs_dir / "steps.jsonl", session)
        return fan_out(self.printer, self.metrics, log)

    @contextlib.asynccontextmanager
    async def agent(self, browser: BrowserSession, session: str) -> AsyncIterator[AgentRunner | None]:
        if self.llm is None:
            yield None
            return
        async with open_checkpointer(self.settings) as saver, open_memory(self.settings) as memory:
            context = make_context(
                self.settings,
                llm=build_chat_model(self.settings, self.llm),
                browser=browser,
                events=self.sink(session),
                extras=self.extras,
                memory=memory,
            )
            yield AgentRunner(compile_graph(saver), context, session_id=session)

    def banner(self, session: str, resumed: dict[str, Any] | None) -> None:
        browser = self.browser
        assert browser is not None and browser.endpoint is not None
        endpoint = browser.endpoint
        how = {"configured": "attached", "devtools-active-port": "attached", "launched": "launched"}[
            endpoint.how
        ]
        lines = [
            f"[ok]Browser[/ok]  {how} at [url]{escape(endpoint.url)}[/url]"
            + (f" ({escape(endpoint.browser)})" if endpoint.browser else "")
        ]
        lines.append(
            f"[ok]Model[/ok]    {escape(self.llm.describe())}"
            if self.llm
            else "[warn]Model[/warn]    not configured"
        )
        if resumed and resumed.get("current_goal"):
            lines.append(f"[ok]Session[/ok]  resuming {session}: {escape(str(resumed['current_goal'])[:80])}")
        else:
            lines.append(f"[ok]Session[/ok]  {session}")
        lines.append("[muted]/chat to talk to the agent, /help for commands, /quit to leave.[/muted]")
        self.console.print(Panel("\n".join(lines), title=f"Browser Copilot {__version__}", expand=False))
        if self.llm is None:
            self.console.print(Panel(escape(HOW_TO_CONFIGURE), title="Set up a model", border_style="warn"))

    # ----- the loop -----------------------------------------------------------------------

    async def run(self, session: str | None) -> int:
        loop = asyncio.get_running_loop()
        session_id = session or await last_session(self.settings) or new_session_id()
        await remember_session(self.settings, session_id)
        with self.console.status("Attaching to the browser…"):
            browser = BrowserSession(
                self.settings, notice=lambda t: self.console.print(f"[notice]{escape(t)}[/notice]")
            )
            await browser.open()
        self.browser = browser
        try:
            self.extras = ExtraServers.from_settings(self.settings, notice=self.notice)
            await self.extras.start()
            self.llm = await asyncio.to_thread(resolve_llm, self.settings)
            async with self.agent(browser, session_id) as runner:
                self.runner = runner
                resumed = await runner.values() if runner else None
                self.mode = str((resumed or {}).get("mode") or "command")
                self.banner(session_id, resumed)
                if runner is not None and await runner.pending() is not None:
                    self.console.print("[notice]The agent is waiting for your answer:[/notice]")
                    render_outcome(self.console, await runner.outcome())
                reader = LineReader(loop, history=self.settings.data_dir / "history", prompt=PROMPT)
                with self.interrupts(loop):
                    try:
                        await self.read_loop(reader)
                    finally:
                        reader.save_history()
        finally:
            await self.extras.close()
            await browser.close()
        self.console.print("[muted]Bye.[/muted]")
        return 0

    @contextlib.contextmanager
    def interrupts(self, loop: asyncio.AbstractEventLoop) -> Iterator[None]:
        """Ctrl+C cancels the running task (the session stays); at the prompt it leaves."""
        main = asyncio.current_task()

        def on_interrupt() -> None:
            if self.turn is not None and not self.turn.done():
                self.turn.cancel()
            elif main is not None:
                main.cancel()

        try:
            loop.add_signal_handler(signal.SIGINT, on_interrupt)
        except (NotImplementedError, RuntimeError):
            yield
            return
        try:
            yield
        finally:
            loop.remove_signal_handler(signal.SIGINT)

    async def read_loop(self, reader: LineReader) -> None:
        while True:
            prompt = "[prompt]chat › [/prompt]" if self.mode == "chat" else f"[prompt]{PROMPT}[/prompt]"
            if reader.interactive:
                reader.prompt = "chat › " if self.mode == "chat" else PROMPT
            else:
                self.console.print(prompt, end="")
            line = await reader.read(await self.runner.secret_asked() if self.runner else None)
            if line is None:
                self.console.print()
                return
            text = line.strip()
            if not text:
                continue
            if await self.handle(text) is False:
                return

    async def handle(self, text: str) -> bool:
        """Run one input; False to quit."""
        if not text.startswith("/"):
            waiting = self.runner is not None and await self.runner.pending() is not None
            if self.mode == "chat" or waiting:
                await self.ask(text)
            else:
                self.console.print(
                    "[warn]Not a command.[/warn] Type [bold]/chat[/bold] to talk to the agent, "
                    "or [bold]/ask[/bold] TEXT for one message. /help lists the commands."
                )
            return True
        command, _, rest = text.partition(" ")
        if command in ("/yes", "/no"):
            await self.answer(command)
            return True
        if self.mode == "chat" and command != "/chat":
            await self.set_mode("command")
            if command == "/exit":
                self.console.print("[notice]Left chat mode.[/notice]")
                return True
        if command in ("/quit", "/q"):
            return False
        if command == "/exit":
            self.console.print("[muted]Not in chat mode. /quit leaves the app.[/muted]")
        elif command == "/chat":
            await self.set_mode("chat")
            self.console.print("[notice]Chat mode: every line goes to the agent. /exit leaves it.[/notice]")
        elif command == "/ask" and rest.strip():
            await self.ask(rest.strip())
        elif command == "/help":
            self.console.print(HELP, markup=False)
        elif command in ("/memory", "/forget"):
            book = self.runner.context.memory if self.runner else None
            await memory_command(self.console, book, command, rest)
        elif command == "/tabs":
            await self.show_tabs()
        elif command == "/tools":
            render_tools(self.console, self.extras, await asyncio.to_thread(schema_tokens, self.extras))
        elif command == "/plan":
            render_plan(self.console, await self.runner.values() if self.runner else {})
        elif command == "/status":
            await self.show_status()
        elif command == "/new":
            await self.new_session()
        else:
            self.console.print(f"[warn]Unknown command {escape(command)}.[/warn] Type /help for the list.")
        return True

    async def set_mode(self, mode: str) -> None:
        self.mode = mode
        if self.runner is not None and await self.runner.pending() is None:
            await self.runner.remember({"mode": mode})

    async def answer(self, word: str) -> None:
        pending = await self.runner.pending() if self.runner else None
        if pending is None or pending.get("kind") != "confirm":
            self.console.print("[muted]Nothing is waiting for a /yes or /no.[/muted]")
            return
        await self.ask(word)

    async def ask(self, text: str) -> None:
        if self.runner is None:
            self.console.print(
                Panel(escape(HOW_TO_CONFIGURE), title="Set up a model first", border_style="warn")
            )
            return
        started = time.monotonic()
        self.printer.start(started)
        self.turn = asyncio.create_task(self.runner.send(text, mode=self.mode))
        try:
            with self.printer.live():
                outcome = await self.turn
        except asyncio.CancelledError:
            if asyncio.current_task() is not None and asyncio.current_task().cancelling():  # type: ignore[union-attr]
                raise
            if self.printer.streamed:
                self.console.print(Markdown(self.printer.streamed), style="muted")
            self.console.print(
                "[warn]Cancelled.[/warn] The browser and the session are intact; "
                "a new message continues the same goal."
            )
            return
        except (BrowserError, McpError) as exc:
            self.console.print(f"[error]The browser is unavailable:[/error] {escape(str(exc))}")
            return
        except SessionBusy as exc:
            self.console.print(f"[warn]Not sent.[/warn] {escape(str(exc))}")
            return
        finally:
            self.turn = None
        await remember_session(
            self.settings, self.runner.session_id, goal=outcome.values.get("current_goal") or None
        )
        render_outcome(self.console, outcome, seconds=time.monotonic() - started)
        if outcome.stop_reason == "error":
            await self.snapshot()

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

    def notice(self, text: str) -> None:
        self.console.print(f"[notice]{escape(text)}[/notice]")

    async def show_tabs(self) -> None:
        assert self.browser is not None
        for tab in await self.browser.tabs():
            marker = "*" if tab.current else " "
            self.console.print(
                f" {marker} {tab.index}: {escape(tab.title or '(no title)')}  [url]{escape(tab.url)}[/url]"
            )

    async def show_status(self) -> None:
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

    async def new_session(self) -> None:
        if self.runner is None:
            self.console.print("[muted]No model configured: there is no session to renew.[/muted]")
            return
        session = new_session_id()
        self.runner.session_id = session
        self.runner.context = self.runner.context.with_events(self.sink(session))
        self.metrics.__init__()  # type: ignore[misc]
        self.mode = "command"
        await remember_session(self.settings, session)
        self.console.print(f"[notice]New session {session}.[/notice]")


async def run_chat(
    settings: Settings, console: Console, *, env_file: Path | None, session: str | None = None
) -> int:
    """The interactive app; returns the exit code."""
    del env_file
    fd = sys.stdin.fileno() if sys.stdin.isatty() else None
    saved = _terminal_state(fd)
    try:
        return await ChatApp(settings, console).run(session)
    finally:
        _restore_terminal(fd, saved)


def _terminal_state(fd: int | None) -> Any:
    if fd is None:
        return None
    try:
        import termios

        return termios.tcgetattr(fd)
    except (ImportError, OSError):
        return None


def _restore_terminal(fd: int | None, saved: Any) -> None:
    """readline may be mid-line when we exit on a signal: give the shell its terminal back."""
    if fd is None or saved is None:
        return
    with contextlib.suppress(ImportError, OSError):
        import termios

        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
