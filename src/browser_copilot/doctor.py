"""`main.py doctor`: check every moving part, step by step, each with the fix (F14).

Output contract (scripts read it): one line per check, `OK   <name>  <detail>` or
`FAIL <name>  <detail>` followed by an indented `fix: ...` line; then a summary line
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

from browser_copilot.browser.session import BrowserSession
from browser_copilot.config import Settings
from browser_copilot.errors import CopilotError
from browser_copilot.llm.provider import LlmUnavailable, check_llm, resolve_llm


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


class Report:
    """Collects checks and prints each as it completes."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.checks: list[Check] = []

    def add(self, check: Check) -> None:
        self.checks.append(check)
        tag = "[ok]OK  [/ok]" if check.ok else "[fail]FAIL[/fail]"
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
        sandbox = "Node permission model on" if spec.sandboxed else "NOT sandboxed"
        opened = time.perf_counter() - started
        report.add(
            Check(
                "mcp server",
                spec.sandboxed or not settings.mcp_sandbox,
                f"@playwright/mcp {spec.version}, code tool {mcp.code_tool_name}, {sandbox}, "
                f"ready in {opened:.1f}s",
                "" if spec.sandboxed or not settings.mcp_sandbox else " ".join(spec.notes),
            )
        )
        times = [await session.round_trip_ms() for _ in range(5)]
        report.add(Check("code tool", True, f"round trip {statistics.median(times):.0f} ms (median of 5)"))
    except CopilotError as exc:
        detail, fix = _split_fix(str(exc))
        report.add(Check("code tool", False, detail, fix or "run `main.py doctor` again"))
    finally:
        await session.close()


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
    report.add(await asyncio.to_thread(check_llm_endpoint, settings))
    passed = len(report.checks) - report.failed
    console.print(f"doctor: {passed} passed, {report.failed} failed", highlight=False)
    return 0 if report.failed == 0 else 1
