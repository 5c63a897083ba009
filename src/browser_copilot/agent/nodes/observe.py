"""`observe`: the framework (not the model) looks at the page with its own extractor (F20, F21)."""

from __future__ import annotations

import re
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.conversation import to_state
from browser_copilot.agent.state import AgentState, ObservationState
from browser_copilot.browser.observation import observe as run_extractor
from browser_copilot.errors import BrowserError, McpError
from browser_copilot.events import Event

Next = Literal["agent", "strategy_adapter", "progress_reporter"]
_FIGURE = re.compile(r"\d[\d ,.]*\d|\d")


def new_tabs(previous: ObservationState | None, current: ObservationState) -> list[list[Any]]:
    """Tabs in `current` that were not open at the previous observation (popups, target=_blank)."""
    if previous is None:
        return []
    before = [str(t[2]) for t in previous["tabs"]]
    opened = []
    for tab in current["tabs"]:
        if tab[1]:
            continue
        if str(tab[2]) in before:
            before.remove(str(tab[2]))
        else:
            opened.append(tab)
    return opened if len(current["tabs"]) > len(previous["tabs"]) else []


async def observe(state: AgentState, runtime: Runtime[AgentContext]) -> Command[Next]:
    ctx = runtime.context
    try:
        actions = state.get("actions") or []
        settle = bool(actions) and actions[-1]["acting"]
        observation = await run_extractor(ctx.browser, screenshot=ctx.vision, settle=settle)
    except (BrowserError, McpError) as exc:
        ctx.events(Event("error", {"kind": "browser", "message": str(exc)}))
        return Command(
            update={"stop_reason": "error", "last_error": {"kind": "browser", "message": str(exc)}},
            goto="progress_reporter",
        )
    current = to_state(observation)
    ctx.events(
        Event(
            "observation",
            {
                "url": observation.url,
                "title": observation.title,
                "elements": len(observation.elements),
                "chars": len(current["text"]),
                "ms": round(observation.extract_ms, 1),
                "dialog": current["dialog"],
            },
        )
    )
    previous = state.get("observation")
    opened = new_tabs(previous, current)
    if opened:
        listed = "; ".join(f'{t[0]} "{t[3]}" {t[2]}' for t in opened)
        current["text"] = (
            f"New tab since your last action: {listed} (switch_tab to work in it).\n{current['text']}"
        )
        ctx.events(Event("notice", {"text": f"new tab: {listed}"}))
    seen = list(state.get("seen_numbers") or [])
    seen.extend(_FIGURE.findall(current["text"]))
    update: dict[str, object] = {
        "observation": current,
        "observation_stale": False,
        "seen_numbers": list(dict.fromkeys(seen))[-400:],
    }
    actions = state.get("actions") or []
    acted = bool(actions) and actions[-1]["acting"] and actions[-1]["ok"]
    if acted and previous is not None and previous["fingerprint"] == current["fingerprint"]:
        unchanged = state.get("unchanged", 0) + 1
        update["unchanged"] = unchanged
        if unchanged >= ctx.limits.unchanged_limit:
            return Command(update=update, goto="strategy_adapter")
    elif acted:
        update["unchanged"] = 0
    return Command(update=update, goto="agent")
