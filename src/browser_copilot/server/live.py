"""The live view of server mode: the agent's tab as pictures in the web page, on the server's own DevTools
connection (never the model's code tool), and the user's clicks and keys sent back to that tab.

Bandwidth: pictures flow only while a page watches (a tab's stream starts with its first viewer and stops
with its last), at most `FRAME_RATE` a second (each screencast frame is acknowledged only when its turn
comes, so the browser paces itself), JPEG quality `QUALITY`, at most `MAX_WIDTH` wide; a slow viewer
skips frames, it never queues them. A tab the browser does not paint (a background tab: the screencast
sends nothing) is photographed instead, once a second and after each change, and only a changed picture
is sent.

The element being acted on is outlined: a small script in an isolated world of the tab (which the page's
own scripts cannot reach) reports the box of each trusted pointer press, focus and input, through a
binding only that world has.

Input (`Stream.drive`): mouse clicks, the wheel, named keys and typed text, as CDP `Input.*` events. Who
may drive, and when, is the session manager's decision (`SessionManager.may_drive`); this module only
carries it out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import aiohttp

from browser_copilot.sandbox.cdp import CdpError
from browser_copilot.server.live_stream import Cdp, PageTab, Stream, Viewer

log = logging.getLogger(__name__)


class LiveView:
    """The live pictures of the sessions' tabs, on one DevTools connection of the server's own, opened
    when first needed (`endpoint` gives the browser's address; it may change when the browser comes back).

    Each viewer watches one session; the session's tab (`target`) is streamed while at least one viewer
    watches it. `targets()` lists the browser's tabs (`/tabs`, the tabs a session opened)."""

    def __init__(self, endpoint: Callable[[], str | None]) -> None:
        self._endpoint = endpoint
        self._cdp: Cdp | None = None
        self._connecting = asyncio.Lock()
        self.streams: dict[str, Stream] = {}
        self.viewers: dict[str, set[Viewer]] = {}
        """Session id -> its viewers."""
        self._titles: dict[str, tuple[str, str]] = {}
        self._viewing = asyncio.Lock()
        """Held while a viewer starts or stops watching (two viewers of one tab share one stream)."""
        self._closed = False

    async def connection(self) -> Cdp:
        async with self._connecting:
            endpoint = self._endpoint()
            if endpoint is None or self._closed:
                raise CdpError("the browser session is not open")
            cdp = self._cdp
            if cdp is not None and not cdp.closed.is_set() and cdp.endpoint == endpoint:
                return cdp
            if cdp is not None:
                await self._drop(cdp)
            try:
                cdp = await Cdp.open(endpoint)
            except (OSError, aiohttp.ClientError, KeyError, ValueError, TimeoutError) as exc:
                raise CdpError(f"cannot reach the browser at {endpoint}: {exc}") from exc
            cdp.handlers[""] = self._browser_event
            await cdp.send("Target.setDiscoverTargets", {"discover": True})
            self._cdp = cdp
            return cdp

    async def _drop(self, cdp: Cdp) -> None:
        """The connection went (the browser closed or was relaunched): every stream ends."""
        for stream in list(self.streams.values()):
            stream.gone = True
            await self._end(stream, "The browser's connection was lost; reconnecting.")
        await cdp.close()

    def _browser_event(self, method: str, params: dict[str, Any]) -> None:
        info = params.get("targetInfo") or {}
        if method in ("Target.targetCreated", "Target.targetInfoChanged") and info.get("type") == "page":
            target = str(info.get("targetId"))
            self._titles[target] = (str(info.get("url") or ""), str(info.get("title") or ""))
            stream = self.streams.get(target)
            if stream is not None:
                stream.named(*self._titles[target])
        elif method == "Target.targetDestroyed":
            target = str(params.get("targetId"))
            self._titles.pop(target, None)
            stream = self.streams.get(target)
            if stream is not None:
                stream.gone = True
                self._gone(stream)

    # ----- tabs ----------------------------------------------------------------------------

    async def targets(self) -> list[PageTab]:
        """The browser's tabs (page targets), in the browser's order."""
        cdp = await self.connection()
        found = await cdp.send("Target.getTargets")
        return [
            PageTab(str(t["targetId"]), str(t.get("url") or ""), str(t.get("title") or ""), t.get("openerId"))
            for t in found.get("targetInfos") or []
            if t.get("type") == "page"
        ]

    async def close_tabs(self, targets: set[str]) -> list[str]:
        """Close these tabs (those still open), never the browser's last one; returns those closed."""
        if not targets:
            return []
        cdp = await self.connection()
        tabs = [t.id for t in await self.targets()]
        closing = [t for t in tabs if t in targets]
        if closing and len(closing) == len(tabs):
            closing = closing[1:]  # the last tab of a window closes the browser: one stays
        closed: list[str] = []
        for target in closing:
            with contextlib.suppress(CdpError):
                await cdp.send("Target.closeTarget", {"targetId": target})
                closed.append(target)
        return closed

    # ----- viewers -------------------------------------------------------------------------

    async def watch(self, session: str, viewer: Viewer, target: str | None) -> None:
        viewer.session = session
        self.viewers.setdefault(session, set()).add(viewer)
        async with self._viewing:
            await self._show(viewer, target)

    async def unwatch(self, viewer: Viewer) -> None:
        viewers = self.viewers.get(viewer.session)
        if viewers is not None:
            viewers.discard(viewer)
            if not viewers:
                self.viewers.pop(viewer.session, None)
        async with self._viewing:
            await self._leave(viewer)
        viewer.close()

    async def retarget(self, session: str, target: str | None) -> None:
        """The session's tab changed (it started working, switched tabs, or its tab closed)."""
        async with self._viewing:
            for viewer in list(self.viewers.get(session, ())):
                if viewer.target != target or target is None:
                    await self._show(viewer, target)

    def watched(self, session: str) -> bool:
        return bool(self.viewers.get(session))

    async def _show(self, viewer: Viewer, target: str | None) -> None:
        await self._leave(viewer)
        if target is None:
            viewer.say({"kind": "live", "state": "no_tab"})
            return
        try:
            stream = self.streams.get(target)
            if stream is None:
                cdp = await self.connection()
                stream = Stream(cdp, target, self._gone)
                self.streams[target] = stream
                try:
                    await stream.start()
                except CdpError:
                    self.streams.pop(target, None)
                    await stream.stop()
                    raise
        except CdpError as exc:
            viewer.say({"kind": "live", "state": "unavailable", "message": f"No live view: {exc}"})
            return
        stream.viewers.add(viewer)
        viewer.target = target
        viewer.say(stream.watching())
        stream.refresh()

    async def _leave(self, viewer: Viewer) -> None:
        target, viewer.target = viewer.target, None
        stream = self.streams.get(target) if target else None
        if stream is None:
            return
        stream.viewers.discard(viewer)
        if not stream.viewers:
            self.streams.pop(stream.target, None)
            await stream.stop()

    def _gone(self, stream: Stream) -> None:
        task = asyncio.ensure_future(self._end(stream, "The tab was closed."))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def _end(self, stream: Stream, why: str) -> None:
        if self.streams.get(stream.target) is stream:
            self.streams.pop(stream.target, None)
        for viewer in list(stream.viewers):
            viewer.target = None
            viewer.say({"kind": "live", "state": "gone", "message": why})
        stream.viewers.clear()
        await stream.stop()

    def stream_of(self, viewer: Viewer) -> Stream | None:
        return self.streams.get(viewer.target) if viewer.target else None

    def tell(self, session: str, message: dict[str, Any]) -> None:
        """A message to every viewer of `session` (whether input is allowed now, ...)."""
        for viewer in self.viewers.get(session, ()):
            viewer.say(message)

    async def close(self) -> None:
        self._closed = True
        for viewers in list(self.viewers.values()):
            for viewer in list(viewers):
                await self.unwatch(viewer)
        for stream in list(self.streams.values()):
            await stream.stop()
        self.streams.clear()
        if self._cdp is not None:
            await self._cdp.close()
            self._cdp = None
