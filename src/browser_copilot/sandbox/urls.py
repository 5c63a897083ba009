"""Where the agent's tabs may go and what they may send to whom (F46): `UrlPolicy.judge` is the rule's one
implementation (README "Network policy"); the network guard (network.py) applies it to every request of
the agent's tabs before it leaves."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from browser_copilot.config import Settings

_SECOND_LEVEL_WORDS = "co com net org gov edu ac or ne go gob gouv mil nic ltd plc sch nhs gen info biz"
_SECOND_LEVEL = frozenset(_SECOND_LEVEL_WORDS.split())
_DIGITS = re.compile(r"\d(?:[\d .-]?\d){9,}")
"""Ten or more digits, allowing single separators: a card, account or phone number."""
_WORDS = re.compile(r"(?:[A-Za-z]{1,20}|\d{1,6})(?:[-_.+~,](?:[A-Za-z]{1,20}|\d{1,6}))*")
"""A path segment made of words: a slug like `how-to-cook-rice` or `report_2024.pdf`."""
_NAMED = re.compile(r"(?<![\w@.-])(?:https?://)?((?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,24})\b", re.I)
NEW_TAB = ("chrome://newtab", "chrome://new-tab-page", "edge://newtab", "chrome-search://")


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def is_loopback(host: str) -> bool:
    """A name or address of this machine itself: `localhost` and every name under it (Chrome resolves
    `*.localhost` to the loopback address), any 127/8 or ::1 address (IPv4-mapped too), the unspecified
    address."""
    host = host.lower().strip("[]").rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_unspecified


def site_of(host: str) -> str:
    """The site of a host name, approximately its registrable domain: `www.shop.example.co.uk` ->
    `example.co.uk`, `api.shop.com` -> `shop.com`; an IP address or a one-label name is its own site."""
    host = host.lower().strip(".").strip("[]")
    if is_ip(host):
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
    string, a #fragment on a document (its page can read and send it on), a user name or password, a
    path that holds data (ten digits or more, across its segments too; a segment with an @, or of more
    than 32 characters that are not words) or a host name that does (a label of more than 32
    characters, ten digits or more across its labels)."""
    if method.upper() not in ("GET", "HEAD"):
        return f"a {method.upper()} request"
    if body:
        return "a request body"
    parts = urlsplit(url)
    if parts.query:
        return "a query string"
    if document and fragment.strip("#"):
        return "a #fragment"
    if parts.username or parts.password:
        return "a user name or password in the address"
    path = unquote(parts.path)
    # Digits count across segments: "/4111/1111/1111/1111" is one number split in four.
    if _DIGITS.search(path.replace("/", ".")):
        return "data in the path"
    for segment in path.split("/"):
        if "@" in segment or (len(segment) > 32 and not _WORDS.fullmatch(segment)):
            return "data in the path"
    host = parts.hostname or ""
    if any(len(label) > 32 for label in host.split(".")) or (not is_ip(host) and _DIGITS.search(host)):
        return "data in the host name"
    return None


def named_sites(text: str) -> set[str]:
    """The sites a text names as a domain or a URL (`booking.com`, `https://www.ryanair.com/ie`)."""
    return {site_of(m.group(1)) for m in _NAMED.finditer(text)}


def origin_of(url: str) -> str:
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
    """`http://host:port` origins no agent tab may load; every loopback name and address counts as one
    host (`is_loopback`)."""

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
            same = host == their_host or (is_loopback(host) and is_loopback(their_host))
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
        if url == "" or blank(url) or url.startswith("chrome-error://"):
            return None
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            return f"{parts.scheme}: URLs are not allowed (only http, https and about:blank)"
        if self.forbidden(url):
            return f"{parts.netloc} is the browser's DevTools endpoint or the app's own server"
        return self.list_problem(parts.hostname or "")

    def referer_cut(self, url: str, referer: str, sites: set[str]) -> str | None:
        """The Referer a request to a site outside the task may carry: its origin alone (what Chrome sends
        across origins by default), or None to leave it. A page may give its whole address (a policy of
        `unsafe-url`), and the code chose that address: its query would carry data past `judge`."""
        try:
            there, source = urlsplit(url), urlsplit(referer)
        except ValueError:
            return None
        if self.allowed or site_of(there.hostname or "") in sites or source.scheme not in ("http", "https"):
            return None
        origin = f"{source.scheme}://{source.netloc}/"
        return origin if referer != origin else None

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


_BLOCK_WS = {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}
_PASS_WS = {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}


def ws_rules(policy: UrlPolicy, sites: set[str]) -> list[dict[str, Any]]:
    """Network conditions (`Network.emulateNetworkConditionsByRule`) that take every WebSocket offline
    except to the task's `sites` (or the allowed ones): Fetch does not see WebSockets."""
    rules: list[dict[str, Any]] = []
    for origin in policy.forbidden_origins:
        host, _, port = origin.rpartition(":")
        hosts = {"{*.}?localhost", "127.0.0.1", "0.0.0.0"} if is_loopback(host) else {host}
        rules += [{"urlPattern": f"ws{{s}}?://{h}:{port}/*", **_BLOCK_WS} for h in sorted(hosts)]
    for domain in policy.blocked:
        rules.append({"urlPattern": f"ws{{s}}?://{{*.}}?{domain.lstrip('*.')}:*/*", **_BLOCK_WS})
    listed = bool(policy.allowed)
    for domain in policy.allowed or tuple(sorted(sites)):
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


def blank(url: str) -> bool:
    """A blank page, with a fragment too (a run's new window carries its mark there: `RUN_MARK`)."""
    return url.split("#", 1)[0] == "about:blank"


__all__ = [
    "NEW_TAB",
    "Refusal",
    "Request",
    "UrlPolicy",
    "blank",
    "carried_data",
    "is_ip",
    "is_loopback",
    "named_sites",
    "origin_of",
    "refusal_note",
    "short_url",
    "site_of",
    "ws_rules",
]
