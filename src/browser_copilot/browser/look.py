"""The framework's own look at the agent's tab, over the app's DevTools connection (the network policy's)
instead of through the code tool: one `Runtime.evaluate` of the observer (observer.js) in an isolated
world of the app's own in the tab's main frame, and one `Target.getTargets` for the tabs' titles and
addresses. It saves the code tool's round trip (4–9 ms on a 2-core machine, most of an observation of an
unchanged page), and the observation no longer passes through the process where the model's code runs.

What only the code tool knows, it leaves to the code tool (`observe` then looks through it, as before):
a JavaScript dialog open in the tab (the page answers nothing under it; the MCP server reports it as
its modal state), a download begun since the code tool last reported them all, a tab opened or closed
since the code tool last listed them (the order of its tab list is the MCP server's, whose indexes
`switch_tab` takes), a screenshot, and any failure here (a navigation under the look, a closed tab).

The world is made with `Page.createIsolatedWorld`; page scripts share its DOM but none of its globals.
A context id can be met again in another renderer process (a new document of another site), so every
look first checks a token only the app's world holds; the observer's source goes only into a context
just made for the world.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from functools import cache
from typing import Any

from browser_copilot.safety.classifier import secret_source
from browser_copilot.sandbox.cdp import CdpError
from browser_copilot.sandbox.guard import cookie_words
from browser_copilot.sandbox.network import NetworkGuard
from browser_copilot.scripts import script_source

WORLD = "__bc_look"
MISSING = "__bcMissing"
TIMEOUT = 30.0
"""The observer's own waits (the settle) are bounded well below this."""


EXTRACTOR_PARTS = (
    "extractor.js",
    "extract_element.js",
    "extract_walk.js",
    "extract_covers.js",
    "extract_list.js",
)
"""The extractor's one function, in parts (what one element is, the walk, what covers what, the result),
joined in this order: each part uses the names of those before it."""


@cache
def extractor_source() -> str:
    body = "\n".join(script_source("browser_copilot.browser", name) for name in EXTRACTOR_PARTS)
    return body.replace("__IS_SECRET__", secret_source())


def _loading_words() -> list[str]:
    """What a region says while its content is on its way (loading_words.json): the observer waits."""
    data = json.loads(script_source("browser_copilot.browser", "loading_words.json"))
    return [str(w) for w in data["words"]]


@cache
def observer_source() -> tuple[str, str]:
    """(version, source) of the page's half of an observation (observer.js), extractor and banner in it."""
    fills = {
        "__EXTRACT__": extractor_source(),
        "__BANNER__": script_source("browser_copilot.sandbox", "banner.js"),
        "__COOKIE_WORDS__": cookie_words(),
        "__LOADING_WORDS__": json.dumps(_loading_words(), ensure_ascii=False),
    }
    body = script_source("browser_copilot.browser", "observer.js")
    version = hashlib.sha256("".join((body, *fills.values())).encode()).hexdigest()[:12]
    for name, value in {"__VERSION__": json.dumps(version), **fills}.items():
        body = body.replace(name, value, 1)
    return version, body


class Look:
    """One browser session's look: its world's context in each tab, and what the code tool last told."""

    def __init__(self) -> None:
        self._token = json.dumps(secrets.token_hex(16))
        self._contexts: dict[str, int] = {}
        """Target id -> the execution context of the look's world there, as last made."""
        self._tabs: list[str] | None = None
        """The tabs' target ids in the MCP server's order, as its last observation listed them."""
        self._current: str | None = None
        """The MCP server's current page (the code tool's `page`) in that listing."""
        self._downloads_known = -1
        """`NetworkGuard.downloads_begun` when the code tool last had reported every download."""
        self.looks = 0
        self.through_code_tool = 0
        """How many observations went each way (for the benchmarks)."""

    def forget(self) -> None:
        """A new browser or server: nothing known holds."""
        self._contexts.clear()
        self._tabs = None
        self._current = None
        self._downloads_known = -1

    def through_code_tool_next(self) -> None:
        """The next observation goes through the code tool (which lists the tabs again): another tab
        was selected, or a caller wants the code tool's figure."""
        self._tabs = None
        self._current = None

    def learned(self, data: dict[str, Any], downloads_begun: int) -> None:
        """What an observation through the code tool says: the tabs' order (`ids`), and whether every
        download begun before it (`downloads_begun`, read before it ran) is reported (`pending`)."""
        self.through_code_tool += 1
        ids, tabs = data.get("ids"), data.get("tabs")
        self._tabs = [str(i) for i in ids] if isinstance(ids, list) and all(ids) else None
        self._current = None
        if self._tabs is not None and isinstance(tabs, list) and len(tabs) == len(self._tabs):
            self._current = next((self._tabs[i] for i, tab in enumerate(tabs) if tab[1]), None)
        if not data.get("pending"):
            self._downloads_known = downloads_begun

    async def payload(
        self, guard: NetworkGuard, opts: dict[str, Any], version: str, install: str
    ) -> dict[str, Any] | None:
        """The observation's data (as observe.js returns it) of the MCP server's current page, or None:
        the code tool looks instead. Raises `CdpError` when the connection fails under it (the code
        tool looks then, too)."""
        target_id = self._current
        if (
            self._tabs is None
            or target_id is None
            or guard.downloads_running
            or guard.downloads_begun != self._downloads_known
        ):
            return None
        infos = await self._tab_infos(guard, target_id)
        if infos is None:
            return None
        text = await self._observe(guard, target_id, json.dumps(opts), json.dumps(version), install)
        if not isinstance(text, str):
            return None
        data: dict[str, Any] = json.loads(text)
        data["tabs"] = [
            [i, t == target_id, infos[t][0], data.get("title", "") if t == target_id else infos[t][1]]
            for i, t in enumerate(self._tabs)
        ]
        data["downloads"] = []
        self.looks += 1
        return data

    async def _tab_infos(self, guard: NetworkGuard, target_id: str) -> dict[str, tuple[str, str]] | None:
        """Each tab's (url, title), when the tabs are the ones the code tool last listed."""
        answer = await guard.browser_call("Target.getTargets")
        pages = [t for t in answer.get("targetInfos", []) if t.get("type") == "page"]
        context = next((t.get("browserContextId") for t in pages if t.get("targetId") == target_id), None)
        infos = {
            str(t["targetId"]): (str(t.get("url") or ""), _title(t))
            for t in pages
            if not t.get("subtype") and t.get("browserContextId") == context
        }
        assert self._tabs is not None
        return infos if set(infos) == set(self._tabs) else None

    async def prepare(self, guard: NetworkGuard, target_id: str, version: str, install: str) -> None:
        """Put the observer into a new document of the tab while it loads, ahead of its first look
        (only once the look is in use). Raises `CdpError`."""
        if target_id == self._current:
            await self._installed(guard, target_id, json.dumps(version), install)

    async def _installed(self, guard: NetworkGuard, target_id: str, version: str, install: str) -> int | None:
        """A context of the look's world just made in the tab, with the token and the observer in it (the
        same text for every document: the browser reuses its compiled code), or None."""
        made = await guard.in_tab(
            target_id, "Page.createIsolatedWorld", {"frameId": target_id, "worldName": WORLD}, timeout=TIMEOUT
        )
        if made is None:
            return None
        context = int(made["executionContextId"])
        self._contexts[target_id] = context
        have = f"globalThis.__bcObserver && __bcObserver.version === {version}"
        text = f"globalThis.__bcLook = {self._token};\nif (!({have})) {{\n{install}\n}}\n0"
        return context if await self._evaluate(guard, target_id, text, context) == 0 else None

    async def _observe(
        self, guard: NetworkGuard, target_id: str, opts: str, version: str, install: str
    ) -> object:
        run = f"__bcObserver.observe({opts})"
        known = self._contexts.get(target_id)
        if known is not None:
            ours = f"globalThis.__bcLook === {self._token} && globalThis.__bcObserver"
            out = await self._evaluate(
                guard,
                target_id,
                f"({ours} && __bcObserver.version === {version}) ? {run} : {MISSING!r}",
                known,
            )
            if out != MISSING:
                return out
        context = await self._installed(guard, target_id, version, install)
        return None if context is None else await self._evaluate(guard, target_id, run, context)

    @staticmethod
    async def _evaluate(guard: NetworkGuard, target_id: str, expression: str, context: int) -> object:
        """The value, `MISSING` when the context is gone (a new document), None on a dialog or an error."""
        params = {"expression": expression, "contextId": context, "returnByValue": True, "awaitPromise": True}
        try:
            answer = await guard.in_tab(target_id, "Runtime.evaluate", params, timeout=TIMEOUT)
        except CdpError as exc:
            return MISSING if "context" in str(exc).lower() else None
        if answer is None or answer.get("exceptionDetails"):
            return None
        return (answer.get("result") or {}).get("value")


def _title(info: dict[str, Any]) -> str:
    """A tab's title as the page gives it: the browser shows the address of a page without one."""
    title, url = str(info.get("title") or ""), str(info.get("url") or "")
    bare = url.split("://", 1)[-1]
    return "" if title in (url, bare) or (bare and bare.startswith(title) and "/" in title) else title
