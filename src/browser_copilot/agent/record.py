"""What really ran (F24, F28): the actions the user allowed, with the requests they let leave.

A step, a step-limit summary and the answer check say what the record shows, not what the plan or the
model says: an allowed action is `Committed` with the requests the network policy's effect gate saw
its input send (`BrowserSession.sent_requests`). A plan step that names what a committed action did
is done, and the suggested next step never repeats it."""

from __future__ import annotations

import asyncio
import re
import time

from browser_copilot.agent.state import AgentState, Committed
from browser_copilot.agent.wordlists import word_pattern
from browser_copilot.browser.session import BrowserSession
from browser_copilot.plain_steps import thing

SETTLE_SECONDS = 1.0
"""How long after an allowed input the app waits for its request to show, when none has yet."""

_WORD = re.compile(r"\w{3,}")
_COMMON = {"the", "and", "for", "you", "your", "with", "from", "this", "that", "into", "now", "all"}


async def requests_sent(browser: BrowserSession, *, wait: bool = True) -> list[str]:
    """The writing or committing requests the agent's inputs let leave since the last time this was
    asked; with `wait`, polled for up to `SETTLE_SECONDS` while none has shown (a send set off by the
    input itself, a moment after it)."""
    sent = browser.sent_requests()
    deadline = time.monotonic() + (SETTLE_SECONDS if wait else 0.0)
    while not sent and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        sent = browser.sent_requests()
    return list(dict.fromkeys(str(s) for s in sent))


def forget_sent(browser: BrowserSession) -> None:
    """Drop what earlier inputs sent, before the input whose requests are wanted."""
    browser.sent_requests()


def record(state: AgentState, what: str, category: str, sent: list[str]) -> list[Committed]:
    """The goal's record with one more allowed action that ran."""
    entry: Committed = {
        "what": what,
        "category": category,
        "sent": sent[:5],
        "step": state.get("tool_steps", 0),
    }
    return [*(state.get("committed") or []), entry][-20:]


def sent_words(sent: list[str]) -> str:
    """' the browser sent POST shop.test/checkout.' or, when nothing was seen, the honest doubt."""
    if sent:
        return f" The browser sent {', '.join(sent[:3])}."
    return (
        " No request to the site was seen for it: look at the page before saying it happened "
        "(do not do it again without the user)."
    )


def _words(text: str) -> set[str]:
    return {w.lower()[:5] for w in _WORD.findall(text)} - _COMMON


def done_by(step: str, committed: list[Committed]) -> Committed | None:
    """The committed action a plan step names ("Place the order" ~ "places the order ($500.00)"): its
    committing word, wherever the language puts it, or a word of it in the action's words."""
    found = word_pattern("outcome_words.json", "commits").search(step)
    words = _words(step)
    for entry in reversed(committed):
        theirs = _words(f"{entry['what']} {entry['category']}")
        if found is not None and found.group(0).lower()[:5] in theirs:
            return entry
        if found is not None and words & theirs:
            return entry
    return None


def described(entry: Committed) -> str:
    """'the button “Place order”, allowed by you (POST shop.test/checkout)'."""
    went = f" ({', '.join(entry['sent'][:2])})" if entry["sent"] else " (no request to the site seen)"
    return f"{thing(entry['what'])}, allowed by you{went}"


__all__ = ["described", "done_by", "forget_sent", "record", "requests_sent", "sent_words"]
