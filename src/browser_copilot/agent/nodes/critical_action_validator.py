"""`critical_action_validator`: every tool call passes here before it runs (F40, F24).

Browser actions over the step limit stop the run; a question for the user or an action whose target
looks destructive goes to `human_in_loop`; the rest goes to `tools`.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from langgraph.runtime import Runtime
from langgraph.types import Command

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.conversation import pending_calls
from browser_copilot.agent.policy import classify_call
from browser_copilot.agent.state import AgentState, PendingAction
from browser_copilot.agent.tools import BROWSER_TOOLS
from browser_copilot.events import Event

Next = Literal["tools", "human_in_loop", "progress_reporter", "agent"]


def _card(
    call_args: dict[str, object], state: AgentState, reason: str, category: str, target: str
) -> dict[str, object]:
    observation = state.get("observation")
    url = observation["url"] if observation else ""
    return {
        "what": target,
        "site": urlsplit(url).netloc or url,
        "url": url,
        "page": observation["title"] if observation else "",
        "reason": reason,
        "category": category,
        "code": str(call_args.get("code", ""))[:400],
    }


async def critical_action_validator(state: AgentState, runtime: Runtime[AgentContext]) -> Command[Next]:
    ctx = runtime.context
    calls = pending_calls(state)
    if not calls:
        return Command(goto="agent")
    counted = sum(1 for call in calls if call["name"] in BROWSER_TOOLS)
    if counted and state.get("tool_steps", 0) >= ctx.limits.max_tool_steps:
        return Command(update={"stop_reason": "step_limit"}, goto="progress_reporter")
    for call in calls:
        call_id = str(call.get("id"))
        if call["name"] == "request_user_confirmation":
            pending: PendingAction = {
                "id": call_id,
                "type": "question",
                "tool": call["name"],
                "args": call["args"],
                "question": str(call["args"].get("question", "")),
                "options": [str(o) for o in call["args"].get("options", [])],
            }
            return Command(
                update={"pending_action": pending, "pending_kind": "confirm"}, goto="human_in_loop"
            )
        if call_id == state.get("approved_call"):
            continue
        verdict = classify_call(call["name"], call["args"], state.get("observation"))
        if verdict.destructive:
            target = verdict.target.describe() if verdict.target else call["name"]
            card = _card(call["args"], state, verdict.reason, verdict.category, target)
            pending = {
                "id": call_id,
                "type": "destructive",
                "tool": call["name"],
                "args": call["args"],
                "question": f"Allow this {verdict.category} action: {target} on {card['site']}?",
                "card": card,
            }
            ctx.events(Event("policy_request", {"card": card, "question": pending["question"]}))
            return Command(
                update={"pending_action": pending, "pending_kind": "confirm"}, goto="human_in_loop"
            )
    return Command(goto="tools")
