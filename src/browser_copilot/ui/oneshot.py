"""`main.py run "TASK"`: one task from a script. Same progress output as the chat; answers to
confirmations and hand-overs are read from stdin when asked; the exit code tells the stop reason, and an
answer the app's checks still doubt exits with its own code (`EXIT_UNVERIFIED`), never as a success."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time

from rich.console import Console
from rich.markup import escape

from browser_copilot.agent.factory import make_context
from browser_copilot.agent.memory import open_memory
from browser_copilot.agent.runner import AgentRunner, TurnOutcome, compile_graph, new_session_id
from browser_copilot.agent.storage import open_checkpointer, remember_session
from browser_copilot.browser.session import BrowserSession
from browser_copilot.config import Settings
from browser_copilot.events import fan_out
from browser_copilot.extras.servers import ExtraServers
from browser_copilot.llm.provider import HOW_TO_CONFIGURE, build_chat_model, resolve_llm
from browser_copilot.logs import StepEventLog
from browser_copilot.ui.render import EventPrinter, doubts, render_outcome

EXIT_CODES = {
    "answered": 0,
    "error": 1,
    "step_limit": 4,
    "loop_detected": 5,
    "blocked": 6,
    "waiting_confirmation": 7,
    "waiting_user": 7,
    "cancelled": 130,
}
EXIT_UNVERIFIED = 8
"""An answer that reached the user marked unverified (`verified: false`, with its `doubts`)."""


async def run_once(settings: Settings, console: Console, task: str, *, session: str | None) -> int:
    llm = await asyncio.to_thread(resolve_llm, settings)
    if llm is None:
        console.print(f"[error]No model.[/error] {escape(HOW_TO_CONFIGURE)}")
        return 2
    session_id = session or new_session_id()
    await remember_session(settings, session_id)
    printer = EventPrinter(console, limit=settings.max_tool_steps)
    async with (
        BrowserSession(settings, notice=lambda t: console.print(f"[notice]{escape(t)}[/notice]")) as browser,
        open_checkpointer(settings) as saver,
        open_memory(settings) as memory,
        ExtraServers.from_settings(
            settings, notice=lambda t: console.print(f"[notice]{escape(t)}[/notice]")
        ) as extras,
    ):
        events = fan_out(printer, StepEventLog(settings.logs_dir / "steps.jsonl", session_id))
        model = build_chat_model(settings, llm)
        context = make_context(
            settings, llm=model, browser=browser, events=events, memory=memory, extras=extras
        )
        runner = AgentRunner(compile_graph(saver), context, session_id=session_id)
        started = time.monotonic()
        printer.start(started)

        async def send(text: str) -> TurnOutcome:
            # In a terminal the answer streams in a live region; piped output gets the final text only.
            with printer.live() if console.is_terminal else contextlib.nullcontext():
                return await runner.send(text)

        outcome = await send(task)
        while outcome.interrupt is not None:
            render_outcome(console, outcome)
            console.print("[prompt]answer › [/prompt]", end="")
            answer = await asyncio.to_thread(sys.stdin.readline)
            if not answer:
                console.print(
                    "\n[warn]No answer on stdin: stopping while the agent waits.[/warn] "
                    f"Resume with --session {session_id}."
                )
                return EXIT_CODES[outcome.stop_reason]
            outcome = await send(answer.strip())
        await remember_session(settings, session_id, goal=outcome.values.get("current_goal") or None)
        render_outcome(console, outcome, seconds=time.monotonic() - started)
        if doubts(outcome) is not None:
            return EXIT_UNVERIFIED
        return EXIT_CODES.get(outcome.stop_reason, 1)
