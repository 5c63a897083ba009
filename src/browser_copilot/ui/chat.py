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
import base64
import contextlib
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rich.console import Console
from rich.markdown import Markdown
from rich.markup import escape
from rich.panel import Panel

from browser_copilot import __version__
from browser_copilot.agent.factory import make_context
from browser_copilot.agent.storage import last_session, list_sessions, open_checkpointer, remember_session
from browser_copilot.agent.turns import new_session_id
from browser_copilot.config import Settings
from browser_copilot.errors import BrowserError, McpError, SessionBusy
from browser_copilot.events import EventSink, fan_out
from browser_copilot.llm.provider import (
    HOW_TO_CONFIGURE,
    LlmEndpoint,
    build_chat_model,
    detect_local,
    resolve_llm,
)
from browser_copilot.logs import StepEventLog, save_snapshot
from browser_copilot.metrics import Metrics
from browser_copilot.ui.counts import Counts
from browser_copilot.ui.lines import LineReader
from browser_copilot.ui.render import EventPrinter, render_help, render_outcome, render_plan, show
from browser_copilot.ui.startup import AGENT_MODULES, BROWSER_MODULES, load_in_background
from browser_copilot.ui.status import render_status

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
CHAT_MODE = "[notice]Chat mode: every line goes to the agent. /exit (or any command) leaves it.[/notice]"

Part = Literal["browser", "extras", "agent", "modules"]
"""What starts in the background: the browser session, the extra MCP servers, the agent (model, graph,
checkpoint, memory), and the agent's modules alone (what `/tools` and `/memory` need)."""
WAITING: dict[Part, str] = {
    "browser": "Starting the browser…",
    "extras": "Starting the extra MCP servers…",
    "agent": "Starting the agent…",
    "modules": "Starting the agent…",
}
LAUNCH_WAIT = 30.0
"""On leaving while a browser is being launched: how long to let it come up, so it is closed, not left."""


class ChatApp:
    def __init__(self, settings: Settings, console: Console) -> None:
        self.settings = settings
        self.console = console
        console.soft_wrap = False  # the chat wraps long lines between words, never inside one
        self.mode = "command"
        self.mode_chosen = False
        """The user set the mode before the agent had started: that choice wins over the session's."""
        self.metrics = Metrics()
        self.counts = Counts()
        """The run's counts, for its end line and `/status` (a job brought to the front brings its own)."""
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
        return fan_out(self.printer, self.metrics, lambda event: self.counts(event), log)

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
        render_outcome(self.console, outcome, seconds=time.monotonic() - started, counts=self.counts.run)
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
            counts=self.counts,
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
        self.counts = job.counts  # /status: the job's run, as its end line said
        self.metrics.__init__()  # type: ignore[misc]

    async def new_session(self) -> None:
        if not await self.wait_for("agent"):
            return
        if self.runner is None:
            self.console.print("[muted]No model configured: there is no session to renew.[/muted]")
            return
        session = new_session_id()
        self.runner.session_id = session
        self.runner.context = self.runner.context.with_events(self.sink(session))
        self.metrics.__init__()  # type: ignore[misc]
        self.counts = Counts()
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


def _builtin_specs() -> list[dict[str, Any]]:
    """The built-in tools' schemas, imported when first needed (see `ChatApp` start-up)."""
    from browser_copilot.agent.tools import builtin_specs

    return builtin_specs()
