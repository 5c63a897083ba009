"""One extra MCP server (F60): a long-lived session owned by a background task, like the browser's.

The task enters the transport and the `ClientSession` and leaves them (anyio cancel scopes must be left
in the task that entered them); calls come from the agent's task. A server that does not answer its
handshake within the start timeout, or a call within the call timeout, is withdrawn (its session closed,
which stops a stdio child: stdin closed, then TERM, then KILL). A stdio server whose output ends has
exited: it is restarted once, then withdrawn. Each state change is reported through `notice`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal, cast

import anyio
import httpx
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from langchain_mcp_adapters.sessions import Connection, create_session
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError as McpProtocolError
from mcp.shared.message import SessionMessage
from mcp.types import (
    CONNECTION_CLOSED,
    CallToolResult,
    PaginatedRequestParams,
    Tool,
)

from browser_copilot.errors import ExtraServerUnavailable
from browser_copilot.extras.config import ServerConfig
from browser_copilot.extras.remote_tools import (
    DESCRIPTION_MAX,
    CallResult,
    RemoteTool,
    clean_schema,
    content_text,
    qualify,
    tool_hint,
)
from browser_copilot.logs import log_tail
from browser_copilot.mcp_wire import CONNECTION_LOST

log = logging.getLogger(__name__)

ServerState = Literal["starting", "ready", "restarting", "withdrawn", "stopped"]
Notice = Callable[[str], None]

_ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

# How a session can end on its own (besides being asked to stop): the task's top catches these.
_ENDED: tuple[type[BaseException], ...] = (
    *CONNECTION_LOST,
    ExtraServerUnavailable,
    OSError,
    TimeoutError,
    ExceptionGroup,
    httpx.HTTPError,
    RuntimeError,
    ValueError,
)


class _Gone(Exception):
    """The server exited while a call was waiting for its answer."""


def expand_env(env: dict[str, str] | None) -> dict[str, str] | None:
    """`${VAR}` in values from this process's environment, as `MultiServerMCPClient` does; unknown
    variables stay as written."""
    if env is None:
        return None
    return {k: _ENV_VAR.sub(lambda m: os.environ.get(m.group(1), m.group(0)), v) for k, v in env.items()}


def resolve_command(command: str, env: dict[str, str] | None) -> str:
    """The program to start, or `ExtraServerUnavailable` saying it is missing and how to fix it."""
    path = (env or {}).get("PATH") or os.environ.get("PATH")
    found = shutil.which(command, path=path) if os.sep not in command else command
    if found is None or not os.access(found, os.X_OK):
        raise ExtraServerUnavailable(
            f'command "{command}" was not found'
            + (" on PATH" if os.sep not in command else " or is not executable")
            + '. Fix: install it, or give its full path in "command"'
        )
    return command


class ExtraServer:
    """One configured server and, while it runs, one initialised session to it."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        log_dir: Path,
        start_timeout: float = 30.0,
        call_timeout: float = 30.0,
        notice: Notice | None = None,
        restarts: int = 1,
    ) -> None:
        self.config = config
        self.log_path = log_dir / f"mcp-{config.prefix}.log"
        self.start_timeout = start_timeout
        self.call_timeout = call_timeout
        self._notice = notice or (lambda text: log.info("%s", text))
        self._restarts_left = restarts
        self.state: ServerState = "starting"
        self.reason = ""
        """Why the server is withdrawn (or why it was restarted)."""
        self.tools: dict[str, RemoteTool] = {}
        """The tools offered now, by qualified name (empty unless ready)."""
        self.known: dict[str, RemoteTool] = {}
        """Every tool it ever listed: a call to one of a withdrawn server is answered with why."""
        self.warnings: list[str] = []
        self.restarted = 0
        self.generation = 0
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._changed = asyncio.Event()
        self._stopping = False
        self._lost = False

    @property
    def name(self) -> str:
        return self.config.name

    # ----- life cycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the server and wait until it is ready or withdrawn (never raises for its failures)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._task = asyncio.create_task(self._run(), name=f"mcp-extra-{self.config.prefix}")
        settled = await self.wait_for(lambda: self.state != "starting", self.start_timeout + 10)
        if not settled:  # the task's own start timeout did not fire: stop it the hard way
            self.withdraw(f"did not answer within {self.start_timeout:g}s")
            await self.close()

    async def _run(self) -> None:
        while True:
            failure: BaseException | None = None
            self._lost = False
            self._wake = asyncio.Event()
            try:
                await self._serve()
            except _ENDED as exc:
                # This task is the session's top level: a failure is recorded, never raised.
                failure = exc
                log.info("MCP server %s ended: %r", self.name, exc)
            was_ready = self.state == "ready"
            self._session = None
            if self._stopping:
                if self.state != "withdrawn":
                    self._set("stopped")
                return
            reason = self._failure_text(failure)
            if was_ready and self._restarts_left > 0:
                self._restarts_left -= 1
                self.restarted += 1
                self._set("restarting", reason)
                self._notice(f'MCP server "{self.name}" stopped ({reason}); restarting it once.')
                continue
            self.withdraw(reason if was_ready else f"not started: {reason}")
            return

    async def _serve(self) -> None:
        async with contextlib.AsyncExitStack() as stack:
            try:
                async with asyncio.timeout(self.start_timeout):
                    session = await stack.enter_async_context(self._connect())
                    listed = await _list_tools(session)
            except TimeoutError:
                raise ExtraServerUnavailable(
                    f"did not answer its start within {self.start_timeout:g}s{self._log_tail()}"
                ) from None
            self._install(session, listed)
            await self._wake.wait()

    @contextlib.asynccontextmanager
    async def _connect(self) -> AsyncIterator[ClientSession]:
        connection = self.config.connection
        if self.config.transport != "stdio":
            async with create_session(cast(Connection, dict(connection))) as session:
                await session.initialize()
                yield session
            return
        env = expand_env(connection.get("env"))
        params = StdioServerParameters(
            command=resolve_command(str(connection["command"]), env),
            args=[str(a) for a in connection.get("args", [])],
            env=env,
            cwd=connection.get("cwd"),
            encoding=connection.get("encoding", "utf-8"),
            encoding_error_handler=connection.get("encoding_error_handler", "strict"),
        )
        with self.log_path.open("a", encoding="utf-8") as errlog:  # the child's stderr
            errlog.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting: {self.config.describe()}\n")
            errlog.flush()
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                anyio.create_task_group() as group,
            ):
                send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
                group.start_soon(self._relay, read, send, self._wake)
                try:
                    async with ClientSession(receive, write) as session:
                        await session.initialize()
                        yield session
                finally:
                    group.cancel_scope.cancel()

    async def _relay(
        self,
        source: MemoryObjectReceiveStream[SessionMessage | Exception],
        sink: MemoryObjectSendStream[SessionMessage | Exception],
        wake: asyncio.Event,
    ) -> None:
        """Pass the server's messages to the session; when its output ends, the server has exited."""
        async with sink:
            async for item in source:
                try:
                    await sink.send(item)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return
        self._lost = True
        wake.set()

    def _install(self, session: ClientSession, listed: list[Tool]) -> None:
        taken: set[str] = set()
        tools: dict[str, RemoteTool] = {}
        read_only = set(self.config.read_only_tools)
        for tool in listed:
            qualified = qualify(self.config.prefix, tool.name, taken)
            taken.add(qualified)
            description = " ".join((tool.description or f"The {tool.name} tool.").split())
            if len(description) > DESCRIPTION_MAX:
                description = description[: DESCRIPTION_MAX - 1] + "…"
            tools[qualified] = RemoteTool(
                server=self.name,
                name=tool.name,
                qualified=qualified,
                description=description,
                schema=clean_schema(tool.inputSchema),
                read_only=tool.name in read_only,
                hint=tool_hint(tool),
            )
        names = {t.name for t in tools.values()}
        self.warnings = [
            f'MCP server "{self.name}": read_only_tools lists "{t}", which it does not have '
            f"(its tools: {', '.join(sorted(names)) or 'none'})"
            for t in self.config.read_only_tools
            if t not in names
        ] + [
            f'MCP server "{self.name}": read_only_tools lists "{t.name}", which the server itself marks '
            f"as {t.hint}: make sure it only reads"
            for t in tools.values()
            if t.read_only and t.hint in ("destructive", "writes")
        ]
        self._session, self.tools = session, tools
        self.known.update(tools)
        self.generation += 1
        self._set("ready")
        if self.restarted:
            self._notice(f'MCP server "{self.name}" was restarted; its {len(tools)} tools are back.')

    def withdraw(self, reason: str) -> None:
        """Stop offering the server's tools and stop its session (in its own task)."""
        if self.state in ("withdrawn", "stopped"):
            return
        self.tools = {}
        self._set("withdrawn", reason)
        self._stopping = True
        self._wake.set()
        self._notice(f'MCP server "{self.name}" is withdrawn, its tools are not offered: {reason}.')

    async def close(self) -> None:
        """Close the session (a stdio child is ended by it); the server's tools are no longer offered."""
        self._stopping = True
        self._wake.set()
        task, self._task = self._task, None
        if task is not None and not task.done():
            if self.state in ("starting", "restarting"):
                task.cancel()  # still in its handshake: nothing to close politely
            done, _ = await asyncio.wait({task}, timeout=10.0)
            if not done:
                task.cancel()
                await asyncio.wait({task}, timeout=10.0)
        self.tools = {}
        self._session = None
        if self.state != "withdrawn":
            self._set("stopped")

    # ----- calls ------------------------------------------------------------------------------

    async def call(self, tool: RemoteTool, arguments: dict[str, Any]) -> CallResult:
        """Call a tool; an error the tool reports is a `CallResult(is_error=True)` for the model.
        Raises `ExtraServerUnavailable` when the server is gone, hung (it is then withdrawn) or died."""
        if self.state in ("starting", "restarting"):
            await self.wait_for(lambda: self.state not in ("starting", "restarting"), self.start_timeout + 10)
        session, generation = self._session, self.generation
        if self.state != "ready" or session is None:
            raise ExtraServerUnavailable(self.unavailable())
        try:
            result = await self._race(
                session.call_tool(
                    tool.name, arguments, read_timeout_seconds=timedelta(seconds=self.call_timeout)
                ),
                generation,
            )
        except _Gone:
            raise await self._died(tool, generation) from None
        except McpProtocolError as exc:
            if exc.error.code == httpx.codes.REQUEST_TIMEOUT:
                self.withdraw(f"no answer to {tool.name} within {self.call_timeout:g}s")
                raise ExtraServerUnavailable(self.unavailable()) from None
            if exc.error.code == CONNECTION_CLOSED:
                raise await self._died(tool, generation) from None
            return CallResult(f"Error from the server: {exc.error.message}", True)
        except CONNECTION_LOST:
            raise await self._died(tool, generation) from None
        except RuntimeError as exc:  # the SDK found a result that does not match the tool's output schema
            return CallResult(f"Error: {exc}", True)
        return CallResult(content_text(result), bool(result.isError))

    async def _race(self, call: Coroutine[Any, Any, CallToolResult], generation: int) -> CallToolResult:
        """The call's result, or `_Gone` as soon as the server is seen to exit (its session is then torn
        down, and a pending request is not always told)."""
        running = asyncio.ensure_future(call)
        gone = asyncio.ensure_future(
            self.wait_for(
                lambda: self.generation != generation or self.state != "ready", self.call_timeout + 30
            )
        )
        try:
            await asyncio.wait({running, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            if not running.done():
                running.cancel()
        if running.cancelled() or not running.done():
            raise _Gone
        return running.result()

    async def _died(self, tool: RemoteTool, generation: int) -> ExtraServerUnavailable:
        """The server exited during a call: wait (bounded) for its restart or withdrawal, say which."""
        await self.wait_for(
            lambda: self.generation != generation or self.state in ("withdrawn", "stopped"),
            self.start_timeout + 10,
        )
        lost = f"stopped while running {tool.name} (the call may or may not have taken effect)"
        if self.state == "ready":
            return ExtraServerUnavailable(
                f"{lost} and was restarted: its tools work again; the call was not repeated", back=True
            )
        return ExtraServerUnavailable(f"{lost} and {self.unavailable()}")

    def unavailable(self) -> str:
        """Why its tools cannot be called, after `MCP server "name" `."""
        if self.state == "withdrawn":
            return f"is withdrawn ({self.reason})"
        if self.state == "restarting":
            return "is restarting after it stopped"
        return f"is {self.state}"

    # ----- helpers ----------------------------------------------------------------------------

    def _set(self, state: ServerState, reason: str = "") -> None:
        self.state = state
        if reason or state in ("ready", "starting"):
            self.reason = reason
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def wait_for(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Wait (at most `timeout` seconds) until `condition()` holds after a state change."""
        try:
            async with asyncio.timeout(timeout):
                while not condition():
                    await self._changed.wait()
        except TimeoutError:
            return False
        return True

    def _failure_text(self, failure: BaseException | None) -> str:
        if failure is None:
            return f"the server exited{self._log_tail()}" if self._lost else "the session ended"
        if isinstance(failure, ExtraServerUnavailable):
            return failure.reason
        while isinstance(failure, ExceptionGroup) and len(failure.exceptions) == 1:
            failure = failure.exceptions[0]
        if isinstance(failure, McpProtocolError) and failure.error.code == CONNECTION_CLOSED:
            return f"the server exited{self._log_tail()}"
        return f"{type(failure).__name__}: {failure}{self._log_tail()}"

    def _log_tail(self, lines: int = 3) -> str:
        if self.config.transport != "stdio":
            return ""
        tail = log_tail(self.log_path, lines, since="--- ")  # since this start's header line
        return f" (its log {self.log_path}: {' | '.join(tail)[:300]})" if tail else ""


async def _list_tools(session: ClientSession, pages: int = 20) -> list[Tool]:
    tools: list[Tool] = []
    cursor: str | None = None
    for _ in range(pages):
        params = PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.nextCursor
        if not cursor:
            break
    return tools
