"""What a `BrowserSession` passes between the agent and its network policy (F46): the sites of the task,
what the policy refused, the effect gate's one-time tokens and what it held or let go, the downloads of
the agent's tabs, the files the user named for upload. A mixin of `BrowserSession`; nothing here decides
anything (sandbox/network.py does).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from browser_copilot.errors import McpUnavailable
from browser_copilot.sandbox.download_events import Download
from browser_copilot.sandbox.effects import Allowed, HeldRequest, SentRequest
from browser_copilot.sandbox.guard import Allow
from browser_copilot.sandbox.network import NetworkGuard
from browser_copilot.sandbox.urls import Refusal

if TYPE_CHECKING:
    from browser_copilot.browser.calls import SessionFacts
    from browser_copilot.browser.mcp_server import ServerSpec


class SessionPolicy:
    """The session's side of its network policy (None while the session is closed)."""

    network: NetworkGuard | None
    spec: ServerSpec | None
    facts: SessionFacts

    def name_sites(self, text: str) -> None:
        """Sites the user's messages name are part of the task (the network policy's rule without lists)."""
        if self.network is not None:
            self.network.name_sites(text)

    def use_sites(self, sites: set[str]) -> None:
        """The task's sites from now on are this set (a session's own: a site named in one session
        never becomes part of another's task); the policy adds the sites it learns to it."""
        if self.network is not None:
            self.network.use_sites(sites)

    def refusals(self) -> list[Refusal]:
        """What the network policy refused since the last time this was asked."""
        return self.network.refusals() if self.network is not None else []

    def downloads(self) -> list[Download]:
        """The downloads of the agent's tabs, as the browser reported them (oldest first)."""
        return self.network.downloads() if self.network is not None else []

    async def download_begun(self, timeout: float) -> None:
        """Wait, up to `timeout` seconds, until a download of the agent's tabs begins."""
        if self.network is not None:
            await self.network.download_begun(timeout)

    async def downloads_finished(self, timeout: float) -> None:
        """Wait, up to `timeout` seconds, until no download of the agent's tabs is still coming."""
        if self.network is not None:
            await self.network.downloads_finished(timeout)

    def downloads_begun(self) -> int:
        return self.network.downloads_begun if self.network is not None else 0

    def issue(self, allow: Allow, how: Allowed, scope: str | None = None) -> None:
        """`allow`'s one-time token opens a `how` window (a user's /yes: approved; the judge: judged);
        `scope`: the category the user's card showed (what else commits in the window is held)."""
        if self.network is not None:
            self.network.issue(allow.token, how, scope)

    def held_requests(self) -> list[HeldRequest]:
        """Requests the effect gate held since the last time this was asked."""
        return self.network.held_requests() if self.network is not None else []

    def sent_requests(self) -> list[SentRequest]:
        """Writing or committing requests the agent's inputs let leave since the last time this was asked."""
        return self.network.sent_requests() if self.network is not None else []

    def app_window(self, kind: str, allowed: Allowed) -> None:
        """The app itself acts in the agent's tab (it answers the page's dialog)."""
        if self.network is not None:
            self.network.app_window(kind, allowed)

    def stage_upload(self, source: Path) -> Path:
        """Copy a file into the folder the sandboxed MCP server may read, for `setInputFiles`."""
        if self.spec is None:
            raise McpUnavailable("the browser session is closed")
        folder = Path(self.spec.env["TMPDIR"]) / "uploads"
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / source.name
        shutil.copyfile(source, target)
        if str(target) not in self.facts.uploads:
            self.facts.uploads.append(str(target))
        return target


__all__ = ["SessionPolicy"]
