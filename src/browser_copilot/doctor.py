"""`main.py doctor`: check every moving part, step by step, each with the fix (F14).

Output contract (scripts read it): one line per check, `OK   <name>  <detail>` or
`FAIL <name>  <detail>` followed by an indented `fix: ...` line (`WARN` marks a check that passed
with a warning, e.g. tool schemas above their token budget); then a summary line
`doctor: N passed, N failed`. Exit 0 only when every check passed.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from browser_copilot.agent.memory import MEMORY_DB, STORE_ERRORS, open_memory
from browser_copilot.agent.tools import builtin_specs
from browser_copilot.browser.mcp_server import ServerSpec
from browser_copilot.browser.session import BrowserSession
from browser_copilot.config import Settings
from browser_copilot.errors import ConfigError, CopilotError
from browser_copilot.extras.budget import TOOL_SCHEMA_BUDGET, schema_tokens
from browser_copilot.extras.connection import ExtraServer
from browser_copilot.extras.servers import ExtraServers
from browser_copilot.llm.provider import LlmUnavailable, check_llm, resolve_llm


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    warn: bool = False


class Report:
    """Collects checks and prints each as it completes."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.checks: list[Check] = []

    def add(self, check: Check) -> None:
        self.checks.append(check)
        tag = ("[warn]WARN[/warn]" if check.warn else "[ok]OK  [/ok]") if check.ok else "[fail]FAIL[/fail]"
        self.console.print(f"{tag} {check.name:<12} {escape(check.detail)}", highlight=False)
        if check.fix:
            self.console.print(f"     {'':<12} fix: {escape(check.fix)}", highlight=False)

    @property
    def failed(self) -> int:
        return sum(not c.ok for c in self.checks)


def _split_fix(message: str) -> tuple[str, str]:
    head, sep, fix = message.partition(" Fix: ")
    return (head, fix) if sep else (message, "")


def check_config(env_file: Path | None) -> Check:
    if env_file is not None and env_file.is_file():
        return Check("config", True, f"settings valid; read {env_file.resolve()} and the environment")
    return Check("config", True, "settings valid; no .env file, environment and defaults")


def check_data_dir(settings: Settings) -> Check:
    try:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=settings.data_dir, prefix=".doctor-") as handle:
            handle.write(b"ok")
    except OSError as exc:
        return Check(
            "data dir",
            False,
            f"{settings.data_dir} is not writable ({exc.strerror})",
            "set DATA_DIR to a folder you can write to",
        )
    return Check("data dir", True, f"{settings.data_dir} is writable")


async def check_browser(settings: Settings, report: Report) -> None:
    """Attach (or launch), start the MCP server, and time the code tool."""
    notices: list[str] = []
    started = time.perf_counter()
    session = BrowserSession(settings, notice=notices.append)
    try:
        await session.open()
    except CopilotError as exc:
        detail, fix = _split_fix(str(exc))
        failed_part = "browser" if session.endpoint is None else "mcp server"
        report.add(Check(failed_part, False, detail, fix or "see the message above"))
        if failed_part == "browser":
            report.add(Check("mcp server", False, "not started: no browser to attach to"))
        report.add(Check("code tool", False, "not tried: the browser session did not open"))
        return
    try:
        endpoint, spec, mcp = session.endpoint, session.spec, session.mcp
        assert endpoint is not None and spec is not None and mcp is not None
        how = {
            "configured": "answers at CDP_ENDPOINT",
            "devtools-active-port": f"found through {endpoint.detail}",
            "launched": f"launched {endpoint.detail} with the profile {settings.profile_dir}",
        }[endpoint.how]
        product = f" ({endpoint.browser})" if endpoint.browser else ""
        report.add(Check("browser", True, f"{endpoint.url}{product}: {how}"))
        opened = time.perf_counter() - started
        report.add(mcp_server_check(settings, spec, mcp.code_tool_name, opened))
        times = [await session.round_trip_ms() for _ in range(5)]
        report.add(Check("code tool", True, f"round trip {statistics.median(times):.0f} ms (median of 5)"))
        report.add(network_check(session))
    except CopilotError as exc:
        detail, fix = _split_fix(str(exc))
        report.add(Check("code tool", False, detail, fix or "run `main.py doctor` again"))
    finally:
        await session.close()


def mcp_server_check(settings: Settings, spec: ServerSpec, code_tool: str, opened: float) -> Check:
    """The MCP server started; its confinement level, failed when below what MCP_SANDBOX asks."""
    confined = spec.confinement
    detail = (
        f"@playwright/mcp {spec.version}, code tool {code_tool}, ready in {opened:.1f}s; "
        f"{confined.describe()}"
    )
    if not confined.enough:
        return Check("mcp server", False, detail, confined.reason or f"set MCP_SANDBOX={confined.level}")
    if settings.mcp_sandbox == "off":
        return Check("mcp server", True, detail, "set MCP_SANDBOX=auto to confine the code tool", warn=True)
    if settings.mcp_sandbox == "auto" and confined.reason:
        return Check("mcp server", True, detail, confined.reason, warn=True)
    return Check("mcp server", True, detail)


def network_check(session: BrowserSession) -> Check:
    """The network policy (the app's own DevTools connection, sandbox/network.py) is on."""
    guard = session.network
    if guard is None or not guard.connected:
        return Check(
            "network",
            False,
            "policy: not connected, so no code runs",
            "allow the browser's second DevTools connection",
        )
    return Check("network", True, f"policy: on ({guard.describe()})")


def server_check(server: ExtraServer) -> Check:
    """One extra MCP server: started, its tools listed, its read_only_tools found."""
    name = f"mcp {server.name}"
    if server.state != "ready":
        detail, fix = _split_fix(server.reason or "not started")
        if not fix:
            fix = (
                f"check that `{server.config.describe()}` starts an MCP server (run it by hand); "
                f"its log: {server.log_path}"
                if server.config.transport == "stdio"
                else f"check that an MCP server answers at {server.config.connection['url']}"
            )
        return Check(name, False, detail, fix)
    tools = sorted(t.name for t in server.tools.values())
    read_only = sorted(t.name for t in server.tools.values() if t.read_only)
    missing = [t for t in server.config.read_only_tools if t not in tools]
    listed = f"{len(tools)} tools listed, {len(read_only)} read-only ({', '.join(read_only) or 'none'})"
    if missing:
        return Check(
            name,
            False,
            f"{listed}; read_only_tools names {', '.join(missing)}, which it does not have",
            f"correct read_only_tools in {server.config.name!r}; its tools are {', '.join(tools)}",
        )
    doubtful = [t.name for t in server.tools.values() if t.read_only and t.hint in ("destructive", "writes")]
    if doubtful:
        fix = (
            f"the server marks {', '.join(doubtful)} as writing: keep such tools out of read_only_tools "
            "unless you are sure they only read"
        )
        return Check(name, True, listed, fix, warn=True)
    return Check(name, True, listed)


async def check_extra_servers(settings: Settings, report: Report) -> None:
    """Each server of MCP_SERVERS_FILE, then the tool schemas' tokens (built-in + servers)."""
    try:
        extras = ExtraServers.from_settings(settings)
    except ConfigError as exc:
        detail, fix = _split_fix(exc.problems[0])
        report.add(Check("mcp servers", False, detail, fix))
        return
    if not extras.servers:
        return
    names = ", ".join(s.name for s in extras.servers)
    detail = f"{settings.servers_file}: {len(extras.servers)} servers ({names})"
    fix = "; ".join(extras.file_warnings)
    report.add(Check("mcp servers", True, detail, fix, warn=bool(fix)))
    async with extras:
        for server in extras.servers:
            report.add(server_check(server))
        tokens = await asyncio.to_thread(schema_tokens, extras, builtin_specs())
    over = tokens.over_budget
    budget = f"above the {TOOL_SCHEMA_BUDGET:,}-token budget" if over else f"budget {TOOL_SCHEMA_BUDGET:,}"
    fix = (
        "every model call carries them: remove servers you do not need from MCP_SERVERS_FILE" if over else ""
    )
    report.add(Check("tool schemas", True, f"{tokens.line()}; {budget}", fix, warn=over))


async def check_memory(settings: Settings) -> Check:
    """The long-term memory store (F63) opens and can be read."""
    if not settings.memory:
        return Check("memory", True, "off (MEMORY=off): nothing is kept")
    where = "the DATABASE_URL database" if settings.database else str(settings.data_dir / MEMORY_DB)
    try:
        async with open_memory(settings) as book:
            facts = len(await book.all()) if book is not None else 0
    except (CopilotError, *STORE_ERRORS) as exc:
        detail, fix = _split_fix(str(exc))
        return Check(
            "memory",
            False,
            f"the store in {where} cannot be opened: {detail}",
            fix or "check that the data dir (or the database) is writable, or set MEMORY=off",
        )
    return Check("memory", True, f"{facts} facts kept in {where}")


def check_llm_endpoint(settings: Settings) -> Check:
    endpoint = resolve_llm(settings)
    if endpoint is None:
        return Check(
            "llm",
            False,
            "no LLM configured and no local Ollama/LM Studio server found",
            "set LLM_BASE_URL, LLM_API_KEY and LLM_MODEL in .env (see .env.example), "
            "or start a local Ollama or LM Studio server",
        )
    try:
        models = check_llm(endpoint)
    except LlmUnavailable as exc:
        detail, fix = _split_fix(str(exc))
        return Check("llm", False, detail, fix)
    listed = f"; {len(models)} models listed" if models else ""
    return Check("llm", True, f"{endpoint.describe()} answers{listed}")


async def run_doctor(settings: Settings, console: Console, *, env_file: Path | None) -> int:
    report = Report(console)
    console.print("[title]Browser Copilot doctor[/title]")
    report.add(check_config(env_file))
    report.add(check_data_dir(settings))
    await check_browser(settings, report)
    await check_extra_servers(settings, report)
    report.add(await check_memory(settings))
    report.add(await asyncio.to_thread(check_llm_endpoint, settings))
    passed = len(report.checks) - report.failed
    console.print(f"doctor: {passed} passed, {report.failed} failed", highlight=False)
    return 0 if report.failed == 0 else 1
