"""One tab's live stream for the server's live view (server/live.py): pictures of the agent's tab on the
server's own DevTools connection (a screencast, or photographs of a tab the browser does not paint), the
outline of the element being acted on, and the user's clicks and keys sent back to the tab (`Stream.drive`).
The pacing and bandwidth rules are `LiveView`'s docstring's.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from browser_copilot.sandbox.cdp import CdpConnection, CdpError

log = logging.getLogger(__name__)

FRAME_RATE = 5
"""Pictures a second, at most, per watched tab."""
QUALITY = 60
MAX_WIDTH = 1280
MAX_HEIGHT = 1280
STILL_PICTURE = 1.0
"""Seconds without a screencast frame after which the tab is photographed (a background tab)."""
CAPTURE_TIMEOUT = 5.0
NOT_DRAWN = (
    "The browser does not draw this tab now (it is in the background, or its window is minimised), so "
    "there is no picture of it yet: bring the tab to the front in the browser to see it here."
)
MAX_TEXT = 2000
"""Characters of typed text one input message may carry."""
WORLD = "browser-copilot-live"
BINDING = "__bcLiveBox"
BOX_SCRIPT = (
    "(() => {\n"
    "  if (window !== window.top || globalThis.__bcLiveOn) return;\n"
    "  globalThis.__bcLiveOn = true;\n"
    "  const send = (kind, path) => {\n"
    "    const el = path && path[0];\n"
    "    if (!el || typeof el.getBoundingClientRect !== 'function') return;\n"
    "    const r = el.getBoundingClientRect();\n"
    "    if (!r.width && !r.height) return;\n"
    "    try {\n"
    f"      {BINDING}(JSON.stringify({{ kind, x: r.left, y: r.top, w: r.width, h: r.height,\n"
    "        vw: innerWidth, vh: innerHeight }));\n"
    "    } catch (e) { /* the live view stopped watching */ }\n"
    "  };\n"
    "  for (const [type, kind] of [['pointerdown', 'click'], ['focusin', 'focus'], ['input', 'input']]) {\n"
    "    addEventListener(type, (e) => { if (e.isTrusted) send(kind, e.composedPath()); },\n"
    "      { capture: true, passive: true });\n"
    "  }\n"
    "})()"
)
"""Runs in the isolated world `WORLD` of each document of a watched tab (main frame only)."""

KEYS: dict[str, tuple[int, str, str]] = {
    "Enter": (13, "Enter", "\r"),
    "Tab": (9, "Tab", ""),
    "Backspace": (8, "Backspace", ""),
    "Delete": (46, "Delete", ""),
    "Escape": (27, "Escape", ""),
    "ArrowLeft": (37, "ArrowLeft", ""),
    "ArrowUp": (38, "ArrowUp", ""),
    "ArrowRight": (39, "ArrowRight", ""),
    "ArrowDown": (40, "ArrowDown", ""),
    "Home": (36, "Home", ""),
    "End": (35, "End", ""),
    "PageUp": (33, "PageUp", ""),
    "PageDown": (34, "PageDown", ""),
    " ": (32, "Space", " "),
}
"""The named keys a viewer may press: (key code, code, text). Other characters come as typed text."""
_MODIFIERS = {"alt": 1, "ctrl": 2, "meta": 4, "shift": 8}


_PAGE_CHANGED = frozenset({"Page.frameNavigated", "Page.loadEventFired", "Page.domContentEventFired"})


Handler = Callable[[str, dict[str, Any]], None]


class Cdp(CdpConnection):
    """The live view's own browser-level DevTools connection: events are dispatched to a handler per
    session (`handlers[session id]`, `""` for the browser's own); the watched tabs' console messages and
    execution contexts are skipped unread."""

    _SKIPPED = '{"method":"Runtime.'
    _KEPT = '{"method":"Runtime.bindingCalled"'

    def __init__(self, http: aiohttp.ClientSession, ws: aiohttp.ClientWebSocketResponse, endpoint: str):
        super().__init__(http, ws)
        self.endpoint = endpoint
        self.handlers: dict[str, Handler] = {}

    @classmethod
    async def open(cls, endpoint: str, *, timeout: float = 10.0) -> Cdp:
        http, ws = await cls.connect(endpoint, timeout)
        cdp = cls(http, ws, endpoint)
        cdp._start("live-view-cdp")
        return cdp

    def _skip(self, text: str) -> bool:
        return text.startswith(self._SKIPPED) and not text.startswith(self._KEPT)

    async def _event(self, method: str, params: dict[str, Any], session: str | None) -> None:
        handler = self.handlers.get(session or "")
        if handler is not None:
            handler(method, params)


@dataclass(frozen=True)
class Frame:
    """One picture of a tab: JPEG bytes and the tab's viewport in CSS pixels (clicks are mapped to it)."""

    jpeg: bytes
    width: float
    height: float
    at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class PageTab:
    """A page target of the browser (a tab)."""

    id: str
    url: str
    title: str
    opener: str | None = None


class Viewer:
    """One live connection of the page: its messages in order, and only the newest picture (a slow
    connection skips pictures instead of queueing them)."""

    def __init__(self, client: str) -> None:
        self.client = client
        self.messages: deque[dict[str, Any]] = deque(maxlen=200)
        self.frame: Frame | None = None
        self.closed = False
        self._wake = asyncio.Event()
        self.target: str | None = None
        self.session = ""

    def say(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self._wake.set()

    def show(self, frame: Frame) -> None:
        self.frame = frame
        self._wake.set()

    def close(self) -> None:
        self.closed = True
        self._wake.set()

    async def next(self) -> dict[str, Any] | Frame | None:
        """The next message, else the newest picture; None once closed."""
        while True:
            if self.messages:
                return self.messages.popleft()
            if self.frame is not None:
                frame, self.frame = self.frame, None
                return frame
            if self.closed:
                return None
            self._wake.clear()
            await self._wake.wait()


class Stream:
    """Pictures of one tab while anyone watches it, the outline of what is acted on, and input to it."""

    def __init__(self, cdp: Cdp, target: str, on_gone: Callable[[Stream], None]) -> None:
        self.cdp = cdp
        self.target = target
        self.viewers: set[Viewer] = set()
        self.session = ""
        self.width = 0.0
        self.height = 0.0
        self.url = ""
        self.title = ""
        self.visible = False
        self._on_gone = on_gone
        self._scroll = (0.0, 0.0)
        self._last_frame = 0.0
        self._next_send = 0.0
        self._sent_hash = b""
        self._changed = asyncio.Event()
        self._poller: asyncio.Task[None] | None = None
        self._waiting: tuple[Frame, int] | None = None
        """A screencast frame waiting for its turn (and its number, acknowledged when it is sent)."""
        self._timer: asyncio.TimerHandle | None = None
        self._naming: asyncio.Task[None] | None = None
        self._name_again = False
        self._stuck = False
        self.gone = False

    # ----- life ----------------------------------------------------------------------------

    async def start(self) -> None:
        attached = await self.cdp.send("Target.attachToTarget", {"targetId": self.target, "flatten": True})
        self.session = str(attached["sessionId"])
        self.cdp.handlers[self.session] = self._on_event
        await self.cdp.send("Page.enable", session=self.session)
        await self.cdp.send("Runtime.enable", session=self.session)
        await self.cdp.send(
            "Runtime.addBinding", {"name": BINDING, "executionContextName": WORLD}, self.session
        )
        await self.cdp.send(
            "Page.addScriptToEvaluateOnNewDocument",
            {"source": BOX_SCRIPT, "worldName": WORLD, "runImmediately": True},
            self.session,
        )
        await self._measure()
        await self.cdp.send(
            "Page.startScreencast",
            {
                "format": "jpeg",
                "quality": QUALITY,
                "maxWidth": MAX_WIDTH,
                "maxHeight": MAX_HEIGHT,
                "everyNthFrame": 1,
            },
            self.session,
        )
        self._poller = asyncio.create_task(self._poll(), name=f"live-{self.target[:8]}")
        self._changed.set()  # a first picture at once, painted or not
        await self._name()

    async def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._naming is not None:
            self._naming.cancel()
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
            self._poller = None
        self.cdp.handlers.pop(self.session, None)
        if self.session and not self.gone:
            with contextlib.suppress(CdpError):
                await self.cdp.send("Page.stopScreencast", session=self.session, timeout=3)
                await self.cdp.send("Target.detachFromTarget", {"sessionId": self.session}, timeout=3)

    def _lost(self) -> None:
        if not self.gone:
            self.gone = True
            self._on_gone(self)

    # ----- pictures ------------------------------------------------------------------------

    async def _measure(self) -> None:
        metrics = await self.cdp.send("Page.getLayoutMetrics", session=self.session)
        viewport = metrics.get("cssVisualViewport") or metrics.get("layoutViewport") or {}
        self.width = float(viewport.get("clientWidth") or self.width or 0)
        self.height = float(viewport.get("clientHeight") or self.height or 0)
        self._scroll = (float(viewport.get("pageX") or 0), float(viewport.get("pageY") or 0))

    async def _poll(self) -> None:
        """Photograph the tab when the screencast is silent (a background tab) and something changed,
        or once every `STILL_PICTURE` seconds; only a changed picture goes out."""
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(STILL_PICTURE):
                    await self._changed.wait()
            self._changed.clear()
            if time.monotonic() - self._last_frame < STILL_PICTURE:
                continue  # the screencast shows it
            try:
                await self._capture()
            except (CdpError, KeyError, ValueError) as exc:
                log.debug("live view: no picture of %s: %s", self.target, exc)
                if self.cdp.closed.is_set():
                    self._lost()
                    return
                if not self._sent_hash and not self._stuck:  # never a picture: say why, once
                    self._stuck = True
                    for viewer in self.viewers:
                        viewer.say({**self.watching(), "message": NOT_DRAWN})
            await asyncio.sleep(1 / FRAME_RATE)

    async def _capture(self) -> None:
        await self._measure()
        if not self.width or not self.height:
            return
        scale = min(1.0, MAX_WIDTH / self.width, MAX_HEIGHT / self.height)
        clip = {"x": self._scroll[0], "y": self._scroll[1], "width": self.width, "height": self.height}
        shot = await self.cdp.send(
            "Page.captureScreenshot",
            {"format": "jpeg", "quality": QUALITY, "clip": {**clip, "scale": scale}},
            self.session,
            timeout=CAPTURE_TIMEOUT,
        )
        if time.monotonic() - self._last_frame < STILL_PICTURE:
            return  # a screencast frame came meanwhile: it is newer
        self._deliver(Frame(base64.b64decode(shot["data"]), self.width, self.height))

    def _deliver(self, frame: Frame) -> None:
        digest = hashlib.blake2b(frame.jpeg, digest_size=16).digest()
        if digest == self._sent_hash:
            return
        self._sent_hash = digest
        self._next_send = time.monotonic() + 1 / FRAME_RATE
        for viewer in self.viewers:
            viewer.show(frame)

    def _on_frame(self, params: dict[str, Any]) -> None:
        self._last_frame = time.monotonic()
        self.visible = True
        meta = params.get("metadata") or {}
        width = float(meta.get("deviceWidth") or self.width)
        height = float(meta.get("deviceHeight") or self.height)
        self.width, self.height = width, height
        if self._waiting is not None:  # a newer frame replaces the one waiting: the older is skipped
            self.cdp.post_soon("Page.screencastFrameAck", {"sessionId": self._waiting[1]}, self.session)
        frame = Frame(base64.b64decode(str(params.get("data", ""))), width, height)
        self._waiting = (frame, int(params.get("sessionId", 0)))
        wait = self._next_send - time.monotonic()
        if wait <= 0:
            self._flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(wait, self._flush)

    def _flush(self) -> None:
        """Send the waiting frame and acknowledge it: the browser sends the next one after that, so the
        acknowledgements pace the screencast to `FRAME_RATE`."""
        self._timer = None
        if self._waiting is None:
            return
        (frame, number), self._waiting = self._waiting, None
        self._deliver(frame)
        self.cdp.post_soon("Page.screencastFrameAck", {"sessionId": number}, self.session)

    def watching(self) -> dict[str, Any]:
        return {"kind": "live", "state": "watching", "url": self.url, "title": self.title}

    def refresh(self) -> None:
        """A new viewer: the current picture again, at once."""
        self._sent_hash = b""
        self._last_frame = 0.0
        self._changed.set()

    # ----- events --------------------------------------------------------------------------

    def _on_event(self, method: str, params: dict[str, Any]) -> None:
        if method == "Page.screencastFrame":
            self._on_frame(params)
        elif method == "Page.screencastVisibilityChanged":
            self.visible = bool(params.get("visible"))
            self._changed.set()
        elif method == "Runtime.bindingCalled" and params.get("name") == BINDING:
            self._box(str(params.get("payload", "")))
        elif method in _PAGE_CHANGED and not (params.get("frame") or {}).get("parentId"):
            self._changed.set()  # a new picture, and maybe a new title
            self._ask_name()
        elif method == "Inspector.detached":
            self._lost()

    def _box(self, payload: str) -> None:
        try:
            box = json.loads(payload)
            numbers = [float(box[k]) for k in ("x", "y", "w", "h", "vw", "vh")]
        except (ValueError, KeyError, TypeError):
            return
        kind = str(box.get("kind"))
        if kind not in ("click", "focus", "input"):
            return
        x, y, w, h, vw, vh = numbers
        message = {"kind": "highlight", "action": kind, "box": [x, y, w, h], "viewport": [vw, vh]}
        for viewer in self.viewers:
            viewer.say(message)
        self._changed.set()

    async def _name(self) -> None:
        """The tab's title and address, asked of the browser (a title change sends no event); asked again
        when the page changed meanwhile (a title asked at the navigation is often not parsed yet)."""
        while True:
            self._name_again = False
            with contextlib.suppress(CdpError):
                info = (await self.cdp.send("Target.getTargetInfo", {"targetId": self.target}))["targetInfo"]
                self.named(str(info.get("url") or ""), str(info.get("title") or ""))
            if not self._name_again:
                return

    def _ask_name(self) -> None:
        if self._naming is None or self._naming.done():
            self._naming = asyncio.create_task(self._name())
        else:
            self._name_again = True

    def named(self, url: str, title: str) -> None:
        """The tab's address or title changed (the browser's target events)."""
        if (url, title) == (self.url, self.title):
            return
        self.url, self.title = url, title
        for viewer in self.viewers:
            viewer.say({"kind": "page", "url": url, "title": title})

    # ----- input ---------------------------------------------------------------------------

    async def drive(self, message: dict[str, Any]) -> str | None:
        """Carry out one input message of a viewer (already allowed); returns a problem, or None."""
        kind = message.get("kind")
        if kind in ("click", "wheel"):
            x, y = _fraction(message.get("x")), _fraction(message.get("y"))
            if x is None or y is None or not self.width or not self.height:
                return "a click needs x and y between 0 and 1 (a share of the picture's width and height)"
            at = {"x": x * self.width, "y": y * self.height}
            if kind == "wheel":
                delta = message.get("dy")
                if not isinstance(delta, int | float) or abs(delta) > 10_000:
                    return "a wheel turn needs dy, in pixels (at most 10000)"
                await self._input(
                    "Input.dispatchMouseEvent", {"type": "mouseWheel", **at, "deltaX": 0, "deltaY": delta}
                )
            else:
                await self._input("Input.dispatchMouseEvent", {"type": "mouseMoved", **at})
                press = {**at, "button": "left", "clickCount": 1}
                await self._input("Input.dispatchMouseEvent", {"type": "mousePressed", **press})
                await self._input("Input.dispatchMouseEvent", {"type": "mouseReleased", **press})
        elif kind == "key":
            problem = await self._key(message)
            if problem:
                return problem
        elif kind == "text":
            text = message.get("text")
            if not isinstance(text, str) or not text or len(text) > MAX_TEXT:
                return f"typed text is a non-empty string of at most {MAX_TEXT} characters"
            await self._input("Input.insertText", {"text": text})
        else:
            return f"unknown input {str(kind)[:40]!r}: click, wheel, key or text"
        self._changed.set()
        return None

    async def _key(self, message: dict[str, Any]) -> str | None:
        name = message.get("key")
        if not isinstance(name, str) or name not in KEYS:
            return f"a key is one of {', '.join(k if k != ' ' else 'Space' for k in KEYS)}"
        modifiers = sum(bit for word, bit in _MODIFIERS.items() if message.get(word) is True)
        code, code_name, text = KEYS[name]
        common = {
            "key": name,
            "code": code_name,
            "windowsVirtualKeyCode": code,
            "nativeVirtualKeyCode": code,
            "modifiers": modifiers,
        }
        down = {"type": "keyDown", **common, **({"text": text} if text and not modifiers & 6 else {})}
        await self._input("Input.dispatchKeyEvent", down)
        await self._input("Input.dispatchKeyEvent", {"type": "keyUp", **common})
        return None

    async def _input(self, method: str, params: dict[str, Any]) -> None:
        await self.cdp.send(method, params, self.session, timeout=10)


def _fraction(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0.0 <= value <= 1.0 else None
