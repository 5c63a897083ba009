"""`goal_validator`: before an answer goes out, check it against the evidence, not the model's claim
(F28): an empty answer, success claimed right after a failed action, a dialog of the site still open,
a committing plan step (place the order, delete, send...) that nothing that ran shows. The first time
the model is sent back; an objection that still holds then goes on with the answer as a doubt for the
user (`doubts`: the answer is shown as unverified, never as a plain success); so does one when the model
could not answer again (the step limit). The answer closes the plan items it leaves open (it is the
report on them): no extra round trip to mark them."""

from __future__ import annotations

import re
from typing import Literal, NamedTuple, cast

from langchain_core.messages import ToolMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.conversation import FEEDBACK_PREFIX, current_request, feedback, last_ai
from browser_copilot.agent.nodes.agent import at_limit
from browser_copilot.agent.record import done_by
from browser_copilot.agent.state import AgentState
from browser_copilot.agent.wordlists import word_pattern

Next = Literal["quality_evaluator", "agent"]


# The answer's and the plan's words, in many languages (agent/outcome_words.json).
def _claims_success(text: str) -> bool:
    return bool(word_pattern("outcome_words.json", "claims_success").search(text))


def admits_failure(text: str) -> bool:
    return bool(word_pattern("outcome_words.json", "admits_failure").search(text))


def _commits(text: str) -> re.Match[str] | None:
    return word_pattern("outcome_words.json", "commits").search(text)


_WORD = re.compile(r"\w{3,}")
_COMMON = {"the", "and", "for", "you", "your", "with", "from", "this", "that", "into", "now", "all"}
_QUOTED = re.compile(r'"([^"]*)"')


class Objection(NamedTuple):
    to_model: str
    """What the model is told when it is sent back."""
    to_user: str
    """The doubt the user reads when it still holds."""


def _words(text: str) -> set[str]:
    return {w.lower()[:5] for w in _WORD.findall(text)} - _COMMON


def ran_targets(state: AgentState) -> list[str]:
    """What the actions of this request that ran acted on: the recorded actions that succeeded, and the
    actions the user allowed that ran (the app's own notes, never page text)."""
    names = [
        name
        for a in state.get("actions") or []
        if a["acting"] and a["ok"]
        for name in _QUOTED.findall(a["target"]) or [a["target"]]
    ]
    for message in current_request(state):
        text = str(message.content).removeprefix(FEEDBACK_PREFIX).strip()
        app_note = isinstance(message, ToolMessage) or str(message.content).startswith(FEEDBACK_PREFIX)
        if app_note and text.startswith("The user allowed ") and " and it ran" in text:
            names.append(text.removeprefix("The user allowed ").split(" and it ran")[0])
    names += [entry["what"] for entry in state.get("committed") or [] if entry["sent"]]
    return names


def uncommitted(state: AgentState) -> list[str]:
    """Plan steps that commit something (place the order, delete, send...) left open, with no action
    that ran on a target naming the step's verb, or on a committing one ("Pay now") sharing a word."""
    plan = state.get("plan") or []
    progress = state.get("progress") or {"current": 1, "done": [], "blocked": []}
    settled = set(progress["done"]) | set(progress["blocked"])
    ran = [(_words(t), bool(_commits(t))) for t in ran_targets(state)]
    went = [entry for entry in state.get("committed") or [] if entry["sent"]]
    missing = []
    for index, step in enumerate(plan[:-1], start=1):
        found = _commits(step) if index not in settled else None
        if found is None or done_by(step, went) is not None:  # allowed, and its request went
            continue
        words = _words(step)
        # The committing word, wherever the language puts it ("Place the order", "Bestellung aufgeben").
        verb = found.group(0).lower()[:5]
        if not any(verb in target or (commits and words & target) for target, commits in ran):
            missing.append(step)
    return missing


def objections(state: AgentState, answer: str) -> list[Objection]:
    """What the evidence holds against the answer (nothing: it stands)."""
    if not answer.strip():
        told = "Your answer is empty. Tell the user what you did and what you found."
        return [Objection(told, "the answer is empty")]
    found: list[Objection] = []
    admits = admits_failure(answer)
    actions = state.get("actions") or []
    last = next((a for a in reversed(actions) if a["acting"]), None)
    if last and not last["ok"] and _claims_success(answer) and not admits:
        target = last["target"][:80]
        found.append(
            Objection(
                f"Your answer reports success, but the last action ({target}) failed. "
                "Check the page and either finish it or tell the user it did not work.",
                f"the last action failed: {target}",
            )
        )
    observation = state.get("observation")
    dialog = observation["dialog"] if observation is not None else None
    quoted = bool(dialog and dialog["message"] and dialog["message"][:40] in answer)
    if dialog and not admits and not quoted:
        # The dialog's words are the page's: the model reads them in the observation, not from the app.
        found.append(
            Objection(
                "A dialog of the site is still open (see the page): what it asks has not happened. "
                "Answer it with handle_dialog, or tell the user it is still open.",
                f"a dialog of the site is still open: '{dialog['message'][:120]}'",
            )
        )
    if not admits:
        for step in uncommitted(state):
            found.append(
                Objection(
                    f"The plan's step '{step}' is open and nothing that ran shows it was done. Do it (and "
                    "mark it done), or tell the user it is not done.",
                    f"the plan's step '{step}' was not done",
                )
            )
    return found


def closed_by(state: AgentState, answer: str, doubts: list[str]) -> dict[str, object]:
    """The progress update an answer implies: open plan items are done, unless it admits a failure or
    the app doubts it (then they stay open and the summary shows them)."""
    plan = state.get("plan") or []
    progress = state.get("progress") or {"current": 1, "done": [], "blocked": []}
    if not plan or doubts or admits_failure(answer):
        return {}
    settled = set(progress["done"]) | set(progress["blocked"])
    done = sorted({*progress["done"], *(i for i in range(1, len(plan)) if i not in settled)})
    return {"progress": {**progress, "done": done}}


def answers_again(state: AgentState, ctx: AgentContext) -> bool:
    """Whether the model, sent back now, gets another call (else the step limit would end the run and
    drop the answer: the doubt goes to the user instead)."""
    return state.get("llm_calls", 0) < ctx.limits.max_llm_calls and not at_limit(state, ctx)


async def goal_validator(state: AgentState, runtime: Runtime[AgentContext]) -> Command[Next]:
    message = last_ai(state)
    answer = str(message.content) if message is not None else ""
    checks = dict(state.get("checks") or {})
    found = objections(state, answer)
    if found and checks.get("goal", 0) < 1 and answers_again(state, runtime.context):
        checks["goal"] = checks.get("goal", 0) + 1
        note = feedback(" ".join(o.to_model for o in found))
        return Command(update={"messages": [note], "checks": checks}, goto="agent")
    doubts = [o.to_user for o in found]
    update: dict[str, object] = {**closed_by(state, answer, doubts), "doubts": doubts}
    if not answers_again(cast(AgentState, {**state, **update}), runtime.context):
        update["checks"] = {**checks, "quality": max(1, checks.get("quality", 0))}  # no send-back there
    return Command(update=update, goto="quality_evaluator")
