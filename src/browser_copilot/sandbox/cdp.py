"""One browser-level DevTools WebSocket with flat sessions, as the app's own connections use it (the
network guard, the web page's live view): commands with an answer (`send`), commands without one
(`post`, `post_soon` from a synchronous event handler), and events handed to the subclass (`_event`),
those it skips (`_skip`) read as text only, never parsed."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from typing import Any

import aiohttp

log = logging.getLogger(__name__)


class CdpError(Exception):
    """A DevTools command failed, or the connection closed before it answered."""


class CdpConnection:
    def __init__(self, http: aiohttp.ClientSession, ws: aiohttp.ClientWebSocketResponse) -> None:
        self._http = http
        self._ws = ws
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self.closed = asyncio.Event()

    @staticmethod
    async def connect(
        endpoint: str, timeout: float
    ) -> tuple[aiohttp.ClientSession, aiohttp.ClientWebSocketResponse]:
        """The HTTP session and the WebSocket of `endpoint` (an http:// endpoint is asked for its
        browser WebSocket); on failure or cancellation the HTTP session is closed and the error goes on."""
        http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout))
        try:
            url = endpoint
            if endpoint.startswith(("http://", "https://")):
                async with http.get(endpoint.rstrip("/") + "/json/version") as answer:
                    url = str((await answer.json(content_type=None))["webSocketDebuggerUrl"])
            ws = await http.ws_connect(url, max_msg_size=0, timeout=aiohttp.ClientWSTimeout(ws_close=2.0))
        except BaseException:
            await http.close()
            raise
        return http, ws

    def _start(self, name: str) -> None:
        self._reader = asyncio.create_task(self._read(), name=name)

    def _skip(self, text: str) -> bool:
        """An event not to parse (a subclass may read it as text here)."""
        del text
        return False

    async def _event(self, method: str, params: dict[str, Any], session: str | None) -> None:
        """One event of the browser or of a session (a subclass handles it)."""

    async def _read(self) -> None:
        try:
            async for message in self._ws:
                if message.type != aiohttp.WSMsgType.TEXT or self._skip(message.data):
                    continue
                data = json.loads(message.data)
                if "id" in data:
                    future = self._pending.pop(int(data["id"]), None)
                    if future is not None and not future.done():
                        future.set_result(data)
                    elif "error" in data:
                        log.debug("DevTools: %s", data["error"])
                    continue
                try:
                    await self._event(
                        str(data.get("method")), data.get("params") or {}, data.get("sessionId")
                    )
                except Exception:  # the reader's top: one bad event must not end the connection
                    log.exception("DevTools: handling %s failed", data.get("method"))
        finally:
            self.closed.set()
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(CdpError("the DevTools connection closed"))
            self._pending.clear()

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        *,
        timeout: float = 10.0,
    ) -> dict[str, Any]:
        if self.closed.is_set():
            raise CdpError("the DevTools connection is closed")
        ident = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[ident] = future
        try:
            await self._ws.send_str(self._message(ident, method, params, session))
            async with asyncio.timeout(timeout):
                answer = await future
        except (aiohttp.ClientError, ConnectionError, RuntimeError) as exc:
            raise CdpError(f"{method}: {exc}") from exc
        except TimeoutError:
            raise CdpError(f"{method}: no answer in {timeout:.0f}s") from None
        finally:
            self._pending.pop(ident, None)
        if "error" in answer:
            raise CdpError(f"{method}: {answer['error'].get('message')}")
        result: dict[str, Any] = answer.get("result") or {}
        return result

    async def post(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> None:
        """Send without waiting for the answer (while handling events, in the reader)."""
        if self.closed.is_set():
            return
        with contextlib.suppress(aiohttp.ClientError, ConnectionError, RuntimeError):
            await self._ws.send_str(self._message(next(self._ids), method, params, session))

    def post_soon(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> None:
        """`post` from synchronous code (an event handler that is not a coroutine)."""
        if self.closed.is_set():
            return
        task = asyncio.ensure_future(self.post(method, params, session))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())

    @staticmethod
    def _message(ident: int, method: str, params: dict[str, Any] | None, session: str | None) -> str:
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        return json.dumps(message)

    async def close(self) -> None:
        with contextlib.suppress(aiohttp.ClientError, ConnectionError, RuntimeError):
            await self._ws.close()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        await self._http.close()
