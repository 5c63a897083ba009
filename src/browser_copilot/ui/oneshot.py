"""`main.py run "TASK"`: one task from a script.

Where things go: in a terminal, progress and answer on stdout, as in the chat. When stdout is not a
terminal (a pipe, a file) the run's final text alone goes to stdout (the answer, the step-limit summary,
or the question it waits on) and everything else to stderr. With `--json`, stdout carries JSON lines
(`ui.run_output`, schema `server/schema/run.v1.json`) and the progress goes to stderr.

Answers to confirmations, questions and hand-overs are read from stdin when asked. The exit code says
how the run ended (`ui.run_output.MEANINGS`): an answer the app's checks still doubt (8) or one given
after the user declined an action (9) is never a plain success. Every stop that can be continued names
the session; `run "continue"` without `--session` continues the last session (and says so).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import time
from dataclasses import dataclass
from typing import TextIO

from rich.console import Console
from rich.markup import escape

from browser_copilot.agent.factory import make_context
from browser_copilot.agent.memory import open_memory
from browser_copilot.agent.metrics import Metrics
from browser_copilot.agent.runner import AgentRunner, TurnOutcome, compile_graph
from browser_copilot.agent.storage import open_checkpointer, remember_session
from browser_copilot.agent.tools import builtin_specs
from browser_copilot.browser.session import BrowserSession
from browser_copilot.config import Settings
from browser_copilot.errors import BrowserError, ConfigError, CopilotError, McpError, SessionBusy
from browser_copilot.events import EventSink, fan_out
from browser_copilot.extras.servers import ExtraServers
from browser_copilot.llm.provider import HOW_TO_CONFIGURE, LlmEndpoint, build_chat_model, resolve_llm
from browser_copilot.logs import StepEventLog
from browser_copilot.ui import run_output as codes
from browser_copilot.ui.render import STOP_LABELS, EventPrinter, doubts, render_outcome
from browser_copilot.ui.run_output import ErrorKind, JsonLines, StopFlag, continue_hint, result_record
from browser_copilot.ui.session_choice import choose_session

EXIT_CODES = codes.BY_STOP_REASON
"""Exit code by stop reason (kept for callers of the earlier name)."""
EXIT_UNVERIFIED = codes.UNVERIFIED
"""An answer that reached the user marked unverified (`verified: false`, with its `doubts`)."""


@dataclass
class Streams:
    """Where `run` writes. `progress`: stdout's console in a terminal, else stderr's; `answer`: stdout
    for the final text when it is not a terminal (None: the progress console shows it)."""

    progress: Console
    answer: TextIO | None
    json: JsonLines | None
    stdin: TextIO

    @classmethod
    def choose(
        cls, out: Console, err: Console, *, as_json: bool, stdout: TextIO, stdin: TextIO, session: str
    ) -> Streams:
        if as_json:
            return cls(err, None, JsonLines(stdout, session), stdin)
        if out.is_terminal:
            return cls(out, None, None, stdin)
        return cls(err, stdout, None, stdin)


async def read_line(stream: TextIO) -> str:
    """One line of `stream` ("" at its end). Read on a daemon thread, so that Ctrl+C while waiting
    leaves at once (a pool thread blocked in `readline` would hold the exit until a line came)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str] = loop.create_future()

    def done(line: str) -> None:
        if not future.done():
            future.set_result(line)

    def work() -> None:
        try:
            line = stream.readline()
        except (OSError, ValueError):
            line = ""
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(done, line)

    threading.Thread(target=work, name="run-stdin", daemon=True).start()
    return await future


def exit_code(outcome: TurnOutcome, tally: Metrics) -> int:
    if outcome.interrupt is not None:
        return codes.WAITING
    reason = outcome.stop_reason
    if reason == "answered":
        if tally.session.declined:
            return codes.DECLINED
        return codes.UNVERIFIED if doubts(outcome) is not None else codes.OK
    if reason == "error" and (outcome.values.get("last_error") or {}).get("kind") == "llm":
        return codes.MODEL
    return codes.BY_STOP_REASON.get(reason, codes.FAILED)


async def run_once(
    settings: Settings,
    out: Console,
    err: Console,
    task: str,
    *,
    session: str | None,
    as_json: bool = False,
    stop: StopFlag | None = None,
    stdout: TextIO | None = None,
    stdin: TextIO | None = None,
) -> int:
    """Run `task` to its end (answering questions from stdin); the exit code (`ui.run_output`)."""
    started = time.monotonic()
    streams = Streams.choose(
        out, err, as_json=as_json, stdout=stdout or sys.stdout, stdin=stdin or sys.stdin, session=""
    )
    try:
        session_id, how = await choose_session(settings, task, session)
    except ConfigError as exc:
        return _refuse(streams, str(exc))
    llm = await asyncio.to_thread(resolve_llm, settings)
    if llm is None:
        return _refuse(streams, HOW_TO_CONFIGURE, label="No model.")
    if streams.json is not None:
        streams.json.session = session_id
        streams.json.start(task=task, how=how, model=llm.describe())
    if how == "last":
        streams.progress.print(
            f"[notice]Continuing the last session, {session_id}[/notice] "
            "[muted](no --session given; pass --session ID for another one)[/muted]"
        )
    else:
        streams.progress.print(f"[muted]Session {session_id}{' (new)' if how == 'new' else ''}[/muted]")
    await remember_session(settings, session_id)
    return await _drive(settings, streams, task, session_id, llm, started=started, stop=stop or StopFlag())


def _refuse(streams: Streams, problem: str, *, label: str = "") -> int:
    """The run cannot start (a usage or configuration problem): say why, and end the JSON lines."""
    head = f"[error]{escape(label)}[/error] " if label else ""
    streams.progress.print(f"{head}{escape(problem)}", style=None if label else "error")
    if streams.json is not None:
        streams.json.write(
            result_record(session=None, code=codes.CONFIG, stop_reason=None, error=("config", problem))
        )
    return codes.CONFIG


async def _drive(
    settings: Settings,
    streams: Streams,
    task: str,
    session_id: str,
    llm: LlmEndpoint,
    *,
    started: float,
    stop: StopFlag,
) -> int:
    console = streams.progress
    tally = Metrics()  # this run's: the actions the user declined, the tokens
    printer = EventPrinter(console, limit=settings.max_tool_steps)

    def finish(
        code: int,
        reason: str | None,
        outcome: TurnOutcome | None = None,
        *,
        error: tuple[ErrorKind, str] | None = None,
    ) -> int:
        if streams.json is not None:
            reasons = doubts(outcome) if outcome is not None else None
            answered = outcome is not None and outcome.interrupt is None and reason == "answered"
            streams.json.write(
                result_record(
                    session=session_id,
                    code=code,
                    stop_reason=reason,
                    answer=outcome.text if outcome is not None else "",
                    verified=answered and reasons is None,
                    doubts=reasons,
                    declined=tally.session.declined,
                    steps=int(outcome.values.get("tool_steps", 0) or 0) if outcome is not None else 0,
                    tokens=(tally.session.prompt_tokens, tally.session.completion_tokens),
                    seconds=time.monotonic() - started,
                    error=error,
                )
            )
        return code

    def notice(text: str) -> None:
        console.print(f"[notice]{escape(text)}[/notice]")

    try:
        async with (
            BrowserSession(settings, notice=notice) as browser,
            open_checkpointer(settings) as saver,
            open_memory(settings) as memory,
            ExtraServers.from_settings(settings, notice=notice, builtin=builtin_specs) as extras,
        ):
            sinks: list[EventSink] = [
                printer,
                tally,
                StepEventLog(settings.logs_dir / "steps.jsonl", session_id),
            ]
            if streams.json is not None:
                sinks.append(streams.json)
            model = build_chat_model(settings, llm)
            context = make_context(
                settings, llm=model, browser=browser, events=fan_out(*sinks), memory=memory, extras=extras
            )
            runner = AgentRunner(compile_graph(saver), context, session_id=session_id)
            printer.start(started)
            try:
                stop.in_turn = True
                try:
                    outcome = await _conversation(streams, printer, runner, task, session_id)
                finally:
                    stop.in_turn = False
                if stop.requested:  # a signal came, and its cancellation was lost on the way
                    raise asyncio.CancelledError
            except asyncio.CancelledError:
                how = "Terminated by a signal" if stop.terminated else "Interrupted (Ctrl+C)"
                code = codes.TERMINATED if stop.terminated else codes.INTERRUPTED
                console.print(
                    f"\n[warn]{how}:[/warn] the run stopped; the browser and session {session_id} are kept. "
                    f"To continue: {escape(continue_hint(session_id, 'cancelled') or '')}"
                )
                finish(code, "cancelled")
                raise
            except SessionBusy as exc:
                console.print(f"[error]{escape(str(exc))}[/error]")
                return finish(codes.BUSY, None, error=("busy", str(exc)))
            await remember_session(settings, session_id, goal=outcome.values.get("current_goal") or None)
    except (BrowserError, McpError) as exc:
        finish(codes.BROWSER, "error", error=("browser", str(exc)))
        raise  # the CLI says it, with the fix and the log's path
    except CopilotError as exc:
        finish(codes.FAILED, "error", error=("other", str(exc)))
        raise
    code = exit_code(outcome, tally)
    _show_end(streams, outcome, code, tally, session_id, seconds=time.monotonic() - started)
    error: tuple[ErrorKind, str] | None = None
    if code == codes.MODEL:
        error = ("model", str((outcome.values.get("last_error") or {}).get("message", "")))
    return finish(code, outcome.stop_reason, outcome, error=error)


async def _conversation(
    streams: Streams, printer: EventPrinter, runner: AgentRunner, task: str, session_id: str
) -> TurnOutcome:
    """The task, then an answer from stdin for each question, until the run ends or stdin does."""
    console = streams.progress

    async def send(text: str) -> TurnOutcome:
        # In a terminal the answer streams in a live region; elsewhere the final text comes at the end.
        with printer.live() if console.is_terminal else contextlib.nullcontext():
            return await runner.send(text)

    outcome = await send(task)
    while outcome.interrupt is not None:
        render_outcome(console, outcome)
        if streams.json is not None:
            streams.json.question(outcome.interrupt)
        console.print("[prompt]answer › [/prompt]", end="")
        answer = await read_line(streams.stdin)
        if not answer:
            console.print(
                "\n[warn]No answer on stdin: stopping while the agent waits.[/warn] "
                f"Resume with --session {session_id}: "
                f"{escape(continue_hint(session_id, outcome.stop_reason) or '')}"
            )
            return outcome
        outcome = await send(answer.strip())
    return outcome


def _show_end(
    streams: Streams, outcome: TurnOutcome, code: int, tally: Metrics, session_id: str, *, seconds: float
) -> None:
    """The outcome for people (the whole of it on the progress console in a terminal or with --json;
    otherwise the final text on stdout and the rest on stderr), then the session and how to go on."""
    console = streams.progress
    if outcome.interrupt is None:
        if streams.answer is None:
            render_outcome(console, outcome, seconds=seconds)
        else:
            if outcome.stop_reason != "answered":
                label = STOP_LABELS.get(outcome.stop_reason, outcome.stop_reason)
                console.print(f"[warn]({escape(label)})[/warn]")
            reasons = doubts(outcome)
            if reasons is not None:
                console.print(
                    "[unverified]Unverified:[/unverified] [warn]the app's checks doubt this answer[/warn]"
                )
                for reason in reasons:
                    console.print(f"[warn]  - {escape(reason)}[/warn]")
            steps = int(outcome.values.get("tool_steps", 0) or 0)
            console.print(f"[muted]{steps} step{'' if steps == 1 else 's'}, {seconds:.1f}s[/muted]")
    if streams.answer is not None:
        with contextlib.suppress(OSError, ValueError):
            streams.answer.write((outcome.text or "").rstrip("\n") + "\n")
            streams.answer.flush()
    for what in tally.session.declined:
        console.print(f"[warn]You declined: {escape(what)}. It did not happen.[/warn]")
    hint = continue_hint(session_id, outcome.stop_reason)
    if hint is None or outcome.interrupt is not None:
        console.print(f"[muted]Session {session_id} (exit {code}: {codes.MEANINGS.get(code, '')})[/muted]")
    else:
        console.print(
            f"[muted]Session {session_id} is kept (exit {code}). To continue:[/muted] {escape(hint)}"
        )
