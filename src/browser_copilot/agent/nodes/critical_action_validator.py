"""`critical_action_validator`: every tool call passes here before it runs (F40, F43, F45, F24).

The model's code needs no check here: it gets only the façade's API (sandbox/facade.js), and each of its
inputs is judged in the page before it reaches the page (sandbox/guard.js, `agent.code_runs`): a
destructive target not yet allowed, or typing into a password/OTP/card field, stops it and comes back
as a pending action. Dialogs, extra servers' tools and notes about the user are checked here. Over the
step limit, the run stops."""

from __future__ import annotations

import asyncio
from typing import Any, Literal
from urllib.parse import urlsplit

from langchain_core.messages import ToolCall, ToolMessage
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import ValidationError

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.conversation import pending_calls, tool_message
from browser_copilot.agent.extra_calls import check_extra_call
from browser_copilot.agent.memory_tools import memory_check
from browser_copilot.agent.state import AgentState, PendingAction, confirmation, waiting_in
from browser_copilot.agent.tools import BROWSER_TOOLS, switch_tab
from browser_copilot.browser.guarded import types_into
from browser_copilot.events import Event
from browser_copilot.safety.classifier import ClassifierUnavailable, classify_many
from browser_copilot.sandbox.guard import Allow

Next = Literal["tools", "human_in_loop", "progress_reporter", "agent"]

SECRET_REFUSAL = (
    "Refused: the app never types passwords, one-time codes or card numbers. The user has been asked to "
    "enter it in the browser themselves; continue when they say they are done."
)


_EFFECTS = {
    "pay": "pays",
    "order": "places the order",
    "book": "makes the booking",
    "transfer": "sends the money",
    "withdraw": "withdraws the money",
    "donate": "gives the donation",
    "delete": "deletes it for good",
    "send": "sends it",
    "publish": "publishes it",
    "subscribe": "starts the subscription",
    "cancel": "cancels it",
    "accept": "accepts or grants it on your behalf",
    "submit": "submits it",
    "revoke": "revokes or disables it",
}


def what_happens(category: str, facts: dict[str, Any], amount: str | None, count: object) -> str:
    """One line in plain words: what the action does, from the DOM facts read when it was held."""
    bulk = facts.get("bulk")
    if bulk:
        many = ""
        if isinstance(count, int) and count:
            many = f" to {count} selected item{'s' if count != 1 else ''}"
        return f'Applies "{bulk}"{many}.'
    effect = _EFFECTS.get(category, "does something that may not be undone")
    name = facts.get("text") or facts.get("name") or facts.get("value") or "the control"  # what it shows
    doing = {"drop": "Dropping onto", "select": "Choosing"}  # the input the card covers (a click else)
    line = f'{doing.get(str(facts.get("input")), "Clicking")} "{name}" {effect}'
    if amount:
        line += f" ({amount})"
    return line + "."


def card(
    state: AgentState,
    *,
    what: str,
    reason: str,
    category: str,
    values: list[Any],
    amount: str | None,
    code: str = "",
    facts: dict[str, Any] | None = None,
    count: object = None,
    by: str = "rules",
    details: list[Any] | None = None,
) -> dict[str, Any]:
    """The confirmation card: built from DOM facts read when the action was held, not from the model."""
    observation = state.get("observation")
    url = str((facts or {}).get("url") or (observation["url"] if observation else ""))
    return {
        "what": what,
        "site": urlsplit(url).netloc or url,
        "url": url,
        "page": str((facts or {}).get("title") or (observation["title"] if observation else "")),
        "reason": reason,
        "category": category,
        "happens": what_happens(category, facts or {}, amount, count),
        "count": count if isinstance(count, int) and count else None,
        "values": [[str(k), str(v)] for k, v in values],
        # What it commits, read from the page (the order's lines, the address, the row, the dialog).
        "details": [[str(k), str(v)] for k, v in (details or [])][:8],
        "amount": amount,
        "by": by,
        "code": code[:400],
    }


def describe(facts: dict[str, Any]) -> str:
    """'button "Place order"'; both words when what it shows and its accessible name differ."""
    role = facts.get("role") or facts.get("tag") or "element"
    name = facts.get("name") or facts.get("value") or "(no name)"
    shown = facts.get("text")
    if shown and str(shown).strip().lower() != str(name).strip().lower():
        return f'{role} "{shown}" (named "{name}")'
    return f'{role} "{name}"'


def steps_since_approval(state: AgentState, category: str, step: int) -> int | None:
    """How many steps before `step` the user allowed an action of `category` (None: the last approval
    was of another kind, or there was none): the site's own "Are you sure?" right after it is part of
    that action, not a new one."""
    approval = state.get("last_approval") or {}
    if not approval or approval.get("category") != category:
        return None
    return step - int(approval.get("step", 0))


def pending_from_checks(state: AgentState, call: ToolCall, checks: list[dict[str, Any]]) -> PendingAction:
    """The pending action for code the pre-flight stopped: a hand-over (secret field) or a confirmation."""
    code = str(call["args"].get("code", ""))
    if types_into(code) and any(c.get("secret") for c in checks):
        return {
            "id": str(call.get("id")),
            "type": "manual",
            "tool": call["name"],
            "args": call["args"],
            "question": "This step needs a password, one-time code or card details. Please enter them "
            "yourself in the browser tab, then tell me when you are done.",
        }
    risky = [c for c in checks if c["verdict"]["destructive"]]
    first = risky[0]
    what = describe(first["facts"])
    details = card(
        state,
        what=what,
        reason=first["verdict"]["reason"],
        category=first["verdict"]["category"],
        values=first.get("values", []),
        amount=first.get("amount"),
        code=code,
        facts=first["facts"],
        count=first.get("count"),
        by=first["verdict"].get("by", "rules"),
        details=first.get("details", []),
    )
    allow = Allow().with_checks(risky)
    question = f"Allow this {first['verdict']['category']} action: {what} on {details['site']}?"
    return confirmation(call, question, details, allow.to_js())


async def _check_dialog(state: AgentState, call: ToolCall, ctx: AgentContext) -> PendingAction | None:
    """Accepting a native confirm()/alert/prompt the page raised: its message says what OK does."""
    observation = state.get("observation")
    dialog = observation["dialog"] if observation else None
    if not call["args"].get("accept") or not dialog:
        return None
    facts = {
        "tag": "button",
        "role": "button",
        "name": "OK",
        "context": dialog["message"],
        "dialog": True,
        "confirm": dialog["message"],
        # While a dialog is open the page cannot be observed; the agent's tab still has its URL.
        "url": (observation["url"] if observation else "") or ctx.browser.agent_url or "",
        "title": observation["title"] if observation else "",
        "heading": dialog["message"][:120],
    }
    try:
        (verdict,) = await asyncio.to_thread(classify_many, [facts])
    except ClassifierUnavailable:
        verdict = {"destructive": True, "category": "unknown", "reason": "the classifier is unavailable"}
    if verdict.get("judge"):
        verdict = await ctx.judge(facts, verdict)
    if not verdict["destructive"]:
        return None
    if steps_since_approval(state, verdict["category"], state.get("tool_steps", 0)) == 0:
        return None  # the site asks again about the action the user just allowed
    what = f'dialog "{dialog["message"]}"'
    details = card(
        state,
        what=what,
        reason=verdict["reason"],
        category=verdict["category"],
        values=[],
        amount=None,
        facts=facts,
        by=verdict.get("by", "rules"),
    )
    return confirmation(call, f"Allow accepting {what} on {details['site']}?", details)


async def _check_switch(call: ToolCall, ctx: AgentContext) -> PendingAction | None:
    """The card for `switch_tab` to a tab that is not the session's own (one of the user's tabs, another
    session's): the agent reads it and acts in it only once the user lends it. None for the session's
    own tabs, and for a bad index (the tools node says so)."""
    try:  # the index as the tools node will read it ("1" and 1.0 are 1)
        index = switch_tab.model_validate(call["args"]).index
    except ValidationError:
        return None
    tab = await ctx.browser.foreign_tab(index)
    if tab is None:
        return None
    site = urlsplit(tab.url).hostname or tab.url[:80]
    what = f'working in your tab {tab.index}: "{tab.title[:80] or tab.url[:80]}"'
    details: dict[str, Any] = {
        "what": what,
        "site": site,
        "happens": "The agent reads this tab and works in it as in its own, asking before anything"
        " irreversible. It is not the agent's tab now.",
        "reason": "the tab is yours, not one this task opened",
        "category": "tab",
        "values": [],
        "amount": None,
        "by": "rules",
        "code": "",
    }
    return confirmation(call, f"Allow {what} ({site})?", details)


async def critical_action_validator(state: AgentState, runtime: Runtime[AgentContext]) -> Command[Next]:
    ctx = runtime.context
    calls = pending_calls(state)
    if not calls:
        return Command(goto="agent")
    if (
        any(c["name"] in BROWSER_TOOLS for c in calls)
        and state.get("tool_steps", 0) >= ctx.limits.max_tool_steps
    ):
        return Command(update={"stop_reason": "step_limit"}, goto="progress_reporter")
    refusals: list[ToolMessage] = []
    for call in calls:
        call_id = str(call.get("id"))
        pending: PendingAction | str | None = None
        if call["name"] in ("request_user_confirmation", "hand_over"):
            kind: Literal["question", "manual"] = (
                "question" if call["name"] == "request_user_confirmation" else "manual"
            )
            pending = {
                "id": call_id,
                "type": kind,
                "tool": call["name"],
                "args": call["args"],
                "question": str(call["args"].get("question") or call["args"].get("what") or ""),
                "options": [str(o) for o in call["args"].get("options", [])],
            }
        elif call_id == state.get("approved_call"):
            continue
        elif call["name"] == "handle_dialog":
            pending = await _check_dialog(state, call, ctx)
        elif ctx.extras.owns(call["name"]):  # an extra MCP server's tool: read-only, or the user confirms
            pending = check_extra_call(state, call, ctx)
        elif call["name"] == "remember_about_user":  # the user's own words, or "Remember that …?"
            pending = memory_check(state, call, memory_on=ctx.memory is not None)
        elif call["name"] == "switch_tab":  # a tab that is not the session's: the user lends it, or not
            pending = await _check_switch(call, ctx)
        if isinstance(pending, str):
            refusals.append(tool_message(call, pending, error=True))
            ctx.events(Event("policy_result", {"approved": False, "refused": pending[:200]}))
            continue
        if pending is not None:
            if pending["type"] == "manual" and call["name"] == "browser_run_code":
                refusals.append(tool_message(call, SECRET_REFUSAL, error=True))
            if pending["type"] == "destructive":
                ctx.events(
                    Event(
                        "policy_request", {"card": pending.get("card", {}), "question": pending["question"]}
                    )
                )
            waiting = "manual" if pending["type"] == "manual" else "confirm"
            return Command(
                update={
                    "messages": refusals,
                    "pending_action": waiting_in(pending, ctx.browser.agent_target),
                    "pending_kind": waiting,
                },
                goto="human_in_loop",
            )
    return Command(update={"messages": refusals}, goto="tools")
