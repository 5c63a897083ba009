"""What every code call carries besides its code (F45): the call's id and deadline, the end of any
earlier call's code, the session's facts for the guarded calls, and the answer's wrapper taken off.

- Every call (the app's own too) begins by ending whatever an earlier call's code may still be doing in
  the box (`facade.js` `revokeAll`): a call never starts while earlier code can act. It leaves its id and
  deadline on the browser context for call.js (`__bcCall`).
- The session's facts (`__bcSession`) are told to its MCP process when they change: its own tabs (the
  target ids of the agent's tab and the tabs its code opened), the origins no agent tab may show (the
  app's own server, the DevTools endpoint), the files the user named for upload.
- A guarded call answers `{__bcActed, value, opened, images, banner, bannerHeld}` (call.js), with
  `error` instead of `value` when the code failed and the app's part had news; `unwrap` gives the value
  (or the error) back and keeps the rest on the result.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field, replace

from browser_copilot.browser.results import UNDEFINED, CodeResult
from browser_copilot.sandbox.guard import ACTED

_ids = itertools.count(1)
_MARGIN_S = 2.0
"""The box ends the call's code this long before the app stops waiting for the answer."""


def wrap_call(code: str, timeout: float) -> str:
    """`code` as one call: earlier calls' code ended first, this call's id and deadline left for call.js."""
    deadline_ms = int((time.time() + max(1.0, timeout - _MARGIN_S)) * 1000)
    call = json.dumps({"id": str(next(_ids)), "deadline": deadline_ms})
    return (
        "async (page) => { const __c = page.context();"
        " if (__c.__bcBox) __c.__bcBox.revokeAll('Stopped: the app began another call.');"
        f" __c.__bcCall = {call};"
        f" return await ({code})(page); }}"
    )


REVOKE = (
    "async (page) => { const c = page.context();"
    " if (c.__bcBox) c.__bcBox.revokeAll('Stopped: the app ended this call.'); return 'revoked'; }"
)
"""Ends what a call's code may still be doing (after a time-out or an interruption)."""


@dataclass
class SessionFacts:
    """What the guarded calls of one session must know, and what its MCP process was last told."""

    owned: set[str] = field(default_factory=set)
    uploads: list[str] = field(default_factory=list)
    told: str | None = None

    def code(self, forbidden: list[str]) -> str | None:
        """The call that tells the MCP process the facts, or None when it knows them already."""
        facts = json.dumps(
            {"owned": sorted(self.owned), "forbidden": forbidden, "uploads": self.uploads}, sort_keys=True
        )
        if facts == self.told:
            return None
        return f"async (page) => {{ page.context().__bcSession = {facts}; return {json.dumps(facts)}; }}"

    def learned(self, result: CodeResult) -> None:
        """The facts call answered with what it told."""
        if result.ok and isinstance(result.value, str):
            self.told = result.value


def unwrap(result: CodeResult) -> tuple[CodeResult, float | None, list[str]]:
    """(the result with the guarded call's value, when its last input came back (epoch s), the target ids
    of the tabs its code opened)."""
    value = result.value
    if not (result.ok and isinstance(value, dict) and ACTED in value):
        return result, None, []
    acted = value.get(ACTED)
    when = acted / 1000 if isinstance(acted, int | float) and not isinstance(acted, bool) else None
    opened = [str(t) for t in value.get("opened") or [] if t]
    images = tuple(str(i) for i in value.get("images") or [])
    notes = {k: value[k] for k in ("banner", "bannerHeld", "made") if value.get(k)}
    if "resuming" in value:  # a run going on after an allowed input: how many inputs it had yet to pass
        notes["resuming"] = value["resuming"]
    if isinstance(value.get("error"), str):  # the code failed, and the app's part had news
        failed = replace(result, ok=False, value=UNDEFINED, error=value["error"], images=images, notes=notes)
        return failed, when, opened
    return replace(result, value=value.get("value", UNDEFINED), images=images, notes=notes), when, opened


__all__ = ["REVOKE", "SessionFacts", "unwrap", "wrap_call"]
