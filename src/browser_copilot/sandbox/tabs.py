"""The browser's targets as the network policy knows them, and which run's guard a tab belongs to."""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass, field


@dataclass
class Target:
    """A target (tab, frame, worker) of the browser as the guard's connection knows it."""

    id: str
    kind: str
    url: str = ""
    opener: str | None = None
    tab: str = ""
    """The page target (tab) it belongs to; a page's own id."""
    session: str | None = None
    agent: bool = False
    opened_by_agent: bool = False
    """A tab the agent's code opened (a popup or a new page): closed when its first page is refused."""
    created_in_call: bool = False
    committed: bool = False
    """A tab that has shown an http(s) page (so it is not closed when a later navigation is refused)."""
    covered: bool = False
    """Fetch (and the WebSocket rules) are on in its session."""
    watched: bool = False
    """Network (for the WebSocket rules) and Runtime (for the guard's binding) are on in its session."""
    born: float = field(default_factory=time.monotonic)
    asked: bool = False
    """Its main frame's first document was decided (let go, refused or held) or loaded: a tab an input
    opened has said what it sends (`NetworkGuard.acting` waits for that before the call's windows close)."""
    elsewhere: bool = False
    """A tab another app process opened for a run of its own (a worker beside this one on the same
    browser): its first address carried that process's `RUN_MARK`. Never this guard's."""


RUN_MARK = secrets.token_hex(8)
"""This process's mark on the tabs it opens for its runs (`run_tab_url`). Processes on one browser
(several workers) do not share `TabOwners`; a tab that opens while a guard's call is in flight would
otherwise be taken for that call's doing, and its requests decided by the wrong run's rules."""
_MARKED = re.compile(r"^about:blank#bc-run=([0-9a-f]+)")


def run_tab_url() -> str:
    """The address a run's own new tab opens on: blank, with this process's mark."""
    return f"about:blank#bc-run={RUN_MARK}"


def opened_elsewhere(url: str) -> bool:
    """A tab another app process opened for its run (its mark is not this process's)."""
    found = _MARKED.match(url)
    return found is not None and found.group(1) != RUN_MARK


class TabOwners:
    """Which guard covers which tab when several share one browser (parallel runs, `browser.pool`): a
    tab another run's guard has made its agent's tab is that guard's alone — the others neither judge
    its requests with their task's sites nor learn sites from it."""

    def __init__(self) -> None:
        self._owner: dict[str, object] = {}

    def claim(self, tab: str, guard: object) -> None:
        self._owner[tab] = guard

    def other(self, tab: str, guard: object) -> bool:
        owner = self._owner.get(tab)
        return owner is not None and owner is not guard

    def drop(self, tab: str) -> None:
        self._owner.pop(tab, None)

    def others_of(self, guard: object) -> list[str]:
        """The tabs other runs' guards cover: the code of `guard`'s run neither sees nor acts in them."""
        return sorted(tab for tab, owner in self._owner.items() if owner is not guard)

    def release(self, guard: object) -> None:
        """A guard that stops for good gives its tabs back."""
        for tab in [t for t, owner in self._owner.items() if owner is guard]:
            del self._owner[tab]
