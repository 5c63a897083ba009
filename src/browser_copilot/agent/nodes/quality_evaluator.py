"""`quality_evaluator`: check the draft answer against what was gathered (F28). Cheap first: figures
in the answer (prices, counts, dates) must appear in the evidence: facts, tool results, observations
of this request, or the user's words. Unsupported figures send the model back once."""

from __future__ import annotations

import re
from typing import Literal

from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.conversation import current_request, feedback, last_ai
from browser_copilot.agent.state import AgentState

Next = Literal["progress_reporter", "agent"]

_NUMBER = re.compile(
    r"(?<![\w.])\d{1,3}(?:[ ,.]\d{3})+(?:[.,]\d+)?(?![\w])|(?<![\w.])\d+(?:[.,]\d+)?(?![\w])"
)


def numbers_in(text: str) -> set[float]:
    """Numeric values in `text`, with 1,234.50 / 1 234,50 / 12.00 normalised."""
    found: set[float] = set()
    for token in _NUMBER.findall(text):
        clean = token.replace(" ", "")
        if re.search(r"[.,]\d{3}", clean) and not re.search(r"[.,]\d{1,2}$", clean):
            clean = clean.replace(",", "").replace(".", "")
        else:
            clean = clean.replace(",", ".")
            if clean.count(".") > 1:
                head, _, tail = clean.rpartition(".")
                clean = head.replace(".", "") + "." + tail
        try:
            found.add(float(clean))
        except ValueError:
            continue
    return found


def unsupported_figures(state: AgentState, answer: str) -> list[float]:
    figures = {n for n in numbers_in(answer) if n > 12}
    if not figures:
        return []
    evidence = [f["fact"] for f in state.get("facts") or []]
    for message in current_request(state):
        if isinstance(message, (ToolMessage, HumanMessage)):
            evidence.append(str(message.content))
    observation = state.get("observation")
    if observation is not None:
        evidence.append(observation["text"])
    evidence.extend(state.get("seen_numbers") or [])
    known = numbers_in("\n".join(evidence))
    return sorted(n for n in figures if n not in known)


async def quality_evaluator(state: AgentState, runtime: Runtime[AgentContext]) -> Command[Next]:
    del runtime
    message = last_ai(state)
    answer = str(message.content) if message is not None else ""
    checks = dict(state.get("checks") or {})
    missing = unsupported_figures(state, answer)
    if missing and checks.get("quality", 0) < 1 and state.get("tool_steps", 0) > 0:
        checks["quality"] = checks.get("quality", 0) + 1
        shown = ", ".join(f"{n:g}" for n in missing[:6])
        note = feedback(
            f"These figures in your answer do not appear in anything observed or returned in this "
            f"request: {shown}. Check them on the page, or correct the answer."
        )
        return Command(update={"messages": [note], "checks": checks}, goto="agent")
    return Command(update={"stop_reason": "answered"}, goto="progress_reporter")
