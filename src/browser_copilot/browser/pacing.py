"""Human pacing of the model's browser actions (PACING): what `pacing.js` is given, and its source.

The pacing runs where the model's calls go through, the membrane (`sandbox/membrane.js`), as its
`beforeAction` hook; `browser.guarded.guarded_code` puts it there when the mode is `human`. `auto` is
decided per call: `human` in a browser the user runs, `off` in a browser the app launched.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any, Literal
from urllib.parse import urlsplit

from browser_copilot.scripts import script_source

PacingMode = Literal["off", "human", "auto"]


@dataclass(frozen=True, slots=True)
class Pacing:
    mode: PacingMode = "off"
    actions_per_minute: int = 30
    """At most this many actions per site (origin) in any `window_ms`."""
    same_site_gap_ms: int = 1500
    """Minimum time between two navigations to the same site."""
    window_ms: int = 60_000
    """The rate limit's window (a minute; tests shrink it)."""
    key_median_ms: float = 100.0
    key_sigma: float = 0.35
    """Per-key gaps are log-normal: median `key_median_ms`, log-space spread `key_sigma`."""
    click_pause_ms: tuple[int, int] = (150, 600)
    pause_ms: tuple[int, int] = (250, 900)
    """A longer pause while typing: after a space or punctuation 12% of the time, elsewhere 3%."""
    max_typed_chars: int = 400
    """Longer text is filled at once (as if pasted), so that a code call stays within its timeout."""

    def for_browser(self, *, launched: bool) -> Pacing:
        """`auto` resolved: off for a browser the app launched, human for the user's own browser."""
        if self.mode != "auto":
            return self
        return replace(self, mode="off" if launched else "human")

    @property
    def active(self) -> bool:
        return self.mode == "human"

    def to_js(self) -> dict[str, Any]:
        return {
            "perWindow": self.actions_per_minute,
            "windowMs": self.window_ms,
            "sameSiteGapMs": self.same_site_gap_ms,
            "keyMedianMs": self.key_median_ms,
            "keySigma": self.key_sigma,
            "keyMinMs": 35,
            "keyMaxMs": 450,
            "clickPauseMs": list(self.click_pause_ms),
            "pauseMs": list(self.pause_ms),
            "wordPauseChance": 0.12,
            "pauseChance": 0.03,
            "maxTypedChars": self.max_typed_chars,
            "probeTimeoutMs": 3000,
        }


def pacing_source() -> str:
    """pacing.js without its `//` comment lines: `(page, config, isSecretSource) => beforeAction`."""
    return script_source("browser_copilot.browser", "pacing.js")


def pacing_hook(pacing: Pacing, secret_source: str) -> str:
    """The JavaScript expression of the membrane's `beforeAction` hook (`page` is the real page)."""
    return f"({pacing_source()})(page, {json.dumps(pacing.to_js())}, {json.dumps(secret_source)})"


PACED_MARK = '"perWindow"'
"""In the code of a call the pacing hook paces (its configuration, `Pacing.to_js`)."""
_KEPT_MS = 10 * 60_000
"""How long the ledger keeps an action's time (longer than any window)."""

_LEDGER_IN = """async (page) => {
  const context = page.context();
  const state = context.__bcPacing || (context.__bcPacing = { actions: {}, navigations: {} });
  const ledger = %s;
  for (const [site, times] of Object.entries(ledger.actions)) {
    state.actions[site] = [...new Set([...(state.actions[site] || []), ...times])].sort((a, b) => a - b);
  }
  for (const [site, at] of Object.entries(ledger.navigations)) {
    state.navigations[site] = Math.max(state.navigations[site] || 0, at);
  }
}"""
_LEDGER_OUT = "async (page) => page.context().__bcPacing || null"


class PacingLedger:
    """The per-site pacing counts of every run in one browser (parallel runs, `browser.pool`).

    Each MCP server process keeps its counts on its own browser context object (pacing.js); with more
    than one process on a browser (`sharing`), a paced call first gets the ledger's counts, and its own
    go back into the ledger when it ends. Paced calls on the same site take turns (`turn`), so that the
    counts a call starts from are complete: per-site limits hold for all runs together."""

    def __init__(self) -> None:
        self.sharing = False
        self.actions: dict[str, list[float]] = {}
        self.navigations: dict[str, float] = {}
        self._turns: dict[str, asyncio.Lock] = {}

    @contextlib.asynccontextmanager
    async def turn(self, url: str | None) -> AsyncIterator[None]:
        lock = self._turns.setdefault(_origin(url or ""), asyncio.Lock())
        async with lock:
            yield

    def seed_code(self) -> str:
        """The app's code that gives a server process the ledger's counts."""
        return _LEDGER_IN % json.dumps({"actions": self.actions, "navigations": self.navigations})

    read_code = _LEDGER_OUT

    def merge(self, state: object) -> None:
        """A process's counts (what `read_code` returned) into the ledger."""
        if not isinstance(state, dict):
            return
        now = time.time() * 1000
        for site, times in dict(state.get("actions") or {}).items():
            kept = {float(t) for t in [*self.actions.get(str(site), []), *times] if float(t) > now - _KEPT_MS}
            self.actions[str(site)] = sorted(kept)
        for site, at in dict(state.get("navigations") or {}).items():
            self.navigations[str(site)] = max(self.navigations.get(str(site), 0.0), float(at))


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") else ""
