"""The terminal chat (F4, F50-F54): command mode by default, `/chat` for chat mode, live progress,
confirmation and hand-over cards, persistent sessions, Ctrl+C that cancels a run and keeps the session.

The UI renders the event stream and decides nothing: the agent's state lives in the checkpoint.

Start-up (issue 18): the prompt comes first. Only what it needs is imported with this module; the
browser (attach or launch, the MCP server, the network guard, the guard's runtime in the agent's tab),
the extra MCP servers and the agent (LangChain, LangGraph, the checkpoint, the long-term memory) start
in the background (`ui.startup` imports their modules on a thread of its own), and their news is printed
above the prompt as it arrives. No network probe runs before the prompt: a local Ollama or LM Studio
server is looked for in the background. A message (or command) that needs a part that has not started
yet waits for it under a status line ("Starting the browser…"), so the guard is in place before the
model's first action as before; a start that fails ends the app with the same message and exit code as
a failure before the prompt did."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markdown import Markdown
from rich.markup import escape
from rich.panel import Panel

from browser_copilot import __version__
from browser_copilot.agent.metrics import Metrics
from browser_copilot.agent.storage import last_session, list_sessions, remember_session
from browser_copilot.agent.turns import new_session_id
from browser_copilot.config import Settings
from browser_copilot.errors import BrowserError, McpError, SessionBusy
from browser_copilot.events import EventSink, fan_out
from browser_copilot.llm.provider import (
    HOW_TO_CONFIGURE,
    LlmEndpoint,
    resolve_llm,
)
from browser_copilot.logs import StepEventLog
from browser_copilot.ui.chat_commands import ChatCommands, Part
from browser_copilot.ui.chat_start import CHAT_MODE, ChatStart
from browser_copilot.ui.lines import LineReader
from browser_copilot.ui.render import EventPrinter, render_help, render_outcome, render_plan, show

if TYPE_CHECKING:  # loaded in the background (`ui.startup`), after the prompt is shown
    from browser_copilot.agent.runner import AgentRunner
    from browser_copilot.browser.session import BrowserSession
    from browser_copilot.extras.servers import ExtraServers
    from browser_copilot.ui.jobs import Jobs

PROMPT = "› "
COMMANDS: tuple[tuple[str, str], ...] = (
    ("/chat", "chat mode: every line you type goes to the agent"),
    ("/exit", "leave chat mode (any other command leaves it too)"),
    ("/ask TEXT", "send one message to the agent from command mode"),
    ("/yes  /no", "answer a pending confirmation"),
    ("/plan", "the working state: goal, plan, progress, facts"),
    ("/code", "show or hide the code under each step (/code N: step N of the last task)"),
    ("/tabs", "the browser's open tabs"),
    ("/tools", "the tools the agent can use (built-in, extra MCP servers: read-only or asks first)"),
    ("/memory", "what the agent remembers about you"),
    ("/forget N", "remove memory N (/forget all: every one)"),
    ("/status", "session, steps, tokens, errors, browser, model"),
    ("/new", "start a fresh session"),
    ("/bg TASK", "run a task in the background, in a window of its own (MAX_PARALLEL_RUNS)"),
    ("/jobs", "the background jobs and what each does (/jobs N: its steps, then it comes to the front)"),
    ("/help", "this list"),
    ("/quit", "leave (Ctrl+D too; Ctrl+C cancels a running task, or leaves at the prompt)"),
)
HELP_NOTES = (
    "A sentence typed in command mode is offered to the agent: Enter sends it.",
    "Tab completes a command. A line ending in \\ continues on the next line.",
)
COMMAND_WORDS = tuple(word for command, _ in COMMANDS for word in command.split() if word.startswith("/"))
"""What Tab completes."""


class ChatApp(ChatStart, ChatCommands):
    def __init__(self, settings: Settings, console: Console) -> None:
        self.settings = settings
        self.console = console
        console.soft_wrap = False  # the chat wraps long lines between words, never inside one
        self.mode = "command"
        self.mode_chosen = False
        """The user set the mode before the agent had started: that choice wins over the session's."""
        self.metrics = Metrics()
        self.printer = EventPrinter(console, limit=settings.max_tool_steps)
        self.runner: AgentRunner | None = None
        self.browser: BrowserSession | None = None
        self.extras: ExtraServers | None = None
        self.llm: LlmEndpoint | None = None
        self.turn: asyncio.Future[Any] | None = None
        """What Ctrl+C cancels instead of leaving: a run, or a wait for a part still starting."""
        self.reader: LineReader | None = None
        self.starting: dict[Part, asyncio.Future[None]] = {}
        self.stack = contextlib.AsyncExitStack()
        """What closes on leaving: the agent's checkpointer and memory, the extra servers, the browser."""
        self.at_prompt = False
        self.prompt_markup = f"[prompt]{PROMPT}[/prompt]"
        self.goal_told = False
        self.jobs: Jobs | None = None
        """The background jobs (`/bg`), once one was started."""

    # ----- set-up -------------------------------------------------------------------------

    def sink(self, session: str) -> EventSink:
        log = StepEventLog(self.settings.logs_dir / "steps.jsonl", session)
        return fan_out(self.printer, lambda event: self.metrics(event), log)

    # ----- what the user sees -------------------------------------------------------------

    def browser_line(self) -> str:
        """What the open browser session is attached to (the banner's line, once it is known)."""
        assert self.browser is not None and self.browser.endpoint is not None
        endpoint = self.browser.endpoint
        how = {"configured": "attached", "devtools-active-port": "attached", "launched": "launched"}[
            endpoint.how
        ]
        return f"[ok]Browser[/ok]  {how} at [url]{escape(endpoint.url)}[/url]" + (
            f" ({escape(endpoint.browser)})" if endpoint.browser else ""
        )

    def banner(self, session: str, goal: str | None) -> None:
        lines = ["[muted]Browser[/muted]  starting in the background…"]
        lines.append(
            f"[ok]Model[/ok]    {escape(self.llm.describe())}"
            if self.llm
            else "[muted]Model[/muted]    not configured: looking for a local Ollama or LM Studio server…"
        )
        if goal:
            lines.append(f"[ok]Session[/ok]  resuming {session}: {escape(goal[:80])}")
            self.goal_told = True
        else:
            lines.append(f"[ok]Session[/ok]  {session}")
        lines.append(
            "[muted]Type a task to give it to the agent, or /chat to talk to it; /help lists the "
            "commands (Tab completes them), /quit leaves.[/muted]"
        )
        show(self.console, Panel("\n".join(lines), title=f"Browser Copilot {__version__}", expand=False))

    @contextlib.contextmanager
    def above_prompt(self) -> Iterator[None]:
        """Print news that comes while the user may be typing (the browser attached, a model found)
        without breaking the line being typed: above the prompt, which is drawn again with what was
        typed so far. Away from the prompt, it prints as usual."""
        reader = self.reader
        if not self.at_prompt or reader is None:
            yield
            return
        if reader.interactive:
            typed = _typed_so_far()
            self.console.file.write("\r\x1b[2K")
            yield
            self.console.file.write(reader.prompt + typed)
            self.console.file.flush()
        else:
            self.console.print()
            yield
            self.console.print(self.prompt_markup, end="")

    def notice(self, text: str) -> None:
        with self.above_prompt():
            self.console.print(f"[notice]{escape(text)}[/notice]")

    # ----- the loop -----------------------------------------------------------------------

    async def run(self, session: str | None) -> int:
        loop = asyncio.get_running_loop()
        session_id = session or await last_session(self.settings) or new_session_id()
        await remember_session(self.settings, session_id)
        known = {s.session_id: s.goal for s in await list_sessions(self.settings)}
        self.llm = resolve_llm(self.settings, detect=False)  # a configured one; no network before the prompt
        self.banner(session_id, known.get(session_id))
        reader = LineReader(
            loop, history=self.settings.data_dir / "history", prompt=PROMPT, commands=COMMAND_WORDS
        )
        self.reader = reader
        with self.interrupts(loop):
            try:
                self.start(session_id)
                await self.read_loop(reader)
            finally:
                reader.save_history()
                await self.stop()
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
            self.prompt_markup = (
                "[prompt]chat › [/prompt]" if self.mode == "chat" else f"[prompt]{PROMPT}[/prompt]"
            )
            if reader.interactive:
                reader.prompt = "chat › " if self.mode == "chat" else PROMPT
            else:
                self.console.print(self.prompt_markup, end="")
            line = await self.read_line(reader)
            if line is None:
                self.console.print()
                return
            text = line.strip()
            if not text:
                continue
            if await self.handle(text) is False:
                return

    async def read_line(self, reader: LineReader) -> str | None:
        """The next line. A part that fails to start meanwhile ends the app with its error, as a failure
        before the prompt did (the caller reports it, with its fix)."""
        read = asyncio.ensure_future(reader.read(await self.runner.secret_asked() if self.runner else None))
        self.at_prompt = True
        try:
            while not read.done():
                if (failed := self.failed_start()) is not None:
                    self.console.print()  # off the prompt's line
                    raise failed
                awaited: list[asyncio.Future[Any]] = [read]
                awaited += [started for started in self.starting.values() if not started.done()]
                await asyncio.wait(awaited, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            read.cancel()
            raise
        finally:
            self.at_prompt = False
        return read.result()

    async def handle(self, text: str) -> bool:
        """Run one input; False to quit."""
        if not text.startswith("/"):
            if not await self.wait_for("agent"):
                return True
            waiting = self.runner is not None and await self.runner.pending() is not None
            if self.mode == "chat" or waiting:
                await self.ask(text)
            else:
                await self.offer(text)
            return True
        command, _, rest = text.partition(" ")
        if command in ("/yes", "/no"):
            await self.answer(command)
            return True
        if self.mode == "chat" and command != "/chat":
            await self.set_mode("command")
            if command == "/exit":
                self.console.print("[notice]Left chat mode.[/notice] [muted]/chat goes back.[/muted]")
                return True
            if command not in ("/quit", "/q"):
                self.console.print(
                    "[notice]Left chat mode[/notice] [muted](any command leaves it): /chat goes back; a "
                    "sentence typed now is offered to the agent first.[/muted]"
                )
        if command in ("/quit", "/q"):
            return False
        if command == "/exit":
            self.console.print("[muted]Not in chat mode. /quit leaves the app.[/muted]")
        elif command == "/chat":
            await self.set_mode("chat")
            self.console.print(CHAT_MODE)
        elif command == "/ask" and rest.strip():
            await self.ask(rest.strip())
        elif command == "/help":
            render_help(self.console, COMMANDS, HELP_NOTES)
        elif command == "/code":
            self.code(rest.strip())
        elif command in ("/memory", "/forget"):
            await self.memory(command, rest)
        elif command == "/tabs":
            await self.show_tabs()
        elif command == "/tools":
            await self.show_tools()
        elif command == "/plan":
            if await self.wait_for("agent"):
                render_plan(self.console, await self.runner.values() if self.runner else {})
        elif command == "/status":
            await self.show_status()
        elif command == "/new":
            await self.new_session()
        elif command == "/bg":
            await self.background(rest.strip())
        elif command == "/jobs":
            await self.show_jobs(rest.strip())
        else:
            self.console.print(f"[warn]Unknown command {escape(command)}.[/warn] Type /help for the list.")
        return True

    async def offer(self, text: str) -> None:
        """A sentence typed in command mode: offer to send it to the agent with one key."""
        reader = self.reader
        if reader is None or not reader.interactive:  # a script: no key to press, nothing guessed
            self.console.print(
                "[warn]Not a command.[/warn] Type [bold]/chat[/bold] to talk to the agent, "
                "or [bold]/ask[/bold] TEXT for one message. /help lists the commands."
            )
            return
        if self.runner is None:
            await self.ask(text)  # says how to set up a model
            return
        self.console.print(
            "[prompt]Send this to the agent?[/prompt] [bold]Enter[/bold] sends it · [bold]c[/bold] sends it "
            "and stays in chat mode · [bold]Esc[/bold] keeps it here"
        )
        key = await reader.read_key()
        if key is None:  # no key can be read here (the input ended, or no terminal)
            self.console.print("[muted]Not sent.[/muted]")
        elif key in ("enter", "y", "Y"):
            await self.ask(text)
        elif key in ("c", "C"):
            await self.set_mode("chat")
            self.console.print(CHAT_MODE)
            await self.ask(text)
        else:
            self.console.print(
                "[muted]Not sent. /ask TEXT sends one message, /chat sends every line; /help lists the "
                "commands.[/muted]"
            )

    async def set_mode(self, mode: str) -> None:
        self.mode = mode
        if self.runner is None:
            self.mode_chosen = True  # written into the session once the agent has started
        elif await self.runner.pending() is None:
            await self.runner.remember({"mode": mode})

    async def answer(self, word: str) -> None:
        if not await self.wait_for("agent"):
            return
        pending = await self.runner.pending() if self.runner else None
        if pending is None or pending.get("kind") != "confirm":
            self.console.print("[muted]Nothing is waiting for a /yes or /no.[/muted]")
            return
        await self.ask(word)

    async def _ready_to_run(self) -> AgentRunner | None:
        """The runner, once the agent, a model, the browser and the extra servers are there (None, and
        said, when one is not); the guard is installed before the first action."""
        if not await self.wait_for("agent"):
            return None
        if self.runner is None:
            show(
                self.console,
                Panel(escape(HOW_TO_CONFIGURE), title="Set up a model first", border_style="warn"),
            )
            return None
        return self.runner if await self.wait_for("browser", "extras") else None

    async def ask(self, text: str) -> None:
        runner = await self._ready_to_run()
        if runner is None:
            return
        started = time.monotonic()
        self.printer.start(started, await runner.values())
        self.turn = asyncio.create_task(runner.send(text, mode=self.mode))
        try:
            with self.printer.live():
                outcome = await self.turn
        except asyncio.CancelledError:
            if asyncio.current_task() is not None and asyncio.current_task().cancelling():  # type: ignore[union-attr]
                raise
            self.printer.interrupted()
            if self.printer.streamed:
                show(self.console, Markdown(self.printer.streamed, style="muted"))
            self.console.print(
                "[warn]Cancelled.[/warn] The browser and the session are intact; "
                "a new message continues the same goal."
            )
            goal = (await runner.values()).get("current_goal")
            await remember_session(self.settings, runner.session_id, goal=goal or None)
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
            self.settings, runner.session_id, goal=outcome.values.get("current_goal") or None
        )
        render_outcome(self.console, outcome, seconds=time.monotonic() - started, counts=self.metrics.run)
        if outcome.stop_reason == "error":
            await self.snapshot()


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


def _typed_so_far() -> str:
    """What the user has typed on the prompt's line (readline's buffer)."""
    try:
        import readline
    except ImportError:  # Windows without pyreadline
        return ""
    return readline.get_line_buffer()


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
