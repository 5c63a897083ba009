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

_YES_WORDS = "yes|да|ок|ok|okay|confirm|go ahead|ja|oui|sí|si|sim|tak|так|evet|是|はい|예|好的|네"
_NO_WORDS = "no|нет|ні|nein|non|nie|não|nej|ei|ne|hayır|不|否|いいえ|아니요|아니오"
# A whole answer: the word alone (with a slash command's short forms).
_YES = re.compile(rf"^\s*(?:/yes|/y|y|{_YES_WORDS})\s*[.!。！]*\s*$", re.IGNORECASE)
_NO = re.compile(rf"^\s*(?:/no|/n|n|{_NO_WORDS})\s*[.!。！]*\s*$", re.IGNORECASE)
_AMBIGUOUS = frozenset({"si", "y", "n"})
# An answer with more words: "yes, but first tell me the total", "/no — use cash instead".
_LEAD = re.compile(
    rf"^\s*(?P<word>/yes|/y|/no|/n|{_YES_WORDS}|{_NO_WORDS})(?P<gap>\s*[,.;:!—–，、。！：；]+\s*|\s+-\s+|\s+)"
    r"(?P<rest>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)


def reading(answer: object) -> tuple[bool, str]:
    """What an answer to a confirmation card says: (allowed, the rest for the model). "yes" / "/yes" /
    "да" allow it; "yes, but tell me the total" allows it and passes "but tell me the total" on;
    anything else refuses it ("no, use cash" passes "use cash"). "si" and "y" also mean "if" and "and":
    followed by more words they answer only with a comma or a dash after them."""
    if not isinstance(answer, str):
        return False, ""
    if _YES.match(answer):
        return True, ""
    if _NO.match(answer):
        return False, ""
    lead = _LEAD.match(answer)
    word = lead.group("word").lower() if lead else ""
    if lead is None or (word in _AMBIGUOUS and not lead.group("gap").strip()):
        return False, answer.strip()
    return not _NO.match(word), lead.group("rest").strip()


def is_yes(answer: object) -> bool:
    """The answer allows the pending action (alone or followed by more words for the model)."""
    return reading(answer)[0]


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
    approved, rest = reading(answer)
    # More words after the yes or no ("yes, but tell me the total") are the user's words to the model.
    said_too = f' The user also said: "{rest}".' if rest else ""
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
                        "category": category or "",
                        "note": said_too,
                        "code": (pending.get("args") or {}).get("code", ""),
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
        note = feedback(f"The user declined {what}; it did not happen.{said_too} Re-plan or ask them.")
        return Command(update={**cleared, "messages": [note], "observation_stale": True}, goto="agent")
    if approved and call is not None:
        return Command(
            update={
                **cleared,
                "approved_call": pending.get("id"),
                "approved_allow": {
                    **(pending.get("allow") or {}),
                    "what": (pending.get("card") or {}).get("what", "the action"),
                    "note": said_too,
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
        said = f"The user declined {what}; it did not happen.{said_too}"
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
