"""`tools`: run the validated tool calls, one after another, and route on what happened (F22, F26, F27).

Model-fixable failures become `ToolMessage(status="error")`; a browser or MCP server that cannot be
recovered stops the run with `stop_reason="error"` (the session state survives).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import ToolCall, ToolMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from browser_copilot.agent.code_runs import (
    ToolPass,
    hold_for_user,
    replay_approved,
    run_model_code,
    user_said,
)
from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.conversation import close_calls, feedback, pending_calls, to_state, tool_message
from browser_copilot.agent.extra_calls import run_extra_call
from browser_copilot.agent.memory_tools import MEMORY_TOOLS, run_memory_tool
from browser_copilot.agent.signals import CORRECTABLE, classify_error, detect_loop, result_text, step_summary
from browser_copilot.agent.state import AgentState, waiting_in
from browser_copilot.agent.tools import (
    BROWSER_TOOLS,
    ToolArgsError,
    apply_working_state,
    browser_run_code,
    handle_dialog,
    observe_page,
    parse_args,
    read_download,
    switch_tab,
    update_working_state,
    upload_file,
)
from browser_copilot.browser.downloads import DownloadUnreadable, read_text
from browser_copilot.browser.guarded import guarded_code
from browser_copilot.browser.observation import as_untrusted
from browser_copilot.browser.observing import observe
from browser_copilot.browser.session import BrowserSession
from browser_copilot.errors import BrowserError, McpError
from browser_copilot.events import Event
from browser_copilot.plain_steps import element_targets
from browser_copilot.safety.redaction import mask_for_model

Next = Literal[
    "agent",
    "observe",
    "self_corrector",
    "strategy_adapter",
    "progress_analyzer",
    "progress_reporter",
    "human_in_loop",
]


async def _execute(run: ToolPass, ctx: AgentContext, call: ToolCall) -> ToolMessage:
    name = call["name"]
    if ctx.extras.owns(name):  # an extra MCP server's tool (F60): not a browser step
        extra = await run_extra_call(ctx, run.state, call, step=run.steps)
        run.pending = extra.pending or run.pending
        run.invalid += extra.invalid
        run.total += extra.ran
        return extra.message
    try:
        args = parse_args(name, call["args"], others=ctx.extras.names())
    except ToolArgsError as exc:
        run.invalid += 1
        return tool_message(call, str(exc), error=True)
    if isinstance(args, MEMORY_TOOLS):  # emits its own events: a refused secret is never shown
        message, pending = await run_memory_tool(run.state, ctx, call, args, step=run.steps)
        run.pending = pending or run.pending  # a note the user did not state: "Remember that …?"
        return message
    if name in BROWSER_TOOLS:
        run.steps += 1
        run.total += 1
        run.stale = True
    seen = run.state.get("observation")
    elements = seen["elements"] if seen else []
    ctx.events(
        Event(
            "tool_call",
            {
                "tool": name,
                "args": call["args"],
                "step": run.steps,
                "counted": name in BROWSER_TOOLS,
                "targets": element_targets(call["args"], elements),  # what el(N) names, for plain_steps
            },
        )
    )
    if isinstance(args, update_working_state):
        try:
            changes = apply_working_state(args, run.working())
        except ToolArgsError as exc:
            return tool_message(call, str(exc), error=True)
        run.update.update(changes)
        merged = run.working()
        ctx.events(Event("plan", {k: merged.get(k) for k in ("current_goal", "plan", "progress", "facts")}))
        return tool_message(call, "Working state updated.")
    if isinstance(args, browser_run_code):
        text = await run_model_code(run, ctx, call, args)
        return tool_message(call, text, error=text.startswith(("Error:", "Refused")))
    if isinstance(args, observe_page):
        observation = await observe(ctx.browser, full=args.full_page, screenshot=ctx.vision)
        run.update["observation"] = to_state(observation)
        run.stale = False
        return tool_message(call, "Observed; the observation below is current.")
    if isinstance(args, upload_file):
        return await _upload(run, ctx, call, args)
    if isinstance(args, read_download):
        return await _read_download(ctx, call, args)
    mcp = ctx.browser.mcp
    assert mcp is not None
    if isinstance(args, handle_dialog):
        return await _answer_dialog(run, ctx, call, args)
    assert isinstance(args, switch_tab)
    text, is_error = await ctx.browser.select_tab(args.index)
    return tool_message(
        call, f"Error: {text}" if is_error else f"Tab {args.index} is now the agent's tab.", error=is_error
    )


async def _answer_dialog(
    run: ToolPass, ctx: AgentContext, call: ToolCall, args: handle_dialog
) -> ToolMessage:
    """Answer the page's dialog. Accepting is an input of the app's: what the page sends then passes the
    effect gate in a window of its own, approved when the user allowed it (its card, or the action the
    site confirms, allowed a step before)."""
    approval = run.state.get("last_approval") or {}
    confirms = bool(approval) and run.steps - int(approval.get("step", 0)) <= 1
    approved = args.accept and (run.state.get("approved_call") == str(call.get("id")) or confirms)
    text, is_error = await ctx.browser.answer_dialog(
        args.accept, args.prompt_text, "approved" if approved else "structure"
    )
    if is_error:
        return tool_message(call, f"Error: {text}", error=True)
    verb = "accepted" if args.accept else "dismissed"
    held = ctx.browser.held_requests()
    if held:  # what the page sent after it commits more than that was allowed to: the user decides
        said = hold_for_user(run, call, held[0].to_event())
        return tool_message(call, f"The dialog was {verb}. {said}")
    return tool_message(call, f"The dialog was {verb}.")


DOWNLOAD_WAIT = 30.0
"""How long read_download waits for a download of the agent's tabs that is still coming."""
NEW_DOWNLOAD_WAIT = 5.0
"""How long read_download without a name waits for a download to begin when every one was read."""


async def _read_download(ctx: AgentContext, call: ToolCall, args: read_download) -> ToolMessage:
    """The text of a download of the agent's tabs, as page content (untrusted, secrets masked). One still
    coming is waited for (the click that began it may have returned first), within `DOWNLOAD_WAIT`."""
    if not args.name and all(d.read for d in ctx.browser.downloads()):
        # Every download was read already: the one the last click began may not have begun yet.
        await ctx.browser.download_begun(NEW_DOWNLOAD_WAIT)
    await ctx.browser.downloads_finished(DOWNLOAD_WAIT)
    found = [d for d in ctx.browser.downloads() if d.state == "completed"]
    unread = [d for d in found if not d.read]
    found = unread if unread and not args.name else found
    if args.name:
        wanted = args.name.strip().lower()
        found = [d for d in found if d.name.lower() == wanted or (d.path or "").lower().endswith(wanted)]
    if not found:
        seen = ", ".join(f"{d.name} ({d.state})" for d in ctx.browser.downloads()) or "none"
        return tool_message(
            call,
            f"Error: no finished download{f' named {args.name!r}' if args.name else ''}; downloads: {seen}.",
            error=True,
        )
    try:
        text = await asyncio.to_thread(read_text, found[-1])
    except DownloadUnreadable as exc:
        return tool_message(call, f"Error: {exc}.", error=True)
    found[-1].read = True
    return tool_message(call, f"{found[-1].name}:\n{as_untrusted(mask_for_model(text))}")


def _named_by_user(state: AgentState, path: str) -> bool:
    """`path` is a whole path the user wrote (as written, or with `~` expanded): not a part of one — the
    private key `~/.ssh/id_ed25519` inside the named `~/.ssh/id_ed25519.pub`, a relative `cv.pdf` inside
    `~/cv.pdf` — and not a path inside an address they wrote."""
    said = user_said(state)
    return any(_whole(said, p) for p in {path, os.path.expanduser(path)} if p)


def _whole(said: str, path: str) -> bool:
    """`path` occurs in `said` with no path character on either side (a sentence's last `.` aside)."""
    return re.search(rf"(?<![\w./~:-]){re.escape(path)}(?![\w/~-]|\.\w)", said) is not None


def _prepare_upload(state: AgentState, browser: BrowserSession, path: str) -> Path:
    """The staged copy of a file the user named (the sandboxed server cannot read their folders)."""
    if not _named_by_user(state, path):
        raise ToolArgsError(f"Refused: the user did not name {path!r}. Ask them which file to upload.")
    source = Path(os.path.expanduser(path))
    if not source.is_file():
        raise ToolArgsError(f"{path!r} is not a file.")
    return browser.stage_upload(source)


async def _upload(run: ToolPass, ctx: AgentContext, call: ToolCall, args: upload_file) -> ToolMessage:
    try:
        staged = await asyncio.to_thread(_prepare_upload, run.state, ctx.browser, args.path)
    except ToolArgsError as exc:
        return tool_message(call, str(exc), error=True)
    observation = run.state.get("observation")
    frames = observation["frames"] if observation else {}
    code = f"async (page) => {{ await el({args.element}).setInputFiles({json.dumps(str(staged))}) }}"
    program = guarded_code(code, frames, app_code=True)
    result = await ctx.browser.run_code(program, timeout=ctx.limits.code_timeout)
    run.actions.append(
        {
            "tool": call["name"],
            "target": f"upload {staged.name}",
            "acting": True,
            "ok": result.ok,
            "error_kind": classify_error(result.error) if not result.ok else "none",
        }
    )
    if not result.ok:
        return tool_message(call, result_text(result), error=True)
    return tool_message(call, f"Uploaded {staged.name} into element [{args.element}].")


def _route(run: ToolPass, state: AgentState, ctx: AgentContext) -> Next:
    if run.failed_kind in CORRECTABLE:
        return "self_corrector"
    if detect_loop(run.actions, ctx.limits.loop_repeats):
        return "strategy_adapter"
    mark = state.get("progress_mark") or [0, 0]
    plan = run.working().get("plan") or []
    if len(plan) >= 3 and run.steps - mark[0] >= ctx.limits.progress_every:
        return "progress_analyzer"
    # The call may have changed the page: straight to observe (the agent would only send it there).
    return "observe" if run.stale or state.get("observation_stale", False) else "agent"


async def tools(state: AgentState, runtime: Runtime[AgentContext]) -> Command[Next]:
    ctx = runtime.context
    if state.get("replay"):
        return await replay_approved(state, ctx)
    run = ToolPass(state)
    calls = pending_calls(state)
    for index, call in enumerate(calls):
        try:
            message = await _execute(run, ctx, call)
            if isinstance(message.content, str):  # kept (checkpoints, the step log) without a secret
                message.content = ctx.browser.seen_secrets.mask_all(message.content)
        except (BrowserError, McpError) as exc:
            ctx.events(Event("error", {"kind": "browser", "message": str(exc)}))
            messages = [
                *run.messages,
                tool_message(call, f"Error: {exc}", error=True),
                *close_calls(calls[index + 1 :], "the browser became unavailable."),
            ]
            return Command(
                update={
                    **run.update,
                    "messages": messages,
                    "tool_steps": run.steps,
                    "stop_reason": "error",
                    "approved_call": None,
                    "last_error": {"kind": "browser", "message": str(exc)},
                },
                goto="progress_reporter",
            )
        if run.pending is not None and run.pending["type"] == "destructive" and not message.content:
            # Stopped before running: the call stays open until the user decides.
            run.messages.extend(close_calls(calls[index + 1 :], "waiting for the user's decision."))
            break
        ctx.events(
            Event(
                "tool_result",
                {
                    "tool": call["name"],
                    "ok": message.status != "error",
                    "result": step_summary(str(message.content)),  # `summary`: plain_steps' sentence
                },
            )
        )
        run.messages.append(message)
        if run.pending is not None:
            run.messages.extend(close_calls(calls[index + 1 :], "waiting for the user's decision."))
            break
    note = str((state.get("approved_allow") or {}).get("note") or "").strip()
    # The user's words that came with their /yes, after the tool messages.
    said = [feedback(note)] if note and state.get("approved_call") else []
    update: dict[str, Any] = {
        **run.update,
        "messages": [*run.messages, *said],
        "tool_steps": run.steps,
        "total_steps": run.total,
        "actions": run.actions[-12:],
        "approved_call": None,
        "approved_allow": None,
        "invalid_actions": run.invalid,
        "observation_stale": run.stale or state.get("observation_stale", False),
        "code_shots": run.images if ctx.vision and run.images else None,
    }
    if run.failed_kind != "none":
        update["last_error"] = {"kind": run.failed_kind, "message": str(run.messages[-1].content)[:500]}
        update["error_count"] = state.get("error_count", 0) + 1
    if run.pending is not None:
        kind = "manual" if run.pending["type"] == "manual" else "confirm"
        if kind == "confirm":
            ctx.events(
                Event(
                    "policy_request",
                    {"card": run.pending.get("card", {}), "question": run.pending["question"]},
                )
            )
        return Command(
            update={
                **update,
                "pending_action": waiting_in(run.pending, ctx.browser.agent_target),
                "pending_kind": kind,
            },
            goto="human_in_loop",
        )
    return Command(update=update, goto=_route(run, state, ctx))
