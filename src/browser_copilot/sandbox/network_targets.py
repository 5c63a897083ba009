"""What the network policy's connection knows of the browser's targets (tabs, frames, workers) and does
with them as they come: covering the agent's (Fetch, the WebSocket rules, the guard's binding), telling
the agent's tabs from the user's and other runs', and taking back what must not show (F46)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from browser_copilot.sandbox.cdp import CdpConnection, CdpError
from browser_copilot.sandbox.tabs import TabOwners, Target, opened_elsewhere
from browser_copilot.sandbox.urls import NEW_TAB, Refusal, UrlPolicy, blank, short_url, site_of, ws_rules

log = logging.getLogger("browser_copilot.sandbox.network")

_NETWORK_EVENT = '{"method":"Network.'
"""How Chromium starts an event of the Network domain: never parsed (Network is on only for the
WebSocket rules)."""
_RUNTIME_EVENT = '{"method":"Runtime.'
_BINDING = '{"method":"Runtime.bindingCalled"'
"""Of Runtime's events only the guard's binding is read (`__bcEffect`: an input's window opens)."""
EFFECT_BINDING = "__bcEffect"
GUARD_WORLD = "__bc_guard"
_KEPT_REFUSALS = 100
"""Refusals kept until the next code call asks (a page left open refuses its beacons for hours)."""
_SUBFRAME_SCHEMES = ("http", "https", "about", "data", "blob")
ALL_REQUESTS = {"patterns": [{"urlPattern": "*", "requestStage": "Request"}]}


EventHandler = Callable[[str, dict[str, Any], str | None], Awaitable[None]]


class GuardConnection(CdpConnection):
    """The guard's DevTools connection: its events go to the guard; Runtime events but the guard's
    binding are skipped, Network events are never parsed (they are many)."""

    def __init__(
        self, http: aiohttp.ClientSession, ws: aiohttp.ClientWebSocketResponse, on_event: EventHandler
    ) -> None:
        super().__init__(http, ws)
        self._on_event = on_event

    @classmethod
    async def open(cls, endpoint: str, on_event: EventHandler, *, timeout: float = 10.0) -> GuardConnection:
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


class TargetWatch:
    """The guard's knowledge of the targets and what it does as their events come (`NetworkGuard` is one)."""

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
        self._cdp: GuardConnection | None = None
        self._targets: dict[str, Target] = {}
        self._sessions: dict[str, str] = {}
        self._frames: dict[str, str] = {}
        """frame id -> the target whose session reported it."""
        self._loading: dict[str, float] = {}
        """Per frame: when its document began loading (monotonic), 0 once it loaded."""
        self._agent_tabs: set[str] = set()
        self._sites: set[str] = set()
        self._calls = 0
        """Code calls in flight (`NetworkGuard.acting`)."""
        self._call_ended = 0.0
        self._to_close: set[str] = set()
        self._refusals: list[Refusal] = []
        self._recent: deque[str] = deque(maxlen=256)
        self._tasks: set[asyncio.Task[None]] = set()
        self.closed_tabs = 0
        """Tabs the policy closed since the last code call began (opened on a refused URL)."""
        self._dialogs: set[str] = set()
        """Sessions whose page shows a JavaScript dialog (alert, confirm, prompt, beforeunload)."""
        self._dialog_waiters: dict[str, set[asyncio.Future[None]]] = {}
        self._news = asyncio.Event()
        """Set when a tab has asked (`Target.asked`): `opened_asked` looks again."""
        self.on_document: Callable[[str], None] | None = None
        """Called with a tab's target id when a new document of its main frame is parsed
        (`browser.look` puts the observer there ahead of the first look)."""

    def _asked(self, target: Target | None, main: bool = True) -> None:
        if main and target is not None and not target.asked:
            target.asked = True
            self._news.set()

    async def opened_asked(self, since: float, timeout: float) -> None:
        """Wait, up to `timeout` seconds, until every tab a page opened since `since` (a popup, a form or
        a link with target=_blank) has had its first document decided: what it sends still falls in the
        window of the input that opened it, however slowly the tab starts."""
        deadline = time.monotonic() + timeout
        while any(
            t.kind == "page" and t.opened_by_agent and t.opener and t.born >= since and not t.asked
            for t in self._targets.values()
        ):
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._news.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await self._news.wait()

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

    def _others(self, target: Target) -> bool:
        """The target belongs to a tab another run's guard covers (in this process or another)."""
        tab = self._targets.get(target.tab or target.id)
        return self.owners.other(target.tab or target.id, self) or (tab is not None and tab.elsewhere)

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

    async def _post_ws_rules(self, session: str) -> None:
        if self._cdp is not None:
            await self._cdp.post(
                "Network.emulateNetworkConditionsByRule",
                {"matchedNetworkConditions": ws_rules(self.policy, self._sites)},
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

    def _tab_of(self, session: str | None, frame: str) -> Target | None:
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

    def _covered(self, target: Target | None) -> bool:
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

    async def _setup(self, target: Target, *, waiting: bool) -> None:
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
                    await cdp.send("Fetch.enable", ALL_REQUESTS, session)
                await self._watch(target, wait=False)  # the WebSocket rules apply once Network is on
                await cdp.send(
                    "Network.emulateNetworkConditionsByRule",
                    {"matchedNetworkConditions": ws_rules(self.policy, self._sites)},
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

    async def _watch(self, target: Target, *, wait: bool) -> None:
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

    async def _frame_tree(self, target: Target) -> None:
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

    def _refuse(self, target: Target | None, url: str, why: str, key: str) -> None:
        if key in self._recent:
            return
        self._recent.append(key)
        tab = self._targets.get(target.tab) if target is not None else None
        where = short_url(tab.url) if tab is not None and tab.url else "a new tab"
        self._refusals = [*self._refusals[-(_KEPT_REFUSALS - 1) :], Refusal(short_url(url), why, where)]
        log.info("network policy refused %s from %s: %s", short_url(url), where, why)

    def _close_unshown(self, target: Target) -> None:
        """A tab the agent opened that has shown no page of its own is closed (at the end of the call, or
        now when no call runs): what it was opened for was refused or held."""
        if target.opened_by_agent and not target.committed:
            self._to_close.add(target.id)
            if not self._reaching:
                self._spawn(self._close_tab(target.id))

    def _take_back(self, target: Target, main: bool, frame: str, session: str | None, url: str = "") -> None:
        """A navigation that must not show: a tab the agent opened is closed (at the end of the call),
        any other frame goes to about:blank. A browser's new-tab page only goes blank: that tab may be
        one you opened while the code ran."""
        if main and not url.startswith(NEW_TAB):
            self._close_unshown(target)
        if self._cdp is not None and session is not None:
            params = {"url": "about:blank"} if main else {"url": "about:blank", "frameId": frame}
            self._spawn(self._cdp.post("Page.navigate", params, session))

    async def _target_created(self, params: dict[str, Any], session: str | None) -> None:
        info = params.get("targetInfo") or {}
        target_id = str(info.get("targetId"))
        if target_id not in self._targets:
            self._targets[target_id] = Target(
                target_id,
                str(info.get("type")),
                str(info.get("url") or ""),
                info.get("openerId"),
                tab=target_id if info.get("type") == "page" else "",
                created_in_call=self._reaching,
                elsewhere=opened_elsewhere(str(info.get("url") or "")),
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
        self._news.set()
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
            target = Target(target_id, kind, str(info.get("url") or ""), info.get("openerId"))
            target.created_in_call = self._reaching
            target.elsewhere = opened_elsewhere(target.url)
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
            self._loading[str(params.get("frameId"))] = time.monotonic()
        elif name == "load":
            self._loading[str(params.get("frameId"))] = 0.0
            self._asked(self._targets.get(str(params.get("frameId"))))
        elif name == "DOMContentLoaded" and self.on_document is not None:
            frame = str(params.get("frameId"))
            if frame == self._sessions.get(session or ""):  # a page's main frame (its id is the target's)
                self.on_document(frame)

    async def _stopped_loading(self, params: dict[str, Any], session: str | None) -> None:
        self._loading[str(params.get("frameId"))] = 0.0

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
