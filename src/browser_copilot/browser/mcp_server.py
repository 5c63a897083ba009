"""The pinned `@playwright/mcp` server: its command line, and one long-lived session to it.

langchain-mcp-adapters opens a new server process per tool call by default, which loses the page.
`McpConnection` keeps one `client.session(...)` open for the app's life. The session's context
managers belong to one background task (anyio cancel scopes must be left in the task that entered
them), so the connection can be opened and closed from different tasks (CLI, tests, server).

The server runs JavaScript the model writes, in Node: it is confined with Node's permission model
(no child processes, writes only in the data dir, no reads of the home directory) where Node has it,
and on Linux inside bubblewrap too (`sandbox.confinement`: own pid namespace, a read-only view of the
system, no home directory, a clean environment), as `MCP_SANDBOX` asks.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Coroutine
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from langchain_core.tools import BaseTool
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.sessions import StdioConnection
from langchain_mcp_adapters.tools import load_mcp_tools
from mcp import ClientSession
from mcp.shared.exceptions import McpError as _ProtocolError
from mcp.types import TextContent

from browser_copilot.config import SandboxSetting
from browser_copilot.errors import CodeToolMissing, McpStartError, McpUnavailable
from browser_copilot.logs import log_tail
from browser_copilot.mcp_wire import CONNECTION_LOST
from browser_copilot.sandbox import confinement
from browser_copilot.sandbox.confinement import Confinement
from browser_copilot.scripts import project_root

_T = TypeVar("_T")
log = logging.getLogger(__name__)

CODE_TOOL_NAMES = ("browser_run_code_unsafe", "browser_run_code")
"""The code tool's name in current (0.0.73+) and older releases of @playwright/mcp."""


# How the session task can end on its own (besides being asked to stop).
_SESSION_ENDED: tuple[type[BaseException], ...] = (
    *CONNECTION_LOST,
    CodeToolMissing,
    OSError,
    ExceptionGroup,
)


def find_server_script(root: Path | None = None) -> Path:
    """`node_modules/@playwright/mcp/cli.js`, or `McpStartError` telling how to install it."""
    for base in (root or project_root(), Path.cwd()):
        script = base / "node_modules" / "@playwright" / "mcp" / "cli.js"
        if script.is_file():
            return script
    raise McpStartError(
        "@playwright/mcp is not installed. Fix: run `npm ci` in the project folder "
        f"({root or project_root()}), which installs the version pinned in package.json."
    )


def server_version(script: Path) -> str:
    try:
        data = json.loads((script.parent / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "unknown"
    return str(data.get("version", "unknown"))


def node_major(node: str) -> int:
    """Major version of the `node` executable, 0 when it cannot be told."""
    try:
        out = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=10, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    match = re.match(r"v(\d+)", out.strip())
    return int(match.group(1)) if match else 0


def permission_flag(major: int) -> str | None:
    """Node's permission-model flag: `--permission` (22+), `--experimental-permission` (20, 21)."""
    if major >= 22:
        return "--permission"
    if major >= 20:
        return "--experimental-permission"
    return None


@dataclass(frozen=True)
class ServerSpec:
    """How to start the server: command, arguments, environment and where its files go."""

    command: str
    args: list[str]
    env: dict[str, str]
    cwd: Path
    version: str
    confinement: Confinement
    stderr_log: Path
    output_dir: str
    """Unique per data dir: also how the server process is told apart from others."""
    notes: list[str] = field(default_factory=list)

    @property
    def sandboxed(self) -> bool:
        """Confined at all (Node's permission model, bubblewrap or both)."""
        return self.confinement.level != "off"

    def connection(self) -> StdioConnection:
        # stderr is appended to a log file (the adapters give the child our terminal otherwise).
        if sys.platform != "win32":
            wrapped = ["-c", 'exec "$@" 2>>"$0"', str(self.stderr_log), self.command, *self.args]
            return {
                "transport": "stdio",
                "command": "/bin/sh",
                "args": wrapped,
                "env": self.env,
                "cwd": str(self.cwd),
            }
        return {
            "transport": "stdio",
            "command": self.command,
            "args": self.args,
            "env": self.env,
            "cwd": str(self.cwd),
        }


def build_server_spec(
    *,
    cdp_endpoint: str,
    data_dir: Path,
    sandbox: SandboxSetting = "auto",
    node: str | None = None,
    root: Path | None = None,
    cdp_timeout_ms: int = 60_000,
    bwrap: str | None = None,
    instance: str | None = None,
) -> ServerSpec:
    """The command line of the pinned server, attached to `cdp_endpoint`, confined as `sandbox` asks
    (`bwrap`: bubblewrap's path, found on PATH when not given). `instance`: one more server on the same
    browser (a parallel run, `browser.pool`), with folders of its own in `DATA_DIR/mcp/run-<instance>`."""
    script = find_server_script(root)
    node_path = node or shutil.which("node")
    if node_path is None:
        raise McpStartError(
            "Node.js is not installed. Fix: install Node.js 18 or newer (Debian/Ubuntu: "
            "`sudo apt-get install nodejs npm`)."
        )
    mcp_dir = data_dir / "mcp" / f"run-{instance}" if instance else data_dir / "mcp"
    output_dir, cache_dir, tmp_dir = mcp_dir / "output", mcp_dir / "cache", mcp_dir / "tmp"
    for folder in (output_dir, cache_dir, tmp_dir):
        folder.mkdir(parents=True, exist_ok=True)
    data_real = data_dir.resolve()
    writable = [output_dir.resolve(), cache_dir.resolve(), tmp_dir.resolve()]
    env = {"XDG_CACHE_HOME": str(writable[1]), "TMPDIR": str(writable[2])}
    sockets = sockets_dir(writable[2])
    if sockets is not None:
        env["PWTEST_SOCKETS_DIR"] = str(sockets)
        writable.append(sockets)
    modules = script.resolve().parents[2]  # .../node_modules
    node_real = Path(node_path).resolve()
    flag = permission_flag(node_major(node_path)) if sandbox != "off" else None
    confined = confinement.choose(
        sandbox,
        node_permission=flag is not None,
        bwrap_problem=lambda: confinement.bwrap_problem(
            bwrap or shutil.which("bwrap"), node=node_real, read_only=[modules]
        ),
    )
    node_args: list[str] = []
    if confined.node_permission:
        assert flag is not None
        reads = [modules, data_real, *writable, "/proc", "/etc", "/usr", "/sys", "/dev"]
        node_args += [flag, "--no-warnings"]
        node_args += [f"--allow-fs-read={p}/*" for p in reads]
        node_args.append("--allow-fs-read=/run/WSL")
        node_args += [f"--allow-fs-write={p}/*" for p in writable]
    server_args = [
        str(script.resolve()),
        "--cdp-endpoint",
        cdp_endpoint,
        "--cdp-timeout",
        str(cdp_timeout_ms),
        "--timeout-settle",
        "0",
        "--snapshot-mode",
        "none",
        "--image-responses",
        "omit",
        "--no-webmcp",
        "--output-dir",
        str(output_dir.resolve()),
    ]
    command, args = node_path, node_args + server_args
    if confined.bubblewrap:
        # HOME is a folder of the box (no home directory is visible in it).
        env["HOME"] = str(writable[2])
        command = bwrap or shutil.which("bwrap") or "bwrap"
        args = confinement.bwrap_command(
            command,
            node=node_real,
            read_only=[modules],
            writable=writable,
            env=env,
            cwd=mcp_dir.resolve(),
            command=[str(node_real), *args],
        )[1:]
    # Say what is missing when it falls short of the setting, or when `auto` could do better here.
    asked_best = sandbox == "auto" and sys.platform.startswith("linux")
    notes = [confined.reason] if confined.reason and (not confined.enough or asked_best) else []
    return ServerSpec(
        command=command,
        args=args,
        env=env,
        cwd=mcp_dir.resolve(),
        version=server_version(script),
        confinement=confined,
        stderr_log=(data_dir / "logs" / "mcp-server.log").resolve(),
        output_dir=str(writable[0]),
        notes=notes,
    )


def sockets_dir(tmp_dir: Path) -> Path | None:
    """A short folder for Playwright's Unix sockets when `tmp_dir` is too deep for them.

    Socket paths are limited to ~104 bytes; Playwright puts them under `$TMPDIR/pw-<hash>/<domain>/`.
    """
    if sys.platform == "win32" or len(str(tmp_dir).encode()) <= 48:
        return None
    digest = hashlib.sha1(str(tmp_dir).encode()).hexdigest()[:10]
    folder = Path(tempfile.gettempdir()) / f"bc-{os.getuid()}-{digest}"
    folder.mkdir(mode=0o700, exist_ok=True)
    if folder.stat().st_uid != os.getuid():
        raise McpStartError(f"{folder} belongs to another user. Fix: set DATA_DIR to a shorter path.")
    return folder


class McpConnection:
    """One running server and one initialised session to it, owned by a background task."""

    def __init__(self, spec: ServerSpec, *, start_timeout: float = 60.0) -> None:
        self.spec = spec
        self._start_timeout = start_timeout
        self._client = MultiServerMCPClient({"browser": spec.connection()})
        self._session: ClientSession | None = None
        self._tools: list[BaseTool] = []
        self._code_tool: str | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._failure: BaseException | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def code_tool_name(self) -> str:
        if self._code_tool is None:
            raise McpUnavailable("the MCP session is not open")
        return self._code_tool

    @property
    def tools(self) -> list[BaseTool]:
        """The server's tools as LangChain tools (for inspection; the agent gets a filtered one)."""
        return list(self._tools)

    @property
    def alive(self) -> bool:
        return self._task is not None and not self._task.done() and self._session is not None

    async def start(self) -> None:
        """Spawn the server, open the session, resolve the code tool's name."""
        self.spec.stderr_log.parent.mkdir(parents=True, exist_ok=True)
        self._task = asyncio.create_task(self._run(), name="mcp-session")
        try:
            async with asyncio.timeout(self._start_timeout):
                await self._ready.wait()
        except TimeoutError:
            await self.close()
            raise McpStartError(
                f"The MCP server did not answer within {self._start_timeout:.0f}s. "
                f"See {self.spec.stderr_log}."
            ) from None
        if self._failure is not None:
            failure = self._failure
            await self.close()
            if isinstance(failure, CodeToolMissing):
                raise failure
            raise McpStartError(
                f"The MCP server failed to start: {failure}. {self._stderr_tail()}"
            ) from failure

    async def _run(self) -> None:
        try:
            async with self._client.session("browser") as session:
                tools = await load_mcp_tools(session, server_name="browser")
                names = [t.name for t in tools]
                found = next((n for n in CODE_TOOL_NAMES if n in names), None)
                if found is None:
                    raise CodeToolMissing(
                        f"@playwright/mcp {self.spec.version} offers neither of {CODE_TOOL_NAMES}; "
                        f"its tools are {names}. Fix: run `npm ci` to install the pinned version."
                    )
                self._session, self._tools, self._code_tool = session, tools, found
                self._ready.set()
                await _first_of(self._stop.wait(), _exited(self.server_pid()))
                if not self._stop.is_set():
                    self._failure = McpUnavailable("the MCP server process exited")
                    log.info("MCP server process exited")
        except _SESSION_ENDED as exc:
            # This task is the session's top level: record the failure for start() or call().
            self._failure = exc
            log.info("MCP session ended: %r", exc)
        finally:
            self._session = None
            self._ready.set()

    async def call(self, name: str, arguments: dict[str, Any], *, timeout: float = 120.0) -> tuple[str, bool]:
        """Call a tool; returns (text, is_error). Raises `McpUnavailable` when the server is gone."""
        session = self._session
        if session is None or not self.alive:
            raise McpUnavailable(f"the MCP server is not running. {self._stderr_tail()}")
        try:
            result = await self._while_alive(
                session.call_tool(name, arguments, read_timeout_seconds=timedelta(seconds=timeout))
            )
        except CONNECTION_LOST as exc:
            if isinstance(exc, _ProtocolError) and "timed out" in str(exc).lower():
                return (f"### Error\nError: the browser did not answer within {timeout:.0f}s", True)
            raise McpUnavailable(f"the MCP server stopped: {exc!r}. {self._stderr_tail()}") from exc
        text = "\n".join(block.text for block in result.content if isinstance(block, TextContent))
        return text, bool(result.isError)

    async def _while_alive(self, call: Coroutine[Any, Any, _T]) -> _T:
        """`call`'s result, or `McpUnavailable` as soon as the session ends under it: a request sent
        after the server's output ended is never answered, and would otherwise wait for its timeout."""
        session_task = self._task
        pending = asyncio.ensure_future(call)
        if session_task is None:
            return await pending
        await asyncio.wait({pending, session_task}, return_when=asyncio.FIRST_COMPLETED)
        if pending.done():
            return pending.result()
        pending.cancel()
        with contextlib.suppress(asyncio.CancelledError, *CONNECTION_LOST):
            await pending
        raise McpUnavailable(f"the MCP server stopped during the call. {self._stderr_tail()}")

    async def close(self) -> None:
        """Close the session; the server process is ended (stdin closed, then TERM, then KILL)."""
        self._stop.set()
        task, self._task = self._task, None
        if task is not None and not task.done():
            try:
                async with asyncio.timeout(10.0):
                    await asyncio.shield(task)
            except TimeoutError:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._session = None

    def _stderr_tail(self, lines: int = 5) -> str:
        tail = log_tail(self.spec.stderr_log, lines)
        return f"Server log ({self.spec.stderr_log}): " + " | ".join(tail) if tail else ""

    def server_pid(self) -> int | None:
        """PID of the server process (Linux), found among this process's children: `bwrap` when the
        server is in its box (killing it ends Node inside too: `--die-with-parent`), else Node."""
        return find_child_pid(os.getpid(), self.spec.output_dir)


async def _first_of(*waits: Coroutine[Any, Any, object]) -> None:
    """Return when the first of `waits` finishes; the others are cancelled."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _exited(pid: int | None) -> None:
    """Return when process `pid` exits (a pidfd becomes readable); never when it cannot be watched."""
    try:
        if pid is None or not hasattr(os, "pidfd_open"):
            raise OSError("cannot watch")
        fd = os.pidfd_open(pid)
    except OSError:
        await asyncio.Event().wait()
        return
    loop = asyncio.get_running_loop()
    exited = asyncio.Event()
    loop.add_reader(fd, exited.set)
    try:
        await exited.wait()
    finally:
        loop.remove_reader(fd)
        os.close(fd)


def find_child_pid(parent: int, marker: str) -> int | None:
    """A direct child of `parent` whose command line contains `marker` (Linux `/proc`)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and marker in cmdline:
            return int(entry.name)
    return None
