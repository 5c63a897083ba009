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

`main.py serve` keeps the token and the browsers it signed in (only a hash of each cookie) in
`DATA_DIR/server-auth.json`, readable by the user alone (`SignIn.kept`), so a bookmark of the page still
opens it after a restart; `SERVER_TOKEN=new` starts anew. A page opened without a valid sign-in gets a
page that says how to get a link, not a bare 401.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

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
        "default-src 'self'; img-src 'self' data: blob:; object-src 'none'; base-uri 'none'; "
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
NOT_SIGNED_IN = (
    "<!doctype html><html lang=en><meta charset=utf-8><meta name=viewport content='width=device-width'>"
    "<title>Browser Copilot: sign in</title>"
    "<body style='font:16px/1.5 system-ui,sans-serif;max-width:38rem;margin:3rem auto;padding:0 1rem'>"
    "<h1 style='font-size:1.3rem'>Browser Copilot: this browser is not signed in</h1>"
    "<p>The page opens only in a browser signed in with the link the server prints.</p><ol>"
    "<li>Find the terminal where <code>main.py serve</code> runs (or start it: "
    "<code>uv run python main.py serve</code>, or <code>make serve</code>).</li>"
    "<li>Open the link it printed, <code>http://127.0.0.1:PORT/?token=…</code>, in this browser.</li></ol>"
    "<p>A link signs one browser in, once. Opened again, it makes that terminal print a new one-time link: "
    "open that one. Once signed in, this address (bookmark it) keeps working, also after the server "
    "restarts, until it is started with <code>SERVER_TOKEN=new</code>.</p>"
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
    """A hash of each browser session's cookie (the cookies themselves are kept nowhere)."""
    store: Path | None = None
    """Where the token and the sessions are kept across restarts (`kept`); None: in memory only."""

    def __post_init__(self) -> None:
        self.links.add(self.token)

    @classmethod
    def kept(cls, path: Path, *, fresh: bool, announce: Callable[[str], None] | None = None) -> SignIn:
        """The token and the signed-in browsers kept in `path` (written readable by the user only); with
        `fresh`, or none kept, a new token and no browser signed in. The printed link signs in once per
        start of the server."""
        state: dict[str, Any] = {} if fresh else _read_state(path)
        token = state.get("token")
        if not isinstance(token, str) or len(token) < 16:
            token, state = secrets.token_urlsafe(24), {}
        sessions = {str(h) for h in state.get("sessions") or [] if isinstance(h, str)}
        sign_in = cls(token, announce=announce, sessions=sessions, store=path)
        sign_in.save()
        return sign_in

    def save(self) -> None:
        if self.store is None:
            return
        state = {"token": self.token, "sessions": sorted(self.sessions)}
        self.store.parent.mkdir(parents=True, exist_ok=True)
        partial = self.store.with_name(self.store.name + ".tmp")
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            json.dump(state, file)
        os.replace(partial, self.store)

    def session_valid(self, value: str | None) -> bool:
        if not value:
            return False
        digest = _digest(value)
        return any(hmac.compare_digest(digest, s) for s in self.sessions)

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
        self.sessions.add(_digest(session))
        self.save()
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


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _read_state(path: Path) -> dict[str, Any]:
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


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
    return path.startswith(("/ws/", "/live/")) or (path.startswith("/sessions/") and path.endswith("/events"))


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


def not_signed_in() -> web.Response:
    """401 for a person at the page: what to do to sign in."""
    return web.Response(status=401, text=NOT_SIGNED_IN, content_type="text/html")


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
    return not_signed_in()  # a wrong or expired link (the token was renewed): how to get a new one


@web.middleware
async def gate(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.path == "/" and "token" in request.query:
        return sign_in_with_link(request)
    auth = authenticate(request)
    if auth is None:
        if request.method == "GET" and request.path == "/":
            return not_signed_in()  # a person at the page (a bookmark, another browser)
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
