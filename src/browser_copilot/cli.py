"""Command line: `chat` (default), `run`, `doctor`, `observe URL`, `graph`, `policy-check`, `serve`,
`worker` (takes tasks from the job queue; `run --detach` puts one there).

Exit codes (one table, `ui.run_output.MEANINGS`, printed by `--help`): 0 success; 1 a check or command
failed; 2 bad configuration or usage; 3 the browser or the MCP server could not be used; 130 interrupted
(Ctrl+C); 143 SIGTERM. `run` also exits by how the run ended: 4 step limit, 5 loop, 6 blocked, 7 waiting
for you, 8 an answer the app's checks still doubt, 9 an answer after you declined an action, 10 the
session is busy in another process, 11 the model failed mid-run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import uuid
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from browser_copilot import __version__
from browser_copilot.config import Settings, load_settings
from browser_copilot.errors import (
    BrowserError,
    ConfigError,
    CopilotError,
    McpError,
    NavigationError,
)
from browser_copilot.logs import setup_logging
from browser_copilot.ui import run_output
from browser_copilot.ui.run_output import StopFlag
from browser_copilot.ui.theme import make_console

EXIT_FAILED, EXIT_CONFIG, EXIT_BROWSER = run_output.FAILED, run_output.CONFIG, run_output.BROWSER
EXIT_INTERRUPTED, EXIT_TERMINATED = run_output.INTERRUPTED, run_output.TERMINATED

_RUN_HELP = """Do one task and exit. Answers to confirmations and questions are read from stdin when asked.

Output: in a terminal, progress and answer as in the chat. When stdout is not a terminal, stdout gets
the run's final text alone (the answer, the step-limit summary, or the question it waits on) and the
progress goes to stderr. With --json, stdout gets JSON lines (schema: server/schema/run.v1.json): a
"start", the agent's "event"s, a "question" whenever it waits for stdin, and a "result" last
(stop_reason, answer, verified, doubts, declined, session, steps, tokens, exit_code).

Sessions: without --session a task starts a new session, except "continue" (or "go on", "resume"),
which continues the last session. Every stop that can be continued names the session."""


def build_parser() -> argparse.ArgumentParser:
    general = "\n".join(f"  {code:>3}  {meaning}" for code, meaning in run_output.GENERAL.items())
    parser = argparse.ArgumentParser(
        prog="browser-copilot",
        description="An agent that works in your own logged-in Chrome/Edge.",
        epilog=f"exit codes:\n{general}\n  `run` has more (4-11: how the run ended): see `run --help`.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--env-file",
        type=Path,
        default=Path(".env"),
        help="settings file to read (default: ./.env)",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser("chat", help="interactive terminal chat (the default)")
    commands.add_parser("doctor", help="check browser, MCP server, code tool, LLM and data dir")
    chat = commands.choices["chat"]
    chat.add_argument("--session", metavar="ID", help="resume this session (default: the last one)")
    observe = commands.add_parser(
        "observe",
        help="open URL in a tab of its own (closed afterwards) and print what the model would see, "
        "with its tokens",
    )
    observe.add_argument("url", help="an http(s) URL or about:blank")
    observe.add_argument("--full", action="store_true", help="the whole page, not only the viewport")
    observe.add_argument("--json", action="store_true", help="machine-readable output")
    commands.add_parser("graph", help="print the agent graph as a Mermaid diagram")
    run = commands.add_parser(
        "run",
        help="do one task and exit (answers to confirmations come from stdin; exit code by outcome)",
        description=_RUN_HELP,
        epilog=run_output.exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("task", help='what the agent should do; "continue" goes on with the last session')
    run.add_argument("--session", metavar="ID", help="run in this session (continue it, or answer it)")
    run.add_argument(
        "--json",
        action="store_true",
        help="JSON lines on stdout (events, questions, a final result); progress on stderr",
    )
    run.add_argument(
        "--detach",
        action="store_true",
        help="put the task into the job queue (DATABASE_URL) for a `worker`, print its session and exit",
    )
    commands.add_parser(
        "worker",
        help="take tasks from the job queue (DATABASE_URL) and run them in a browser of its own",
    )
    serve = commands.add_parser(
        "serve", help="the agent behind a local web page, WebSocket chat and SSE events (prints a URL)"
    )
    serve.add_argument("--port", type=int, default=8765, help="TCP port (default: 8765; 0 = any free one)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    serve.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --host other than 127.0.0.1 (anyone reaching it with the token drives your browser)",
    )
    policy = commands.add_parser(
        "policy-check",
        help="classify targets: JSON lines of DOM facts on stdin, one JSON verdict per line on stdout",
    )
    policy.add_argument(
        "--judge",
        action="store_true",
        help="ask the configured model about the ambiguous targets (adds `by`: rules, judge, fail-closed)",
    )
    return parser


def _policy_check() -> int:
    """stdin: one JSON object per line (tag, role, type, name, value, form_action, form_method, context,
    url, and optional signals); stdout: one `{"destructive", "category", "reason"}` per line, in order.
    Rules only, offline."""
    from browser_copilot.safety.classifier import VERDICT_KEYS, ClassifierUnavailable, classify_lines

    try:
        for line in classify_lines(sys.stdin):
            verdict = json.loads(line)
            sys.stdout.write(
                json.dumps({k: verdict[k] for k in VERDICT_KEYS}, ensure_ascii=False, separators=(",", ":"))
                + "\n"
            )
    except ClassifierUnavailable as exc:
        sys.stderr.write(f"policy-check: {exc}\n")
        return EXIT_FAILED
    sys.stdout.flush()
    return 0


async def _policy_judge(settings: Settings) -> int:
    """`policy-check --judge`: the rules, then the configured model on the lines they call ambiguous.
    Each verdict gains `by`: `rules`, `judge`, `cache` or `fail-closed`."""
    from browser_copilot.llm.provider import LlmUnavailable, build_chat_model, resolve_llm
    from browser_copilot.safety.classifier import VERDICT_KEYS, ClassifierUnavailable, classify_lines
    from browser_copilot.safety.judge import Judge

    endpoint = resolve_llm(settings)
    if endpoint is None:
        sys.stderr.write("policy-check --judge: no LLM is configured. Fix: set LLM_BASE_URL, LLM_MODEL.\n")
        return EXIT_CONFIG
    try:
        judge = Judge(build_chat_model(settings, endpoint))
    except LlmUnavailable as exc:
        sys.stderr.write(f"policy-check --judge: {exc}\n")
        return EXIT_CONFIG
    inputs = [line for line in sys.stdin if line.strip()]
    try:
        verdicts = [json.loads(v) for v in await asyncio.to_thread(lambda: list(classify_lines(inputs)))]
    except ClassifierUnavailable as exc:
        sys.stderr.write(f"policy-check: {exc}\n")
        return EXIT_FAILED
    facts: list[dict[str, Any]] = []
    for line in inputs:
        try:
            parsed = json.loads(line)
        except ValueError:
            parsed = {}
        facts.append(parsed if isinstance(parsed, dict) else {})
    asked = [i for i, v in enumerate(verdicts) if v.get("judge")]
    answers = await judge.many((facts[i], verdicts[i]) for i in asked)
    judged = dict(zip(asked, answers, strict=True))
    for i, verdict in enumerate(verdicts):
        out = {k: verdict[k] for k in VERDICT_KEYS}
        out["by"] = "rules"
        if i in judged:
            out = {k: judged[i][k] for k in (*VERDICT_KEYS, "by")}
        sys.stdout.write(json.dumps(out, ensure_ascii=False, separators=(",", ":")) + "\n")
    sys.stdout.flush()
    return 0


_CLOSE_OWN_TAB = """async (page) => {
  const key = %s;
  const tabs = page.context().__bcSessionTabs;
  const tab = tabs && tabs.get(key);
  if (tabs) tabs.delete(key);
  if (tab && !tab.isClosed()) await tab.close();
  return Boolean(tab);
}"""
"""Close the tab `observe` opened (kept under its key by `BrowserSession.session_tab` / `keep_tab`)."""


async def _observe(settings: Settings, console: Console, url: str, *, full: bool, as_json: bool) -> int:
    from browser_copilot.agent.conversation import observation_message, to_state
    from browser_copilot.browser.observing import observe
    from browser_copilot.browser.session import BrowserSession
    from browser_copilot.llm.tokens import count_tokens

    err = make_console(sys.stderr)
    # Never in the user's tab: in a tab of its own, closed afterwards; no other tab is closed.
    own_tab = settings.model_copy(update={"start_in_current_tab": False})
    key = f"observe-{uuid.uuid4().hex[:12]}"
    async with BrowserSession(
        own_tab, notice=lambda text: err.print(f"[notice]{escape(text)}[/notice]")
    ) as browser:
        if browser.created_tab:
            await browser.keep_tab(key)  # the blank tab the session just opened is observe's own
        else:
            await browser.session_tab(key)  # the tab it found was someone's: open a fresh one
        try:
            page = await browser.goto(url)
            observation = await observe(browser, full=full)
        finally:
            await browser.run_code(_CLOSE_OWN_TAB % json.dumps(key), timeout=30, idempotent=True)
    message = observation_message(to_state(observation))
    text = str(message.content)
    (tokens,), exact = await asyncio.to_thread(count_tokens, [text])
    if as_json:
        payload = {
            "url": page["url"],
            "title": page["title"],
            "status": page["status"],
            "tabs": [
                {"index": t.index, "title": t.title, "url": t.url, "current": t.current}
                for t in observation.tabs
            ],
            "elements": len(observation.elements),
            "observation": text,
            "tokens": tokens,
            "tokens_exact": exact,
            "extract_ms": round(observation.extract_ms, 1),
        }
        console.print_json(json.dumps(payload, ensure_ascii=False))
        return 0
    console.print(text, markup=False, highlight=False)
    kind = "o200k tokens" if exact else "tokens (estimated: run `npm ci` for exact counts)"
    err.print(
        f"[muted]{tokens} {kind}, {len(observation.elements)} elements, "
        f"extracted in {observation.extract_ms:.0f} ms[/muted]"
    )
    return 0


async def _detach(settings: Settings, console: Console, task: str, *, session: str | None) -> int:
    """`run --detach`: the task becomes a job for the workers; prints the session and how to follow it."""
    from browser_copilot.agent.secret_answers import withhold_secrets
    from browser_copilot.events import Event
    from browser_copilot.jobs.queue import Job, open_queue, queue_url
    from browser_copilot.ui.session_choice import choose_session

    url = queue_url(settings, what="run --detach")
    session_id, _ = await choose_session(settings, task, session)
    err = make_console(sys.stderr)

    def notice(event: Event) -> None:
        err.print(f"[notice]{escape(str(event.data.get('text', '')))}[/notice]")

    task = withhold_secrets(task, notice)  # never into the job table
    async with open_queue(url, pool_size=1) as queue:
        job_id = await queue.submit(Job(session_id, "start", task))
    err.print(
        f"[muted]Queued as job {job_id}. A worker (`main.py worker`) runs it. Follow it in the web page "
        f"(`main.py serve`, then the link with #{escape(session_id)}), or when it has ended continue it with "
        f"`main.py run --session {escape(session_id)} TASK`.[/muted]"
    )
    console.print(session_id, markup=False, highlight=False)  # stdout: the session id alone
    return 0


CANCEL_AGAIN = 2.0
"""Seconds after a stop signal before the running agent is cancelled again, while it has not stopped."""


def _run(coro: Coroutine[Any, Any, int], stop: StopFlag | None = None) -> int:
    """Run the command; SIGTERM and SIGHUP cancel it so every `async with` cleans up (a browser the
    app launched is closed, the MCP server stopped). `stop` learns that it was a signal, not Ctrl+C."""

    async def guarded() -> int:
        task = asyncio.current_task()
        assert task is not None
        terminated = False
        loop = asyncio.get_running_loop()

        def again() -> None:
            # The run has not stopped: its cancellation was swallowed on the way; send it again.
            if stop is not None and stop.in_turn and not task.done():
                task.cancel()
                loop.call_later(CANCEL_AGAIN, again)

        def on_signal(term: bool) -> None:
            nonlocal terminated
            terminated = terminated or term
            if stop is not None:
                stop.terminated = stop.terminated or term
                stop.requested = True
                loop.call_later(CANCEL_AGAIN, again)
            task.cancel()

        with contextlib.suppress(NotImplementedError, RuntimeError, AttributeError):  # Windows has none
            loop.add_signal_handler(signal.SIGTERM, on_signal, True)
            loop.add_signal_handler(signal.SIGHUP, on_signal, True)  # the terminal was closed
            loop.add_signal_handler(signal.SIGUSR1, _print_tasks)  # where a stuck process waits
            if stop is not None:  # `run`: Ctrl+C the same way (the chat installs its own)
                loop.add_signal_handler(signal.SIGINT, on_signal, False)
        try:
            return await coro
        except asyncio.CancelledError:
            # SIGTERM, or Ctrl+C at the chat prompt: every `async with` has cleaned up by now.
            return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED

    try:
        return asyncio.run(guarded())
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _print_tasks() -> None:
    """`kill -USR1 PID`: every task of the app and where it waits, on stderr (for a report of a hang)."""
    tasks = asyncio.all_tasks()
    lines = [f"--- {len(tasks)} tasks of process {os.getpid()} ---"]
    for task in tasks:
        lines.append(f"{task.get_name()}:")
        awaited: Any = task.get_coro()
        while awaited is not None:  # down the chain of awaits to where it waits
            frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "ag_frame", None)
            if frame is not None:
                lines.append(f"  {frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_name}")
            awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "ag_await", None)
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.flush()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "policy-check" and not args.judge:  # needs no settings, browser or model
        return _policy_check()
    console = make_console()
    err = make_console(sys.stderr)
    as_json = args.command == "run" and args.json
    try:
        settings = load_settings(args.env_file)
    except ConfigError as exc:
        err.print("[error]Configuration error[/error] (fix these in .env or the environment):")
        for problem in exc.problems:
            err.print(f"  - {escape(problem)}")
        if as_json:
            record = run_output.result_record(
                session=None, code=EXIT_CONFIG, stop_reason=None, error=("config", str(exc))
            )
            run_output.JsonLines(sys.stdout, "").write(record)
        return EXIT_CONFIG
    log_file = setup_logging(settings)
    command = args.command or "chat"
    try:
        if command == "policy-check":
            return _run(_policy_judge(settings))
        if command == "doctor":
            from browser_copilot.doctor import run_doctor

            return _run(run_doctor(settings, console, env_file=args.env_file))
        if command == "observe":
            return _run(_observe(settings, console, args.url, full=args.full, as_json=args.json))
        if command == "run" and args.detach:
            return _run(_detach(settings, console, args.task, session=args.session))
        if command == "worker":
            from browser_copilot.jobs.worker import run_worker

            def say(text: str) -> None:
                err.print(f"[notice]{escape(text)}[/notice]")

            return _run(run_worker(settings, notice=say, ready=say))
        if command == "run":
            from browser_copilot.ui.oneshot import run_once

            stop = StopFlag()
            return _run(
                run_once(settings, console, err, args.task, session=args.session, as_json=as_json, stop=stop),
                stop,
            )
        if command == "serve":
            from browser_copilot.server.serve import serve

            return _run(serve(settings, host=args.host, port=args.port, allow_remote=args.allow_remote))
        if command == "graph":
            from browser_copilot.agent.graph import mermaid

            console.print(mermaid(), markup=False, highlight=False)
            return 0
        from browser_copilot.ui.chat import run_chat

        return _run(
            run_chat(settings, console, env_file=args.env_file, session=getattr(args, "session", None))
        )
    except ConfigError as exc:
        err.print("[error]Configuration error[/error] (fix these in .env or the environment):")
        for problem in exc.problems:
            err.print(f"  - {escape(problem)}")
        return EXIT_CONFIG
    except NavigationError as exc:
        err.print(f"[error]Navigation failed:[/error] {escape(str(exc))}")
        return EXIT_FAILED
    except (BrowserError, McpError) as exc:
        err.print(f"[error]Browser unavailable:[/error] {escape(str(exc))}")
        err.print(f"[muted]Run `main.py doctor` for a step-by-step check. Log: {log_file}[/muted]")
        return EXIT_BROWSER
    except CopilotError as exc:
        err.print(f"[error]Error:[/error] {escape(str(exc))}")
        return EXIT_FAILED
