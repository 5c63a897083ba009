"""`progress_reporter`: tell the user where things stand (F24, F25).

In the middle of a run it reports progress and hands back to the agent. At the end it writes the
final message for the stop reason: the answer, or an honest summary (done / not done / suggested next
step) and a question whether to continue. A limit or a loop is never reported as success, and an answer
the app's checks still doubt goes out as unverified (`verified`, `doubts` next to `stop_reason`).

"Done" in the summary is what the recorded actions of the request show ran (fields filled, steps
submitted, items added, pages opened), with the plan items marked done: not only the model's marks."""

from __future__ import annotations

import re
from collections import Counter
from typing import Literal
from urllib.parse import urlsplit

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.conversation import close_calls, current_request, last_ai, pending_calls
from browser_copilot.agent.record import described, done_by
from browser_copilot.agent.state import ActionRecord, AgentState, StopReason
from browser_copilot.agent.wordlists import word_pattern
from browser_copilot.browser.guarded import targets
from browser_copilot.events import Event

Next = Literal["agent", "__end__"]

_WHY: dict[StopReason, str] = {
    "step_limit": "I used all {limit} browser actions allowed for one request",
    "loop_detected": "I was going in circles ({detail})",
    "error": "an error stopped me ({detail})",
    "blocked": "I am blocked ({detail})",
    "cancelled": "the run was cancelled",
}


_FILLED = {"textbox", "searchbox", "combobox", "spinbutton", "textarea"}
_TICKED = {"checkbox", "radio", "switch"}
_PIECE = re.compile(r'^(?:([a-z]+) )?"(.+)"$')
_KEYS = {"enter", "numpadenter"}
_STATEMENT = re.compile(r"[;\n]")
_TYPES = re.compile(r"\.\s*(fill|type|pressSequentially)\s*\(")


def typed_names(state: AgentState) -> set[str]:
    """The locator names (label, placeholder, role name) the request's code typed into."""
    names: set[str] = set()
    for message in current_request(state):
        for call in message.tool_calls if isinstance(message, AIMessage) else []:
            code = str(call["args"].get("code", "")) if call["name"] == "browser_run_code" else ""
            for statement in _STATEMENT.split(code):
                if _TYPES.search(statement):
                    names.update(targets(statement)[1])
    return names


def _kind(piece: str, typed: set[str]) -> tuple[str, str] | None:
    """One target of a recorded action as (what was done, to what); None when it names nothing readable."""
    match = _PIECE.match(piece.strip())
    if match is None:
        text = piece.strip()
        if text.startswith(("http://", "https://")):
            parts = urlsplit(text)
            return "opened", f"{parts.netloc}{parts.path}"
        if text.lower() in _KEYS:
            return "submitted", "Enter"
        if text.startswith("upload "):
            return "uploaded", text.removeprefix("upload ")
        return None
    role, name = (match.group(1) or "").lower(), match.group(2)
    if role in _FILLED or (not role and name in typed):
        return "filled", f"“{name}”"
    if role in _TICKED:
        return "ticked", f"“{name}”"
    if word_pattern("outcome_words.json", "adds").search(name):
        return "added", f"“{name}”"
    if word_pattern("outcome_words.json", "submits").search(name):
        return "submitted", f"“{name}”"
    return "clicked", f"“{name}”"


def ran(actions: list[ActionRecord], typed: set[str]) -> list[str]:
    """What the request's recorded actions that succeeded did, in words: 'filled “Email”', 'submitted a
    step (“Next”)', 'added 2 items (“Add to cart”)', 'opened shop.test/cart'."""
    done: dict[str, Counter[str]] = {}
    other = 0
    for action in actions:
        if not (action["acting"] and (action["ok"] or action.get("made"))):
            continue  # a failed call counts for the inputs it made before it failed
        kinds = [_kind(p, typed) for p in action["target"].split("; ")]
        other += not any(kinds)
        for verb, what in (k for k in kinds if k is not None):
            done.setdefault(verb, Counter())[what] += 1
    phrases = []
    for verb, counts in done.items():
        if verb == "added":
            total = sum(counts.values())
            phrases.append(f"added {total} item{'s' if total > 1 else ''} ({', '.join(counts)})")
        elif verb == "submitted":
            total = sum(counts.values())
            steps = "a step" if total == 1 else f"{total} steps"
            phrases.append(f"submitted {steps} ({', '.join(counts)})")
        else:
            phrases.append(f"{verb} {', '.join(counts)}")
    if other:
        phrases.append(f"{other} other action{'s' if other > 1 else ''}")
    return phrases


def summary(state: AgentState, reason: StopReason, limit: int) -> str:
    plan = state.get("plan") or []
    progress = state.get("progress") or {"current": 1, "done": [], "blocked": []}
    detail = (state.get("last_error") or {}).get("message", "no details")[:200]
    why = _WHY.get(reason, "I stopped").format(limit=limit, detail=detail)
    done = [plan[i - 1] for i in progress["done"] if 0 < i <= len(plan)]
    committed = state.get("committed") or []
    open_items = [
        step
        for i, step in enumerate(plan[:-1], start=1)
        if i not in progress["done"] and done_by(step, committed) is None
    ]
    lines = [f"I have not finished: {why}.", ""]
    done += [described(entry) for entry in committed]
    done += ran(state.get("actions") or [], typed_names(state))
    lines.append("Done: " + ("; ".join(done) if done else "nothing yet") + ".")
    if open_items:
        lines.append("Not done: " + "; ".join(open_items) + ".")
    facts = state.get("facts") or []
    if facts:
        lines.append("What I found so far: " + "; ".join(f["fact"] for f in facts[-5:]) + ".")
    current = progress["current"]
    next_step = plan[current - 1] if 0 < current <= len(plan) else "look at the page again and continue"
    if reason == "loop_detected":
        next_step = "try another route to the goal, or tell me how to proceed"
    again = done_by(next_step, committed)
    if again is not None:  # never a second order: what ran is checked, not done again
        next_step = (
            f"check on the page that it went through ({again['what']} was already done once; not again)"
        )
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
    doubts = list(state.get("doubts") or []) if reason == "answered" else []
    verified = reason == "answered" and not doubts
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
    update |= {"verified": verified, "doubts": doubts}
    ctx.events(
        Event(
            "final",
            {
                "stop_reason": reason,
                "text": text,
                "steps": state.get("tool_steps", 0),
                "verified": verified,
                "doubts": doubts,
            },
        )
    )
    return Command(update=update, goto="__end__")
