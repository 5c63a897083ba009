"""Per-session metrics (F58), kept by listening to the event stream: requests and their outcomes, steps,
LLM tokens, time per step, errors by type, loop triggers. `/status` and the log show them."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field

from browser_copilot.events import Event


@dataclass
class RequestMetrics:
    steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    started: float = 0.0


@dataclass
class Metrics:
    requests: int = 0
    answered: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    step_seconds: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    loop_triggers: int = 0
    current: RequestMetrics = field(default_factory=RequestMetrics)
    _last_step_at: float | None = None

    def __call__(self, event: Event) -> None:
        data = event.data
        if event.kind == "status" and data.get("state") == "running" and not data.get("resumed"):
            self.current = RequestMetrics(started=event.at)
            self._last_step_at = event.at
        elif event.kind == "tool_call":
            self.steps += 1
            self.current.steps += 1
            if self._last_step_at is not None:
                self.step_seconds.append(event.at - self._last_step_at)
            self._last_step_at = event.at
        elif event.kind == "usage":
            for total, part in (
                ("prompt_tokens", "prompt_tokens"),
                ("completion_tokens", "completion_tokens"),
            ):
                amount = int(data.get(part, 0))
                setattr(self, total, getattr(self, total) + amount)
                setattr(self.current, total, getattr(self.current, total) + amount)
        elif event.kind == "error":
            self.errors[str(data.get("kind", "other"))] += 1
        elif event.kind == "tool_result" and not data.get("ok", True):
            self.errors["tool"] += 1
        elif event.kind == "notice" and "loop_triggers" in data:
            self.loop_triggers += 1
        elif event.kind == "final":
            self.requests += 1
            reason = str(data.get("stop_reason"))
            self.outcomes[reason] += 1
            self.answered += reason == "answered"

    @property
    def success_rate(self) -> float | None:
        return self.answered / self.requests if self.requests else None

    @property
    def median_step_seconds(self) -> float | None:
        return statistics.median(self.step_seconds) if self.step_seconds else None

    def summary(self) -> dict[str, object]:
        return {
            "requests": self.requests,
            "success_rate": self.success_rate,
            "outcomes": dict(self.outcomes),
            "steps": self.steps,
            "steps_per_request": self.steps / self.requests if self.requests else None,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "median_step_seconds": self.median_step_seconds,
            "errors": dict(self.errors),
            "loop_triggers": self.loop_triggers,
        }
