"""What a session's runs counted (F58), kept by one event sink: `/status` (terminal and web page), the
end-of-run line, `run --json` and the jobs all read it, so they never disagree.

A run is a request and the answers to its cards: it starts with the `status` event of a new request
(`resumed` false) and goes on through each `/yes`, `/no` or answer. Its steps are the agent's own count
(the `step` of a counted `tool_call`, then the `steps` of `progress` and `final`, which carry the state's
`tool_steps`), so they are also what `run --json` and the step lines number. Beside the counts: the
outcomes of the requests, the time per step, errors by type and loop triggers."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field

from browser_copilot.events import Event
from browser_copilot.plain_steps import plural


@dataclass
class RunCount:
    """The counts of one run (or of several, added up)."""

    steps: int = 0
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    allowed: list[str] = field(default_factory=list)
    """What the user allowed (a card's `what`), in order."""
    declined: list[str] = field(default_factory=list)

    def plus(self, other: RunCount) -> RunCount:
        return RunCount(
            self.steps + other.steps,
            self.model_calls + other.model_calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            [*self.allowed, *other.allowed],
            [*self.declined, *other.declined],
        )

    def describe(self) -> str:
        """'3 steps, 4 model calls, 440 tokens (400 prompt + 40 completion), 1 allowed, none declined'."""
        tokens = self.prompt_tokens + self.completion_tokens
        return (
            f"{plural(self.steps, 'step')}, {plural(self.model_calls, 'model call')}, "
            f"{plural(tokens, 'token')} ({self.prompt_tokens} prompt + {self.completion_tokens} completion), "
            f"{len(self.allowed) or 'none'} allowed, {len(self.declined) or 'none'} declined"
        )

    def end_line(self, seconds: float) -> str:
        """The end-of-run line: '3 steps, 2.1s · 4 model calls, …' (steps and time first)."""
        rest = self.describe().split(", ", 1)[1]
        return f"{plural(self.steps, 'step')}, {seconds:.1f}s · {rest}"


@dataclass
class Metrics:
    """An event sink: the current (or last) run's counts, the session's (every run this process saw of
    it, the current one included), and how its requests went."""

    run: RunCount = field(default_factory=RunCount)
    runs: int = 0
    requests: int = 0
    """Requests that ended (a `final` event)."""
    outcomes: Counter[str] = field(default_factory=Counter)
    step_seconds: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    loop_triggers: int = 0
    _before: RunCount = field(default_factory=RunCount)
    """The runs before the current one, added up."""
    _last_step_at: float | None = None

    @property
    def session(self) -> RunCount:
        return self._before.plus(self.run)

    @property
    def success_rate(self) -> float | None:
        return self.outcomes["answered"] / self.requests if self.requests else None

    @property
    def median_step_seconds(self) -> float | None:
        return statistics.median(self.step_seconds) if self.step_seconds else None

    def __call__(self, event: Event) -> None:
        data, kind = event.data, event.kind
        if kind == "status" and data.get("state") == "running":
            if not data.get("resumed"):
                self._before, self.run = self.session, RunCount()
                self.runs += 1
                self._last_step_at = event.at
            elif not self.runs:  # the first run seen waited for an answer (a session resumed at a card)
                self.runs = 1
        elif kind == "tool_call":
            if data.get("counted", True) and isinstance(data.get("step"), int):
                self.run.steps = data["step"]
            if self._last_step_at is not None:
                self.step_seconds.append(event.at - self._last_step_at)
            self._last_step_at = event.at
        elif kind in ("progress", "final") and isinstance(data.get("steps"), int):
            self.run.steps = data["steps"]
        elif kind == "usage":
            self.run.model_calls += 1
            self.run.prompt_tokens += int(data.get("prompt_tokens") or 0)
            self.run.completion_tokens += int(data.get("completion_tokens") or 0)
        elif kind == "policy_result" and isinstance(data.get("approved"), bool) and "refused" not in data:
            # The user's own answer to a card (a refusal by the policy carries `refused` instead).
            card = data.get("card") or {}
            what = str(card.get("what") or card.get("category") or "an action")
            (self.run.allowed if data["approved"] else self.run.declined).append(what)
        elif kind == "error":
            self.errors[str(data.get("kind", "other"))] += 1
        elif kind == "tool_result" and not data.get("ok", True):
            self.errors["tool"] += 1
        elif kind == "notice" and "loop_triggers" in data:
            self.loop_triggers += 1
        if kind == "final":
            self.requests += 1
            self.outcomes[str(data.get("stop_reason"))] += 1
