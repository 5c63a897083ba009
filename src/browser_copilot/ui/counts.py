"""What a run counted (issue 27): its steps, its model calls, their tokens, the actions the user allowed
and declined. One event sink keeps them; the end-of-run line and `/status` both read it, so the two
never disagree.

A run is a request and the answers to its cards: it starts with the `status` event of a new request
(`resumed` false) and goes on through each `/yes`, `/no` or answer. Steps are the agent's own count
(the `step` of a counted `tool_call`, then the `steps` of `progress` and `final`, which carry the
state's `tool_steps`), so they are also what `run --json` and the step lines number."""

from __future__ import annotations

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
class Counts:
    """An event sink: the current (or last) run's counts, and the session's (every run this process
    saw of it, the current one included)."""

    run: RunCount = field(default_factory=RunCount)
    runs: int = 0
    _before: RunCount = field(default_factory=RunCount)
    """The runs before the current one, added up."""

    @property
    def session(self) -> RunCount:
        return self._before.plus(self.run)

    def __call__(self, event: Event) -> None:
        data, kind = event.data, event.kind
        if kind == "status" and data.get("state") == "running":
            if not data.get("resumed"):
                self._before, self.run = self.session, RunCount()
                self.runs += 1
            elif not self.runs:  # the first run seen waited for an answer (a session resumed at a card)
                self.runs = 1
        elif kind == "tool_call" and data.get("counted", True) and isinstance(data.get("step"), int):
            self.run.steps = data["step"]
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
