"""The output contract of `main.py run` (and the exit codes of every command): one table, used by
`--help`, the README and `run --json`.

`run --json` writes JSON lines on stdout, each an object with `"v": 1` and a `type` (schema:
`server/schema/run.v1.json`): one `start` (the session, and whether it continues an earlier one), the
agent's `event`s as they happen (redacted like the logs and the server's SSE stream), a `question`
whenever the run waits for an answer on stdin, and one `result` last, whatever happened. Human progress
goes to stderr. This module imports nothing heavy: the CLI uses it before any agent code is loaded.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Literal, TextIO

from browser_copilot.events import Event
from browser_copilot.safety.redaction import redact_data

OK, FAILED, CONFIG, BROWSER = 0, 1, 2, 3
STEP_LIMIT, LOOP, BLOCKED, WAITING, UNVERIFIED, DECLINED, BUSY, MODEL = 4, 5, 6, 7, 8, 9, 10, 11
INTERRUPTED, TERMINATED = 130, 143

MEANINGS: dict[int, str] = {
    OK: "answered, and the app's checks found nothing against the answer",
    FAILED: "the run stopped on an error (or a command failed)",
    CONFIG: "bad configuration or usage: no model set, an invalid setting, nothing to continue",
    BROWSER: "the browser or the MCP server could not be used",
    STEP_LIMIT: "stopped at the step limit (MAX_TOOL_STEPS); continue the session to go on",
    LOOP: "stopped: the agent was going in circles",
    BLOCKED: "blocked (a policy refused the way forward, or the site cannot be used)",
    WAITING: "waiting for you: a confirmation or a question had no answer on stdin",
    UNVERIFIED: "answered, but the app's checks still doubt the answer (shown as Unverified, with reasons)",
    DECLINED: "answered after you declined an action: what you declined did not happen",
    BUSY: "the session is busy: another process is running it now",
    MODEL: "the model failed mid-run (no answer, HTTP error); the message names its URL and the fix",
    INTERRUPTED: "interrupted (Ctrl+C); the session is kept",
    TERMINATED: "terminated (SIGTERM, or the terminal closed); the session is kept",
}

GENERAL: dict[int, str] = {
    OK: "success",
    FAILED: "a check or the command failed",
    CONFIG: "bad configuration or usage (the message names the setting and the fix)",
    BROWSER: "the browser or the MCP server could not be used",
    INTERRUPTED: "interrupted (Ctrl+C)",
    TERMINATED: "terminated (SIGTERM, or the terminal closed)",
}
"""Every command's exit codes; `run` has the whole of `MEANINGS`."""

BY_STOP_REASON: dict[str, int] = {
    "answered": OK,
    "error": FAILED,
    "step_limit": STEP_LIMIT,
    "loop_detected": LOOP,
    "blocked": BLOCKED,
    "waiting_confirmation": WAITING,
    "waiting_user": WAITING,
    "cancelled": INTERRUPTED,
}

RUN_EVENT_KINDS = frozenset(
    {
        "status",
        "observation",
        "tool_call",
        "tool_result",
        "policy_request",
        "policy_result",
        "plan",
        "progress",
        "error",
        "notice",
        "usage",
        "final",
    }
)
"""The event kinds `run --json` streams: every kind but `node` (the graph's inner steps) and
`answer_stream` (the reply as it is written: the `result` carries the whole answer)."""

ErrorKind = Literal["config", "browser", "busy", "model", "other"]


@dataclass
class StopFlag:
    """Set by the CLI's signal handler: the command was asked to stop (`requested`), by SIGTERM/SIGHUP
    (`terminated`) rather than Ctrl+C. `in_turn`: the agent is running (set by `run`), so the handler
    sends its cancellation again until the run has stopped: a library that swallows one cancellation
    (a race in a time-out's clean-up, seen under load) would otherwise let the run go on to its end."""

    terminated: bool = False
    requested: bool = False
    in_turn: bool = False


def exit_codes_help() -> str:
    """The exit code table as `--help` prints it."""
    rows = [f"  {code:>3}  {meaning}" for code, meaning in MEANINGS.items()]
    return "exit codes:\n" + "\n".join(rows)


def continue_hint(session: str, stop_reason: str | None) -> str | None:
    """How to go on with a session that stopped before its end, or None for an answer."""
    if stop_reason in (None, "answered"):
        return None
    if stop_reason == "waiting_confirmation":
        return f'main.py run "/yes" --session {session}  (or "/no")'
    if stop_reason == "waiting_user":
        return f'main.py run "YOUR ANSWER" --session {session}'
    return f'main.py run "continue" --session {session}'


class JsonLines:
    """`run --json`'s stdout: one JSON object per line, flushed at once. Also the event sink that
    streams the agent's events. A closed pipe never stops the run."""

    def __init__(self, out: TextIO, session: str) -> None:
        self.out = out
        self.session = session

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps({"v": 1, **record}, ensure_ascii=False, default=str, separators=(",", ":"))
        try:
            self.out.write(line + "\n")
            self.out.flush()
        except (OSError, ValueError):  # the reader went away (a closed pipe, a closed file)
            return

    def __call__(self, event: Event) -> None:
        if event.kind in RUN_EVENT_KINDS:
            self.write(
                {
                    "type": "event",
                    "kind": event.kind,
                    "session": self.session,
                    "at": event.at,
                    "data": redact_data(event.data),
                }
            )

    def start(self, *, task: str, how: Literal["new", "given", "last"], model: str) -> None:
        self.write(
            {
                "type": "start",
                "session": self.session,
                "task": task,
                "how": how,
                "continued": how == "last",
                "model": model,
                "at": time.time(),
            }
        )

    def question(self, payload: dict[str, Any]) -> None:
        self.write(
            {
                "type": "question",
                "session": self.session,
                "pending_kind": str(payload.get("kind") or "question"),
                "question": str(payload.get("question") or ""),
                "options": [str(o) for o in payload.get("options") or []],
                "card": payload.get("card") or {},
            }
        )


def result_record(
    *,
    session: str | None,
    code: int,
    stop_reason: str | None,
    answer: str = "",
    verified: bool = False,
    doubts: list[str] | None = None,
    declined: list[str] | None = None,
    steps: int = 0,
    tokens: tuple[int, int] = (0, 0),
    seconds: float = 0.0,
    error: tuple[ErrorKind, str] | None = None,
) -> dict[str, Any]:
    """The last line of `run --json`: how the run ended, everything a script needs to go on."""
    prompt, completion = tokens
    return {
        "type": "result",
        "session": session,
        "stop_reason": stop_reason,
        "answer": answer,
        "verified": verified,
        "doubts": doubts or [],
        "declined": declined or [],
        "steps": steps,
        "tokens": {"prompt": prompt, "completion": completion, "total": prompt + completion},
        "seconds": round(seconds, 2),
        "exit_code": code,
        "exit_meaning": MEANINGS.get(code, ""),
        "continue": continue_hint(session, stop_reason) if session else None,
        "error": {"kind": error[0], "message": error[1]} if error else None,
    }
