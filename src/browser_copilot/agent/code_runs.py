"""Running the model's code (F41-F46): the guarded call, what the guard or the effect gate held, the
safety judge's look at a doubtful input, and the replay of an allowed one, exactly once.

Every input of the code is judged in the page before it reaches the page (sandbox/guard.js); a request
that commits more than its input was allowed to is held by the network policy (sandbox/effects.py).
Either way the pending action is one card, made from what would be committed (the control and its form,
or the request itself), and the user's /yes replays that one input once (`replay_approved`)."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

from langchain_core.messages import HumanMessage, ToolCall, ToolMessage
from langgraph.types import Command

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.conversation import feedback, is_feedback
from browser_copilot.agent.nodes.critical_action_validator import (
    SECRET_REFUSAL,
    card,
    describe,
    steps_since_approval,
)
from browser_copilot.agent.record import forget_sent, record, requests_sent, sent_words
from browser_copilot.agent.signals import classify_error, covering, result_text
from browser_copilot.agent.state import (
    ActionRecord,
    AgentState,
    Committed,
    ObservationState,
    PendingAction,
    waiting_in,
)
from browser_copilot.agent.targets import describe_target, is_acting
from browser_copilot.agent.tools import browser_run_code
from browser_copilot.browser.guarded import GuardReport, guard_report, guarded_code, replay_code, targets
from browser_copilot.browser.observing import parse_dialog
from browser_copilot.browser.results import CodeResult, Tab
from browser_copilot.events import Event
from browser_copilot.sandbox.guard import Allow
from browser_copilot.sandbox.urls import refusal_note

MAYBE_RAN = (
    "The user allowed {what}, but the app stopped while it was being done, so it was not run again: it "
    "may already have happened. Look at the page (or ask the user) to check before doing it again."
)


class ToolPass:
    """The state of one pass over the pending tool calls."""

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
        self.images: list[str] = []
        self.resuming: int | None = None
        """Going on after an allowed input: how many of the inputs before it the run had yet to pass."""

    def working(self) -> dict[str, Any]:
        return {**self.state, **self.update}


async def first_run(ctx: AgentContext, token: str) -> bool:
    """Record, before it runs, that the approved action `token` runs (`AgentContext.ledger`); False when a
    run that died had recorded it already: it is not run a second time."""
    return ctx.ledger is None or not token or await ctx.ledger.claim(token)


def user_said(state: AgentState) -> str:
    """Everything the user wrote in this session (not the app's feedback notes)."""
    return " ".join(
        str(m.content)
        for m in state.get("messages", [])
        if isinstance(m, HumanMessage) and not is_feedback(m)
    )


def covered_note(code: str, observation: ObservationState) -> str:
    """Why a click on a covered element failed: what covers it (from the last observation)."""
    numbers, _ = targets(code)
    covered = [e for e in observation["elements"] if e["n"] in numbers and e.get("covered")]
    return "".join(
        f"\nElement [{e['n']}] was covered by {e['covered']}: close or answer that first." for e in covered
    )


async def _judged(ctx: AgentContext, event: dict[str, Any]) -> dict[str, Any]:
    """The judge's verdict on a held input the rules call doubtful (the event with it, `by` set)."""
    (answer,) = await ctx.judge.many([(event["facts"], event["verdict"])])
    ctx.events(
        Event(
            "policy_result",
            {
                "judge": answer["by"],
                "destructive": answer["destructive"],
                "reason": answer["reason"],
                "what": describe(event["facts"]),
            },
        )
    )
    return {**event, "verdict": {**answer, "judge": False}}


def _allow_for(event: dict[str, Any], token: str | None = None) -> Allow:
    """The one-time permission for a held input: its control (by the guard's stamp), or its address."""
    url = str(event.get("url") or "")
    names = [url] if event.get("kind") == "navigate" and url else []
    allow = Allow(names=names, held=[str(event["id"])])
    return replace(allow, token=token) if token else allow


def hold_for_user(run: ToolPass, call: ToolCall, event: dict[str, Any]) -> str:
    """Turn what was held into the single pending action; the text for the model."""
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
        "held": {
            "id": event["id"],
            "kind": event["kind"],
            "url": event.get("url"),
            "action": event.get("action"),
            "trail": list(event.get("trail") or []),
        },
        "allow": _allow_for(event).to_js(),
    }
    if event["kind"] == "request":
        request = event.get("request") or {}
        return (
            f"Held for the user's confirmation: your code's input sent {request.get('method')} "
            f"{request.get('site')}{request.get('path')}, which {request.get('because')}. The request did "
            "not leave, and the rest of your code did not run; the user decides."
        )
    return (
        f"Held for the user's confirmation: your code tried to activate {what} "
        f"({verdict['reason']}). It did not happen, and the rest of your code did not run; the user decides."
    )


def _confirms_allowed_action(run: ToolPass, event: dict[str, Any]) -> bool:
    """A held action is the site's own confirmation (in a dialog) of the action the user allowed at this
    step or the one before, of the same category: one card per action."""
    since = steps_since_approval(run.state, str(event["verdict"].get("category")), run.steps)
    return since is not None and since <= 1 and bool(event["facts"].get("dialog"))


async def _release(ctx: AgentContext, event: dict[str, Any]) -> str:
    """The judge found a held input ordinary: do it once, as the code meant to."""
    allow = _allow_for(event)
    ctx.browser.issue(allow, "judged")
    replayed = await ctx.browser.run_code(
        replay_code(str(event["id"]), event.get("action") or {}, allow), timeout=ctx.limits.code_timeout
    )
    what = describe(event["facts"])
    if replayed.ok and guard_report(replayed) is None:
        return (
            f"{what} was checked by the safety judge ({event['verdict']['reason']}) and then done. "
            "The rest of your code did not run: look at the page and continue."
        )
    return f"Error: {what} was checked and allowed, but could not be done: {replayed.error or 'held again'}."


def _holds(report: GuardReport | None, ctx: AgentContext) -> list[dict[str, Any]]:
    """What the call's inputs had held: by the guard in the page, then by the effect gate."""
    held = list(report.held) if report is not None else []
    return held + [h.to_event() for h in ctx.browser.held_requests()]


def _with_trail(event: dict[str, Any], report: GuardReport | None) -> dict[str, Any]:
    """A held input with the inputs its code began up to it: after the user's /yes the code goes on from
    there. Not for a request the effect gate held (which input sent it is the gate's word, not an order)."""
    if report is None or event.get("kind") == "request" or not report.trail:
        return event
    return {**event, "trail": list(report.trail)}


RERUNS = 12
"""How many judged inputs one call may go on past (each one runs the code again)."""


async def run_model_code(
    run: ToolPass, ctx: AgentContext, call: ToolCall, args: browser_run_code, resume: tuple[str, ...] = ()
) -> str:
    """The text for the model after running its code (or the pending action it waits on). `resume`: it
    goes on after an input the user allowed (`replay_approved`), passing over the inputs up to it."""
    observation = run.state.get("observation")
    frames = observation["frames"] if observation else {}
    ctx.browser.name_sites(user_said(run.state))  # sites the user named are part of the task
    ctx.browser.held_requests()  # what a page held before this call is not this call's
    allow: Allow | None = None
    allowed: list[str] = []
    judged: set[str] = set()
    skip: tuple[str, ...] = ()
    while True:
        pacing = ctx.pacing.for_browser(launched=ctx.browser.launched is not None)
        code = guarded_code(args.code, frames, allow, pacing=pacing, skip=skip, resume=resume)
        result = await ctx.browser.run_code(code, timeout=ctx.limits.code_timeout)
        report = guard_report(result)
        holds = _holds(report, ctx)
        if not holds:
            break
        run.failed_kind = "none"
        event = holds[0]
        what = describe(event["facts"])
        carried = _confirms_allowed_action(run, event)
        if carried:
            event = {**event, "verdict": {**event["verdict"], "reason": "the site's own confirmation of it"}}
        elif not event["verdict"].get("judge"):
            return hold_for_user(run, call, _with_trail(event, report))
        else:
            event = await _judged(ctx, event)
            if event["verdict"]["destructive"]:
                return hold_for_user(run, call, _with_trail(event, report))
        made = len(report.sigs) if report is not None else 0
        stuck = what in judged and made <= len(skip)  # held again where the last run was held
        if stuck or len(judged) >= RERUNS or (report is not None and report.acted > made):
            # No way forward by running it again, or inputs a rerun cannot recognise: done once, alone.
            return await _release(ctx, event)
        # The same code again, with a permission for this input, so that the rest of it runs and its result
        # arrives (F42: a judged-safe step goes on); the inputs it already made are not made again.
        skip = report.sigs if report is not None else ()
        judged.add(what)
        allowed.append(
            f"{what} was done as part of the action the user allowed ({event['verdict']['reason']})"
            if carried
            else f"{what} was checked by the safety judge ({event['verdict']['reason']}) and done"
        )
        allow = _allow_for(event)  # a fresh one-time token: the last one was spent on its input
        ctx.browser.issue(allow, "approved" if carried else "judged")
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
    return _outcome(run, ctx, call, args, result, _said_once(allowed))


def _said_once(sentences: list[str]) -> str:
    """The same sentence in a row once, with how many times ("… and done (4 times)")."""
    said = ""
    for sentence, run in itertools.groupby(sentences):
        times = len(list(run))
        said += f"{sentence}{f' ({times} times)' if times > 1 else ''}. "
    return said


def _made(result: CodeResult) -> list[list[str]]:
    """The inputs the call made, as the guard saw their elements ([input, role, name])."""
    made = result.notes.get("made")
    if not isinstance(made, list):
        return []
    return [[str(x) for x in m] for m in made if isinstance(m, list) and len(m) == 3]


def _outcome(
    run: ToolPass, ctx: AgentContext, call: ToolCall, args: browser_run_code, result: CodeResult, allowed: str
) -> str:
    observation = run.state.get("observation")
    kind = classify_error(result.error) if not result.ok else "none"
    made = _made(result)
    run.actions.append(
        {
            "tool": call["name"],
            "target": describe_target(args.code, observation, made),
            "made": bool(made),
            "acting": is_acting(args.code),
            "ok": result.ok,
            "error_kind": kind,
        }
    )
    run.failed_kind = kind
    resuming = result.notes.get("resuming")
    run.resuming = int(resuming) if isinstance(resuming, int | float) else None
    text = allowed + result_text(result)
    if not result.ok and observation is not None:
        text += covered_note(args.code, observation)
    if kind == "covered" and "was covered by" not in text:
        over = covering(result.error)
        text += f"\nThe element was there, but {over or 'something'} lay on top of it and took the click."
    if result.notes.get("chooser"):
        text += (
            "\nYour input opened the page's file chooser, so the code stopped there; the app closed it."
            " To upload a file the user named, use the upload_file tool on that element."
        )
    dialog = parse_dialog(result)
    if dialog is not None:
        text += f'\nA {dialog.kind} dialog is open: "{dialog.message}". Answer it with handle_dialog.'
        run.failed_kind = "none"
    for tab in _new_tabs(result, run.state):
        text += f'\nA new tab opened: {tab.index} "{tab.title}" {tab.url} (switch_tab to work in it).'
    if result.images:
        run.images.extend(result.images)
        text += (
            f"\nThe screenshot{'s are' if len(result.images) > 1 else ' is'} shown to you below."
            if ctx.vision
            else "\nThe screenshot was taken, but this model cannot see images: read the page's text instead."
        )
    return text + refusal_note(ctx.browser.refusals())


def _new_tabs(result: CodeResult, state: AgentState) -> list[Tab]:
    if result.tabs is None:
        return []
    observation = state.get("observation")
    known_urls = {str(t[2]) for t in (observation["tabs"] if observation else [])}
    return [t for t in result.tabs if t.url not in known_urls and not t.current]


async def replay_approved(state: AgentState, ctx: AgentContext) -> Command[Any]:
    """Perform a held input the user approved, exactly once."""
    replay = state.get("replay") or {}
    held, allow_js = replay.get("held", {}), replay.get("allow", {})
    allow = Allow(
        names=allow_js.get("names", []), held=allow_js.get("held", []), token=allow_js.get("token", "")
    )
    what = replay.get("what", "the action")
    ok = True
    committed: list[Committed] | None = None
    if not await first_run(ctx, allow.token):
        text, ok = MAYBE_RAN.format(what=what), False
    elif not held.get("action"):
        text, ok = (
            f"The user allowed {what}, but the app cannot do it again by itself (the page's own step it "
            "followed is gone): ask the user to do it in the browser, or do the step that led to it again.",
            False,
        )
    else:
        # A card the effect gate made from a request covers that request's family; one about a control
        # covers what its press sends (the control's words and the address are two vocabularies).
        scope = (replay.get("category") or None) if held.get("kind") == "request" else None
        ctx.browser.issue(allow, "approved", scope)
        forget_sent(ctx.browser)
        program = replay_code(str(held.get("id")), held.get("action") or {}, allow)
        result = await ctx.browser.run_code(program, timeout=ctx.limits.code_timeout)
        holds = ctx.browser.held_requests()
        beyond = [h for h in holds if h.beyond]  # what else the input sent, which the card did not show
        again = guard_report(result) is not None or len(beyond) < len(holds)
        ok = (result.ok or bool(beyond)) and not again
        if ok:
            sent = await requests_sent(ctx.browser)
            committed = record(state, what, str(replay.get("category") or ""), sent)
            text = f"The user allowed {what} and the input was made (once).{sent_words(sent)}"
            if beyond:
                text += (
                    " The page also tried to send "
                    + ", ".join(f"{h.method} {h.site}{h.path} (it {h.because})" for h in beyond[:3])
                    + ", which the user did not allow with that card: it was held and not sent. Tell the "
                    "user; if they want it, it is an action of its own."
                )
        else:
            why = result.error or "it was held again"
            text = f"The user allowed {what}, but it could not be done: {why}."
    ctx.events(Event("tool_result", {"tool": "replay", "ok": ok, "result": text}))
    update: dict[str, Any] = {
        **({"committed": committed} if committed is not None else {}),
        "replay": None,
        "observation_stale": True,
        "total_steps": state.get("total_steps", 0) + 1,
    }
    run = ToolPass({**state, **update})  # type: ignore[typeddict-item]
    if ok and held.get("trail") and replay.get("code"):
        text += await _go_on(run, ctx, str(replay["code"]), tuple(str(x) for x in held["trail"]))
    text += str(replay.get("note") or "")
    update |= {"messages": [feedback(text)], "actions": run.actions[-12:]}
    if run.pending is not None:
        card = run.pending.get("card", {})
        ctx.events(Event("policy_request", {"card": card, "question": run.pending["question"]}))
        update |= {
            "pending_action": waiting_in(run.pending, ctx.browser.agent_target),
            "pending_kind": "manual" if run.pending["type"] == "manual" else "confirm",
        }
        return Command(update=update, goto="human_in_loop")
    return Command(update=update, goto="agent")


async def _go_on(run: ToolPass, ctx: AgentContext, code: str, trail: tuple[str, ...]) -> str:
    """The rest of the code after an input the user allowed (issue 29: the model sees one result): it runs
    again, passing over every input up to the allowed one; each input after it is judged as ever."""
    call: ToolCall = {"name": "browser_run_code", "args": {"code": code}, "id": "resume", "type": "tool_call"}
    text = await run_model_code(run, ctx, call, browser_run_code(code=code), resume=trail)
    if run.pending is not None:
        return f" The rest of your code went on until this: {text}"
    last = run.actions[-1] if run.actions else None
    if last is not None and not last["made"]:
        run.actions.pop()  # no input of the rest was made: the step is the allowed input alone
    if last is not None and not last["ok"] and run.resuming != 0:
        return (
            " The rest of your code did not run: the page is no longer as it was before that action "
            f"({' '.join(text.split())[:240]}). Look at the page and continue."
        )
    return f" Then the rest of your code ran: {text}"


__all__ = [
    "MAYBE_RAN",
    "ToolPass",
    "covered_note",
    "first_run",
    "hold_for_user",
    "replay_approved",
    "run_model_code",
    "user_said",
]
