"""`self_corrector`: after a stale element, timeout or navigation error, look again and tell the model
what changed (F27), so that it retries with the new numbers instead of repeating the old ones."""

from __future__ import annotations

from typing import Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.conversation import feedback, to_state
from browser_copilot.agent.state import AgentState, ObservationState
from browser_copilot.browser.observing import observe
from browser_copilot.errors import BrowserError, McpError
from browser_copilot.events import Event

Next = Literal["agent", "strategy_adapter", "progress_reporter"]

_ADVICE = {
    "stale": "The element you used is gone or was re-rendered: its number no longer exists.",
    "covered": "The element is there, but something lies on top of it and takes the click: close or answer "
    "that first (a banner, a pop-up, a menu), then try again.",
    "timeout": "The action timed out: the element may be hidden, covered, disabled or not there yet.",
    "navigation": "The page navigated or reloaded while the action ran.",
}


def describe_change(before: ObservationState | None, after: ObservationState, target: str) -> str:
    if before is None:
        return "This is the first observation of this page."
    parts = []
    if before["url"] != after["url"]:
        parts.append(f"the URL changed from {before['url']} to {after['url']}")
    else:
        parts.append("the URL is the same")
    parts.append(f"{len(before['elements'])} elements before, {len(after['elements'])} now")
    if before["fingerprint"] == after["fingerprint"]:
        parts.append("the visible page did not change")
    for element in after["elements"]:
        described = f'{element["role"]} "{element["name"]}"'
        if element["name"] and described in target:
            parts.append(f"{described} is now [{element['n']}]")
            break
    else:
        if target:
            parts.append(f"{target[:80]} is not in the current viewport")
    return "; ".join(parts) + "."


async def self_corrector(state: AgentState, runtime: Runtime[AgentContext]) -> Command[Next]:
    ctx = runtime.context
    corrections = state.get("corrections", 0) + 1
    if corrections > ctx.limits.max_corrections:
        return Command(update={"corrections": corrections}, goto="strategy_adapter")
    try:
        fresh = to_state(await observe(ctx.browser, screenshot=ctx.vision, settle=True))
    except (BrowserError, McpError) as exc:
        return Command(
            update={"stop_reason": "error", "last_error": {"kind": "browser", "message": str(exc)}},
            goto="progress_reporter",
        )
    actions = state.get("actions") or []
    last = actions[-1] if actions else None
    kind = last["error_kind"] if last else "stale"
    change = describe_change(state.get("observation"), fresh, last["target"] if last else "")
    note = feedback(
        f"{_ADVICE.get(kind, 'The action failed.')} I looked again: {change} "
        "Use the numbers of the new observation."
    )
    ctx.events(Event("notice", {"text": f"self-correction after a {kind} error"}))
    return Command(
        update={
            "messages": [note],
            "observation": fresh,
            "observation_stale": False,
            "corrections": corrections,
        },
        goto="agent",
    )
