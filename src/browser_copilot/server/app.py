"""The HTTP server (aiohttp): the page, REST, the WebSocket chat and the SSE event stream.

Protocol v1 (schema: `server/schema/events.v1.json`; README "Server mode"):
- `GET /` the page, `GET /static/{file}`;
- `GET/POST /api/sessions`, `GET /api/sessions/{id}`, `POST /api/sessions/{id}/cancel`;
- WebSocket `/ws/{session}`: client `user_message`; server `status`, `agent_message`, `agent_question`,
  `error`;
- SSE `/sessions/{session}/events`: numbered agent events, resumable with `Last-Event-ID`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.resources
import json
import mimetypes
import re
import secrets
import sys
from typing import Any

from aiohttp import WSMsgType, hdrs, web

from browser_copilot.agent.runner import new_session_id
from browser_copilot.config import Settings
from browser_copilot.server.auth import ORIGINS, TOKEN, cookie_name, gate, own_origins
from browser_copilot.server.hub import VERSION, dumps, outgoing
from browser_copilot.server.memory import memory_reply
from browser_copilot.server.sessions import Session, SessionManager
from browser_copilot.server.tools import tools_reply

MAX_MESSAGE = 64 * 1024
"""A WebSocket message above this is refused (`too_large`); the connection stays open."""
HEARTBEAT = 15.0
MANAGER: web.AppKey[SessionManager] = web.AppKey("manager", SessionManager)
HEARTBEAT_KEY: web.AppKey[float] = web.AppKey("heartbeat", float)
_STATIC_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,100}$")
PLACEHOLDER = (
    "<!doctype html><meta charset=utf-8><title>Browser Copilot</title>"
    "<p>Browser Copilot server mode. The web page is not installed; use the API (README: Server mode)."
)


def _json(payload: dict[str, Any], status: int = 200) -> web.Response:
    return web.json_response({"v": VERSION, **outgoing(payload)}, status=status, dumps=dumps)


def _static(name: str) -> bytes | None:
    if not _STATIC_NAME.match(name) or ".." in name:
        return None
    resource = importlib.resources.files("browser_copilot.server").joinpath("static", name)
    try:
        return resource.read_bytes() if resource.is_file() else None
    except OSError:
        return None


async def index(request: web.Request) -> web.StreamResponse:
    if "token" in request.query:  # the printed URL: keep the token in a cookie, drop it from the URL
        response = web.HTTPFound("/")
        response.set_cookie(
            cookie_name(request), request.query["token"], httponly=True, samesite="Strict", path="/"
        )
        raise response
    body = _static("index.html")
    if body is None:
        return web.Response(text=PLACEHOLDER, content_type="text/html")
    return web.Response(body=body, content_type="text/html", charset="utf-8")


async def static(request: web.Request) -> web.StreamResponse:
    name = request.match_info["file"]
    body = _static(name)
    if body is None:
        raise web.HTTPNotFound(text="not found")
    kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return web.Response(body=body, content_type=kind, headers={"Cache-Control": "no-cache"})


# ----- REST -------------------------------------------------------------------------------------


async def list_sessions(request: web.Request) -> web.Response:
    return _json({"sessions": await request.app[MANAGER].listing()})


async def create_session(request: web.Request) -> web.Response:
    session = request.app[MANAGER].session(new_session_id())
    return _json({"id": session.id})


async def _known(request: web.Request) -> Session:
    session = await request.app[MANAGER].known(request.match_info["session"])
    if session is None:
        raise web.HTTPNotFound(text=dumps({"v": VERSION, "error": "no such session"}))
    return session


async def session_detail(request: web.Request) -> web.Response:
    session = await _known(request)
    return _json(await request.app[MANAGER].detail(session))


async def cancel_session(request: web.Request) -> web.Response:
    session = await _known(request)
    return _json({"cancelled": request.app[MANAGER].cancel(session)})


# ----- WebSocket --------------------------------------------------------------------------------


def _session(manager: SessionManager, request: web.Request) -> Session:
    """The session named in the URL, created when new (400 for an id that is not one)."""
    try:
        return manager.session(request.match_info["session"])
    except ValueError as exc:
        raise web.HTTPBadRequest(text=str(exc)) from None


def _error(code: str, message: str) -> str:
    return dumps(outgoing({"v": VERSION, "kind": "error", "code": code, "message": message}))


async def websocket(request: web.Request) -> web.StreamResponse:
    manager = request.app[MANAGER]
    session = _session(manager, request)
    ws = web.WebSocketResponse(max_msg_size=4 * 1024 * 1024, heartbeat=30)
    await ws.prepare(request)
    queue: asyncio.Queue[str | None] = asyncio.Queue()
    session.hub.clients.add(queue)
    writer = asyncio.create_task(_write(ws, queue))
    try:
        details = await manager.detail(session)
        queue.put_nowait(dumps({"v": VERSION, "kind": "status", "state": details["state"]}))
        if details["pending"] is not None:
            queue.put_nowait(dumps({"v": VERSION, **outgoing(details["pending"])}))
        async for message in ws:
            if message.type != WSMsgType.TEXT:
                if message.type == WSMsgType.BINARY:
                    queue.put_nowait(_error("bad_json", "send JSON text frames"))
                continue
            reply = await _handle(manager, session, message.data)
            if reply is not None:
                queue.put_nowait(reply)
    finally:
        session.hub.clients.discard(queue)
        queue.put_nowait(None)
        await writer
    return ws


async def _write(ws: web.WebSocketResponse, queue: asyncio.Queue[str | None]) -> None:
    while (text := await queue.get()) is not None:
        try:
            await ws.send_str(text)
        except (ConnectionError, RuntimeError):
            return
    with contextlib.suppress(ConnectionError, RuntimeError):
        await ws.close()


async def _handle(manager: SessionManager, session: Session, data: str) -> str | None:
    """One client message; returns an error to send back, if any (progress goes through the hub)."""
    if len(data.encode()) > MAX_MESSAGE:
        return _error("too_large", f"a message may have at most {MAX_MESSAGE} bytes")
    try:
        message = json.loads(data)
    except ValueError:
        return _error("bad_json", "the message is not valid JSON")
    if not isinstance(message, dict):
        return _error("bad_json", "a message is a JSON object with a kind")
    if message.get("kind") != "user_message":
        return _error("unknown_kind", f"unknown kind {str(message.get('kind'))[:40]!r}: send user_message")
    text = message.get("text")
    if not isinstance(text, str) or not text.strip():
        return _error("bad_message", "user_message needs a non-empty text")
    text = text.strip()
    command = text.split(" ", 1)[0] if text.startswith("/") else ""
    # Answered at once, also while a run is active: they do not touch the browser or the session.
    if command in ("/memory", "/forget"):  # the long-term memory, as in the terminal
        return dumps(outgoing(await memory_reply(manager.memory, command, text)))
    if command == "/tools":  # the tools the agent can use (built-in, extra MCP servers), as in the terminal
        return dumps(outgoing(await tools_reply(manager.extras)))
    if session.busy:
        return _error("busy", "a run of this session is active: wait for its answer, or cancel it")
    if command in ("/chat", "/exit"):
        mode = "chat" if command == "/chat" else "command"
        await manager.set_mode(session, mode)
        session.hub.send({"kind": "status", "state": session.state, "mode": mode})
        return None
    pending = await session.runner.pending()
    if command in ("/yes", "/no"):
        if pending is None or pending.get("kind") != "confirm":
            return _error("nothing_pending", f"nothing is waiting for a {command}")
    elif command:
        return _error(
            "unknown_command",
            f"{command}: the commands are /yes, /no, /chat, /exit, /memory, /forget N and /tools",
        )
    manager.start(session, text)
    return None


# ----- SSE --------------------------------------------------------------------------------------


async def events(request: web.Request) -> web.StreamResponse:
    manager = request.app[MANAGER]
    session = _session(manager, request)
    hub = session.hub
    raw = request.headers.get("Last-Event-ID") or request.query.get("last_event_id") or "0"
    last = int(raw) if raw.isdigit() else 0
    response = web.StreamResponse(
        headers={
            hdrs.CONTENT_TYPE: "text/event-stream",
            hdrs.CACHE_CONTROL: "no-cache",
            "X-Accel-Buffering": "no",
        }
    )
    await response.prepare(request)
    heartbeat = request.app[HEARTBEAT_KEY]
    try:
        await response.write(b"retry: 1000\n\n")
        while not hub.closed:
            items = list(hub.after(last))
            if items:
                last = items[-1][0]
                await response.write(
                    "".join(f"id: {i}\nevent: {k}\ndata: {b}\n\n" for i, k, b in items).encode()
                )
                continue
            before = hub.last_id
            await hub.wait(last, heartbeat)
            if hub.last_id == before and not hub.closed:
                await response.write(b": keep-alive\n\n")
    except (ConnectionError, asyncio.CancelledError):
        pass
    return response


# ----- the application --------------------------------------------------------------------------


def build_app(manager: SessionManager, token: str, *, heartbeat: float = HEARTBEAT) -> web.Application:
    app = web.Application(middlewares=[gate], client_max_size=MAX_MESSAGE)
    app[MANAGER] = manager
    app[TOKEN] = token
    app[ORIGINS] = set()
    app[HEARTBEAT_KEY] = heartbeat
    app.router.add_get("/", index)
    app.router.add_get("/static/{file}", static)
    app.router.add_get("/api/sessions", list_sessions)
    app.router.add_post("/api/sessions", create_session)
    app.router.add_get("/api/sessions/{session}", session_detail)
    app.router.add_post("/api/sessions/{session}/cancel", cancel_session)
    app.router.add_get("/ws/{session}", websocket)
    app.router.add_get("/sessions/{session}/events", events)

    async def on_shutdown(_: web.Application) -> None:
        await manager.close()

    app.on_shutdown.append(on_shutdown)
    return app


class Server:
    """The app on a TCP port; `start()` returns the URL to print (with the token)."""

    def __init__(self, manager: SessionManager, *, token: str | None = None, heartbeat: float = HEARTBEAT):
        self.token = token or secrets.token_urlsafe(24)
        self.app = build_app(manager, self.token, heartbeat=heartbeat)
        self.runner = web.AppRunner(self.app, access_log=None, shutdown_timeout=2.0)
        self.host = ""
        self.port = 0

    async def start(self, host: str = "127.0.0.1", port: int = 8765) -> str:
        await self.runner.setup()
        site = web.TCPSite(self.runner, host, port)
        await site.start()
        self.host, self.port = host, int(self.runner.addresses[0][1])
        self.app[ORIGINS].update(own_origins(host, self.port))
        return f"{self.base_url}/?token={self.token}"

    @property
    def base_url(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}"

    async def stop(self) -> None:
        await self.runner.cleanup()


async def serve(settings: Settings, *, host: str, port: int, allow_remote: bool) -> int:
    """`main.py serve`: the agent behind the HTTP server until Ctrl+C or SIGTERM."""
    from browser_copilot.agent.memory import open_memory
    from browser_copilot.agent.storage import open_checkpointer
    from browser_copilot.browser.session import BrowserSession
    from browser_copilot.extras.servers import ExtraServers
    from browser_copilot.llm.provider import HOW_TO_CONFIGURE, build_chat_model, resolve_llm

    if host != "127.0.0.1" and not allow_remote:
        sys.stderr.write(
            f"serve: refusing to bind {host}: it is not 127.0.0.1. The server drives your logged-in "
            "browser; to expose it anyway, add --allow-remote.\n"
        )
        return 2
    if host != "127.0.0.1":
        sys.stderr.write(
            f"WARNING: binding {host}: anyone who can reach this address and has the token can drive "
            "your logged-in browser. Use it only on a network you trust.\n"
        )
    endpoint = await asyncio.to_thread(resolve_llm, settings)
    if endpoint is None:
        sys.stderr.write(f"serve: no model. {HOW_TO_CONFIGURE}\n")
        return 2

    def notice(text: str) -> None:
        sys.stderr.write(text + "\n")

    async with (
        BrowserSession(settings, notice=notice) as browser,
        open_checkpointer(settings) as saver,
        open_memory(settings) as memory,
        ExtraServers.from_settings(settings, notice=notice) as extras,
    ):
        manager = SessionManager(
            settings,
            browser=browser,
            llm=build_chat_model(settings, endpoint),
            checkpointer=saver,
            memory=memory,
            extras=extras,
        )
        server = Server(manager)
        url = await server.start(host, port)
        sys.stdout.write(url + "\n")
        sys.stdout.flush()
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.shield(server.stop())
            sys.stderr.write("Server stopped; the browser session is closed.\n")
    return 0
