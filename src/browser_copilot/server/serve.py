"""The server on a TCP port with the agent behind it: `Server` (the HTTP app of `app.py` on a port, the
link to print), `listen`, `running` (the browser session, the checkpointer, the memory and the extra
servers open behind it) and `serve` (`main.py serve`)."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from aiohttp import web
from langchain_core.language_models import BaseChatModel

from browser_copilot.agent.tools import builtin_specs
from browser_copilot.config import Settings
from browser_copilot.server.app import HEARTBEAT, build_app
from browser_copilot.server.auth import ORIGINS, SignIn, own_origins
from browser_copilot.server.sessions import SessionManager

HEADER_TIMEOUT = 15.0
"""Seconds a connection may take to send a whole request head, from its opening or from the last answer
(so also the idle time of a keep-alive connection); then it is closed. WebSocket and SSE streams, once
open, are not affected."""
AUTH_FILE = "server-auth.json"
"""In the data dir: the server's token and the browsers it signed in (see `auth.SignIn.kept`)."""


class Server:
    """The app on a TCP port; `start()` returns the URL to print (with the token).

    `announce` prints a new sign-in link when a used one is opened again (`auth.SignIn`);
    `header_timeout`: see HEADER_TIMEOUT; `store`: where the token and the sign-ins are kept across
    restarts (`auth.SignIn.kept`; `fresh_token` starts anew), else they live as long as the server."""

    def __init__(
        self,
        manager: SessionManager,
        *,
        token: str | None = None,
        heartbeat: float = HEARTBEAT,
        header_timeout: float = HEADER_TIMEOUT,
        announce: Callable[[str], None] | None = None,
        store: Path | None = None,
        fresh_token: bool = False,
    ):
        self.manager = manager
        if store is not None:
            self.sign_in = SignIn.kept(store, fresh=fresh_token, announce=self._announce)
            self.token = self.sign_in.token
        else:
            self.token = token or secrets.token_urlsafe(24)
            self.sign_in = SignIn(self.token, announce=self._announce)
        self._printer = announce
        self.app = build_app(manager, self.sign_in, heartbeat=heartbeat)
        self.runner = web.AppRunner(
            self.app, access_log=None, shutdown_timeout=2.0, keepalive_timeout=header_timeout
        )
        self.host = ""
        self.port = 0

    def _announce(self, path: str) -> None:
        if self._printer is not None:
            self._printer(f"{self.base_url}{path}")

    async def start(
        self, host: str = "127.0.0.1", port: int = 8765, *, sock: socket.socket | None = None
    ) -> str:
        """Serve on `sock` (bound by `listen`) or bind HOST:PORT now."""
        await self.runner.setup()
        site: web.BaseSite = web.SockSite(self.runner, sock) if sock else web.TCPSite(self.runner, host, port)
        await site.start()
        self.host, self.port = host, int(self.runner.addresses[0][1])
        self.app[ORIGINS].update(self.origins)
        return f"{self.base_url}/?token={self.token}"

    @property
    def origins(self) -> set[str]:
        """Every origin this server answers on (see `auth.own_origins`)."""
        return own_origins(self.host, self.port)

    @property
    def base_url(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}"

    async def stop(self) -> None:
        await self.runner.cleanup()


def listen(host: str, port: int) -> socket.socket:
    """The server's listening socket, bound now (port 0: a free one), so its origins are known before the
    browser session starts."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.create_server((host, port), family=family, backlog=128, reuse_port=False)
    sock.setblocking(False)
    return sock


@contextlib.asynccontextmanager
async def running(
    settings: Settings,
    *,
    host: str,
    port: int,
    llm: Callable[[], BaseChatModel],
    notice: Callable[[str], None],
    announce: Callable[[str], None] | None = None,
    model: str | None = None,
) -> AsyncIterator[Server]:
    """The server with the agent behind it: the browser session, the checkpointer, the memory and the
    extra servers, open while the block runs.

    The agent's tabs never load the server: every origin it answers on (each loopback name of the
    address it binds) is in the browser session's URL policy before that session starts, so the network
    guard refuses it in every agent tab, frame and WebSocket from the first one on."""
    from browser_copilot.agent.memory import open_memory
    from browser_copilot.agent.storage import open_checkpointer
    from browser_copilot.browser.session import BrowserSession
    from browser_copilot.extras.servers import ExtraServers

    sock = listen(host, port)
    try:
        browser = BrowserSession(settings, notice=notice)
        for origin in own_origins(host, int(sock.getsockname()[1])):
            browser.url_policy.forbid(origin)
        async with (
            browser,
            open_checkpointer(settings) as saver,
            open_memory(settings) as memory,
            ExtraServers.from_settings(settings, notice=notice, builtin=builtin_specs) as extras,
            contextlib.AsyncExitStack() as stack,
        ):
            manager = SessionManager(
                settings,
                browser=browser,
                llm=llm(),
                checkpointer=saver,
                memory=memory,
                extras=extras,
                model=model,
            )
            if settings.job_queue:  # runs are jobs for `main.py worker` processes (`server.queued`)
                from browser_copilot.server.queued import open_queued

                manager.queued = await stack.enter_async_context(open_queued(settings, manager))
            server = Server(
                manager,
                announce=announce,
                store=settings.data_dir / AUTH_FILE,
                fresh_token=settings.server_token == "new",
            )
            await server.start(host, port, sock=sock)
            try:
                yield server
            finally:
                await asyncio.shield(server.stop())
    finally:
        sock.close()


async def serve(settings: Settings, *, host: str, port: int, allow_remote: bool) -> int:
    """`main.py serve`: the agent behind the HTTP server until Ctrl+C or SIGTERM."""
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

    def announce(url: str) -> None:
        sys.stdout.write(f"The sign-in link was opened again; a new one-time link: {url}\n")
        sys.stdout.flush()

    def llm() -> BaseChatModel:
        return build_chat_model(settings, endpoint)

    started = False
    try:
        async with running(
            settings,
            host=host,
            port=port,
            llm=llm,
            notice=notice,
            announce=announce,
            model=endpoint.describe(),
        ) as server:
            if await server.manager.headless():
                sys.stderr.write(
                    "The browser has no window (headless): the web page's Browser panel shows the agent's "
                    "tab live, and takes your clicks and keys when the agent hands over (a sign-in, a "
                    "captcha). For a window, set BROWSER_HEADLESS=false where there is a display.\n"
                )
                sys.stderr.flush()
            sys.stdout.write(f"{server.base_url}/?token={server.token}\n")  # the last line: the link
            sys.stdout.flush()
            started = True
            await asyncio.Event().wait()
    finally:
        if started:  # after the server and the browser session have closed
            sys.stderr.write("Server stopped; the browser session is closed.\n")
    return 0
