"""`human_in_loop`: ask the user and wait (F42-F44). `interrupt()` comes before any side effect.

Resumed with the user's answer: `/yes` lets exactly the pending action run once (the guard gets a
one-time permission; a held action is replayed once); `/no` drops it and tells the model; a question's
answer goes back to the model; after a manual hand-over ("done") the page is observed again."""

from __future__ import annotations

import re
from typing import Literal

from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.conversation import close_calls, feedback, pending_calls, tool_message
from browser_copilot.agent.state import AgentState
from browser_copilot.errors import McpError
from browser_copilot.events import Event

Next = Literal["tools", "agent"]

_YES = re.compile(
    r"^\s*(/yes|/y|yes|y|да|ок|ok|okay|confirm|go ahead|ja|oui|sí|si|sim|tak|так|evet|是|はい|예)"
    r"\s*[.!]*\s*$",
    re.IGNORECASE,
)


def is_yes(answer: object) -> bool:
    return isinstance(answer, str) and bool(_YES.match(answer))


async def human_in_loop(state: AgentState, runtime: Runtime[AgentContext]) -> Command[Next]:
    pending = state.get("pending_action") or {}
    kind = pending.get("type", "question")
    answer = interrupt(
        {
            "kind": "confirm" if kind in ("destructive", "held") else kind,
            "question": pending.get("question", ""),
            "options": pending.get("options", []),
            "card": pending.get("card", {}),
        }
    )
    ctx = runtime.context
    cleared: dict[str, object] = {"pending_action": None, "pending_kind": "none"}
    calls = pending_calls(state)
    call = next((c for c in calls if str(c.get("id")) == pending.get("id")), None)
    if kind == "manual":
        said = f"The user says: {answer}. Look at the page again and continue."
        reply = [tool_message(call, said)] if call is not None else [feedback(said)]
        return Command(update={**cleared, "messages": reply, "observation_stale": True}, goto="agent")
    if kind == "question":
        if call is None:
            return Command(
                update={**cleared, "messages": [feedback(f"The user answered: {answer}")]}, goto="agent"
            )
        return Command(
            update={**cleared, "messages": [tool_message(call, f"The user answered: {answer}")]}, goto="agent"
        )
    approved = is_yes(answer)
    category = (pending.get("card") or {}).get("category")
    steps = state.get("tool_steps", 0)
    ctx.events(Event("policy_result", {"approved": approved, "card": pending.get("card", {})}))
    if kind == "held":
        if approved:
            return Command(
                update={
                    **cleared,
                    "replay": {
                        "held": pending.get("held", {}),
                        "allow": pending.get("allow", {}),
                        "what": (pending.get("card") or {}).get("what", "the action"),
                    },
                    "last_approval": {
                        "category": category,
                        "step": steps,
                        "what": (pending.get("card") or {}).get("what", ""),
                    },
                },
                goto="tools",
            )
        what = (pending.get("card") or {}).get("what", "the action")
        note = feedback(f"The user declined {what}; it did not happen. Re-plan or ask them.")
        return Command(update={**cleared, "messages": [note], "observation_stale": True}, goto="agent")
    if approved and call is not None:
        return Command(
            update={
                **cleared,
                "approved_call": pending.get("id"),
                "approved_allow": {
                    **(pending.get("allow") or {}),
                    "what": (pending.get("card") or {}).get("what", "the action"),
                },
                "last_approval": {
                    "category": category,
                    "step": steps + 1,
                    "what": (pending.get("card") or {}).get("what", ""),
                },
            },
            goto="tools",
        )
    messages = []
    if call is not None:
        others = [c for c in calls if c is not call]
        what = (pending.get("card") or {}).get("what", "this action")
        said = f"The user declined {what}; it did not happen."
        if call["name"] == "handle_dialog" and ctx.browser.mcp is not None:
            # Declining to accept the page's own confirm(): answer it with Cancel, so the page is usable.
            try:
                _, failed = await ctx.browser.mcp.call("browser_handle_dialog", {"accept": False})
            except McpError:
                failed = True
            said += " The page's dialog was answered with Cancel." if not failed else ""
        messages = [
            tool_message(
                call,
                f"{said} Do not try it again another way; re-plan, or ask the user what to do instead.",
                error=True,
            ),
            *close_calls(others, "an action in the same step was declined."),
        ]
    return Command(update={**cleared, "messages": messages}, goto="agent")
