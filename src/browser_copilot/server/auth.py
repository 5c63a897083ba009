"""The server's gates, on every request (pages, static files, REST, WebSocket, SSE):

1. who: the browser's session cookie `bc_session_PORT` (HttpOnly, SameSite=Strict), or the printed token
   as `Authorization: Bearer T` (scripts), or `?token=T` on the WebSocket and SSE URLs only. Missing or
   wrong -> 401 `unauthorized`, nothing else.
2. the sign-in link `GET /?token=T`: exchanged once for a session cookie, then a redirect to `/` (the
   token does not stay in the address bar). A link already used signs nobody in; opening it prints a new
   one-time link in the terminal (`SignIn.announce`). A request that already has a valid cookie is
   redirected without touching it: a wrong or old link never replaces a good cookie.
3. the Origin: a WebSocket upgrade or a state-changing request (POST/PUT/PATCH/DELETE) whose `Origin`
   is not the server's own -> 403. So a page the agent or the user visits cannot drive the agent even
   with the cookie. No CORS headers are ever sent.
4. no framing, on every response: `Content-Security-Policy` (`frame-ancestors 'none'` and a same-origin
   policy for the page) and `X-Frame-Options: DENY`, so no other page can frame "Allow once" under a
   decoy (clickjacking).
"""

from __future__ import annotations

import hmac
import secrets
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from aiohttp import hdrs, web

COOKIE = "bc_session"
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
ORIGINS: web.AppKey[set[str]] = web.AppKey("origins", set)
Auth = Literal["cookie", "token"]
AUTH: web.RequestKey[str] = web.RequestKey("auth", str)
"""How the request proved it comes from the user: the session cookie, or the printed token."""
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
WILDCARDS = frozenset({"", "0.0.0.0", "::"})
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
LINK_USED = (
    "<!doctype html><meta charset=utf-8><title>Browser Copilot</title>"
    "<p>This sign-in link was already used: a link signs a browser in once. A new link is printed in the "
    "terminal where <code>main.py serve</code> runs; open that one."
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class SignIn:
    """The printed token, the one-time sign-in links and the browser sessions they opened (in memory:
    a restart prints a new token and signs every browser out)."""

    token: str
    """The printed token: `Bearer`/`?token=` for scripts while the server runs; as a link, once."""
    announce: Callable[[str], None] | None = None
    """Prints a new sign-in link (the path and query, `/?token=L`) where the user reads the first one."""
    links: set[str] = field(default_factory=set)
    used: set[str] = field(default_factory=set)
    sessions: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.links.add(self.token)

    def session_valid(self, value: str | None) -> bool:
        return value is not None and any(hmac.compare_digest(value, s) for s in self.sessions)

    def token_valid(self, value: str) -> bool:
        return hmac.compare_digest(value.encode(), self.token.encode())

    def exchange(self, link: str) -> str | None:
        """A new session for an unused link (which is used up), else None."""
        found = next((t for t in self.links if hmac.compare_digest(t.encode(), link.encode())), None)
        if found is None:
            return None
        self.links.discard(found)
        self.used.add(found)
        session = secrets.token_urlsafe(32)
        self.sessions.add(session)
        return session

    def was_used(self, link: str) -> bool:
        return any(hmac.compare_digest(t.encode(), link.encode()) for t in self.used)

    def reissue(self) -> str:
        """A fresh one-time link token (any earlier reissued one that was not used stops working)."""
        self.links.clear()
        fresh = secrets.token_urlsafe(24)
        self.links.add(fresh)
        if self.announce is not None:
            self.announce(f"/?token={fresh}")
        return fresh


SIGN_IN: web.AppKey[SignIn] = web.AppKey("sign_in", SignIn)


def own_origins(host: str, port: int) -> set[str]:
    """Every `http://HOST:PORT` the server answers on: as bound; for a loopback address its loopback
    names; for a wildcard address (`0.0.0.0`, `::`) the loopback names, the machine's names and the
    addresses found for them (best effort: an interface address not found this way is not listed)."""
    origins = {f"http://{_shown(host)}:{port}"}
    if host in WILDCARDS or host in ("127.0.0.1", "::1", "localhost"):
        origins.update(f"http://{name}:{port}" for name in LOOPBACK_NAMES)
    if host in WILDCARDS:
        origins.discard(f"http://{_shown(host)}:{port}")
        origins.update(f"http://{_shown(address)}:{port}" for address in _machine_addresses())
    return origins


def _shown(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _machine_addresses() -> set[str]:
    names = {socket.gethostname(), socket.getfqdn()}
    found = set(names)
    for name in names:
        try:
            found.update(str(info[4][0]) for info in socket.getaddrinfo(name, None))
        except OSError:
            continue
    for family, probe in ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1")):
        # The address the machine would send from (no packet leaves: a UDP connect only picks a route).
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as udp:
                udp.connect((probe, 9))
                found.add(str(udp.getsockname()[0]))
        except OSError:
            continue
    return {a.split("%", 1)[0] for a in found if a}


def _query_allowed(request: web.Request) -> bool:
    path = request.path
    return path.startswith("/ws/") or (path.startswith("/sessions/") and path.endswith("/events"))


def cookie_name(request: web.Request) -> str:
    """`bc_session_PORT`: cookies are kept per host, not per port, so two servers on 127.0.0.1 (or one
    restarted on another port) must not overwrite each other's cookie."""
    return f"{COOKIE}_{request.url.port or 0}"


def authenticate(request: web.Request) -> Auth | None:
    """How the request shows it is the user's: a valid session cookie, or the printed token."""
    sign_in = request.app[SIGN_IN]
    if sign_in.session_valid(request.cookies.get(cookie_name(request))):
        return "cookie"
    scheme, _, value = request.headers.get(hdrs.AUTHORIZATION, "").partition(" ")
    if scheme.lower() == "bearer" and value.strip() and sign_in.token_valid(value.strip()):
        return "token"
    if _query_allowed(request) and sign_in.token_valid(request.query.get("token", "")):
        return "token"
    return None


def unauthorized() -> web.Response:
    return web.Response(status=401, text="unauthorized")


def _back_to_page() -> web.Response:
    return web.Response(status=302, headers={hdrs.LOCATION: "/", hdrs.CACHE_CONTROL: "no-store"})


def sign_in_with_link(request: web.Request) -> web.Response:
    """`GET /?token=L` (the printed link)."""
    if authenticate(request) == "cookie":
        return _back_to_page()  # already signed in: whatever the link, the cookie stays as it is
    sign_in = request.app[SIGN_IN]
    link = request.query.get("token", "")
    session = sign_in.exchange(link)
    if session is not None:
        response = _back_to_page()
        response.set_cookie(cookie_name(request), session, httponly=True, samesite="Strict", path="/")
        return response
    if sign_in.was_used(link):
        sign_in.reissue()
        return web.Response(status=401, text=LINK_USED, content_type="text/html")
    return unauthorized()


@web.middleware
async def gate(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.path == "/" and "token" in request.query:
        return sign_in_with_link(request)
    auth = authenticate(request)
    if auth is None:
        return unauthorized()
    origin = request.headers.get(hdrs.ORIGIN)
    upgrade = request.headers.get(hdrs.UPGRADE, "").lower() == "websocket"
    if (
        origin is not None
        and (upgrade or request.method in STATE_CHANGING)
        and origin not in request.app[ORIGINS]
    ):
        return web.Response(status=403, text="forbidden origin")
    request[AUTH] = auth
    return await handler(request)


async def security_headers(_: web.Request, response: web.StreamResponse) -> None:
    """`on_response_prepare`: no framing and no sniffing, on every response (also 401s and errors)."""
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
