"""`goal_validator`: before an answer goes out, check it against the evidence, not the model's claim
(F28): success claimed right after a failed action sends the model back once. The answer closes the
plan items it leaves open (it is the report on them): no extra round trip to mark them."""

from __future__ import annotations

import re
from typing import Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.conversation import feedback, last_ai
from browser_copilot.agent.state import AgentState

Next = Literal["quality_evaluator", "agent"]

_CLAIMS_SUCCESS = re.compile(
    r"\b(done|completed|finished|succeeded|successfully|submitted|sent|placed|booked|saved)\b|"
    r"готово|выполнен|отправлен|оформлен|сделано",
    re.IGNORECASE,
)
_ADMITS_FAILURE = re.compile(
    r"\b(could ?n[o']t|can ?n[o']t|unable|failed|did not|didn't|not able|blocked|stopped)\b|"
    r"не удалось|не получилось|не смог|ошибк",
    re.IGNORECASE,
)


def missing_evidence(state: AgentState, answer: str) -> str | None:
    """What the answer lacks, or None when the evidence supports it."""
    if not answer.strip():
        return "Your answer is empty. Tell the user what you did and what you found."
    actions = state.get("actions") or []
    last_acting = next((a for a in reversed(actions) if a["acting"]), None)
    if (
        last_acting
        and not last_acting["ok"]
        and _CLAIMS_SUCCESS.search(answer)
        and not _ADMITS_FAILURE.search(answer)
    ):
        return (
            f"Your answer reports success, but the last action ({last_acting['target'][:80]}) failed. "
            "Check the page and either finish it or tell the user it did not work."
        )
    return None


def closed_by(state: AgentState, answer: str) -> dict[str, object]:
    """The progress update an answer implies: open plan items are done, unless it admits a failure
    (then they stay open and the summary shows them)."""
    plan = state.get("plan") or []
    progress = state.get("progress") or {"current": 1, "done": [], "blocked": []}
    if not plan or _ADMITS_FAILURE.search(answer):
        return {}
    settled = set(progress["done"]) | set(progress["blocked"])
    done = sorted({*progress["done"], *(i for i in range(1, len(plan)) if i not in settled)})
    return {"progress": {**progress, "done": done}}


async def goal_validator(state: AgentState, runtime: Runtime[AgentContext]) -> Command[Next]:
    del runtime
    message = last_ai(state)
    answer = str(message.content) if message is not None else ""
    checks = dict(state.get("checks") or {})
    problem = missing_evidence(state, answer)
    if problem is None or checks.get("goal", 0) >= 1:
        return Command(update=closed_by(state, answer), goto="quality_evaluator")
    checks["goal"] = checks.get("goal", 0) + 1
    return Command(update={"messages": [feedback(problem)], "checks": checks}, goto="agent")
