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
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import re
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import unquote, urlsplit

import aiohttp

from browser_copilot.config import Settings
from browser_copilot.errors import NetworkPolicyDown
from browser_copilot.safety.addresses import url_commits
from browser_copilot.sandbox.box import MODEL_CODE_URL
from browser_copilot.sandbox.cdp import CdpConnection, CdpError

log = logging.getLogger(__name__)

GRACE_SECONDS = 6.0
"""How long after a code call the browser-wide interception stays on: a page keeps the user activation of
the code's last click for 5 s, long enough for a timer the code left behind to open a popup."""

_SECOND_LEVEL = frozenset(
    [
        "co",
        "com",
        "net",
        "org",
        "gov",
        "edu",
        "ac",
        "or",
        "ne",
        "go",
        "gob",
        "gouv",
        "mil",
        "nic",
        "ltd",
        "plc",
        "sch",
        "nhs",
        "gen",
        "info",
        "biz",
    ]
)
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})
_DIGITS = re.compile(r"\d(?:[\d .-]?\d){9,}")
"""Ten or more digits, allowing single separators: a card, account or phone number."""
_WORDS = re.compile(r"(?:[A-Za-z]{1,20}|\d{1,6})(?:[-_.+~,](?:[A-Za-z]{1,20}|\d{1,6}))*")
"""A path segment made of words: a slug like `how-to-cook-rice` or `report_2024.pdf`."""
_NAMED = re.compile(r"(?<![\w@.-])(?:https?://)?((?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,24})\b", re.I)
_SUBFRAME_SCHEMES = ("http", "https", "about", "data", "blob")
_KEPT_REFUSALS = 100
"""Refusals kept until the next code call asks (a page left open refuses its beacons for hours)."""
_NEW_TAB = ("chrome://newtab", "chrome://new-tab-page", "edge://newtab", "chrome-search://")


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def site_of(host: str) -> str:
    """The site of a host name, approximately its registrable domain: `www.shop.example.co.uk` ->
    `example.co.uk`, `api.shop.com` -> `shop.com`; an IP address or a one-label name is its own site."""
    host = host.lower().strip(".").strip("[]")
    if _is_ip(host):
        return host
    labels = host.split(".")
    if len(labels) <= 2:
        return host
    if labels[-2] in _SECOND_LEVEL and len(labels[-1]) == 2:
        return ".".join(labels[-3:])
    return ".".join(labels[-2:])


def _matches(host: str, domain: str) -> bool:
    domain = domain.lower().lstrip("*").lstrip(".")
    return host == domain or host.endswith("." + domain)


def carried_data(
    method: str, url: str, *, body: bool, fragment: str = "", document: bool = False
) -> str | None:
    """What data a request carries to its server, or None: a method other than GET/HEAD, a body, a query
    string, a #fragment on a document (its page can read and send it on), a path segment that holds
    data (ten digits or more, an @, or more than 32 characters that are not words) or a host name label
    of more than 32 characters."""
    if method.upper() not in ("GET", "HEAD"):
        return f"a {method.upper()} request"
    if body:
        return "a request body"
    parts = urlsplit(url)
    if parts.query:
        return "a query string"
    if document and fragment.strip("#"):
        return "a #fragment"
    for segment in unquote(parts.path).split("/"):
        if "@" in segment or _DIGITS.search(segment):
            return "data in the path"
        if len(segment) > 32 and not _WORDS.fullmatch(segment):
            return "data in the path"
    if any(len(label) > 32 for label in (parts.hostname or "").split(".")):
        return "data in the host name"
    return None


def named_sites(text: str) -> set[str]:
    """The sites a text names as a domain or a URL (`booking.com`, `https://www.ryanair.com/ie`)."""
    return {site_of(m.group(1)) for m in _NAMED.finditer(text)}


def _origin(url: str) -> str:
    """scheme://host:port of an http(s) address (the port always written), '' for any other."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return ""
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        return ""
    return f"{scheme}://{(parts.hostname or '').lower()}:{port or (443 if scheme == 'https' else 80)}"


def _requested(params: dict[str, Any]) -> str:
    """The short URL of a paused request (for the log)."""
    return short_url(str((params.get("request") or {}).get("url") or ""))


def short_url(url: str) -> str:
    """A URL for a refusal note: scheme, host and the start of the path, never the query's data."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url[:40] + "…"
    if parts.scheme not in ("http", "https", "ws", "wss"):
        return url[:60] + ("…" if len(url) > 60 else "")
    path = parts.path if len(parts.path) <= 40 else parts.path[:40] + "…"
    return f"{parts.scheme}://{parts.netloc}{path}" + ("?…" if parts.query else "")


@dataclass
class UrlPolicy:
    """Where the agent's tabs may go and what they may load (F46): http(s) only; BLOCKED_DOMAINS never,
    with ALLOWED_DOMAINS nothing else; never a forbidden origin (the browser's DevTools endpoint, the
    app's own server); without a list, no data to a site outside the task (see `judge`). One object per
    app: the observation's after-the-fact check and the network guard use the same."""

    allowed: tuple[str, ...] = ()
    """When set, only these domains (and their subdomains)."""
    blocked: tuple[str, ...] = ()
    forbidden_origins: list[str] = field(default_factory=list)
    """`http://host:port` origins no agent tab may load; loopback names count as one host."""

    @classmethod
    def from_settings(cls, settings: Settings) -> UrlPolicy:
        allowed, blocked = settings.domain_lists
        return cls(allowed, blocked)

    def forbid(self, url: str) -> None:
        parts = urlsplit(url)
        origin = f"{parts.hostname}:{parts.port or (443 if parts.scheme in ('https', 'wss') else 80)}"
        if origin not in self.forbidden_origins:
            self.forbidden_origins.append(origin)

    def forbidden(self, url: str) -> bool:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        try:
            port = parts.port or (443 if parts.scheme in ("https", "wss") else 80)
        except ValueError:
            return False
        for origin in self.forbidden_origins:
            their_host, _, their_port = origin.rpartition(":")
            same = host == their_host or (host in _LOOPBACK and their_host in _LOOPBACK)
            if same and str(port) == their_port:
                return True
        return False

    def list_problem(self, host: str) -> str | None:
        host = host.lower()
        if any(_matches(host, d) for d in self.blocked):
            return f"{host} is on the blocked list (BLOCKED_DOMAINS)"
        if self.allowed and not any(_matches(host, d) for d in self.allowed):
            return f"{host} is not on the allowed list (ALLOWED_DOMAINS)"
        return None

    def problem(self, url: str) -> str | None:
        """None when the agent's tab may show this URL; otherwise why not (checked after actions too)."""
        if url == "" or _blank(url) or url.startswith("chrome-error://"):
            return None
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            return f"{parts.scheme}: URLs are not allowed (only http, https and about:blank)"
        if self.forbidden(url):
            return f"{parts.netloc} is the browser's DevTools endpoint or the app's own server"
        return self.list_problem(parts.hostname or "")

    def judge(self, request: Request, sites: set[str]) -> str | None:
        """Why this request may not leave, or None. `sites`: the task's sites (no list set)."""
        parts = urlsplit(request.url)
        scheme = parts.scheme.lower()
        if scheme in ("data", "blob", "about"):
            if request.main_frame and scheme == "data":
                return "a data: URL is never opened as a page"
            return None
        if scheme not in ("http", "https", "ws", "wss"):
            return f"{scheme}: URLs are never loaded"
        if self.forbidden(request.url):
            return f"{parts.netloc} is the browser's DevTools endpoint or the app's own server"
        host = (parts.hostname or "").lower()
        listed = self.list_problem(host)
        if listed is not None or self.allowed:
            return listed
        site = site_of(host)
        if site in sites or (request.loading and request.kind != "Document"):
            return None
        data = carried_data(
            request.method,
            request.url,
            body=request.body,
            fragment=request.fragment,
            document=request.kind == "Document",
        )
        if data is not None:
            return f"it would send data ({data}) to {site}, a site that is not part of this task"
        return None


@dataclass(frozen=True, slots=True)
class Request:
    """A paused request, as the policy sees it."""

    url: str
    method: str = "GET"
    body: bool = False
    fragment: str = ""
    kind: str = "Other"
    """CDP resource type: Document, Script, Image, XHR, Fetch, Ping, ..."""
    main_frame: bool = False
    """A document for a tab's top-level frame (a navigation of the tab)."""
    loading: bool = False
    """The requesting frame's document has not finished loading (its load event has not fired)."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request the guard refused: what (without its data), why, and from which tab."""

    url: str
    why: str
    tab: str


def refusal_note(refusals: list[Refusal], limit: int = 5) -> str:
    """The text the model reads after a code call in which requests were refused ('' when none)."""
    if not refusals:
        return ""
    seen: dict[tuple[str, str], int] = {}
    for refusal in refusals:
        key = (refusal.url, refusal.why)
        seen[key] = seen.get(key, 0) + 1
    lines = []
    for (url, why), count in list(seen.items())[:limit]:
        times = f" ({count}×)" if count > 1 else ""
        lines.append(f"- {url}{times}: {why}")
    more = len(seen) - limit
    if more > 0:
        lines.append(f"- and {more} more")
    return (
        "\nRefused by Browser Copilot (nothing was sent):\n"
        + "\n".join(lines)
        + "\nAct through the page's controls. A site becomes part of the task when the user names it "
        "(a domain or URL in their message) or when a tab opens one of its pages without data in the URL."
    )


# ----- the DevTools connection -------------------------------------------------------------------


_NETWORK_EVENT = '{"method":"Network.'
"""How Chromium starts an event of the Network domain: not parsed (see `NetworkGuard._network_event`)."""
_RUNTIME_EVENT = '{"method":"Runtime.'
"""Runtime is on only so that stacks follow timers and promises: its events are not read."""
_WILL_BE_SENT = '{"method":"Network.requestWillBeSent"'
_REQUEST_ID = re.compile(r'"requestId":"([^"]{1,200})"')
_SESSION_KEY = '"sessionId":"'
_STACK_DEPTH = {"maxDepth": 32}
_READS = frozenset({"GET", "HEAD", "OPTIONS"})
MODEL_WRITE = (
    "your code sent it from inside the page (page.evaluate: fetch, XMLHttpRequest, sendBeacon, or a page "
    "function, timer or event it set off); only the page's own controls send data. Act through "
    "locators (click, fill, check) so that the guard can check the action"
)
"""Why a request the model's page code made is refused (`NetworkGuard._model_made`)."""
MODEL_LATE = (
    "your code left it to run after its call had ended (a timer or a handler it set in the page moved "
    "the tab); act within the call, through locators, or open an address with page.goto(url)"
)
MODEL_ELSEWHERE = (
    "your code moved the tab to another site from inside the page (location, window.open, or a link's "
    "click() in page.evaluate); open another site's address with page.goto(url)"
)
_CALL_TAIL = 0.5
"""A navigation the code set off as its call returned pauses a moment later: still the call's."""
_WAIT_FOR_INITIATOR = 0.5
"""How long a paused request waits for the event that says who made it (it usually came first)."""
_KEPT_INITIATORS = 4096


EventHandler = Callable[[str, dict[str, Any], str | None], Awaitable[None]]


class _Connection(CdpConnection):
    """The guard's DevTools connection: its events go to the guard; Runtime events are skipped and
    Network events read as text only (they are many)."""

    def __init__(
        self,
        http: aiohttp.ClientSession,
        ws: aiohttp.ClientWebSocketResponse,
        on_event: EventHandler,
        on_network: Callable[[str], None] | None,
    ) -> None:
        super().__init__(http, ws)
        self._on_event = on_event
        self._on_network = on_network

    @classmethod
    async def open(
        cls,
        endpoint: str,
        on_event: EventHandler,
        *,
        on_network: Callable[[str], None] | None = None,
        timeout: float = 10.0,
    ) -> _Connection:
        http, ws = await cls.connect(endpoint, timeout)
        connection = cls(http, ws, on_event, on_network)
        connection._start("network-guard")
        return connection

    def _skip(self, text: str) -> bool:
        if text.startswith(_RUNTIME_EVENT):
            return True
        if text.startswith(_NETWORK_EVENT):
            if self._on_network is not None:
                self._on_network(text)
            return True
        return False

    async def _event(self, method: str, params: dict[str, Any], session: str | None) -> None:
        await self._on_event(method, params, session)


# ----- the guard --------------------------------------------------------------------------------


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
    """Network and Runtime are on in its session: its requests say who made them."""
    model_made: bool = False
    """A worker that started while the model's code ran: what it sends, the code sent."""
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


def _blank(url: str) -> bool:
    """A blank page, with a fragment too (a run's new window carries its mark there: `RUN_MARK`)."""
    return url.split("#", 1)[0] == "about:blank"


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
        self._initiators: OrderedDict[str, bool] = OrderedDict()
        """Network request id -> the model's page code made it (its initiator stack names that code)."""
        self._awaited: dict[str, asyncio.Event] = {}
        self._model_frames: set[str] = set()
        """Frames the model's page code attached (an iframe it made): what they send, the code sent."""
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
            self._cdp = await _Connection.open(endpoint, self._on_event, on_network=self._network_event)
            await self._cdp.send("Target.setDiscoverTargets", {"discover": True})
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
            hosts = _LOOPBACK - {"::1"} if host in _LOOPBACK else {host}
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
            alone = _is_ip(name) or (not listed and "." not in name)
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
        """Network events (who made each request) and stacks that follow timers, promises and events,
        so that a request keeps the name of the model's page code that set it off (`_network_event`).
        Runtime's own events are not read. `wait`: the target runs, and must be watched before the code
        that may reach it does."""
        cdp, session = self._cdp, target.session
        if cdp is None or session is None or target.watched:
            return
        target.watched = True
        try:
            for method, params in (
                ("Network.enable", {"maxTotalBufferSize": 0, "maxResourceBufferSize": 0}),
                ("Runtime.enable", {}),
                ("Runtime.setAsyncCallStackDepth", _STACK_DEPTH),
            ):
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
        if main and target.opened_by_agent and not target.committed and not url.startswith(_NEW_TAB):
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
        elif self._covered(target) and scheme not in ("about", "chrome-error", "") and not _blank(target.url):
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
        if kind in ("worker", "shared_worker") and target.created_in_call:
            target.model_made = True
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
        stack = params.get("stack")
        if params.get("parentFrameId") in self._model_frames or (
            stack and MODEL_CODE_URL in json.dumps(stack)
        ):
            self._model_frames.add(frame)

    async def _frame_detached(self, params: dict[str, Any], session: str | None) -> None:
        if params.get("reason") != "swap":
            frame = str(params.get("frameId"))
            self._frames.pop(frame, None)
            self._loading.pop(frame, None)
            self._model_frames.discard(frame)

    async def _lifecycle(self, params: dict[str, Any], session: str | None) -> None:
        name = params.get("name")
        if name == "init":
            self._loading[str(params.get("frameId"))] = True
            target = self._targets.get(self._sessions.get(session or "", ""))
            if target is not None and target.watched and self._cdp is not None:
                # A new document may live in a new renderer process, which forgets the stack depth.
                await self._cdp.post("Runtime.setAsyncCallStackDepth", _STACK_DEPTH, session)
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
        if scheme in ("http", "https", "file") or _blank(url):  # Fetch decides these
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
        self.downloads_begun += 1
        self._downloads_running.add(str(params.get("guid")))

    async def _download_progress(self, params: dict[str, Any], session: str | None) -> None:
        if params.get("state") in ("completed", "canceled"):
            self._downloads_running.discard(str(params.get("guid")))

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
        if why is None and self._asks_who(params, request, kind, main):
            # What the model's page code may not do itself: send data (a navigation of the guard's own
            # checking aside), open an address that acts, or move a tab to another site or after its
            # call. Who made a request comes in a Network event, usually before the pause.
            network_id = params.get("networkId")
            unknown = network_id and network_id not in self._initiators and frame not in self._model_frames
            if unknown and target is not None and target.watched:
                self._spawn(self._decide_later(params, session, target, str(network_id), main))
                return
            why = self._model_made(params, target, main)
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
        # A navigation the code made in the page is aborted: the tab stays on its page (an error page
        # would replace it). Anything else fails as blocked, which is what the code's await reads.
        reason = "Aborted" if main and why in (MODEL_LATE, MODEL_ELSEWHERE) else "BlockedByClient"
        await cdp.post(
            "Fetch.failRequest", {"requestId": params.get("requestId"), "errorReason": reason}, session
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
        blank = not self._reaching and (tab.url in ("", "about:blank") or tab.url.startswith(_NEW_TAB))
        same = (page.hostname, page.port) == (there.hostname, there.port)
        return blank or same

    @staticmethod
    def _writes(request: dict[str, Any], kind: str) -> bool:
        """A request that sends something: any method but a read, or a ping (sendBeacon, <a ping>)."""
        return str(request.get("method") or "GET").upper() not in _READS or kind == "Ping"

    def _asks_who(self, params: dict[str, Any], request: dict[str, Any], kind: str, main: bool) -> bool:
        """Whether this request is refused if the model's page code made it: one that sends data (a
        document's is the guard's, which checks the form in the page), one whose address acts
        (`url_commits`), or a navigation of a tab (to another site, or after the call)."""
        if main:
            return True
        if kind != "Document" and self._writes(request, kind):
            return True
        try:
            return url_commits(str(request.get("url") or "")) is not None
        except ValueError:
            return True

    def _made_by_model(self, params: dict[str, Any], target: _Target | None) -> bool:
        frame = str(params.get("frameId") or "")
        network_id = params.get("networkId")
        if frame in self._model_frames:
            return True
        if network_id:
            return bool(self._initiators.get(str(network_id)))
        # A worker's request pauses in its page's session without a network id: a worker the code
        # started is the code's.
        tab = target.tab if target is not None else ""
        return any(t.model_made and t.tab == tab for t in self._targets.values())

    def _model_made(self, params: dict[str, Any], target: _Target | None, main: bool) -> str | None:
        """Why the model's page code may not make this request (None: it did not make it, or it may)."""
        if not self._made_by_model(params, target):
            return None
        request = params.get("request") or {}
        if not main:
            return MODEL_WRITE
        if self._calls == 0 and time.monotonic() - self._call_ended > _CALL_TAIL:
            return MODEL_LATE
        if params.get("redirectedRequestId"):
            return None  # the server chose where it goes; the first address was checked
        url = str(request.get("url") or "")
        here = self._page_origin(target)
        if here is not None and _origin(url) != here:
            return MODEL_ELSEWHERE
        return None

    def _page_origin(self, target: _Target | None) -> str | None:
        """The origin of the page a tab shows (of its opener's page for a tab not yet shown)."""
        seen: set[str] = set()
        while target is not None and target.id not in seen:
            seen.add(target.id)
            if urlsplit(target.url).scheme in ("http", "https"):
                return _origin(target.url)
            target = self._targets.get(target.opener or "")
        return None

    async def _decide_later(
        self,
        params: dict[str, Any],
        session: str | None,
        target: _Target | None,
        network_id: str,
        main: bool,
    ) -> None:
        """Wait (briefly) for the event that says who made a paused request, then decide it."""
        cdp = self._cdp
        arrived = self._awaited.setdefault(network_id, asyncio.Event())
        try:
            await asyncio.wait_for(arrived.wait(), _WAIT_FOR_INITIATOR)
        except TimeoutError:
            log.debug("network guard: no initiator for %s; decided without it", network_id)
        finally:
            self._awaited.pop(network_id, None)
        if cdp is None or cdp is not self._cdp:
            return
        try:
            await self._settle(cdp, params, session, target, self._model_made(params, target, main), main)
        except Exception:  # never left paused
            log.exception("network policy: deciding %s failed; refused", _requested(params))
            await self._fail_closed(cdp, params, session)

    def _from_model_worker(self, text: str) -> bool:
        """The event came from the session of a worker the model's code started (a worker's requests
        name no stack of the page)."""
        at = text.rfind(_SESSION_KEY)
        if at < 0:
            return False
        session = text[at + len(_SESSION_KEY) :].split('"', 1)[0]
        target = self._targets.get(self._sessions.get(session, ""))
        return target is not None and target.model_made

    def _network_event(self, text: str) -> None:
        """A Network event, as text: a request's initiator stack naming the model's page code marks it
        (`MODEL_CODE_URL`); nothing else is read."""
        if not text.startswith(_WILL_BE_SENT):
            return
        found = _REQUEST_ID.search(text, 0, 300)
        if found is None:
            return
        request_id = found.group(1)
        made = (
            MODEL_CODE_URL in text
            or self._initiators.get(request_id, False)  # a redirect keeps it
            or self._from_model_worker(text)
        )
        self._initiators[request_id] = made
        self._initiators.move_to_end(request_id)
        while len(self._initiators) > _KEPT_INITIATORS:
            self._initiators.popitem(last=False)
        waiting = self._awaited.get(request_id)
        if waiting is not None:
            waiting.set()

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
        "Page.downloadWillBegin": _download_begins,
        "Page.downloadProgress": _download_progress,
    }


__all__ = [
    "GRACE_SECONDS",
    "RUN_MARK",
    "NetworkGuard",
    "Refusal",
    "Request",
    "TabOwners",
    "UrlPolicy",
    "carried_data",
    "named_sites",
    "refusal_note",
    "run_tab_url",
    "site_of",
]
