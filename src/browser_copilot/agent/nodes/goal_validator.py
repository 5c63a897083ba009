"""`goal_validator`: before an answer goes out, check it against the evidence, not the model's claim
(F28): an unfinished plan, or success claimed right after a failed action, sends the model back once."""

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
    plan = state.get("plan") or []
    progress = state.get("progress") or {"current": 1, "done": [], "blocked": []}
    settled = set(progress["done"]) | set(progress["blocked"])
    open_items = [i for i in range(1, len(plan)) if i not in settled]
    if open_items and state.get("tool_steps", 0) > 0:
        listed = "; ".join(f"{i}. {plan[i - 1]}" for i in open_items)
        return (
            f"Plan items not marked done or blocked: {listed}. If they are done, mark them with "
            "update_working_state; if not, continue, or say in your answer why they cannot be done."
        )
    return None


async def goal_validator(state: AgentState, runtime: Runtime[AgentContext]) -> Command[Next]:
    del runtime
    message = last_ai(state)
    answer = str(message.content) if message is not None else ""
    checks = dict(state.get("checks") or {})
    problem = missing_evidence(state, answer)
    if problem is None or checks.get("goal", 0) >= 1:
        return Command(goto="quality_evaluator")
    checks["goal"] = checks.get("goal", 0) + 1
    return Command(update={"messages": [feedback(problem)], "checks": checks}, goto="agent")
