"""`quality_evaluator`: check the draft answer against what was gathered (F28). Cheap and deterministic,
no model call: the figures in the answer (prices, counts, dates) must come from the session's evidence
(its pages, tool results, working-state facts, the user's own words, earlier requests included) or follow
from it in one step of arithmetic (`agent.figures`). Unsupported figures send the model back once; if the
answer still has some, it goes on with a doubt for the user (`doubts`, next to goal_validator's)."""

from __future__ import annotations

from typing import Literal

from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.conversation import current_request, feedback, last_ai
from browser_copilot.agent.figures import NEAR_PAGES, NEAR_RESULTS, Evidence, is_count, page_text, said
from browser_copilot.agent.state import AgentState
from browser_copilot.agent.written_figures import Claim, claims, from_keys, read

Next = Literal["progress_reporter", "agent"]


def evidence(state: AgentState) -> Evidence:
    """The session's evidence (`agent.figures`): near sources are the user's words and the tool results
    of this request, the page, the facts and the newest sources the session kept; far sources are the
    earlier messages, the summary, the memories shown, the older kept sources and this request's pages."""
    messages = state.get("messages", [])
    now = current_request(state)
    earlier = messages[: len(messages) - len(now)]
    user = said(m for m in now if isinstance(m, HumanMessage))
    facts = [state.get("current_goal") or "", *(f["fact"] for f in state.get("facts") or [])]
    near_texts = [
        *user,
        *[m.text for m in now if isinstance(m, ToolMessage)][-NEAR_RESULTS:],
        "\n".join(facts),
    ]
    observation = state.get("observation")
    if observation is not None:
        near_texts.append(page_text(observation))
    memories = [f"{n.get('quote', '')}\n{n['fact']}" for n in state.get("memories") or [] if n.get("how")]
    far_texts = [*said(earlier), state.get("summary") or "", *memories]
    session = state.get("session_figures") or []
    near = [read(t) for t in near_texts] + [from_keys(g) for g in session[-NEAR_PAGES:]]
    far = [read(t) for t in far_texts] + [from_keys(g) for g in session[:-NEAR_PAGES]]
    far.append(from_keys(state.get("seen_numbers") or []))
    return Evidence(near, far, counts=[int(f.value) for t in user for f in read(t) if is_count(f)])


def unsupported_figures(state: AgentState, answer: str) -> list[Claim]:
    """The figures of `answer` (above 12) that nothing in the session supports."""
    stated = claims(answer)
    if not any(c.checked for c in stated):
        return []
    return evidence(state).unsupported(stated)


async def quality_evaluator(state: AgentState, runtime: Runtime[AgentContext]) -> Command[Next]:
    del runtime
    message = last_ai(state)
    checks = dict(state.get("checks") or {})
    doubts = list(state.get("doubts") or [])  # goal_validator's, for this answer
    if message is not None and state.get("tool_steps", 0) > 0:
        missing = unsupported_figures(state, message.text)
        if missing:
            shown = ", ".join(dict.fromkeys(c.written for c in missing[:6]))
            if checks.get("quality", 0) >= 1:  # sent back once already: the user is told instead
                doubts.append(f"these figures were not found on any page: {shown}")
                return Command(update={"stop_reason": "answered", "doubts": doubts}, goto="progress_reporter")
            checks["quality"] = checks.get("quality", 0) + 1
            note = feedback(
                f"These figures in your answer do not appear in anything observed or returned in this "
                f"session, nor follow from such figures in one step: {shown}. Check them on the page, or "
                "correct the answer."
            )
            return Command(update={"messages": [note], "checks": checks}, goto="agent")
    return Command(update={"stop_reason": "answered", "doubts": doubts}, goto="progress_reporter")
