"""The HTTP app (aiohttp): the page, REST, the WebSocket chat and the SSE event stream (`serve.py` runs
it on a port with the agent behind it).

Protocol v1 (schema: `server/schema/events.v1.json`; README "Server mode"):
- `GET /` the page, `GET /static/{file}`;
- `GET /api/status` (the model, the browser, the browser tool);
- `GET/POST /api/sessions`, `GET/DELETE /api/sessions/{id}`, `POST /api/sessions/{id}/cancel`;
- WebSocket `/ws/{session}?client=ID`: client `user_message`; server `status`, `agent_message`,
  `agent_question`, `error` (ID: the browser tab, which alone gets the nonce of the cards of the runs
  it started; without it, the connection is a tab of its own);
- WebSocket `/live/{session}?client=ID`: the live view of the session's tab (`live.py`): server `live`,
  `control`, `frame` + a binary JPEG, `highlight`, `page`, `error`; client `click`, `wheel`, `key`, `text`;
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
from typing import Any

from aiohttp import WSMsgType, hdrs, web

from browser_copilot.agent.nodes.human_in_loop import is_yes
from browser_copilot.agent.runner import new_session_id
from browser_copilot.sandbox.cdp import CdpError
from browser_copilot.server.auth import ORIGINS, SIGN_IN, SignIn, gate, security_headers
from browser_copilot.server.commands import (
    COMMANDS,
    browser_status,
    help_reply,
    plan_reply,
    status_reply,
    tabs_reply,
)
from browser_copilot.server.history import said
from browser_copilot.server.hub import VERSION, dumps, outgoing
from browser_copilot.server.live_stream import Frame, Viewer
from browser_copilot.server.memory import memory_reply
from browser_copilot.server.sessions import Session, SessionManager
from browser_copilot.server.tools import tools_reply

MAX_MESSAGE = 64 * 1024
"""A WebSocket message above this is refused (`too_large`); the connection stays open."""
MAX_FRAME = 4 * 1024 * 1024
"""Above this the WebSocket layer itself closes the connection (1009, message too big): the rest of such
a message cannot be skipped. The page never sends more than MAX_MESSAGE."""
HEARTBEAT = 15.0
MANAGER: web.AppKey[SessionManager] = web.AppKey("manager", SessionManager)
HEARTBEAT_KEY: web.AppKey[float] = web.AppKey("heartbeat", float)
_STATIC_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,100}$")
_CLIENT_ID = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
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
    # The sign-in link (`/?token=`) is answered by the gate (`auth.sign_in_with_link`).
    body = _static("index.html")
    if body is None:
        return web.Response(text=PLACEHOLDER, content_type="text/html")
    return web.Response(
        body=body, content_type="text/html", charset="utf-8", headers={hdrs.CACHE_CONTROL: "no-store"}
    )


async def static(request: web.Request) -> web.StreamResponse:
    name = request.match_info["file"]
    body = _static(name)
    if body is None:
        raise web.HTTPNotFound(text="not found")
    kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return web.Response(body=body, content_type=kind, headers={"Cache-Control": "no-cache"})


# ----- REST -------------------------------------------------------------------------------------


async def list_sessions(request: web.Request) -> web.Response:
    manager = request.app[MANAGER]
    sessions = await manager.listing()
    return _json(
        {
            "sessions": sessions,
            # Runs acting in the browser now (each in its own window), those waiting for a place, the limit.
            "running": sum(1 for s in sessions if s["state"] == "running"),
            "queued": sum(1 for s in sessions if s["state"] == "queued"),
            "max_parallel_runs": manager.pool.limit,
        }
    )


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
    wanted = request.query.get("history") == "1"  # the page's chat, as it was shown (`server.history`)
    return _json(await request.app[MANAGER].detail(session, history=wanted))


async def cancel_session(request: web.Request) -> web.Response:
    session = await _known(request)
    return _json({"cancelled": request.app[MANAGER].cancel(session)})


async def delete_session(request: web.Request) -> web.Response:
    session = await _known(request)
    await request.app[MANAGER].delete(session)
    return _json({"deleted": True})


async def status(request: web.Request) -> web.Response:
    return _json(await browser_status(request.app[MANAGER]))


# ----- WebSocket --------------------------------------------------------------------------------


def _session(manager: SessionManager, request: web.Request) -> Session:
    """The session named in the URL, created when new (400 for an id that is not one)."""
    try:
        return manager.session(request.match_info["session"])
    except ValueError as exc:
        raise web.HTTPBadRequest(text=str(exc)) from None


def _error(code: str, message: str) -> str:
    return dumps(outgoing({"v": VERSION, "kind": "error", "code": code, "message": message}))


def _client(request: web.Request) -> str:
    """The browser tab the connection belongs to (`?client=`, kept by the page in its tab), else a
    connection of its own."""
    named = request.query.get("client", "")
    return named if _CLIENT_ID.match(named) else secrets.token_urlsafe(18)


async def websocket(request: web.Request) -> web.StreamResponse:
    manager = request.app[MANAGER]
    session = _session(manager, request)
    client = _client(request)
    ws = web.WebSocketResponse(max_msg_size=MAX_FRAME, heartbeat=30)
    await ws.prepare(request)
    queue: asyncio.Queue[str | None] = asyncio.Queue()
    session.hub.clients[queue] = client
    writer = asyncio.create_task(_write(ws, queue))
    try:
        details = await manager.detail(session)
        queue.put_nowait(dumps({"v": VERSION, "kind": "status", "state": details["state"]}))
        if details["pending"] is not None:
            queue.put_nowait(dumps(manager.card_for(session, client, details["pending"])))
        async for message in ws:
            if message.type != WSMsgType.TEXT:
                if message.type == WSMsgType.BINARY:
                    queue.put_nowait(_error("bad_json", "send JSON text frames"))
                continue
            reply = await _handle(manager, session, message.data, client, request.app[ORIGINS])
            if reply is not None:
                queue.put_nowait(reply)
    finally:
        session.hub.clients.pop(queue, None)
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


async def _handle(
    manager: SessionManager, session: Session, data: str, client: str, origins: set[str]
) -> str | None:
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
    if command == "/status":
        return dumps(outgoing(await status_reply(manager, session)))
    if command == "/plan":
        return dumps(outgoing(await plan_reply(manager, session)))
    if command == "/tabs":
        return dumps(outgoing(await tabs_reply(manager, session, origins)))
    if command == "/help":
        return dumps(outgoing(help_reply()))
    await manager.finishing(session)  # the answer is shown: the run only tidies up
    if session.busy:
        return _error("busy", "a run of this session is active: wait for its answer, or cancel it")
    if command in ("/chat", "/exit"):
        mode = "chat" if command == "/chat" else "command"
        await manager.set_mode(session, mode)
        session.hub.send({"kind": "status", "state": session.state, "mode": mode})
        return None
    pending = await session.runner.pending()
    confirm = pending is not None and pending.get("kind") == "confirm"
    if command in ("/yes", "/no"):
        if not confirm:
            return _error("nothing_pending", f"nothing is waiting for a {command}")
    elif command:
        listed = ", ".join(c if c != "/forget" else "/forget N" for c in COMMANDS)
        return _error("unknown_command", f"{command[:40]}: the commands are {listed} (/help says more)")
    entry = outgoing(said(text, pending, await session.runner.secret_asked()))
    if confirm and is_yes(text):  # the graph's own reading of an approval ("/yes", "ok", "да", ...)
        problem = manager.check_approval(session, client, message.get("nonce"))
        if problem is not None:
            return _error("not_approved", problem)
    manager.start(session, text, client=client)  # the nonce is used up here, with no await before
    session.hub.history.add(entry)
    return None


# ----- the live view ----------------------------------------------------------------------------


async def live(request: web.Request) -> web.StreamResponse:
    """The session's tab, live: pictures while this connection is open; the user's clicks and keys when
    `SessionManager.may_drive` allows them."""
    manager = request.app[MANAGER]
    session = _session(manager, request)
    viewer = Viewer(_client(request))
    ws = web.WebSocketResponse(max_msg_size=MAX_FRAME, heartbeat=30)
    await ws.prepare(request)
    writer = asyncio.create_task(_show(ws, viewer))
    try:
        await manager.watch(session, viewer)
        async for message in ws:
            if message.type != WSMsgType.TEXT:
                continue
            problem = await _drive(manager, session, viewer, message.data)
            if problem is not None:
                viewer.say({"kind": "error", "code": problem[0], "message": problem[1]})
    finally:
        await manager.live.unwatch(viewer)
        await writer
    return ws


async def _show(ws: web.WebSocketResponse, viewer: Viewer) -> None:
    """The viewer's messages, and each picture as a `frame` message followed by its JPEG (binary)."""
    while (item := await viewer.next()) is not None:
        try:
            if isinstance(item, Frame):
                meta = {
                    "v": VERSION,
                    "kind": "frame",
                    "width": item.width,
                    "height": item.height,
                    "at": item.at,
                }
                await ws.send_str(dumps(meta))
                await ws.send_bytes(item.jpeg)
            else:
                await ws.send_str(dumps(outgoing({"v": VERSION, **item})))
        except (ConnectionError, RuntimeError):
            break
    with contextlib.suppress(ConnectionError, RuntimeError):
        await ws.close()


async def _drive(
    manager: SessionManager, session: Session, viewer: Viewer, data: str
) -> tuple[str, str] | None:
    """One input message of the live view: (error code, message) when it is not carried out."""
    if len(data.encode()) > MAX_MESSAGE:
        return ("too_large", f"a message may have at most {MAX_MESSAGE} bytes")
    try:
        message = json.loads(data)
    except ValueError:
        return ("bad_json", "the message is not valid JSON")
    if not isinstance(message, dict):
        return ("bad_json", "a message is a JSON object with a kind")
    refusal = await manager.may_drive(session, viewer.client)
    if refusal is not None:
        return ("not_now", refusal)
    stream = manager.live.stream_of(viewer)
    if stream is None:
        return ("no_tab", "there is no tab to act in yet")
    try:
        problem = await stream.drive(message)
    except CdpError as exc:
        return ("browser", f"the browser did not take it: {exc}")
    return None if problem is None else ("bad_input", problem)


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


def build_app(manager: SessionManager, sign_in: SignIn, *, heartbeat: float = HEARTBEAT) -> web.Application:
    app = web.Application(middlewares=[gate], client_max_size=MAX_MESSAGE)
    app[MANAGER] = manager
    app[SIGN_IN] = sign_in
    app[ORIGINS] = set()
    app[HEARTBEAT_KEY] = heartbeat
    app.on_response_prepare.append(security_headers)
    app.router.add_get("/", index)
    app.router.add_get("/static/{file}", static)
    app.router.add_get("/api/status", status)
    app.router.add_get("/api/sessions", list_sessions)
    app.router.add_post("/api/sessions", create_session)
    app.router.add_get("/api/sessions/{session}", session_detail)
    app.router.add_delete("/api/sessions/{session}", delete_session)
    app.router.add_post("/api/sessions/{session}/cancel", cancel_session)
    app.router.add_get("/ws/{session}", websocket)
    app.router.add_get("/live/{session}", live)
    app.router.add_get("/sessions/{session}/events", events)

    async def on_shutdown(_: web.Application) -> None:
        await manager.close()

    app.on_shutdown.append(on_shutdown)
    return app
