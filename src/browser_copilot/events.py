"""One typed event stream (F55): the agent emits, the CLI, the log and the server consume.

Nodes never print; they call `emit(Event(...))` on the sink they were given. Sinks must be cheap and
must not raise (a UI failure must not break a run).

Every event but `usage` and `answer_stream` reaches the sinks with `summary` in its data: one short
sentence for a person ("Clicked “Place order”"), added at the source by `plain_steps.narrate` (the
`AgentContext` wraps its sink with it), so the terminal, the logs, the SSE stream and the web page say
the same thing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

EventKind = Literal[
    "status",  # data: state = running | idle | waiting_user | error
    "node",  # data: node (just finished); summary: what the agent does now ("checking the action")
    "observation",  # data: url, title, elements, tokens (approx), ms
    "tool_call",  # data: tool, args, step, counted, targets (el(N) -> role, name); summary: "Clicking …"
    # tool_result: tool, ok, result (the result text, one line), outcome (done|failed|held|refused|unsure)
    "tool_result",
    "policy_request",  # data: card (what, site, values, reason, category)
    "policy_result",  # data: approved + card | refused | judge, destructive, reason, what; outcome
    "plan",  # data: goal, plan, progress
    "progress",  # data: done, total, steps
    "error",  # data: kind, message
    "usage",  # data: prompt_tokens, completion_tokens
    "final",  # data: stop_reason, text, steps, verified, doubts
    "answer_stream",  # data: call, text (so far), done, tool_calls (when done)
    "notice",  # data: text
]


@dataclass(frozen=True, slots=True)
class Event:
    kind: EventKind
    data: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.time)


EventSink = Callable[[Event], None]


def discard(event: Event) -> None:
    """A sink that drops everything (the default)."""
    del event


class EventLog:
    """A sink that keeps events in memory (tests, `/status`)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]

    def of(self, kind: EventKind) -> list[Event]:
        return [e for e in self.events if e.kind == kind]


def fan_out(*sinks: EventSink) -> EventSink:
    """One sink that forwards to several."""

    def sink(event: Event) -> None:
        for each in sinks:
            each(event)

    return sink
