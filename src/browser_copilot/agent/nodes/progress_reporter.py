"""`progress_reporter`: tell the user where things stand (F24, F25).

In the middle of a run it reports progress and hands back to the agent. At the end it writes the
final message for the stop reason: the answer, or an honest summary (done / not done / suggested next
step) and a question whether to continue. A limit or a loop is never reported as success."""

from __future__ import annotations

from typing import Literal

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.conversation import close_calls, last_ai, pending_calls
from browser_copilot.agent.state import AgentState, StopReason
from browser_copilot.events import Event

Next = Literal["agent", "__end__"]

_WHY: dict[StopReason, str] = {
    "step_limit": "I used all {limit} browser actions allowed for one request",
    "loop_detected": "I was going in circles ({detail})",
    "error": "an error stopped me ({detail})",
    "blocked": "I am blocked ({detail})",
    "cancelled": "the run was cancelled",
}


def summary(state: AgentState, reason: StopReason, limit: int) -> str:
    plan = state.get("plan") or []
    progress = state.get("progress") or {"current": 1, "done": [], "blocked": []}
    detail = (state.get("last_error") or {}).get("message", "no details")[:200]
    why = _WHY.get(reason, "I stopped").format(limit=limit, detail=detail)
    done = [plan[i - 1] for i in progress["done"] if 0 < i <= len(plan)]
    open_items = [step for i, step in enumerate(plan[:-1], start=1) if i not in progress["done"]]
    lines = [f"I have not finished: {why}.", ""]
    lines.append("Done: " + ("; ".join(done) if done else "nothing confirmed yet") + ".")
    if open_items:
        lines.append("Not done: " + "; ".join(open_items) + ".")
    facts = state.get("facts") or []
    if facts:
        lines.append("What I found so far: " + "; ".join(f["fact"] for f in facts[-5:]) + ".")
    current = progress["current"]
    next_step = plan[current - 1] if 0 < current <= len(plan) else "look at the page again and continue"
    if reason == "loop_detected":
        next_step = "try another route to the goal, or tell me how to proceed"
    lines.append(f"Suggested next step: {next_step}.")
    lines.append("")
    lines.append(
        "Shall I continue? Reply with any message to go on with the same goal, or tell me what to change."
    )
    return "\n".join(lines)


async def progress_reporter(state: AgentState, runtime: Runtime[AgentContext]) -> Command[Next]:
    ctx = runtime.context
    reason = state.get("stop_reason")
    progress = state.get("progress") or {"current": 1, "done": [], "blocked": []}
    plan = state.get("plan") or []
    if reason is None:
        ctx.events(
            Event(
                "progress",
                {
                    "done": len(progress["done"]),
                    "total": len(plan),
                    "steps": state.get("tool_steps", 0),
                    "limit": ctx.limits.max_tool_steps,
                },
            )
        )
        return Command(goto="agent")
    closing = close_calls(pending_calls(state), f"the run stopped ({reason}).")
    if reason == "answered":
        message = last_ai(state)
        text = str(message.content) if message is not None else ""
        update: dict[str, object] = {"messages": closing}
        if plan:
            update["progress"] = {
                **progress,
                "done": sorted({*progress["done"], len(plan)}),
                "current": len(plan),
            }
    else:
        text = summary(state, reason, ctx.limits.max_tool_steps)
        update = {"messages": [*closing, AIMessage(text)]}
    ctx.events(Event("final", {"stop_reason": reason, "text": text, "steps": state.get("tool_steps", 0)}))
    return Command(update=update, goto="__end__")
