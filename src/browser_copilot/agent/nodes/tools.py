"""`tools`: run the validated tool calls, one after another, and route on what happened (F22, F26, F27).

Model-fixable failures become `ToolMessage(status="error")`; a browser or MCP server that cannot be
recovered stops the run with `stop_reason="error"` (the session state survives).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import HumanMessage, ToolCall, ToolMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.conversation import (
    close_calls,
    feedback,
    is_feedback,
    pending_calls,
    to_state,
    tool_message,
)
from browser_copilot.agent.extra_calls import run_extra_call
from browser_copilot.agent.memory_tools import MEMORY_TOOLS, run_memory_tool
from browser_copilot.agent.nodes.critical_action_validator import (
    SECRET_REFUSAL,
    card,
    describe,
    pending_from_checks,
    steps_since_approval,
)
from browser_copilot.agent.signals import (
    CORRECTABLE,
    classify_error,
    covering,
    detect_loop,
    result_text,
    step_summary,
)
from browser_copilot.agent.state import ActionRecord, AgentState, ObservationState, PendingAction
from browser_copilot.agent.targets import describe_target, is_acting
from browser_copilot.agent.tools import (
    BROWSER_TOOLS,
    ToolArgsError,
    apply_working_state,
    browser_run_code,
    handle_dialog,
    observe_page,
    parse_args,
    switch_tab,
    update_working_state,
    upload_file,
)
from browser_copilot.browser.guarded import (
    guard_report,
    guarded_code,
    preflight_checks,
    replay_code,
    targets,
    types_into,
)
from browser_copilot.browser.observation import observe, parse_dialog
from browser_copilot.browser.results import CodeResult, Tab
from browser_copilot.browser.session import BrowserSession
from browser_copilot.errors import BrowserError, McpError
from browser_copilot.events import Event
from browser_copilot.plain_steps import element_targets
from browser_copilot.sandbox.guard import Allow
from browser_copilot.sandbox.network import refusal_note

Next = Literal[
    "agent",
    "observe",
    "self_corrector",
    "strategy_adapter",
    "progress_analyzer",
    "progress_reporter",
    "human_in_loop",
]


MAYBE_RAN = (
    "The user allowed {what}, but the app stopped while it was being done, so it was not run again: it "
    "may already have happened. Look at the page (or ask the user) to check before doing it again."
)


async def _first_run(ctx: AgentContext, token: str) -> bool:
    """Record, before it runs, that the approved action `token` runs (`AgentContext.ledger`); False when a
    run that died had recorded it already: it is not run a second time."""
    return ctx.ledger is None or not token or await ctx.ledger.claim(token)


def _new_tabs(result: CodeResult, state: AgentState) -> list[Tab]:
    if result.tabs is None:
        return []
    observation = state.get("observation")
    known_urls = {str(t[2]) for t in (observation["tabs"] if observation else [])}
    return [t for t in result.tabs if t.url not in known_urls and not t.current]


class _Run:
    """The state of one pass over the pending calls."""

    def __init__(self, state: AgentState) -> None:
        self.state = state
        self.update: dict[str, Any] = {}
        self.messages: list[ToolMessage] = []
        self.steps = state.get("tool_steps", 0)
        self.total = state.get("total_steps", 0)
        self.actions: list[ActionRecord] = list(state.get("actions") or [])
        self.stale = False
        self.failed_kind = "none"
        self.invalid = state.get("invalid_actions", 0)
        self.pending: PendingAction | None = None

    def working(self) -> dict[str, Any]:
        return {**self.state, **self.update}


def covered_note(code: str, observation: ObservationState) -> str:
    """Why a click on a covered element failed: what covers it (from the last observation)."""
    numbers, _ = targets(code)
    covered = [e for e in observation["elements"] if e["n"] in numbers and e.get("covered")]
    return "".join(
        f"\nElement [{e['n']}] was covered by {e['covered']}: close or answer that first." for e in covered
    )


async def _judged(ctx: AgentContext, checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ask the judge about the checks the rules call ambiguous; each verdict gains `by`."""
    asked = [c for c in checks if c["verdict"].get("judge")]
    answers = await ctx.judge.many((c["facts"], c["verdict"]) for c in asked)
    for check, answer in zip(asked, answers, strict=True):
        check["verdict"] = {**answer, "judge": False}
        ctx.events(
            Event(
                "policy_result",
                {
                    "judge": answer["by"],
                    "destructive": answer["destructive"],
                    "reason": answer["reason"],
                    "what": describe(check["facts"]),
                },
            )
        )
    return checks


def _held(run: _Run, call: ToolCall, event: dict[str, Any]) -> str:
    """Turn what the guard held into the single pending action; the text for the model."""
    facts = event["facts"]
    what = describe(facts)
    verdict = event["verdict"]
    details = card(
        run.state,
        what=what,
        reason=verdict["reason"],
        category=verdict["category"],
        values=event.get("values", []),
        amount=event.get("amount"),
        code=str(call["args"].get("code", "")),
        facts=facts,
        count=event.get("count"),
        by=verdict.get("by", "rules"),
        details=event.get("details", []),
    )
    run.pending = {
        "id": str(call.get("id")),
        "type": "held",
        "tool": call["name"],
        "args": call["args"],
        "question": f"Allow this {verdict['category']} action: {what} on {details['site']}?",
        "card": details,
        # Inside a closed shadow root the held element is only its host: the replay cannot click what the
        # code clicked in it, so /yes runs the model's code again with that host allowed once.
        "held": {
            "id": event["id"],
            "kind": event["kind"],
            "url": event.get("url"),
            "opaque": bool(facts.get("opaque")),
        },
        "allow": Allow(held=[event["id"]]).to_js(),
    }
    return (
        f"Held for the user's confirmation: your code tried to activate {what} "
        f"({verdict['reason']}). It did not happen, and the rest of your code did not run; the user decides."
    )


def _confirms_allowed_action(run: _Run, event: dict[str, Any]) -> bool:
    """A held action is the site's own confirmation (in a dialog) of the action the user allowed at this
    step or the one before, of the same category: one card per action."""
    since = steps_since_approval(run.state, str(event["verdict"].get("category")), run.steps)
    return since is not None and since <= 1 and bool(event["facts"].get("dialog"))


async def _release(ctx: AgentContext, event: dict[str, Any]) -> str:
    """The judge found a held action ordinary: do it once, as the code meant to."""
    allow = Allow(held=[event["id"]])
    replayed = await ctx.browser.run_code(
        replay_code(str(event["id"]), str(event["kind"]), allow, event.get("url")),
        timeout=ctx.limits.code_timeout,
    )
    what = describe(event["facts"])
    if replayed.ok and guard_report(replayed) is None:
        return (
            f"{what} was checked by the safety judge ({event['verdict']['reason']}) and then done. "
            "The rest of your code did not run: look at the page and continue."
        )
    return f"Error: {what} was checked and allowed, but could not be done: {replayed.error or 'held again'}."


async def _run_guarded(
    run: _Run, ctx: AgentContext, call: ToolCall, args: browser_run_code, allow: Allow | None
) -> CodeResult | str:
    """Run the code under the guard. A pre-flight target the rules call destructive stops it before it
    runs; ambiguous ones only are judged when the code reaches them, on the page as the code has left
    it (its fills), by the guard at run time (`_run_code`).

    Returns the result, or the text for the model when the code stopped before running."""
    observation = run.state.get("observation")
    frames = observation["frames"] if observation else {}
    preflight = True
    for _ in range(3):
        pacing = ctx.pacing.for_browser(launched=ctx.browser.launched is not None)
        code = guarded_code(args.code, frames, allow, pacing=pacing, preflight=preflight)
        result = await ctx.browser.run_code(code, timeout=ctx.limits.code_timeout)
        checks = preflight_checks(result)
        if checks is None:
            return result
        secret = any(c.get("secret") for c in checks)
        if not secret and all(c["verdict"].get("judge") and not c["verdict"]["destructive"] for c in checks):
            preflight = False
            continue
        if not (types_into(args.code) and secret):
            checks = await _judged(ctx, checks)
            if not any(c["verdict"]["destructive"] for c in checks):
                allow = (allow or Allow()).with_checks([c for c in checks if c["verdict"].get("by")])
                continue
        run.pending = pending_from_checks(run.state, call, checks)
        run.steps -= 1  # nothing ran: the step counts when it does
        run.total -= 1
        return SECRET_REFUSAL if run.pending["type"] == "manual" else ""
    return "Error: the safety check of this code's targets did not settle; try the action again."


async def _run_code(run: _Run, ctx: AgentContext, call: ToolCall, args: browser_run_code) -> str:
    observation = run.state.get("observation")
    approved = run.state.get("approved_call") == str(call.get("id"))
    allow_js = run.state.get("approved_allow") if approved else None
    allow = (
        Allow(
            numbers=allow_js.get("numbers", []),
            names=allow_js.get("names", []),
            token=allow_js.get("token", ""),
        )
        if allow_js
        else None
    )
    ctx.browser.name_sites(_user_said(run.state))  # sites the user named are part of the task
    allowed = ""
    if approved and allow_js:
        what = str(allow_js.get("what") or "the action")
        allowed = f"The user allowed {what} and it ran. "
        if not await _first_run(ctx, str(allow_js.get("token") or "")):
            return MAYBE_RAN.format(what=what)
    judged: set[str] = set()
    while True:
        outcome = await _run_guarded(run, ctx, call, args, allow)
        if isinstance(outcome, str):
            return outcome
        result = outcome
        report = guard_report(result)
        if report is None or not report.held:
            break
        run.failed_kind = "none"
        event = report.held[0]
        what = describe(event["facts"])
        carried = _confirms_allowed_action(run, event)
        if carried:
            event = {**event, "verdict": {**event["verdict"], "reason": "the site's own confirmation of it"}}
        elif not event["verdict"].get("judge"):
            return _held(run, call, event)
        else:
            (checked,) = await _judged(ctx, [{"facts": event["facts"], "verdict": event["verdict"]}])
            event = {**event, "verdict": checked["verdict"]}
            if event["verdict"]["destructive"]:
                return _held(run, call, event)
        if report.acted or what in judged:
            # Something already ran in this call (a click, keys typed): running it again would repeat
            # it. The judged action alone, then.
            return await _release(ctx, event)
        # Nothing ran before the hold: the same code again, with a permission for this target, so
        # that the rest of it runs and its result arrives (F42: a judged-safe step goes on).
        judged.add(what)
        allowed += (
            f"{what} was done as part of the action the user allowed ({event['verdict']['reason']}). "
            if carried
            else f"{what} was checked by the safety judge ({event['verdict']['reason']}) and done. "
        )
        # A click is let through by its name as well (the page may have drawn it anew), an address by
        # itself.
        name = str(event.get("url") if event["kind"] == "navigate" else event["facts"].get("name") or "")
        allow = Allow(
            numbers=allow.numbers if allow else [],
            names=[*(allow.names if allow else []), *([name] if name else [])],
            held=[*(allow.held if allow else []), str(event["id"])],
            token=allow.token if allow else Allow().token,
        )
    if report is not None and report.secret_blocked:
        run.pending = {
            "id": str(call.get("id")),
            "type": "manual",
            "tool": call["name"],
            "args": call["args"],
            "question": "The page asks for a password, one-time code or card details. Please enter "
            "them yourself in the browser tab, then tell me when you are done.",
        }
        return SECRET_REFUSAL
    kind = classify_error(result.error) if not result.ok else "none"
    run.actions.append(
        {
            "tool": call["name"],
            "target": describe_target(args.code, observation),
            "acting": is_acting(args.code),
            "ok": result.ok,
            "error_kind": kind,
        }
    )
    run.failed_kind = kind
    text = allowed + result_text(result)
    if not result.ok and observation is not None:
        text += covered_note(args.code, observation)
    if kind == "covered" and "was covered by" not in text:
        over = covering(result.error)
        text += f"\nThe element was there, but {over or 'something'} lay on top of it and took the click."
    dialog = parse_dialog(result)
    if dialog is not None:
        text += f'\nA {dialog.kind} dialog is open: "{dialog.message}". Answer it with handle_dialog.'
        run.failed_kind = "none"
    for tab in _new_tabs(result, run.state):
        text += f'\nA new tab opened: {tab.index} "{tab.title}" {tab.url} (switch_tab to work in it).'
    return text + refusal_note(ctx.browser.refusals())


async def _execute(run: _Run, ctx: AgentContext, call: ToolCall) -> ToolMessage:
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
        text = await _run_code(run, ctx, call, args)
        return tool_message(call, text, error=text.startswith(("Error:", "Refused")))
    if isinstance(args, observe_page):
        observation = await observe(ctx.browser, full=args.full_page, screenshot=ctx.vision)
        run.update["observation"] = to_state(observation)
        run.stale = False
        return tool_message(call, "Observed; the observation below is current.")
    if isinstance(args, upload_file):
        return await _upload(run, ctx, call, args)
    mcp = ctx.browser.mcp
    assert mcp is not None
    if isinstance(args, handle_dialog):
        arguments: dict[str, Any] = {"accept": args.accept}
        if args.prompt_text is not None:
            arguments["promptText"] = args.prompt_text
        text, is_error = await mcp.call("browser_handle_dialog", arguments)
        verb = "accepted" if args.accept else "dismissed"
        return tool_message(call, f"Error: {text}" if is_error else f"The dialog was {verb}.", error=is_error)
    assert isinstance(args, switch_tab)
    text, is_error = await ctx.browser.select_tab(args.index)
    return tool_message(
        call, f"Error: {text}" if is_error else f"Tab {args.index} is now the agent's tab.", error=is_error
    )


def _user_said(state: AgentState) -> str:
    """Everything the user wrote in this session (not the app's feedback notes)."""
    return " ".join(
        str(m.content)
        for m in state.get("messages", [])
        if isinstance(m, HumanMessage) and not is_feedback(m)
    )


def _named_by_user(state: AgentState, path: str) -> bool:
    said = _user_said(state)
    return path in said or os.path.expanduser(path) in said


def _prepare_upload(state: AgentState, browser: BrowserSession, path: str) -> Path:
    """The staged copy of a file the user named (the sandboxed server cannot read their folders)."""
    if not _named_by_user(state, path):
        raise ToolArgsError(f"Refused: the user did not name {path!r}. Ask them which file to upload.")
    source = Path(os.path.expanduser(path))
    if not source.is_file():
        raise ToolArgsError(f"{path!r} is not a file.")
    return browser.stage_upload(source)


async def _upload(run: _Run, ctx: AgentContext, call: ToolCall, args: upload_file) -> ToolMessage:
    try:
        staged = await asyncio.to_thread(_prepare_upload, run.state, ctx.browser, args.path)
    except ToolArgsError as exc:
        return tool_message(call, str(exc), error=True)
    observation = run.state.get("observation")
    frames = observation["frames"] if observation else {}
    code = f"async (page) => {{ await el({args.element}).setInputFiles({json.dumps(str(staged))}) }}"
    result = await ctx.browser.run_code(guarded_code(code, frames), timeout=ctx.limits.code_timeout)
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


def _route(run: _Run, state: AgentState, ctx: AgentContext) -> Next:
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


async def _replay(state: AgentState, ctx: AgentContext) -> Command[Next]:
    """Perform a held action the user approved, exactly once."""
    replay = state.get("replay") or {}
    held, allow_js = replay.get("held", {}), replay.get("allow", {})
    allow = Allow(held=allow_js.get("held", []), token=allow_js.get("token", ""))
    code = str(replay.get("code") or "")
    what = replay.get("what", "the action")
    ok = True
    if not await _first_run(ctx, allow.token):
        text, ok = MAYBE_RAN.format(what=what), False
    else:
        if held.get("opaque") and code:
            observation = state.get("observation")
            program = guarded_code(
                code, observation["frames"] if observation else None, allow, preflight=False
            )
        else:
            program = replay_code(str(held.get("id")), str(held.get("kind")), allow, held.get("url"))
        result = await ctx.browser.run_code(program, timeout=ctx.limits.code_timeout)
        ok = result.ok
        text = (
            f"The user allowed {what} and it ran (once)."
            if result.ok and guard_report(result) is None
            else f"The user allowed {what}, but it could not be done: {result.error or 'it was held again'}."
        )
    text += str(replay.get("note") or "")
    ctx.events(Event("tool_result", {"tool": "replay", "ok": ok, "result": text}))
    return Command(
        update={
            "replay": None,
            "messages": [feedback(text)],
            "observation_stale": True,
            "total_steps": state.get("total_steps", 0) + 1,
        },
        goto="agent",
    )


async def tools(state: AgentState, runtime: Runtime[AgentContext]) -> Command[Next]:
    ctx = runtime.context
    if state.get("replay"):
        return await _replay(state, ctx)
    run = _Run(state)
    calls = pending_calls(state)
    for index, call in enumerate(calls):
        try:
            message = await _execute(run, ctx, call)
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
            update={**update, "pending_action": run.pending, "pending_kind": kind}, goto="human_in_loop"
        )
    return Command(update=update, goto=_route(run, state, ctx))
