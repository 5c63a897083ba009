"""The app's network policy (F46): what the agent's tabs may load and send, decided before it leaves.

The app — never the model — holds a DevTools connection of its own to the browser, separate from the
MCP server's (a compromised MCP process cannot switch it off), and decides every request and
navigation of the agent's tabs, popups, frames and workers at CDP `Fetch`'s request stage. The rule
is written down in README "Network policy"; `UrlPolicy.judge` is its one implementation.

What Chromium 156 does, measured (tests/security/test_network.py, bench/network.py):
- Auto-attach with `waitForDebuggerOnStart` holds the first navigation of a tab made by
  `context().newPage()` or a target=_blank link until this connection resumes it; a `window.open` popup
  is resumed by Playwright's own auto-attach first. So while a code call runs (and a few seconds after,
  while the page may still use the click's user activation to open one), a browser-wide `Fetch` also
  pauses every request, and new tabs are covered before they load anything.
- Fetch sees `file:` documents (refused there, however the URL was built). It does not see `chrome:`,
  `devtools:` or top-level `data:` navigations: those are cancelled at `Page.frameStartedNavigating` by
  navigating the frame to about:blank. `view-source:` of an http(s) page is taken back when it commits.
- Fetch does not see WebSockets; `Network.setBlockedURLs` does not stop them either. Per-target network
  conditions (`Network.emulateNetworkConditionsByRule`, offline by URL pattern) do, for pages,
  out-of-process frames, dedicated and shared workers.
- Dedicated workers' requests pause in their page's session; out-of-process iframes and service
  workers have sessions of their own (auto-attached from the page's session, paused until covered).
- A request paused by this connection is let go by Chrome when the connection closes: a request the
  effect gate holds is therefore refused at once, never kept paused (effects.py).

Besides the URL policy, every request that may commit something passes the effect gate (effects.py):
the guard in the page tells this connection, through the `__bcEffect` binding of its isolated world,
when an input it let go opens its window.

The parts: `network_targets` (the targets as they come, covering the agent's, taking back what must not
show), `network_requests` (each paused request decided), `tabs` (which run a tab belongs to),
`download_events` (the browser's downloads); this module holds the connection's life and the code calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp

from browser_copilot.errors import NetworkPolicyDown
from browser_copilot.sandbox.cdp import CdpError
from browser_copilot.sandbox.download_events import Download, Downloads
from browser_copilot.sandbox.effects import EffectGate
from browser_copilot.sandbox.network_requests import RequestGate
from browser_copilot.sandbox.network_targets import ALL_REQUESTS, GuardConnection
from browser_copilot.sandbox.tabs import TabOwners
from browser_copilot.sandbox.urls import Refusal, UrlPolicy, named_sites

log = logging.getLogger(__name__)

OPENED_WAIT = 10.0
"""How long a call's end waits for a tab its input opened to send its first request (it is usually there
within milliseconds; a tab that never asks, e.g. a popup left blank, costs this once)."""
GRACE_SECONDS = 6.0
"""How long after a code call the browser-wide interception stays on: a page keeps the user activation of
the code's last click for 5 s, long enough for a timer the code left behind to open a popup."""


class NetworkGuard(RequestGate):
    """The app's own DevTools connection deciding what the agent's targets load and send.

    `BrowserSession` starts it after the MCP server, tells it which tab is the agent's
    (`set_agent_tab`), wraps every code call in `acting()`, and drains `refusals()` for the model.
    """

    def __init__(
        self,
        policy: UrlPolicy,
        *,
        notice: Callable[[str], None] | None = None,
        owners: TabOwners | None = None,
    ) -> None:
        super().__init__(policy, notice=notice, owners=owners)
        self.effects = EffectGate()
        self._told = {}
        self.paused = 0
        self._endpoint = ""
        self._browser_fetch = False
        self._fetch_lock = asyncio.Lock()
        self._grace: asyncio.Task[None] | None = None
        self._downloads = Downloads()

    @property
    def connected(self) -> bool:
        return self._cdp is not None and not self._cdp.closed.is_set()

    async def start(self, endpoint: str) -> None:
        """Connect to the browser's DevTools endpoint and cover the agent's targets from now on."""
        await self.stop()
        self._targets.clear()  # discovery reports every target again
        self._frames.clear()
        self._loading.clear()
        if endpoint != self._endpoint:  # another browser: the session tells it the agent's tab again
            self._agent_tabs.clear()
        self._endpoint = endpoint
        self.policy.forbid(endpoint)
        try:
            self._cdp = await GuardConnection.open(endpoint, self._on_event)
            await self._cdp.send("Target.setDiscoverTargets", {"discover": True})
            # Downloads go where the browser saves them (its own setting is kept); it says where.
            await self._cdp.send(
                "Browser.setDownloadBehavior", {"behavior": "default", "eventsEnabled": True}
            )
            await self._cdp.send(
                "Target.setAutoAttach",
                {
                    "autoAttach": True,
                    "waitForDebuggerOnStart": True,
                    "flatten": True,
                    "filter": [{"type": "page"}, {"type": "shared_worker"}],
                },
            )
        except (OSError, aiohttp.ClientError, CdpError, KeyError, ValueError, TimeoutError) as exc:
            await self.stop()
            raise NetworkPolicyDown(self._down_reason(exc)) from exc

    def _down_reason(self, exc: BaseException) -> str:
        refused = isinstance(exc, OSError | aiohttp.ClientConnectionError)
        cause = "connect ECONNREFUSED" if refused else f"{type(exc).__name__}: {exc}"
        return (
            f"Browser Copilot's network policy could not connect to the browser at {self._endpoint} "
            f"({cause}); no code runs in the browser without it."
        )

    async def ensure(self) -> None:
        """Reconnect when the connection dropped; `NetworkPolicyDown` when that fails (fail closed)."""
        if self.connected:
            return
        if not self._endpoint:
            raise NetworkPolicyDown(
                "Browser Copilot's network policy is not started; no code runs without it."
            )
        self._notice("The network policy's connection to the browser dropped; connecting again.")
        await self.start(self._endpoint)

    async def stop(self) -> None:
        if self._grace is not None:
            self._grace.cancel()
            self._grace = None
        for task in list(self._tasks):
            task.cancel()
        cdp, self._cdp = self._cdp, None
        if cdp is not None:
            await cdp.close()  # the browser resumes whatever this connection had paused
        self._sessions.clear()
        self._dialogs.clear()
        self._downloads.stopped()
        self._browser_fetch = False
        for target in self._targets.values():
            target.session, target.covered, target.watched = None, False, False

    def describe(self) -> str:
        if self.policy.allowed:
            rule = f"only {', '.join(self.policy.allowed)} (ALLOWED_DOMAINS)"
        else:
            rule = "no data to sites outside the task"
        if self.policy.blocked:
            rule += f"; never {', '.join(self.policy.blocked)} (BLOCKED_DOMAINS)"
        return (
            f"own DevTools connection to {self._endpoint}; http(s) only, {rule}; "
            f"refused: {', '.join(self.policy.forbidden_origins) or 'none'}"
        )

    @property
    def downloads_running(self) -> bool:
        return self._downloads.running

    async def in_tab(
        self, target_id: str, method: str, params: dict[str, Any], *, timeout: float
    ) -> dict[str, Any] | None:
        """One DevTools command in the session of tab `target_id`: its answer, or None when this
        connection has no session there, or a JavaScript dialog is open there or opens before the answer
        (a page under a dialog answers nothing; the code tool reports the dialog). Raises `CdpError`."""
        cdp = self._cdp
        target = self._targets.get(target_id)
        session = target.session if target is not None else None
        if cdp is None or session is None or session in self._dialogs:
            return None
        opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters = self._dialog_waiters.setdefault(session, set())
        waiters.add(opened)
        answer = asyncio.ensure_future(cdp.send(method, params, session, timeout=timeout))
        try:
            either: set[asyncio.Future[Any]] = {answer, opened}
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiters.discard(opened)
            opened.cancel()
        if answer.done():
            return answer.result()
        answer.cancel()
        with contextlib.suppress(asyncio.CancelledError, CdpError):
            await answer
        return None

    async def browser_call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """One DevTools command to the browser itself (`Target.getTargets`). Raises `CdpError`."""
        if self._cdp is None:
            raise CdpError("the network policy's connection is closed")
        return await self._cdp.send(method, params)

    async def set_agent_tab(self, target_id: str, *, bring_in: bool = False) -> None:
        """The agent works in this tab (from now on it stays covered); `bring_in`: it is the user's page,
        whose site is part of the task."""
        self._agent_tabs.add(target_id)
        self.owners.claim(target_id, self)
        target = self._targets.get(target_id)
        if target is not None:
            target.opened_by_agent = False
            if bring_in:
                self.bring_in(target.url)
        await self._adopt(target_id)

    def name_sites(self, text: str) -> None:
        """Sites the user's messages name (a domain or a URL) are part of the task."""
        self._add_sites(named_sites(text))

    @property
    def sites(self) -> set[str]:
        return set(self._sites)

    def use_sites(self, sites: set[str]) -> None:
        """The task's sites are this set from now on (a session's own, `BrowserSession.use_sites`); what
        the guard learns is added to it."""
        self._sites = sites
        self.refresh_rules()

    def refusals(self) -> list[Refusal]:
        """What was refused since the last call (and forget it)."""
        drained, self._refusals = self._refusals, []
        return drained

    @contextlib.asynccontextmanager
    async def acting(self) -> AsyncIterator[None]:
        """A code call is in flight: every tab is covered (the code can reach any), new tabs are the
        agent's, and the browser-wide interception is on until `GRACE_SECONDS` after the last call."""
        self._calls += 1
        self.effects.call_began()
        began = time.monotonic()
        if self._calls == 1:
            self.closed_tabs = 0
        try:
            if self._grace is not None:
                self._grace.cancel()
                self._grace = None
            await self._set_browser_fetch(True)
            # The code can reach any tab (`pages()`): each says who made its requests before it runs.
            await asyncio.gather(*(self._watch(t, wait=True) for t in list(self._targets.values())))
            yield
            # What the browser said before the call returned is decided before the call counts as over
            # (the connection handles events in order; on a busy machine they can lag behind the call).
            if self._cdp is not None:
                with contextlib.suppress(CdpError):
                    await self._cdp.send("Browser.getVersion", timeout=5)
            # A tab the call's input opened may start after the call returned (on a busy machine, seconds
            # later): its first request is the input's, so the windows stay open until it came.
            await self.opened_asked(began, OPENED_WAIT)
        finally:
            self._calls -= 1
            self.effects.call_ended()
            if self._calls == 0:
                self._call_ended = time.monotonic()
                for target_id in list(self._to_close):
                    await self._close_tab(target_id)
                if self.connected:
                    self._grace = asyncio.create_task(self._grace_then_off())

    async def _grace_then_off(self) -> None:
        await asyncio.sleep(GRACE_SECONDS)
        if self._calls == 0 and not any(t.agent and not t.covered for t in self._targets.values()):
            await self._set_browser_fetch(False)

    async def _set_browser_fetch(self, on: bool) -> None:
        async with self._fetch_lock:
            if self._browser_fetch == on or self._cdp is None:
                return
            try:
                await self._cdp.send("Fetch.enable" if on else "Fetch.disable", ALL_REQUESTS if on else {})
            except CdpError as exc:
                if on:
                    raise NetworkPolicyDown(f"Browser Copilot's network policy failed: {exc}") from exc
                return
            self._browser_fetch = on

    async def _on_event(self, method: str, params: dict[str, Any], session: str | None) -> None:
        name = _HANDLERS.get(method)
        if name is not None:
            await getattr(self, name)(params, session)

    async def download_begun(self, timeout: float) -> None:
        """Wait, up to `timeout` seconds, until a download of the agent's tabs begins."""
        await self._downloads.one_begun(timeout)

    async def downloads_finished(self, timeout: float) -> None:
        """Wait, up to `timeout` seconds, until no download of the agent's tabs is still coming."""
        await self._downloads.all_finished(timeout)

    def downloads(self) -> list[Download]:
        """The downloads of the agent's tabs, oldest first (what `read_download` may read)."""
        return self._downloads.mine()

    @property
    def downloads_begun(self) -> int:
        """Downloads any tab began since the connection opened (`browser.look`)."""
        return self._downloads.begun

    async def _download_begins(self, params: dict[str, Any], session: str | None) -> None:
        target = self._tab_of(None, str(params.get("frameId") or ""))
        self._downloads.began(params, agent=target is not None and target.agent)

    async def _download_progress(self, params: dict[str, Any], session: str | None) -> None:
        self._downloads.progressed(params)


_HANDLERS = {
    # the DevTools event -> the guard's method that handles it
    "Target.targetCreated": "_target_created",
    "Target.targetInfoChanged": "_target_changed",
    "Target.targetDestroyed": "_target_destroyed",
    "Target.attachedToTarget": "_attached",
    "Target.detachedFromTarget": "_detached",
    "Page.frameAttached": "_frame_attached",
    "Page.frameDetached": "_frame_detached",
    "Page.lifecycleEvent": "_lifecycle",
    "Page.frameStoppedLoading": "_stopped_loading",
    "Page.frameStartedNavigating": "_navigating",
    "Fetch.requestPaused": "_request",
    "Page.javascriptDialogOpening": "_dialog_opening",
    "Page.javascriptDialogClosed": "_dialog_closed",
    "Browser.downloadWillBegin": "_download_begins",
    "Browser.downloadProgress": "_download_progress",
    "Runtime.bindingCalled": "_binding",
}


__all__ = ["GRACE_SECONDS", "NetworkGuard"]
