"""`observe`: the framework (not the model) looks at the page with its own extractor (F20, F21).

After an action it also enforces the URL policy (F46: redirects included), hands a captcha over to the
user (F43), notes new tabs, and counts actions that left the page unchanged (F26)."""

from __future__ import annotations

import json
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.conversation import feedback, to_state
from browser_copilot.agent.figures import remembered
from browser_copilot.agent.state import AgentState, ObservationState, PendingAction, waiting_in
from browser_copilot.browser.observation import Observation
from browser_copilot.browser.observing import observe as run_extractor
from browser_copilot.errors import BrowserError, McpError
from browser_copilot.events import Event
from browser_copilot.sandbox.urls import refusal_note

Next = Literal["agent", "strategy_adapter", "progress_reporter", "human_in_loop"]
_LEAVE = """async (page) => {
  const bad = %s;
  await page.goBack({ timeout: 10000 }).catch(() => null);
  if (bad.includes(page.url()) || !/^(https?:|about:blank)/.test(page.url())) await page.goto('about:blank');
  return page.url();
}"""


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


def change_summary(previous: ObservationState, current: ObservationState) -> str:
    """One line on what the last action changed: URL or title, a dialog opened or closed, the element
    count, error texts that appeared next to fields — or that nothing changed."""
    parts: list[str] = []
    if previous["url"] != current["url"]:
        parts.append(f"the tab is now at {current['url']}")
    elif previous["title"] != current["title"]:
        parts.append(f"the title is now «{current['title']}»")
    before, after = previous.get("modal"), current.get("modal")
    if after and after != before:
        parts.append(f"a dialog opened: «{after}»")
    if before and before != after:
        parts.append(f"the dialog «{before}» closed")
    if current["dialog"] and not previous["dialog"]:
        parts.append(f"the page asks: «{current['dialog']['message'][:120]}»")
    count_before, count_after = len(previous["elements"]), len(current["elements"])
    if count_before != count_after:
        parts.append(f"{count_after} elements instead of {count_before}")
    seen = set(previous.get("errors") or [])
    errors = [e for e in current.get("errors") or [] if e not in seen]
    if errors:
        parts.append("new error text: " + "; ".join(f"«{e[:100]}»" for e in errors[:3]))
    if not parts:
        if previous["fingerprint"] == current["fingerprint"]:
            return "After your action: nothing on the page changed."
        parts.append("the page's content changed (same URL, same elements)")
    return "After your action: " + "; ".join(parts) + "."


async def _enforce_urls(ctx: AgentContext, observation: Observation) -> tuple[Observation, str | None]:
    problem = ctx.url_policy.problem(observation.url)
    if problem is None:
        return observation, None
    left = observation.url
    await ctx.browser.run_code(_LEAVE % json.dumps([left]), timeout=30)
    ctx.events(Event("policy_result", {"approved": False, "refused": f"left {left}: {problem}"}))
    again = await run_extractor(ctx.browser, screenshot=ctx.vision, settle=True)
    return again, f"The tab went to {left}, which is not allowed ({problem}); the app took it back."


async def observe(state: AgentState, runtime: Runtime[AgentContext]) -> Command[Next]:
    ctx = runtime.context
    actions = state.get("actions") or []
    try:
        observation = await run_extractor(
            ctx.browser, screenshot=ctx.vision, settle=bool(actions) and actions[-1]["acting"]
        )
        observation, refused = await _enforce_urls(ctx, observation)
    except (BrowserError, McpError) as exc:
        ctx.events(Event("error", {"kind": "browser", "message": str(exc)}))
        return Command(
            update={"stop_reason": "error", "last_error": {"kind": "browser", "message": str(exc)}},
            goto="progress_reporter",
        )
    current = to_state(observation)
    previous = state.get("observation")
    if previous is not None and actions and actions[-1]["acting"]:
        current["text"] = f"{change_summary(previous, current)}\n{current['text']}"
    opened = new_tabs(previous, current)
    if opened:
        listed = "; ".join(f'{t[0]} "{t[3]}" {t[2]}' for t in opened)
        current["text"] = (
            f"New tab since your last action: {listed} (switch_tab to work in it).\n{current['text']}"
        )
        ctx.events(Event("notice", {"text": f"new tab: {listed}"}))
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
    update: dict[str, Any] = {
        "observation": current,
        "observation_stale": False,
        **remembered(state, current),  # seen_numbers, session_figures: evidence for quality_evaluator
    }
    # What the network policy refused after the code's result was written (a navigation the code set
    # off as it returned pauses a moment later): the model reads it with the page.
    late = refusal_note(ctx.browser.refusals())
    if refused or late:
        update["messages"] = [feedback(f"{refused or ''}{late}".strip())]
    handed = list(state.get("handed_over") or [])
    if observation.captcha and observation.url not in handed:
        pending: PendingAction = {
            "id": "",
            "type": "manual",
            "tool": "captcha",
            "args": {},
            "question": f"{observation.title or observation.url} shows a captcha. Please "
            "solve it in the browser tab, then tell me when you are done.",
        }
        ctx.events(Event("notice", {"text": "captcha: handing over to the user"}))
        return Command(
            update={
                **update,
                "handed_over": [*handed, observation.url][-20:],
                "pending_action": waiting_in(pending, ctx.browser.agent_target),
                "pending_kind": "manual",
            },
            goto="human_in_loop",
        )
    acted = bool(actions) and actions[-1]["acting"] and actions[-1]["ok"]
    if acted and previous is not None and previous["fingerprint"] == current["fingerprint"]:
        unchanged = state.get("unchanged", 0) + 1
        update["unchanged"] = unchanged
        if unchanged >= ctx.limits.unchanged_limit:
            return Command(update=update, goto="strategy_adapter")
    elif acted:
        update["unchanged"] = 0
    return Command(update=update, goto="agent")
