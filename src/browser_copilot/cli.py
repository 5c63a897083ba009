"""Command line: `chat` (default), `doctor`, `observe URL`, `serve`.

Exit codes: 0 success; 1 a check or command failed; 2 bad configuration or usage;
3 the browser or the MCP server could not be used; 130 interrupted (Ctrl+C); 143 SIGTERM.
`run` also exits by its stop reason (`ui.oneshot.EXIT_CODES`): 4 step limit, 5 loop, 6 blocked, 7 waiting
for you, and 8 for an answer the app's checks still doubt (shown marked "Unverified:" with the reasons).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
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
from browser_copilot.ui.theme import make_console

EXIT_FAILED, EXIT_CONFIG, EXIT_BROWSER, EXIT_INTERRUPTED, EXIT_TERMINATED = 1, 2, 3, 130, 143


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="browser-copilot",
        description="An agent that works in your own logged-in Chrome/Edge.",
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
        "observe", help="open URL in the agent's tab and print what the model would see, with its tokens"
    )
    observe.add_argument("url", help="an http(s) URL or about:blank")
    observe.add_argument("--full", action="store_true", help="the whole page, not only the viewport")
    observe.add_argument("--json", action="store_true", help="machine-readable output")
    commands.add_parser("graph", help="print the agent graph as a Mermaid diagram")
    run = commands.add_parser("run", help="do one task and exit (answers to confirmations come from stdin)")
    run.add_argument("task", help="what the agent should do")
    run.add_argument("--session", metavar="ID", help="continue this session")
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


async def _observe(settings: Settings, console: Console, url: str, *, full: bool, as_json: bool) -> int:
    from browser_copilot.agent.conversation import observation_message, to_state
    from browser_copilot.browser.observation import observe
    from browser_copilot.browser.session import BrowserSession
    from browser_copilot.llm.tokens import count_tokens

    err = make_console(sys.stderr)
    async with BrowserSession(
        settings, notice=lambda text: err.print(f"[notice]{escape(text)}[/notice]")
    ) as browser:
        page = await browser.goto(url)
        observation = await observe(browser, full=full)
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


def _run(coro: Coroutine[Any, Any, int]) -> int:
    """Run the command; SIGTERM and SIGHUP cancel it so every `async with` cleans up (a browser the
    app launched is closed, the MCP server stopped)."""

    async def guarded() -> int:
        task = asyncio.current_task()
        assert task is not None
        terminated = False

        def on_term() -> None:
            nonlocal terminated
            terminated = True
            task.cancel()

        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError, AttributeError):  # Windows has none
            loop.add_signal_handler(signal.SIGTERM, on_term)
            loop.add_signal_handler(signal.SIGHUP, on_term)  # the terminal was closed
        try:
            return await coro
        except asyncio.CancelledError:
            # SIGTERM, or Ctrl+C at the chat prompt: every `async with` has cleaned up by now.
            return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED

    try:
        return asyncio.run(guarded())
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "policy-check" and not args.judge:  # needs no settings, browser or model
        return _policy_check()
    console = make_console()
    err = make_console(sys.stderr)
    try:
        settings = load_settings(args.env_file)
    except ConfigError as exc:
        err.print("[error]Configuration error[/error] (fix these in .env or the environment):")
        for problem in exc.problems:
            err.print(f"  - {escape(problem)}")
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
        if command == "run":
            from browser_copilot.ui.oneshot import run_once

            return _run(run_once(settings, console, args.task, session=args.session))
        if command == "serve":
            from browser_copilot.server.app import serve

            return _run(serve(settings, host=args.host, port=args.port, allow_remote=args.allow_remote))
        if command == "graph":
            from browser_copilot.agent.graph import mermaid

            console.print(mermaid(), markup=False, highlight=False)
            return 0
        from browser_copilot.ui.chat import run_chat

        return _run(
            run_chat(settings, console, env_file=args.env_file, session=getattr(args, "session", None))
        )
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
