"""`agent`: the model reasons over the working state and the current observation, then acts or answers."""

from __future__ import annotations

from typing import Literal

import openai
from langchain_core.messages import AIMessage, AnyMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.runtime import Runtime
from langgraph.types import Command

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.conversation import dangling_fixes, feedback, masked, observation_message
from browser_copilot.agent.extra_calls import bound_tools, tool_names
from browser_copilot.agent.memory import prompt_block
from browser_copilot.agent.memory_tools import withhold_in_calls
from browser_copilot.agent.prompts import (
    SYSTEM_PROMPT,
    SYSTEM_PROMPT_COMPLEX,
    SYSTEM_PROMPT_MINIMAL,
    load,
    render,
)
from browser_copilot.agent.state import AgentState
from browser_copilot.agent.streaming import AnswerStream, complete
from browser_copilot.agent.textual import parse_textual_calls
from browser_copilot.events import Event
from browser_copilot.llm.provider import describe_llm_error

Next = Literal[
    "observe", "memory_manager", "critical_action_validator", "goal_validator", "progress_reporter", "agent"
]


def system_prompt(state: AgentState, ctx: AgentContext) -> str:
    """One version per request kind, chosen when the request starts and fixed for its whole run, so
    that a provider's prompt cache can reuse the prefix (system prompt + history) on every step."""
    kind = state.get("prompt_kind") or "full"
    base = {"minimal": SYSTEM_PROMPT_MINIMAL, "simple": SYSTEM_PROMPT}.get(kind, SYSTEM_PROMPT_COMPLEX)
    parts = [render(base, max_steps=ctx.limits.max_tool_steps)]
    memories = state.get("memories")
    if memories is not None:  # found when the request started: fixed for the request too
        parts.append(prompt_block(memories, state.get("memories_total")))
    if state.get("summary"):
        parts.append(f"Summary of the earlier conversation:\n{state['summary']}")
    return "\n\n".join(parts)


def working_state(state: AgentState, ctx: AgentContext) -> str:
    """The working state and the step count: they change every step, so they come after the history."""
    limits = ctx.limits
    progress = state.get("progress") or {"current": 1, "done": [], "blocked": []}
    marks = {n: "x" for n in progress["done"]} | {n: "!" for n in progress["blocked"]}
    plan = "\n".join(
        f"  {i}. [{marks.get(i, '>' if i == progress['current'] else ' ')}] {step}"
        for i, step in enumerate(state.get("plan") or [], start=1)
    )
    facts = "\n".join(f"  - {f['fact']} ({f['source']})" for f in state.get("facts") or [])
    return render(
        load("working_state"),
        goal=state.get("current_goal") or "(not set)",
        plan=plan or "  (no plan yet)",
        facts=facts or "  (none yet)",
        steps=state.get("tool_steps", 0),
        max_steps=limits.max_tool_steps,
    )


def at_limit(state: AgentState, ctx: AgentContext) -> bool:
    """The step budget is spent and the plan is not finished: the app, not the model, sums up (F66).
    With every plan item done, the model may still write its answer (a tool call then stops the run)."""
    if state.get("tool_steps", 0) < ctx.limits.max_tool_steps:
        return False
    plan = state.get("plan") or []
    progress = state.get("progress") or {"current": 1, "done": [], "blocked": []}
    settled = set(progress["done"]) | set(progress["blocked"])
    return not plan or any(i not in settled for i in range(1, len(plan)))


def needs_memory(state: AgentState, ctx: AgentContext) -> bool:
    return count_tokens_approximately(state.get("messages", [])) > ctx.limits.memory_max_tokens


async def agent(state: AgentState, runtime: Runtime[AgentContext]) -> Command[Next]:
    ctx = runtime.context
    observation = state.get("observation")
    if observation is None or state.get("observation_stale", True):
        return Command(goto="observe")
    if needs_memory(state, ctx) and state.get("memory_mark") != len(state.get("messages", [])):
        return Command(goto="memory_manager")
    if state.get("llm_calls", 0) >= ctx.limits.max_llm_calls or at_limit(state, ctx):
        return Command(update={"stop_reason": "step_limit"}, goto="progress_reporter")

    fixes = dangling_fixes(state.get("messages", []))
    history: list[AnyMessage] = [*state.get("messages", []), *fixes]
    prompt = [
        SystemMessage(system_prompt(state, ctx)),
        *history,
        observation_message(observation, working_state(state, ctx), state.get("code_shots")),
    ]
    try:
        # Streamed (F62): the text reaches the user as it is written; tool calls only once complete.
        stream = AnswerStream(ctx.events, call=state.get("llm_calls", 0) + 1)
        response = await complete(
            ctx.llm, bound_tools(ctx), masked(prompt, ctx.browser.seen_secrets.mask), stream
        )
    except openai.APIError as exc:
        said = describe_llm_error(exc)  # the model's URL, the status or connection problem, the fix
        ctx.events(Event("error", {"kind": "llm", "message": said}))
        return Command(
            update={
                "messages": fixes,
                "stop_reason": "error",
                "last_error": {"kind": "llm", "message": said},
            },
            goto="progress_reporter",
        )
    usage = response.usage_metadata or {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    ctx.events(
        Event(
            "usage",
            {
                "prompt_tokens": usage["input_tokens"],
                "completion_tokens": usage["output_tokens"],
            },
        )
    )
    calls = state.get("llm_calls", 0) + 1
    update: dict[str, object] = {"llm_calls": calls, "code_shots": None}

    if not response.tool_calls:
        parsed = parse_textual_calls(str(response.content or ""), tool_names(ctx))
        if parsed is not None and parsed.error is not None:
            invalid = state.get("invalid_actions", 0) + 1
            note = feedback(
                f"Your last message looked like a tool call but could not be used: {parsed.error}. "
                "Call the tool through the tools API, with JSON arguments."
            )
            update |= {"messages": [*fixes, response, note], "invalid_actions": invalid}
            if invalid >= ctx.limits.max_invalid:
                update["stop_reason"] = "error"
                update["last_error"] = {"kind": "invalid_calls", "message": parsed.error}
                return Command(update=update, goto="progress_reporter")
            return Command(update=update, goto="agent")
        if parsed is not None:
            response = AIMessage(content="", tool_calls=parsed.calls, id=response.id)
    # A secret in a memory call is never kept (F47, F63), nor a value the session's secret fields held.
    response = withhold_in_calls(response, ctx.browser.seen_secrets.mask)
    update["messages"] = [*fixes, response]
    if response.tool_calls:
        return Command(update=update, goto="critical_action_validator")
    return Command(update=update, goto="goal_validator")
