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
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import re
import secrets
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlsplit

import aiohttp

from browser_copilot.errors import NetworkPolicyDown
from browser_copilot.safety.addresses import request_commits
from browser_copilot.sandbox.cdp import CdpConnection, CdpError
from browser_copilot.sandbox.effects import TAIL_SECONDS, Allowed, EffectGate, HeldRequest, SentRequest
from browser_copilot.sandbox.urls import (
    LOOPBACK,
    NEW_TAB,
    Refusal,
    Request,
    UrlPolicy,
    blank,
    is_ip,
    named_sites,
    short_url,
    site_of,
)

log = logging.getLogger(__name__)

GRACE_SECONDS = 6.0
"""How long after a code call the browser-wide interception stays on: a page keeps the user activation of
the code's last click for 5 s, long enough for a timer the code left behind to open a popup."""

# ----- the DevTools connection -------------------------------------------------------------------


_NETWORK_EVENT = '{"method":"Network.'
"""How Chromium starts an event of the Network domain: never parsed (Network is on only for the
WebSocket rules)."""
_RUNTIME_EVENT = '{"method":"Runtime.'
_BINDING = '{"method":"Runtime.bindingCalled"'
"""Of Runtime's events only the guard's binding is read (`__bcEffect`: an input's window opens)."""
EFFECT_BINDING = "__bcEffect"
GUARD_WORLD = "__bc_guard"
_READS = frozenset({"GET", "HEAD", "OPTIONS"})
_KEPT_REFUSALS = 100
"""Refusals kept until the next code call asks (a page left open refuses its beacons for hours)."""
_SUBFRAME_SCHEMES = ("http", "https", "about", "data", "blob")
_WAIT_FOR_WINDOW = 2.0
"""How long a committing request during a call waits for the guard's word about its tab's input. The word
is sent before the input and usually comes first; on a loaded machine it came 0.3 s after the request,
which then counted as the page's own and left without a card."""


def _requested(params: dict[str, Any]) -> str:
    """The short URL of a paused request (for the log)."""
    return short_url(str((params.get("request") or {}).get("url") or ""))


EventHandler = Callable[[str, dict[str, Any], str | None], Awaitable[None]]


class _Connection(CdpConnection):
    """The guard's DevTools connection: its events go to the guard; Runtime events but the guard's
    binding are skipped, Network events are never parsed (they are many)."""

    def __init__(
        self, http: aiohttp.ClientSession, ws: aiohttp.ClientWebSocketResponse, on_event: EventHandler
    ) -> None:
        super().__init__(http, ws)
        self._on_event = on_event

    @classmethod
    async def open(cls, endpoint: str, on_event: EventHandler, *, timeout: float = 10.0) -> _Connection:
        http, ws = await cls.connect(endpoint, timeout)
        connection = cls(http, ws, on_event)
        connection._start("network-guard")
        return connection

    def _skip(self, text: str) -> bool:
        if text.startswith(_RUNTIME_EVENT):
            return not text.startswith(_BINDING)
        return text.startswith(_NETWORK_EVENT)

    async def _event(self, method: str, params: dict[str, Any], session: str | None) -> None:
        await self._on_event(method, params, session)


# ----- the guard --------------------------------------------------------------------------------


@dataclass
class Download:
    """A download the browser began in one of the agent's tabs, as the browser reported it."""

    guid: str
    name: str
    url: str
    state: str = "started"
    path: str | None = None
    read: bool = False
    """Whether `read_download` gave its text already (without a name it reads the newest not yet read)."""


@dataclass
class _Target:
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
    elsewhere: bool = False
    """A tab another app process opened for a run of its own (a worker beside this one on the same
    browser): its first address carried that process's `RUN_MARK`. Never this guard's."""


_BLOCK_WS = {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}
_PASS_WS = {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}
_ALL_REQUESTS = {"patterns": [{"urlPattern": "*", "requestStage": "Request"}]}

RUN_MARK = secrets.token_hex(8)
"""This process's mark on the tabs it opens for its runs (`run_tab_url`). Processes on one browser
(several workers) do not share `TabOwners`; a tab that opens while a guard's call is in flight would
otherwise be taken for that call's doing, and its requests decided by the wrong run's rules."""
_MARKED = re.compile(r"^about:blank#bc-run=([0-9a-f]+)")


def run_tab_url() -> str:
    """The address a run's own new tab opens on: blank, with this process's mark."""
    return f"about:blank#bc-run={RUN_MARK}"


def _opened_elsewhere(url: str) -> bool:
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


class NetworkGuard:
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
        self.policy = policy
        self.owners = owners if owners is not None else TabOwners()
        self._notice = notice or (lambda text: log.info("%s", text))
        self._endpoint = ""
        self._cdp: _Connection | None = None
        self._targets: dict[str, _Target] = {}
        self._sessions: dict[str, str] = {}
        self._frames: dict[str, str] = {}
        """frame id -> the target whose session reported it."""
        self._loading: dict[str, bool] = {}
        self._agent_tabs: set[str] = set()
        self._sites: set[str] = set()
        self._calls = 0
        self._call_ended = 0.0
        self._browser_fetch = False
        self._fetch_lock = asyncio.Lock()
        self._grace: asyncio.Task[None] | None = None
        self._to_close: set[str] = set()
        self._refusals: list[Refusal] = []
        self._recent: deque[str] = deque(maxlen=256)
        self._tasks: set[asyncio.Task[None]] = set()
        self.effects = EffectGate()
        self._told: dict[str, asyncio.Event] = {}
        """The windows of the inputs the guard let go, and the requests held in them (effects.py)."""
        self.paused = 0
        """Requests decided so far (for bench/network.py)."""
        self.closed_tabs = 0
        """Tabs the policy closed since the last code call began (opened on a refused URL)."""
        self._dialogs: set[str] = set()
        """Sessions whose page shows a JavaScript dialog (alert, confirm, prompt, beforeunload)."""
        self._dialog_waiters: dict[str, set[asyncio.Future[None]]] = {}
        self.downloads_begun = 0
        """Downloads any tab began since the connection opened (`browser.look`)."""
        self.on_document: Callable[[str], None] | None = None
        """Called with a tab's target id when a new document of its main frame is parsed
        (`browser.look` puts the observer there ahead of the first look)."""
        self._downloads_running: set[str] = set()
        self._downloads: dict[str, Download] = {}
        self._download_moved = asyncio.Event()

    # ----- lifecycle ---------------------------------------------------------------------------

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
            self._cdp = await _Connection.open(endpoint, self._on_event)
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
        self._downloads_running.clear()
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

    # ----- the framework's own look at a tab (browser.look) ------------------------------------------

    @property
    def downloads_running(self) -> bool:
        return bool(self._downloads_running)

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

    # ----- what the session tells it --------------------------------------------------------------

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

    def bring_in(self, url: str) -> None:
        """The app itself opens this URL (the user gave it), or it is the user's page: its site is part
        of the task."""
        try:
            parts = urlsplit(url)
            host = parts.hostname
        except ValueError:
            return
        if host and parts.scheme in ("http", "https"):
            self._add_sites({site_of(host)})

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

    def _others(self, target: _Target) -> bool:
        """The target belongs to a tab another run's guard covers (in this process or another)."""
        tab = self._targets.get(target.tab or target.id)
        return self.owners.other(target.tab or target.id, self) or (tab is not None and tab.elsewhere)

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
                await self._cdp.send("Fetch.enable" if on else "Fetch.disable", _ALL_REQUESTS if on else {})
            except CdpError as exc:
                if on:
                    raise NetworkPolicyDown(f"Browser Copilot's network policy failed: {exc}") from exc
                return
            self._browser_fetch = on

    # ----- targets --------------------------------------------------------------------------------

    def _add_sites(self, sites: set[str]) -> None:
        new = sites - self._sites
        if not new:
            return
        self._sites |= new
        self.refresh_rules()

    def refresh_rules(self) -> None:
        """The WebSocket rules again, in every covered target (the task's sites or the forbidden origins
        changed)."""
        for target in self._targets.values():
            if target.covered and target.session is not None:
                self._spawn(self._post_ws_rules(target.session))

    def _ws_rules(self) -> list[dict[str, Any]]:
        """Network conditions that take every WebSocket offline except to the task's (or allowed) sites."""
        rules: list[dict[str, Any]] = []
        for origin in self.policy.forbidden_origins:
            host, _, port = origin.rpartition(":")
            hosts = LOOPBACK - {"::1"} if host in LOOPBACK else {host}
            rules += [{"urlPattern": f"ws{{s}}?://{h}:{port}/*", **_BLOCK_WS} for h in sorted(hosts)]
        for domain in self.policy.blocked:
            rules.append({"urlPattern": f"ws{{s}}?://{{*.}}?{domain.lstrip('*.')}:*/*", **_BLOCK_WS})
        listed = bool(self.policy.allowed)
        for domain in self.policy.allowed or tuple(sorted(self._sites)):
            name = domain.lstrip("*.")
            if ":" in name:
                continue  # an IPv6 address: no pattern, its WebSockets stay offline
            # A listed domain covers its subdomains; so does a site of two labels or more (`site_of`),
            # while a one-label site (localhost) or an IP address is only itself.
            alone = is_ip(name) or (not listed and "." not in name)
            host = name if alone else f"{{*.}}?{name}"
            rules.append({"urlPattern": f"ws{{s}}?://{host}:*/*", **_PASS_WS})
        rules.append({"urlPattern": "ws{s}?://*:*/*", **_BLOCK_WS})
        return rules

    async def _post_ws_rules(self, session: str) -> None:
        if self._cdp is not None:
            await self._cdp.post(
                "Network.emulateNetworkConditionsByRule",
                {"matchedNetworkConditions": self._ws_rules()},
                session,
            )

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)  # a task always runs its coroutine, even when cancelled first
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.debug("network guard: %s", task.exception())

    def _tab_of(self, session: str | None, frame: str) -> _Target | None:
        """The target a request comes from: the session's, else the frame's (browser-wide pauses)."""
        if session is not None:
            target_id = self._sessions.get(session)
        else:
            target_id = frame if frame in self._targets else self._frames.get(frame)
        return self._targets.get(target_id) if target_id else None

    @property
    def _reaching(self) -> bool:
        """A call is in flight in a run that has a tab: its code can reach any tab, and a tab that opens
        now is taken for its doing. A guard whose run has no tab yet (a warm spare of `browser.pool`)
        runs only the app's own code, on the browser context: its calls reach no tab, so a tab the
        user opens meanwhile stays the user's."""
        return self._calls > 0 and bool(self._agent_tabs)

    def _covered(self, target: _Target | None) -> bool:
        if target is not None and self._others(target):
            return False
        return self._reaching or (target is not None and target.agent)

    async def _adopt(self, target_id: str) -> None:
        """Cover an existing tab that becomes the agent's (attach to it if this connection is not)."""
        target = self._targets.get(target_id)
        if target is None or self._cdp is None:
            return
        target.agent = True
        if target.session is None:
            try:
                answer = await self._cdp.send(
                    "Target.attachToTarget", {"targetId": target_id, "flatten": True}
                )
            except CdpError as exc:
                log.warning("network guard: could not attach to the agent's tab: %s", exc)
                return
            target.session = str(answer["sessionId"])
            self._sessions[target.session] = target_id
        if not target.covered:
            await self._setup(target, waiting=False)

    async def _setup(self, target: _Target, *, waiting: bool) -> None:
        """Set a newly attached target up, then let it run: the agent's get Fetch, the WebSocket rules,
        page events and auto-attach of their frames and workers; the user's tabs only page events.
        Commands the paused renderer itself must answer (Network.enable, Page.*) are sent without
        waiting: a target waiting for its debugger answers them only once it runs."""
        cdp, session = self._cdp, target.session
        if cdp is None or session is None:
            return
        try:
            if target.agent:
                if target.kind != "worker":  # dedicated workers' requests pause in their page's session
                    await cdp.send("Fetch.enable", _ALL_REQUESTS, session)
                await self._watch(target, wait=False)  # the WebSocket rules apply once Network is on
                await cdp.send(
                    "Network.emulateNetworkConditionsByRule",
                    {"matchedNetworkConditions": self._ws_rules()},
                    session,
                )
                target.covered = True
            if target.kind in ("page", "iframe"):
                await cdp.post("Page.enable", {}, session)
                await cdp.post("Page.setLifecycleEventsEnabled", {"enabled": True}, session)
                if not waiting:  # a new target has no frames yet; an existing one may have some
                    self._spawn(self._frame_tree(target))
            if target.agent and target.kind in (
                "page",
                "iframe",
                "worker",
                "service_worker",
                "shared_worker",
            ):
                await cdp.send(
                    "Target.setAutoAttach",
                    {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True},
                    session,
                )
        except CdpError as exc:
            log.debug("network guard: setting up %s %s: %s", target.kind, target.url[:80], exc)
        finally:
            if waiting:
                await cdp.post("Runtime.runIfWaitingForDebugger", {}, session)

    async def _watch(self, target: _Target, *, wait: bool) -> None:
        """Network on (the WebSocket rules apply only then; its events are never parsed), then Runtime
        and the guard's binding in its world (Runtime first: a binding added before it is not put into
        worlds made later), and no prerendering. `wait`: the target runs, and must be watched before the
        code that may reach it does."""
        cdp, session = self._cdp, target.session
        if cdp is None or session is None or target.watched:
            return
        target.watched = True
        steps: list[tuple[str, dict[str, Any]]] = [
            ("Network.enable", {"maxTotalBufferSize": 0, "maxResourceBufferSize": 0}),
            ("Runtime.enable", {}),
            ("Runtime.addBinding", {"name": EFFECT_BINDING, "executionContextName": GUARD_WORLD}),
        ]
        if target.kind == "page":
            steps.append(("Page.setPrerenderingAllowed", {"isAllowed": False}))
        try:
            for method, params in steps:
                if wait:  # briefly: a target paused by another client answers only once it runs
                    await cdp.send(method, params, session, timeout=1)
                else:
                    await cdp.post(method, params, session)
        except CdpError as exc:
            log.debug("network guard: watching %s: %s", target.url[:80], exc)

    async def _frame_tree(self, target: _Target) -> None:
        if self._cdp is not None and target.session is not None:
            tree = await self._cdp.send("Page.getFrameTree", {}, target.session)
            self._learn_frames(tree.get("frameTree") or {}, target.id)

    def _learn_frames(self, tree: dict[str, Any], owner: str) -> None:
        frame = tree.get("frame") or {}
        if frame.get("id"):
            self._frames[str(frame["id"])] = owner
        for child in tree.get("childFrames") or []:
            self._learn_frames(child, owner)

    def _agent_page(self, info: dict[str, Any]) -> tuple[bool, bool]:
        """(the agent's, opened by the agent) for a page target this connection just attached to."""
        target_id = str(info.get("targetId"))
        if target_id in self._agent_tabs:
            return True, False
        known = self._targets.get(target_id)
        by_opener = info.get("openerId") in self._agent_tabs or (
            info.get("openerId") in self._targets and self._targets[str(info["openerId"])].agent
        )
        created = known.created_in_call if known is not None else self._reaching
        opened = by_opener or created
        return opened, opened

    async def _close_tab(self, target_id: str) -> None:
        self._to_close.discard(target_id)
        target = self._targets.get(target_id)
        if self._cdp is None or target is None or not target.opened_by_agent:
            return
        self._agent_tabs.discard(target_id)
        self.closed_tabs += 1
        await self._cdp.post("Target.closeTarget", {"targetId": target_id})

    def _refuse(self, target: _Target | None, url: str, why: str, key: str) -> None:
        if key in self._recent:
            return
        self._recent.append(key)
        tab = self._targets.get(target.tab) if target is not None else None
        where = short_url(tab.url) if tab is not None and tab.url else "a new tab"
        self._refusals = [*self._refusals[-(_KEPT_REFUSALS - 1) :], Refusal(short_url(url), why, where)]
        log.info("network policy refused %s from %s: %s", short_url(url), where, why)

    def _take_back(self, target: _Target, main: bool, frame: str, session: str | None, url: str = "") -> None:
        """A navigation that must not show: a tab the agent opened is closed (at the end of the call),
        any other frame goes to about:blank. A browser's new-tab page only goes blank: that tab may be
        one you opened while the code ran."""
        if main and target.opened_by_agent and not target.committed and not url.startswith(NEW_TAB):
            self._to_close.add(target.id)
            if not self._reaching:
                self._spawn(self._close_tab(target.id))
        if self._cdp is not None and session is not None:
            params = {"url": "about:blank"} if main else {"url": "about:blank", "frameId": frame}
            self._spawn(self._cdp.post("Page.navigate", params, session))

    # ----- events ---------------------------------------------------------------------------------

    async def _on_event(self, method: str, params: dict[str, Any], session: str | None) -> None:
        handler = self._HANDLERS.get(method)
        if handler is not None:
            await handler(self, params, session)

    async def _target_created(self, params: dict[str, Any], session: str | None) -> None:
        info = params.get("targetInfo") or {}
        target_id = str(info.get("targetId"))
        if target_id not in self._targets:
            self._targets[target_id] = _Target(
                target_id,
                str(info.get("type")),
                str(info.get("url") or ""),
                info.get("openerId"),
                tab=target_id if info.get("type") == "page" else "",
                created_in_call=self._reaching,
                elsewhere=_opened_elsewhere(str(info.get("url") or "")),
            )

    async def _target_changed(self, params: dict[str, Any], session: str | None) -> None:
        info = params.get("targetInfo") or {}
        target = self._targets.get(str(info.get("targetId")))
        if target is None:
            return
        target.url = str(info.get("url") or "")
        if target.kind != "page":
            return
        scheme = urlsplit(target.url).scheme
        if scheme in ("http", "https"):
            target.committed = True
            if not target.agent and not self._reaching and not self._others(target):
                self.bring_in(target.url)  # the user's own browsing, in a tab of theirs
        elif self._covered(target) and scheme not in ("about", "chrome-error", "") and not blank(target.url):
            # A page that must never show committed (view-source:, or a chrome: page that won the race).
            self._refuse(
                target, target.url, f"{scheme}: pages are never shown", f"commit:{target.id}:{target.url}"
            )
            self._take_back(target, True, target.id, target.session, target.url)

    async def _target_destroyed(self, params: dict[str, Any], session: str | None) -> None:
        target_id = str(params.get("targetId"))
        target = self._targets.pop(target_id, None)
        self._agent_tabs.discard(target_id)
        self.owners.drop(target_id)
        self._to_close.discard(target_id)
        if target is not None and target.session is not None:
            self._sessions.pop(target.session, None)
        for frame in [f for f, owner in self._frames.items() if owner == target_id]:
            self._frames.pop(frame, None)
            self._loading.pop(frame, None)

    async def _attached(self, params: dict[str, Any], session: str | None) -> None:
        info = params.get("targetInfo") or {}
        child_session = str(params.get("sessionId"))
        target_id = str(info.get("targetId"))
        kind = str(info.get("type"))
        target = self._targets.get(target_id)
        if target is None:
            target = _Target(target_id, kind, str(info.get("url") or ""), info.get("openerId"))
            target.created_in_call = self._reaching
            target.elsewhere = _opened_elsewhere(target.url)
            self._targets[target_id] = target
        target.session = child_session
        self._sessions[child_session] = target_id
        waiting = bool(params.get("waitingForDebugger"))
        if session is not None:  # a frame or worker of a page this connection covers
            parent = self._targets.get(self._sessions.get(session, ""))
            target.tab = parent.tab if parent is not None else ""
            target.agent = parent is not None and parent.agent
        elif kind == "page":
            target.tab = target_id
            target.agent, target.opened_by_agent = (
                (False, False) if self._others(target) else self._agent_page(info)
            )
            if target.agent:
                self._agent_tabs.add(target_id)
            elif (
                urlsplit(target.url).scheme in ("http", "https") and not waiting and not self._others(target)
            ):
                self.bring_in(target.url)  # a tab the user had open when the guard started
        else:  # a shared worker: the agent's when its code made it
            target.agent = target.created_in_call
        self._spawn(self._setup(target, waiting=waiting))

    async def _detached(self, params: dict[str, Any], session: str | None) -> None:
        self._dialogs.discard(str(params.get("sessionId")))
        target_id = self._sessions.pop(str(params.get("sessionId")), None)
        target = self._targets.get(target_id) if target_id else None
        if target is not None:
            target.session, target.covered, target.watched = None, False, False

    async def _frame_attached(self, params: dict[str, Any], session: str | None) -> None:
        owner = self._sessions.get(session or "")
        frame = str(params.get("frameId"))
        if owner:
            self._frames[frame] = owner

    async def _frame_detached(self, params: dict[str, Any], session: str | None) -> None:
        if params.get("reason") != "swap":
            frame = str(params.get("frameId"))
            self._frames.pop(frame, None)
            self._loading.pop(frame, None)

    async def _lifecycle(self, params: dict[str, Any], session: str | None) -> None:
        name = params.get("name")
        if name == "init":
            self._loading[str(params.get("frameId"))] = True
        elif name == "load":
            self._loading[str(params.get("frameId"))] = False
        elif name == "DOMContentLoaded" and self.on_document is not None:
            frame = str(params.get("frameId"))
            if frame == self._sessions.get(session or ""):  # a page's main frame (its id is the target's)
                self.on_document(frame)

    async def _stopped_loading(self, params: dict[str, Any], session: str | None) -> None:
        self._loading[str(params.get("frameId"))] = False

    async def _navigating(self, params: dict[str, Any], session: str | None) -> None:
        """chrome:, devtools:, top-level data: and other non-network navigations never reach Fetch:
        cancel them here, before the page commits."""
        target = self._tab_of(session, "")
        if target is None or not self._covered(target):
            return
        url, frame = str(params.get("url") or ""), str(params.get("frameId"))
        main = frame == target.id and target.kind == "page"
        scheme = urlsplit(url).scheme.lower()
        if scheme in ("http", "https", "file") or blank(url):  # Fetch decides these
            return
        if not main and scheme in _SUBFRAME_SCHEMES:
            return
        self._refuse(target, url, f"{scheme}: pages are never opened", f"nav:{frame}:{url}")
        self._take_back(target, main, frame, session, url)

    async def _dialog_opening(self, params: dict[str, Any], session: str | None) -> None:
        if session is None:
            return
        self._dialogs.add(session)
        for waiter in self._dialog_waiters.get(session, set()):
            if not waiter.done():
                waiter.set_result(None)

    async def _dialog_closed(self, params: dict[str, Any], session: str | None) -> None:
        self._dialogs.discard(session or "")

    async def _download_begins(self, params: dict[str, Any], session: str | None) -> None:
        """A download begins (the browser's own event, with the frame it began in)."""
        guid = str(params.get("guid"))
        self.downloads_begun += 1
        self._downloads_running.add(guid)
        target = self._tab_of(None, str(params.get("frameId") or ""))
        if target is not None and target.agent:
            name = str(params.get("suggestedFilename") or "download")
            self._downloads[guid] = Download(guid, name, str(params.get("url") or ""))
            self._download_moved.set()

    async def _download_progress(self, params: dict[str, Any], session: str | None) -> None:
        guid = str(params.get("guid"))
        state = str(params.get("state") or "")
        if state in ("completed", "canceled"):
            self._downloads_running.discard(guid)
        known = self._downloads.get(guid)
        if known is not None and state:
            known.state = state
            known.path = str(params.get("filePath") or "") or known.path
            self._download_moved.set()

    async def download_begun(self, timeout: float) -> None:
        """Wait, up to `timeout` seconds, until a download of the agent's tabs begins."""
        known = len(self._downloads)
        await self._downloads_until(lambda: len(self._downloads) > known, timeout)

    async def downloads_finished(self, timeout: float) -> None:
        """Wait, up to `timeout` seconds, until no download of the agent's tabs is still coming."""
        coming = ("completed", "canceled")
        await self._downloads_until(lambda: all(d.state in coming for d in self._downloads.values()), timeout)

    async def _downloads_until(self, done: Callable[[], bool], timeout: float) -> None:
        """Wait on the browser's download events until `done()`, or `timeout` seconds."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while not done():
                    self._download_moved.clear()
                    await self._download_moved.wait()

    def downloads(self) -> list[Download]:
        """The downloads of the agent's tabs, oldest first (what `read_download` may read)."""
        return list(self._downloads.values())

    async def _request(self, params: dict[str, Any], session: str | None) -> None:
        cdp = self._cdp
        if cdp is None:
            return
        self.paused += 1
        try:
            await self._decide(cdp, params, session)
        except Exception:  # a paused request is never left hanging: refused, and said in the log
            log.exception("network policy: deciding %s failed; refused", _requested(params))
            await self._fail_closed(cdp, params, session)

    async def _fail_closed(self, cdp: _Connection, params: dict[str, Any], session: str | None) -> None:
        """Deciding a paused request failed (a bug, not the page's doing): it is refused rather than
        left paused, which would hang the page's load and the code call waiting for it."""
        await cdp.post(
            "Fetch.failRequest",
            {"requestId": params.get("requestId"), "errorReason": "BlockedByClient"},
            session,
        )

    async def _decide(self, cdp: _Connection, params: dict[str, Any], session: str | None) -> None:
        request_id = params.get("requestId")
        frame = str(params.get("frameId") or "")
        target = self._tab_of(session, frame)
        if not self._covered(target):
            await cdp.post("Fetch.continueRequest", {"requestId": request_id}, session)
            return
        request = params.get("request") or {}
        kind = str(params.get("resourceType") or "Other")
        main = kind == "Document" and target is not None and target.kind == "page" and frame == target.id
        url = str(request.get("url") or "")
        try:
            why = self.policy.judge(
                Request(
                    url=url,
                    method=str(request.get("method") or "GET"),
                    body=bool(request.get("hasPostData")),
                    fragment=str(request.get("urlFragment") or ""),
                    kind=kind,
                    main_frame=main,
                    loading=self._loading.get(frame, False),
                ),
                self._sites,
            )
        except ValueError:  # a URL urllib cannot read (a malformed IPv6 host...): refused, not guessed
            why = "its URL cannot be read"
        if (
            why is not None
            and target is not None
            and not target.agent
            and self._users_own_server(target, url)
        ):
            # The user's own tab on the app's page (covered only while a call runs): it talks to its
            # server. The code never acts in that tab (call.js), and what it sends from elsewhere is
            # the code's (below) or another origin's, which the server refuses.
            why = None
        if why is None and target is not None and self._calls_or_tail():
            held = self._effect(target, request, kind)
            if held is None and self._may_wait(target, request):
                self._spawn(self._decide_when_told(cdp, params, session, target, main))
                return
            if held is not None:
                await self._hold(cdp, params, session, target, held, main)
                return
        await self._settle(cdp, params, session, target, why, main)

    async def _settle(
        self,
        cdp: _Connection,
        params: dict[str, Any],
        session: str | None,
        target: _Target | None,
        why: str | None,
        main: bool,
    ) -> None:
        """Let a paused request go (`why` None) or refuse it, telling the model why."""
        request = params.get("request") or {}
        url = str(request.get("url") or "")
        frame = str(params.get("frameId") or "")
        if why is None:
            if (
                params.get("resourceType") == "Document"
                and not self.policy.allowed
                and not (target is not None and self._others(target))
            ):
                # A page or frame of it opens in an agent tab without data: its site joins the task.
                self.bring_in(url)
            await cdp.post("Fetch.continueRequest", {"requestId": params.get("requestId")}, session)
            return
        await cdp.post(
            "Fetch.failRequest",
            {"requestId": params.get("requestId"), "errorReason": "BlockedByClient"},
            session,
        )
        self._refuse(
            target, url, why, str(params.get("networkId") or f"{frame}:{request.get('method')}:{url}")
        )
        if main and target is not None and target.opened_by_agent and not target.committed:
            self._take_back(target, True, frame, None)

    def _users_own_server(self, target: _Target, url: str) -> bool:
        """A request of a tab of the user's (or its frame) to a forbidden origin, from a page of that same
        origin, or the tab opening it (the user opens the app's page while a call runs)."""
        tab = self._targets.get(target.tab) or target
        if target.agent or tab.agent:
            return False
        try:
            if not self.policy.forbidden(url):
                return False
            page = urlsplit(tab.url)
            there = urlsplit(url)
        except ValueError:
            return False
        # A blank tab opens it: the user does, between calls (a call's code may not).
        blank = not self._reaching and (tab.url in ("", "about:blank") or tab.url.startswith(NEW_TAB))
        same = (page.hostname, page.port) == (there.hostname, there.port)
        return blank or same

    # ----- the effect gate (effects.py) --------------------------------------------------------------

    def _calls_or_tail(self) -> bool:
        """A call is in flight, or ended a moment ago: windows may be open."""
        return self._calls > 0 or time.monotonic() - self._call_ended < TAIL_SECONDS

    @staticmethod
    def _body(request: dict[str, Any]) -> tuple[str, str]:
        """(body, content type) of a paused request, as far as Chrome hands it over (small bodies)."""
        headers = {str(k).lower(): str(v) for k, v in (request.get("headers") or {}).items()}
        body = request.get("postData")
        if not isinstance(body, str):
            parts = []
            for entry in request.get("postDataEntries") or []:
                with contextlib.suppress(ValueError, TypeError):
                    parts.append(base64.b64decode(str(entry.get("bytes") or "")).decode("utf-8", "replace"))
            body = "".join(parts)
        return body, headers.get("content-type", "")

    def _effect(self, target: _Target, request: dict[str, Any], kind: str) -> HeldRequest | None:
        """The effect gate's answer for a request of an agent's tab (None: it may leave)."""
        if not target.agent:
            return None
        body, content_type = self._body(request)
        try:
            return self.effects.decide(
                target.tab or target.id,
                method=str(request.get("method") or "GET"),
                url=str(request.get("url") or ""),
                body=body,
                content_type=content_type,
                document=kind == "Document",
            )
        except ValueError:  # an address urllib cannot read: held, not guessed
            return self.effects.decide(target.tab or target.id, method="DELETE", url="about:blank")

    def _may_wait(self, target: _Target, request: dict[str, Any]) -> bool:
        """A committing request during a call in a tab whose window is not known yet: the guard's word
        may still be on its way (it comes on another channel than the request)."""
        if (
            not target.agent
            or self._calls == 0
            or self.effects.window_of(target.tab or target.id) is not None
        ):
            return False
        body, content_type = self._body(request)
        with contextlib.suppress(ValueError):
            method = str(request.get("method") or "GET")
            return request_commits(method, str(request.get("url") or ""), body, content_type) is not None
        return True

    async def _decide_when_told(
        self, cdp: _Connection, params: dict[str, Any], session: str | None, target: _Target, main: bool
    ) -> None:
        """Wait briefly for the guard's word about the tab's input, then decide the request again."""
        tab = target.tab or target.id
        told = self._told.setdefault(tab, asyncio.Event())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(told.wait(), _WAIT_FOR_WINDOW)
        if cdp is not self._cdp:
            return
        try:
            held = self._effect(target, params.get("request") or {}, str(params.get("resourceType") or ""))
            if held is not None:
                await self._hold(cdp, params, session, target, held, main)
            else:
                await self._settle(cdp, params, session, target, None, main)
        except Exception:  # never left paused
            log.exception("network policy: deciding %s failed; refused", _requested(params))
            await self._fail_closed(cdp, params, session)

    async def _hold(
        self,
        cdp: _Connection,
        params: dict[str, Any],
        session: str | None,
        target: _Target,
        held: HeldRequest,
        main: bool,
    ) -> None:
        """Refuse a request the effect gate holds (a tab's own navigation is aborted, so the page stays),
        and tell the running call, whose code then stops (world.js `__bcToNode`)."""
        reason = "Aborted" if main else "BlockedByClient"
        await cdp.post(
            "Fetch.failRequest", {"requestId": params.get("requestId"), "errorReason": reason}, session
        )
        log.info("network policy held %s %s: %s", held.method, short_url(held.url), held.because)
        window = self.effects.window_of(target.tab or target.id)
        tab = self._targets.get(target.tab or target.id)
        if window is not None and window.context is not None and tab is not None and tab.session is not None:
            message = json.dumps(json.dumps({"held": held.id}))
            await cdp.post(
                "Runtime.evaluate",
                {
                    "expression": f"typeof __bcToNode === 'function' && __bcToNode({message})",
                    "contextId": window.context,
                },
                tab.session,
            )

    def held_requests(self) -> list[HeldRequest]:
        """The requests the effect gate held since the last time this was asked."""
        return self.effects.held()

    def sent_requests(self) -> list[SentRequest]:
        """The writing or committing requests inputs let leave since the last time this was asked."""
        return self.effects.sent()

    def issue(self, token: str, how: Allowed) -> None:
        """A one-time permission the app hands a call: its input's window is `how` (effects.py)."""
        self.effects.issue(token, how)

    def app_window(self, kind: str, allowed: Allowed) -> None:
        """The app itself acts in the agent's tab (it answers the page's dialog): a window of its own."""
        for tab in self._agent_tabs:
            self.effects.app_window(tab, kind, allowed)

    async def _binding(self, params: dict[str, Any], session: str | None) -> None:
        """The guard in an agent's tab let an input go: its window opens (effects.py)."""
        if params.get("name") != EFFECT_BINDING:
            return
        target = self._tab_of(session, "")
        if target is None or not target.agent:
            return
        tab = target.tab or target.id
        context = params.get("executionContextId")
        self.effects.opened(
            tab, str(params.get("payload") or ""), int(context) if isinstance(context, int) else None
        )
        told = self._told.pop(tab, None)
        if told is not None:
            told.set()

    _HANDLERS: ClassVar[dict[str, Callable[[NetworkGuard, dict[str, Any], str | None], Awaitable[None]]]] = {
        "Target.targetCreated": _target_created,
        "Target.targetInfoChanged": _target_changed,
        "Target.targetDestroyed": _target_destroyed,
        "Target.attachedToTarget": _attached,
        "Target.detachedFromTarget": _detached,
        "Page.frameAttached": _frame_attached,
        "Page.frameDetached": _frame_detached,
        "Page.lifecycleEvent": _lifecycle,
        "Page.frameStoppedLoading": _stopped_loading,
        "Page.frameStartedNavigating": _navigating,
        "Fetch.requestPaused": _request,
        "Page.javascriptDialogOpening": _dialog_opening,
        "Page.javascriptDialogClosed": _dialog_closed,
        "Browser.downloadWillBegin": _download_begins,
        "Browser.downloadProgress": _download_progress,
        "Runtime.bindingCalled": _binding,
    }


__all__ = [
    "EFFECT_BINDING",
    "GRACE_SECONDS",
    "GUARD_WORLD",
    "RUN_MARK",
    "Download",
    "NetworkGuard",
    "TabOwners",
    "run_tab_url",
]
