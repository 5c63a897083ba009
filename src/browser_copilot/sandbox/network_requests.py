"""The network policy's decision about each request of the agent's targets, paused at Fetch's request
stage: the URL policy (`urls.UrlPolicy.judge`), then the effect gate (effects.py) for a request that may
commit; a request is let go, refused (the model is told why), or held for the user's card."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import time
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from browser_copilot.safety.addresses import request_commits
from browser_copilot.sandbox.effects import TAIL_SECONDS, Allowed, EffectGate, HeldRequest, SentRequest
from browser_copilot.sandbox.network_targets import EFFECT_BINDING, GuardConnection, TargetWatch
from browser_copilot.sandbox.tabs import Target
from browser_copilot.sandbox.urls import NEW_TAB, Request, short_url

log = logging.getLogger("browser_copilot.sandbox.network")

_WAIT_FOR_WINDOW = 2.0
"""How long a committing request during a call waits for the guard's word about its tab's input. The word
is sent before the input and usually comes first; on a loaded machine it came 0.3 s after the request,
which then counted as the page's own and left without a card."""


def _requested(params: dict[str, Any]) -> str:
    """The short URL of a paused request (for the log)."""
    return short_url(str((params.get("request") or {}).get("url") or ""))


_OVERRIDES = ("x-http-method-override", "x-http-method", "x-method-override")


def _method(request: dict[str, Any]) -> str:
    """The method a request asks the server for: its own, or for a POST the one a method override names,
    in a header (`X-HTTP-Method-Override: DELETE`) or the query (`?_method=DELETE`), as Rails, Laravel
    and Express honour them (one in the body is read with the body's actions). Frameworks differ in which
    they read (the header or the query, the first value or the last): every one named counts, and the one
    that commits most is the method."""
    method = str(request.get("method") or "GET").upper()
    if method != "POST":
        return method
    headers = {str(k).lower(): str(v) for k, v in (request.get("headers") or {}).items()}
    named = [item for h in _OVERRIDES if h in headers for item in headers[h].split(",")]
    named += [
        v for k, v in parse_qsl(urlsplit(str(request.get("url") or "")).query) if k.lower() == "_method"
    ]
    methods = {m.strip().upper() for m in named if m.strip().isalpha()}
    return next((m for m in _BY_WEIGHT if m in methods), method)


_BY_WEIGHT = ("DELETE", "PUT", "PATCH", "POST")
"""Methods by what they may change: a DELETE named anywhere is a DELETE."""


class RequestGate(TargetWatch):
    """Deciding the paused requests (a mixin of `NetworkGuard`, which sets its state up)."""

    effects: EffectGate
    """The windows of the inputs the guard let go, and the requests held in them (effects.py)."""
    _told: dict[str, asyncio.Event]
    """Per tab: set when the guard's word about its input came (`_decide_when_told` waits for it)."""
    paused: int
    """Requests decided so far (for bench/network.py)."""

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

    async def _fail_closed(self, cdp: GuardConnection, params: dict[str, Any], session: str | None) -> None:
        """Deciding a paused request failed (a bug, not the page's doing): it is refused rather than
        left paused, which would hang the page's load and the code call waiting for it."""
        await cdp.post(
            "Fetch.failRequest",
            {"requestId": params.get("requestId"), "errorReason": "BlockedByClient"},
            session,
        )

    async def _decide(self, cdp: GuardConnection, params: dict[str, Any], session: str | None) -> None:
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
                    loading=self._own_load(target, frame),
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
        if why is None and target is None and self._calls_or_tail() and self._commits(request):
            # A tab the code just closed sends from its `pagehide` (a keep-alive fetch, a beacon): no tab
            # is left to hold it in, and it is not sent.
            why = "it commits something, from a tab that is already gone"
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
        cdp: GuardConnection,
        params: dict[str, Any],
        session: str | None,
        target: Target | None,
        why: str | None,
        main: bool,
    ) -> None:
        """Let a paused request go (`why` None) or refuse it, telling the model why."""
        self._asked(target, main)
        request = params.get("request") or {}
        url = str(request.get("url") or "")
        frame = str(params.get("frameId") or "")
        if why is None:
            go: dict[str, Any] = {"requestId": params.get("requestId")}
            headers = {str(k): str(v) for k, v in (request.get("headers") or {}).items()}
            referer = next((v for k, v in headers.items() if k.lower() == "referer"), "")
            # Decided before the site may join the task below: the request that brings it in is the first.
            cut = self.policy.referer_cut(url, referer, self._sites) if referer else None
            if cut is not None:
                go["headers"] = [
                    {"name": k, "value": cut if k.lower() == "referer" else v} for k, v in headers.items()
                ]
            if (
                params.get("resourceType") == "Document"
                and not self.policy.allowed
                and not (target is not None and self._others(target))
            ):
                # A page or frame of it opens in an agent tab without data: its site joins the task.
                self.bring_in(url)
            await cdp.post("Fetch.continueRequest", go, session)
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

    def _users_own_server(self, target: Target, url: str) -> bool:
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

    def _own_load(self, target: Target | None, frame: str) -> bool:
        """The frame's document is still loading and no input was made into it since it began: what it
        requests now is its own load. An input made into a loading document (a click before its load
        event) opens a window after the document began: its requests are the input's, judged as such."""
        since = self._loading.get(frame, 0.0)
        if not since:
            return False
        window = self.effects.window_of(self._window_tab(target)) if target is not None else None
        return window is None or window.opened < since

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
        # A body in UTF-16 (a charset the server decodes) reads as its letters with NULs between them.
        content_type = headers.get("content-type", "")
        if headers.get("soapaction", "").strip(
            '" '
        ):  # SOAP 1.1 names the action in a header, 1.2 in the type
            content_type += f'; action="{headers["soapaction"].strip(chr(34) + " ")}"'
        return body.lstrip("\ufeff\ufffe").replace("\x00", ""), content_type

    def _window_tab(self, target: Target) -> str:
        """The tab whose input's window covers the requests of `target`: its own tab's; for a tab an input
        of the agent opened (a popup, a form or a link with target=_blank) while it has no window of its
        own, its opener's; else, for any of the session's tabs and workers with no window of their own
        (a popup that keeps no opener, a tab another tab's input made act through a BroadcastChannel, a
        storage event or a message, a shared worker, which belongs to no tab), the tab of the newest
        window: what the page sends there while an input's window is open is that input's doing."""
        own = target.tab or target.id
        tab = self._targets.get(own)
        seen: set[str] = set()
        while (
            self.effects.window_of(tab.id if tab else own) is None and tab is not None and tab.opened_by_agent
        ):
            seen.add(tab.id)
            opener = self._targets.get(str(tab.opener or ""))
            if opener is None or opener.id in seen:
                break
            tab = opener
        found = tab.id if tab is not None else own
        if self.effects.window_of(found) is None:
            return self.effects.newest_tab() or found
        return found

    def _effect(self, target: Target, request: dict[str, Any], kind: str) -> HeldRequest | None:
        """The effect gate's answer for a request of an agent's tab (None: it may leave)."""
        if not target.agent:
            return None
        body, content_type = self._body(request)
        try:
            return self.effects.decide(
                self._window_tab(target),
                method=_method(request),
                url=str(request.get("url") or ""),
                body=body,
                content_type=content_type,
                document=kind == "Document",
            )
        except ValueError:  # an address urllib cannot read: held, not guessed
            return self.effects.decide(self._window_tab(target), method="DELETE", url="about:blank")

    def _commits(self, request: dict[str, Any]) -> bool:
        body, content_type = self._body(request)
        try:
            return (
                request_commits(_method(request), str(request.get("url") or ""), body, content_type)
                is not None
            )
        except ValueError:
            return True

    def _may_wait(self, target: Target, request: dict[str, Any]) -> bool:
        """A committing request during a call in a tab whose window is not known yet: the guard's word
        may still be on its way (it comes on another channel than the request)."""
        if (
            not target.agent
            or self._calls == 0
            or self.effects.window_of(self._window_tab(target)) is not None
        ):
            return False
        return self._commits(request)

    async def _decide_when_told(
        self, cdp: GuardConnection, params: dict[str, Any], session: str | None, target: Target, main: bool
    ) -> None:
        """Wait briefly for the guard's word about the tab's input, then decide the request again."""
        tab = target.tab or target.id
        told = self._told.setdefault(tab, asyncio.Event())
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_WAIT_FOR_WINDOW):
                await told.wait()
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
        cdp: GuardConnection,
        params: dict[str, Any],
        session: str | None,
        target: Target,
        held: HeldRequest,
        main: bool,
    ) -> None:
        """Refuse a request the effect gate holds (a tab's own navigation is aborted, so the page stays),
        and tell the running call, whose code then stops (world.js `__bcToNode`)."""
        self._asked(target, main)
        reason = "Aborted" if main else "BlockedByClient"
        await cdp.post(
            "Fetch.failRequest", {"requestId": params.get("requestId"), "errorReason": reason}, session
        )
        log.info("network policy held %s %s: %s", held.method, short_url(held.url), held.because)
        if main:
            self._close_unshown(target)
        window_tab = self._window_tab(target)
        window = self.effects.window_of(window_tab)
        tab = self._targets.get(window_tab)
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

    def issue(self, token: str, how: Allowed, scope: str | None = None) -> None:
        """A one-time permission the app hands a call: its input's window is `how` (effects.py)."""
        self.effects.issue(token, how, scope)

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
