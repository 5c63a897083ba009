"""`strategy_adapter`: the agent is stuck (a loop, or a page that does not change): change approach
once; the second time, stop honestly with `loop_detected` (F26, F28)."""

from __future__ import annotations

from typing import Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.conversation import feedback
from browser_copilot.agent.signals import detect_loop
from browser_copilot.agent.state import AgentState
from browser_copilot.events import Event

Next = Literal["agent", "progress_reporter"]


async def strategy_adapter(state: AgentState, runtime: Runtime[AgentContext]) -> Command[Next]:
    ctx = runtime.context
    triggers = state.get("loop_triggers", 0) + 1
    actions = state.get("actions") or []
    repeated = detect_loop(actions, ctx.limits.loop_repeats)
    if repeated is not None:
        what = (
            f"{repeated['tool']} on {repeated['target'][:100]} failed {ctx.limits.loop_repeats} times "
            f"in a row ({repeated['error_kind']} errors)"
        )
    elif state.get("unchanged", 0) >= ctx.limits.unchanged_limit:
        what = f"your last {state.get('unchanged', 0)} actions left the page exactly as it was"
    else:
        what = "the plan has not advanced for several steps"
    ctx.events(Event("notice", {"text": f"stuck: {what}", "loop_triggers": triggers}))
    if triggers >= 2:
        return Command(
            update={
                "loop_triggers": triggers,
                "stop_reason": "loop_detected",
                "last_error": {"kind": "loop", "message": what},
            },
            goto="progress_reporter",
        )
    note = feedback(
        f"You seem to be stuck: {what}. Do not repeat it. Change strategy: use another element or "
        "locator, close whatever covers the page, scroll, search, go back, or navigate directly; update "
        "the plan with update_working_state. If the goal cannot be reached, answer the user and say why."
    )
    return Command(
        update={
            "messages": [note],
            "loop_triggers": triggers,
            "actions": [],
            "unchanged": 0,
            "stuck_counter": 0,
        },
        goto="agent",
    )
