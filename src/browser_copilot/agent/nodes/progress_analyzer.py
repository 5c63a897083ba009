"""`progress_analyzer`: every few tool steps of a multi-step plan, check that the plan advances (F28).

Cheap: it compares finished plan items with the steps spent since the last check; no LLM call. It
nudges only when the same item has made no progress *and* the last actions left the page unchanged."""

from __future__ import annotations

from typing import Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.conversation import feedback
from browser_copilot.agent.state import AgentState

Next = Literal["progress_reporter", "strategy_adapter"]


async def progress_analyzer(state: AgentState, runtime: Runtime[AgentContext]) -> Command[Next]:
    ctx = runtime.context
    steps = state.get("tool_steps", 0)
    progress = state.get("progress") or {"current": 1, "done": [], "blocked": []}
    done = len(progress["done"]) + len(progress["blocked"])
    mark_steps, mark_done = (state.get("progress_mark") or [0, 0])[:2]
    update: dict[str, object] = {"progress_mark": [steps, done]}
    if done > mark_done:
        return Command(update={**update, "stuck_counter": 0}, goto="progress_reporter")
    if state.get("unchanged", 0) < 2:
        # The page keeps changing: work is going on, even if no plan item is marked yet. No nudge.
        return Command(goto="progress_reporter")
    stuck = state.get("stuck_counter", 0) + 1
    update["stuck_counter"] = stuck
    if stuck >= 2:
        return Command(update=update, goto="strategy_adapter")
    plan = state.get("plan") or []
    remaining = ctx.limits.max_tool_steps - steps
    current = plan[progress["current"] - 1] if 0 < progress["current"] <= len(plan) else "the current item"
    update["messages"] = [
        feedback(
            f"{steps - mark_steps} browser actions since the last plan item was finished, and "
            f'{remaining} are left. Is "{current}" still the way forward? Mark progress with '
            "update_working_state, or re-plan."
        )
    ]
    return Command(update=update, goto="progress_reporter")
