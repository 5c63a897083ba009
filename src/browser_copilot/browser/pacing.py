"""Human pacing of the model's browser actions (PACING): what `pacing.js` is given, and its source.

The pacing runs where the model's calls go through, the membrane (`sandbox/membrane.js`), as its
`beforeAction` hook; `browser.guarded.guarded_code` puts it there when the mode is `human`. `auto` is
decided per call: `human` in a browser the user runs, `off` in a browser the app launched.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Literal

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
