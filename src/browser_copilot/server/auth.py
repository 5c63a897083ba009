"""The server's two gates, on every request (pages, static files, REST, WebSocket, SSE):

1. the token: `Authorization: Bearer T`, or the `bc_token` cookie (set once by `GET /?token=T`), or
   `?token=T` on the WebSocket and SSE URLs only. Missing or wrong -> 401 `unauthorized`, nothing else.
2. the Origin: a WebSocket upgrade or a state-changing request (POST/PUT/PATCH/DELETE) whose `Origin`
   is not the server's own -> 403. So a page the agent or the user visits cannot drive the agent even
   with the token. No CORS headers are ever sent.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable

from aiohttp import hdrs, web

COOKIE = "bc_token"
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
ORIGINS: web.AppKey[set[str]] = web.AppKey("origins", set)
TOKEN: web.AppKey[str] = web.AppKey("token", str)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def own_origins(host: str, port: int) -> set[str]:
    """`http://HOST:PORT` as bound, plus `http://localhost:PORT` when bound to 127.0.0.1."""
    shown = f"[{host}]" if ":" in host else host
    origins = {f"http://{shown}:{port}"}
    if host == "127.0.0.1":
        origins.add(f"http://localhost:{port}")
    return origins


def _query_allowed(request: web.Request) -> bool:
    path = request.path
    return path.startswith("/ws/") or (path.startswith("/sessions/") and path.endswith("/events"))


def cookie_name(request: web.Request) -> str:
    """`bc_token_PORT`: cookies are kept per host, not per port, so two servers on 127.0.0.1 (or one
    restarted on another port) must not overwrite each other's cookie."""
    return f"{COOKIE}_{request.url.port or 0}"


def presented_tokens(request: web.Request) -> list[str]:
    """Every token the request presents: the header, the query (the printed URL, WS, SSE), the cookie."""
    found = []
    header = request.headers.get(hdrs.AUTHORIZATION, "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        found.append(value.strip())
    if (request.path == "/" or _query_allowed(request)) and "token" in request.query:
        found.append(request.query["token"])
    if cookie_name(request) in request.cookies:
        found.append(request.cookies[cookie_name(request)])
    return found


def unauthorized() -> web.Response:
    return web.Response(status=401, text="unauthorized")


@web.middleware
async def gate(request: web.Request, handler: Handler) -> web.StreamResponse:
    expected = request.app[TOKEN].encode()
    if not any(hmac.compare_digest(token.encode(), expected) for token in presented_tokens(request)):
        return unauthorized()
    origin = request.headers.get(hdrs.ORIGIN)
    upgrade = request.headers.get(hdrs.UPGRADE, "").lower() == "websocket"
    if (
        origin is not None
        and (upgrade or request.method in STATE_CHANGING)
        and origin not in request.app[ORIGINS]
    ):
        return web.Response(status=403, text="forbidden origin")
    return await handler(request)
