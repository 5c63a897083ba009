"""The narrator: each event's `summary` (and `outcome`), and the sink that adds them (`narrate`)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from browser_copilot.events import Event, EventSink
from browser_copilot.plain_steps.actions import _file_name
from browser_copilot.plain_steps.tokens import SUMMARY_LIMIT, _capital, one_line, plural, quoted, shorten
from browser_copilot.plain_steps.words import (
    _blocked_requests,
    _place,
    _returned,
    code_phrases,
    error_reason,
    outcome_of,
    thing,
)

# ----- the narrator ----------------------------------------------------------------------------------

NODE_WORDS = {
    "agent": "checking the next step",
    "critical_action_validator": "acting in the browser",
    "tools": "reading the page",
    "observe": "thinking",
    "human_in_loop": "going on with your answer",
    "goal_validator": "checking the answer",
    "quality_evaluator": "checking the answer",
    "progress_analyzer": "reviewing the progress",
    "strategy_adapter": "trying another way",
    "self_corrector": "recovering from an error",
    "memory_manager": "thinking",
    "progress_reporter": "finishing",
}
"""What the agent does once a node has finished (`node` events come at a node's end), for status lines."""

STOP_WORDS = {
    "answered": "Answered",
    "step_limit": "Stopped at the step limit",
    "loop_detected": "Stopped: it was going in circles",
    "waiting_confirmation": "Waiting for your /yes or /no",
    "waiting_user": "Waiting for you",
    "blocked": "Blocked",
    "error": "Stopped by an error",
    "cancelled": "Cancelled",
}


_NOT_DONE = re.compile(r"^(Refused|Not done)[,:]?\s*")


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _extra_tool(name: str) -> tuple[str, str] | None:
    if "__" not in name:
        return None
    server, _, tool = name.partition("__")
    return server, tool


@dataclass(slots=True)
class Narrator:
    """Turns events into sentences, remembering what a sentence needs from earlier events: the call a
    result answers, the page before this one."""

    call: dict[str, Any] | None = None
    url: str | None = None

    def __call__(self, kind: str, data: Mapping[str, Any]) -> dict[str, Any]:
        """The fields to add to the event's data (`summary`, and `outcome` for results)."""
        methods: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
            "tool_call": self._tool_call,
            "tool_result": self._tool_result,
            "observation": self._observation,
            "plan": self._plan,
            "progress": self._progress,
            "policy_request": self._policy_request,
            "policy_result": self._policy_result,
            "node": self._node,
            "status": self._status,
            "error": self._error,
            "notice": self._notice,
            "final": self._final,
        }
        method = methods.get(kind)
        if method is None:
            return {}
        added = method(data)
        if "summary" in added:
            added["summary"] = shorten(added["summary"], SUMMARY_LIMIT)
        return added

    # -- steps --

    def _tool_call(self, data: Mapping[str, Any]) -> dict[str, Any]:
        self.call = dict(data)
        tool = str(data.get("tool") or "")
        return {
            "summary": _capital(self._doing(tool, _mapping(data.get("args")), _mapping(data.get("targets"))))
        }

    def _doing(self, tool: str, args: Mapping[str, Any], targets: Mapping[str, Any]) -> str:
        if tool in ("browser_run_code", "browser_run_code_unsafe"):
            phrases = code_phrases(str(args.get("code") or ""), targets)
            return phrases[2] if phrases else "running code in the page"
        if tool == "observe_page":
            return "looking at the whole page" if args.get("full_page") else "looking at the page"
        if tool == "update_working_state":
            plan = args.get("plan")
            if isinstance(plan, list) and plan:
                return f"making a plan of {plural(len(plan), 'step')}"
            facts = args.get("add_facts")
            if isinstance(facts, list) and facts:
                return f"noting {plural(len(facts), 'fact')}"
            return "updating the plan"
        if tool == "request_user_confirmation":
            return f"asking you: {one_line(args.get('question') or '')}"
        if tool == "hand_over":
            return f"handing over to you: {one_line(args.get('what') or '')}"
        if tool == "handle_dialog":
            return "accepting the site's dialog" if args.get("accept") else "dismissing the site's dialog"
        if tool == "switch_tab":
            return f"switching to tab {args.get('index')}"
        if tool == "upload_file":
            where = self._element_text(targets, args.get("element"))
            return f"attaching {quoted(_file_name(str(args.get('path') or '')) or 'a file', 40)}{where}"
        if tool == "remember_about_user":
            if "withheld" in args:
                return "not remembering something secret"
            return f"remembering {quoted(str(args.get('fact') or ''), 80)}"
        if tool == "forget_about_user":
            return f"forgetting memory {args.get('number')}"
        extra = _extra_tool(tool)
        if extra is not None:
            return f"using {extra[1]} from {quoted(extra[0], 30)}"
        return f"using {tool or 'a tool'}"

    @staticmethod
    def _element_text(targets: Mapping[str, Any], number: object) -> str:
        known = targets.get(str(number)) if number is not None else None
        return f" to {quoted(str(known['name']))}" if isinstance(known, Mapping) and known.get("name") else ""

    def _tool_result(self, data: Mapping[str, Any]) -> dict[str, Any]:
        tool = str(data.get("tool") or "")
        ok = bool(data.get("ok", True))
        text = one_line(data.get("result") or "")
        call, self.call = (self.call if self.call and self.call.get("tool") == tool else None), None
        outcome = outcome_of(ok, text)
        if tool == "replay":
            what = re.search(
                r"The user allowed (.+?)"
                r"(?: and it ran| and the input was made| but it could not|, but it could not)",
                text,
            )
            thing_text = thing(what.group(1)) if what else "the action"
            sent = re.search(r"The browser sent (.+?)\.(?:\s|$)", text)
            if ok and outcome == "done" and sent:
                went = f"Went ahead with {thing_text}, as you allowed: sent {sent.group(1)}"
                return {"summary": went, "outcome": "done"}
            if ok and outcome == "done" and "No request to the site was seen" in text:
                return {
                    "summary": f"Made the input for {thing_text}, as you allowed; no request to the site "
                    "was seen",
                    "outcome": "unsure",
                }
            if ok and outcome == "done":
                return {"summary": f"Went ahead with {thing_text}, as you allowed", "outcome": "done"}
            return {
                "summary": f"Could not go ahead with {thing_text}: {error_reason(text)}",
                "outcome": "failed",
            }
        args = _mapping(call.get("args") if call else None)
        targets = _mapping(call.get("targets") if call else None)
        if tool in ("browser_run_code", "browser_run_code_unsafe"):
            return {
                "summary": self._code_result(str(args.get("code") or ""), targets, outcome, text),
                "outcome": outcome,
            }
        return {"summary": self._tool_done(tool, args, targets, outcome, text), "outcome": outcome}

    def _code_result(self, code: str, targets: Mapping[str, Any], outcome: str, text: str) -> str:
        phrases = code_phrases(code, targets) if code else None
        base, past = phrases[:2] if phrases else ("run code in the page", "ran code in the page")
        if outcome == "held":
            what = re.search(r"tried to activate (.+?) \(", text)
            return (
                f"Stopped before {thing(what.group(1)) if what else 'an action'}: it needs your confirmation"
            )
        if outcome == "refused":
            if "passwords" in text:
                return "Did not type a password, code or card number: you enter those yourself"
            uses = re.search(r"the code uses (.+?)\. Browser code", text)
            return "The app refused to run the code" + (f": it uses {uses.group(1)}" if uses else "")
        released = re.match(
            r"(.+?) was checked by the safety judge .*The rest of your code did not run", text
        )
        if outcome == "done" and released:
            return (
                f"Went ahead with {thing(released.group(1))} after the safety judge checked it; "
                "the rest of the step did not run"
            )
        if outcome == "failed":
            reason = error_reason(re.sub(r"^.*?Error:", "", text, count=1) if "Error:" in text else text)
            if not phrases:
                return f"The code in the page failed: {reason}"
            if ", then " not in base and " more actions" not in base:
                return f"Could not {base}: {reason}"
            return f"Tried to {base}, but it failed: {reason}"
        sentence = _capital(past)
        value = _returned(text)
        if value and phrases and past.startswith("read ") and ", then " not in past:
            sentence += f": {quoted(value, 60)}"
        judged = re.search(r"(\S.*?) was checked by the safety judge", text)
        if judged:
            sentence += " (the safety judge checked it first)"
        if "allowed" in text and text.startswith("The user allowed"):
            sentence += ", as you allowed"
        blocked = _blocked_requests(text)
        if blocked:
            sentence += f"; the app blocked {plural(blocked, 'request')} to sites outside the task"
        return sentence

    def _tool_done(
        self, tool: str, args: Mapping[str, Any], targets: Mapping[str, Any], outcome: str, text: str
    ) -> str:
        failed = outcome in ("failed", "refused")
        reason = error_reason(text) if failed else ""
        if tool == "observe_page":
            return f"Could not look at the page: {reason}" if failed else "Looked at the page"
        if tool == "update_working_state":
            return f"Could not update the plan: {shorten(text, 90)}" if failed else "Updated the plan"
        if tool == "switch_tab":
            index = args.get("index")
            return f"Could not switch to tab {index}: {reason}" if failed else f"Switched to tab {index}"
        if tool == "handle_dialog":
            verb = "accept" if args.get("accept") else "dismiss"
            return (
                f"Could not {verb} the site's dialog: {reason}"
                if failed
                else f"{_capital(verb)}ed the site's dialog"
            )
        if tool == "upload_file":
            name = quoted(_file_name(str(args.get("path") or "")) or "a file", 40)
            where = self._element_text(targets, args.get("element"))
            return f"Could not attach {name}: {reason}" if failed else f"Attached {name}{where}"
        if tool == "remember_about_user":
            if failed:
                return f"Did not remember it: {shorten(_NOT_DONE.sub('', text), 90)}"
            return f"Remembered {quoted(str(args.get('fact') or ''), 80)} for later sessions"
        if tool == "forget_about_user":
            return (
                f"Did not forget it: {shorten(text, 90)}" if failed else f"Forgot memory {args.get('number')}"
            )
        if tool in ("request_user_confirmation", "hand_over"):
            said = re.match(r"The user answered: (.*)", text)
            return f"You answered: {quoted(said.group(1), 80)}" if said else "You answered"
        extra = _extra_tool(tool)
        if extra is not None:
            server, name = extra
            if failed:
                return f"{name} from {quoted(server, 30)} failed: {reason}"
            return f"Used {name} from {quoted(server, 30)}"
        return f"{tool} failed: {reason}" if failed else f"Used {tool or 'a tool'}"

    # -- pages, plans, checks --

    def _observation(self, data: Mapping[str, Any]) -> dict[str, Any]:
        url = str(data.get("url") or "")
        title = one_line(data.get("title") or "")
        host = urlsplit(url).netloc
        where = f"{shorten(title, 70)} ({host})" if title and host else shorten(title or _place(url), 70)
        if self.url is None:
            sentence = f"Looked at {where}"
        elif url != self.url:
            sentence = f"Opened {where}"
        else:
            sentence = "Looked at the page again"
        self.url = url
        if data.get("dialog"):
            sentence += "; the site shows a dialog"
        return {"summary": sentence}

    @staticmethod
    def _plan(data: Mapping[str, Any]) -> dict[str, Any]:
        plan = [one_line(p) for p in data.get("plan") or []]
        progress = _mapping(data.get("progress"))
        done = len(progress.get("done") or [])
        current = int(progress.get("current") or 1)
        if not plan:
            return {"summary": "No plan yet"}
        if not done and current <= 1:
            return {"summary": f"Planned {plural(len(plan), 'step')}: " + "; ".join(plan)}
        now = plan[current - 1] if 0 < current <= len(plan) else ""
        sentence = f"Plan: {done} of {len(plan)} done"
        return {"summary": sentence + (f"; now {current}. {now}" if now and done < len(plan) else "")}

    @staticmethod
    def _progress(data: Mapping[str, Any]) -> dict[str, Any]:
        done, total = int(data.get("done") or 0), int(data.get("total") or 0)
        steps, limit = int(data.get("steps") or 0), data.get("limit")
        used = (
            f"{steps} of {plural(int(limit), 'browser step')} used"
            if limit
            else plural(steps, "browser step")
        )
        return {"summary": f"{done} of {plural(total, 'plan step')} done, {used}"}

    @staticmethod
    def _policy_request(data: Mapping[str, Any]) -> dict[str, Any]:
        card = _mapping(data.get("card"))
        if not card.get("what"):
            return {"summary": f"Asked you: {one_line(data.get('question') or 'to confirm an action')}"}
        site = f" on {card['site']}" if card.get("site") else ""
        kind = f" ({card['category']})" if card.get("category") else ""
        return {"summary": f"Asked you to confirm {thing(card.get('what'))}{site}{kind}"}

    @staticmethod
    def _policy_result(data: Mapping[str, Any]) -> dict[str, Any]:
        if "judge" in data:
            what = thing(data["what"]) if data.get("what") else "the action"
            reason = shorten(data.get("reason") or "", 80)
            if data.get("destructive"):
                return {
                    "summary": f"The safety judge thinks {what} commits to something ({reason}): you decide",
                    "outcome": "judged_risky",
                }
            return {"summary": f"The safety judge let {what} go ahead ({reason})", "outcome": "judged_safe"}
        card = _mapping(data.get("card"))
        if "refused" in data:
            refused = one_line(data.get("refused") or "")
            left = re.match(r"left (\S+): (.*)", refused)
            if left:
                why = shorten(left.group(2), 60)
                return {
                    "summary": f"Took the tab back from {_place(left.group(1))}: {why}",
                    "outcome": "refused",
                }
            uses = re.search(r"the code uses (.+?)\. Browser code", refused)
            why = (
                f"it uses {uses.group(1)}"
                if uses
                else shorten(re.sub(r"^Refused[^:]*:\s*", "", refused), 100)
            )
            return {"summary": f"The app refused it: {why}", "outcome": "refused"}
        what = thing(card.get("what")) if card.get("what") else "the action"
        if data.get("approved"):
            return {"summary": f"You allowed {what} (once)", "outcome": "allowed"}
        return {"summary": f"You declined {what}: it did not happen", "outcome": "declined"}

    # -- the run --

    @staticmethod
    def _node(data: Mapping[str, Any]) -> dict[str, Any]:
        return {"summary": NODE_WORDS.get(str(data.get("node") or ""), "working")}

    @staticmethod
    def _status(data: Mapping[str, Any]) -> dict[str, Any]:
        state = str(data.get("state") or "")
        words = {
            "running": "Going on with your answer" if data.get("resumed") else "Working on it",
            "idle": "Done",
            "waiting_user": "Waiting for you",
            "error": "Stopped by an error",
        }
        return {"summary": words.get(state, _capital(state))}

    @staticmethod
    def _error(data: Mapping[str, Any]) -> dict[str, Any]:
        kind = str(data.get("kind") or "")
        message = one_line(data.get("message") or "")
        prefix = {
            "browser": "The browser could not be used",
            "llm": "The model could not be reached",
            "memory": "Long-term memory failed",
            "mcp_server": "An extra tool server failed",
        }.get(kind, "Something went wrong")
        return {"summary": f"{prefix}: {message}" if message else prefix}

    @staticmethod
    def _notice(data: Mapping[str, Any]) -> dict[str, Any]:
        return {"summary": _capital(one_line(data.get("text") or ""))}

    @staticmethod
    def _final(data: Mapping[str, Any]) -> dict[str, Any]:
        reason = str(data.get("stop_reason") or "")
        steps = int(data.get("steps") or 0)
        sentence = STOP_WORDS.get(reason, _capital(reason.replace("_", " ")))
        if reason == "answered" and data.get("verified") is False:
            sentence += " (unverified: the app's checks doubt it)"
        return {"summary": f"{sentence} after {plural(steps, 'step')}"}


def narrate(sink: EventSink) -> EventSink:
    """`sink`, with each event's data given its `summary` (and `outcome`) first. Idempotent: wrapping a
    narrated sink again returns it."""
    if isinstance(sink, NarratedSink):
        return sink
    return NarratedSink(sink)


class NarratedSink:
    """An event sink that adds the plain sentences, then forwards (see `narrate`)."""

    __slots__ = ("narrator", "sink")

    def __init__(self, sink: EventSink) -> None:
        self.sink = sink
        self.narrator = Narrator()

    def __call__(self, event: Event) -> None:
        if "summary" not in event.data:
            try:
                added = self.narrator(event.kind, event.data)
            except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError):
                # Sinks never raise (events.py): the event goes on without its sentence.
                logging.getLogger(__name__).warning(
                    "no plain sentence for a %s event", event.kind, exc_info=True
                )
                added = {}
            if added:
                event = Event(event.kind, {**event.data, **added}, event.at)
        self.sink(event)
