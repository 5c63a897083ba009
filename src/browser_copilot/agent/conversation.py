"""Message bookkeeping shared by the nodes: pending tool calls, feedback, observations in state."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage

from browser_copilot.agent.prompts import load, render
from browser_copilot.agent.state import AgentState, ObservationState
from browser_copilot.browser.observation import Observation, as_untrusted
from browser_copilot.safety.redaction import mask_for_model

FEEDBACK_PREFIX = "[Browser Copilot]"
"""Marks messages the framework adds to the conversation (not the user's words)."""


def last_ai(state: AgentState) -> AIMessage | None:
    for message in reversed(state.get("messages", [])):
        if isinstance(message, AIMessage):
            return message
        if isinstance(message, HumanMessage) and not is_feedback(message):
            return None
    return None


def answered_ids(messages: list[AnyMessage]) -> set[str]:
    return {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}


def pending_calls(state: AgentState) -> list[ToolCall]:
    """Tool calls of the last AI message that have no ToolMessage yet."""
    message = last_ai(state)
    if message is None:
        return []
    done = answered_ids(state.get("messages", []))
    return [call for call in message.tool_calls if call.get("id") not in done]


def tool_message(call: ToolCall, content: str, *, error: bool = False) -> ToolMessage:
    return ToolMessage(
        content=content,
        tool_call_id=str(call.get("id")),
        name=call.get("name"),
        status="error" if error else "success",
    )


def close_calls(calls: list[ToolCall], reason: str) -> list[ToolMessage]:
    """Answer tool calls that will not run (the API requires every call to get an answer)."""
    return [tool_message(call, f"Not run: {reason}", error=True) for call in calls]


def dangling_fixes(messages: list[AnyMessage]) -> list[ToolMessage]:
    """ToolMessages for any earlier tool call left unanswered (a cancelled or stopped run)."""
    done = answered_ids(messages)
    fixes: list[ToolMessage] = []
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call.get("id") not in done:
                    fixes.append(tool_message(call, "Not run: the run stopped before this call.", error=True))
                    done.add(str(call.get("id")))
    return fixes


def feedback(text: str) -> HumanMessage:
    """A message from the framework to the model (validators, self-correction, loop warnings)."""
    return HumanMessage(f"{FEEDBACK_PREFIX} {text}")


def is_feedback(message: AnyMessage) -> bool:
    return isinstance(message, HumanMessage) and str(message.content).startswith(FEEDBACK_PREFIX)


def current_request(state: AgentState) -> list[AnyMessage]:
    """Messages since the user's latest message (inclusive)."""
    messages = state.get("messages", [])
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, HumanMessage) and not is_feedback(message):
            return list(messages[index:])
    return list(messages)


def to_state(observation: Observation) -> ObservationState:
    return {
        "url": observation.url,
        "title": observation.title,
        "text": observation.render(),
        "fingerprint": observation.fingerprint,
        "elements": [
            {"n": e.n, "role": e.role, "name": e.name, "state": e.state, "covered": e.covered}
            for e in observation.elements
        ],
        "frames": {str(k): v for k, v in observation.frames_by_number().items()},
        "tabs": [[t.index, t.current, t.url, t.title] for t in observation.tabs],
        "dialog": (
            {"kind": observation.dialog.kind, "message": observation.dialog.message}
            if observation.dialog
            else None
        ),
        "screenshot": observation.screenshot_b64,
        "full": observation.full,
        "modal": getattr(observation, "modal", None),
        "errors": list(getattr(observation, "errors", None) or []),
    }


def observation_message(
    observation: ObservationState, working: str = "", shots: list[str] | None = None
) -> HumanMessage:
    """The working state, then the page as the model sees it (delimited as untrusted, with the
    screenshot when present, and the screenshots the model's code took just before): the last message of
    every prompt, after the cacheable prefix."""
    # Every part of it (errors, a dialog, a modal's label, the change summary), not only the page text.
    body = render(load("observation"), page=as_untrusted(mask_for_model(observation["text"])))
    if working:
        body = f"{working}\n\n{body}"
    images = [*(shots or []), *([observation["screenshot"]] if observation.get("screenshot") else [])]
    if images:
        content: list[str | dict[str, Any]] = [{"type": "text", "text": body}]
        content += [
            {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{image}"}} for image in images
        ]
        return HumanMessage(content=content)
    return HumanMessage(body)


def chat_history(messages: list[AnyMessage], limit: int = 200) -> list[dict[str, str]]:
    """The conversation as the user saw it: their messages and the agent's answers (no tool traffic,
    no framework notes, no answer the app bounced back to the model), the last `limit` of them.
    Messages summarised away by `memory_manager` are not in it."""
    chat: list[dict[str, str]] = []
    for index, message in enumerate(messages):
        if isinstance(message, HumanMessage) and not is_feedback(message):
            chat.append({"who": "user", "text": str(message.content)})
        elif isinstance(message, AIMessage) and not message.tool_calls and str(message.content).strip():
            following = messages[index + 1] if index + 1 < len(messages) else None
            if following is None or not is_feedback(following):
                chat.append({"who": "agent", "text": str(message.content)})
    return chat[-limit:]


def masked(messages: Sequence[BaseMessage], mask: Callable[[str], str]) -> list[BaseMessage]:
    """Every message's text through `mask` (the session's seen secrets, `BrowserSession.seen_secrets`):
    the prompt as it goes to the model, whatever path a secret value took into it."""
    out: list[BaseMessage] = []
    for message in messages:
        content = message.content
        if isinstance(content, str):
            new: str | list[str | dict[str, Any]] = mask(content)
        else:
            new = [
                mask(part)
                if isinstance(part, str)
                else {**part, "text": mask(part["text"])}
                if part.get("type") == "text" and isinstance(part.get("text"), str)
                else part
                for part in content
            ]
        out.append(message if new == content else message.model_copy(update={"content": new}))
    return out
