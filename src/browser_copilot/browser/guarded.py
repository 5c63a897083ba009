"""The model's code as the agent sends it (F41, F45): `guarded_code` puts it in the box with the guard
around every input (sandbox/call.js, the app's side of the call), `replay_code` performs a held action
once, and the guard's report is read back from the call's result.

The model's code gets only the façade's API (sandbox/facade.js); each of its inputs is judged first by
the guard in the page (sandbox/guard.js). What the guard held comes back as `GuardReport`. Approved
actions carry a one-time token: the guard lets exactly one matching input through.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from browser_copilot.browser.pacing import Pacing, pacing_hook
from browser_copilot.browser.results import CodeResult
from browser_copilot.safety.classifier import secret_source
from browser_copilot.sandbox.guard import Allow, runtime_version
from browser_copilot.scripts import script_source

ACTION_TIMEOUT_MS = 10_000
"""How long an action on the model's behalf waits for its element (Playwright's default is 30 s)."""
NAVIGATION_TIMEOUT_MS = 30_000

_EL = re.compile(r"\bel\(\s*(\d+)\s*\)")
_NAMED = re.compile(
    r"getBy(?:Role|Text|Label|Title|AltText)\s*\((?:\s*['\"`][^'\"`]*['\"`]\s*,)?\s*"
    r"(?:\{[^}]*?name\s*:\s*)?['\"`]([^'\"`]+)['\"`]",
)
_TYPING = re.compile(r"\.(fill|type|pressSequentially|press)\s*\(|keyboard\.(type|press)")

BRING_TO_FRONT = (
    "  if (await page.evaluate(() => document.hidden).catch(() => false)) await page.bringToFront();\n"
)
"""Background tabs do not render (no animation frames): clicks wait forever for 'stable' and
screenshots hang. The agent's tab comes to the front before it acts or is photographed."""


@dataclass(frozen=True, slots=True)
class GuardReport:
    held: list[dict[str, Any]]
    secret_blocked: int
    result: Any = None
    error: str | None = None
    acted: int = 0
    """Inputs that reached the page before the call stopped: when none did, the call can run again
    with a permission for what was held."""
    requests: tuple[str, ...] = ()
    """Requests the network policy held during the call (their ids: `BrowserSession.held_requests`)."""
    sigs: tuple[str, ...] = ()
    """The inputs it made that a rerun would repeat, as the rerun recognises them (`guarded_code(skip=)`)."""
    trail: tuple[str, ...] = ()
    """Every input the code began, in order, the held one last (`guarded_code(resume=)`)."""


def targets(code: str) -> tuple[list[int], list[str]]:
    """Numbered elements and locator names the code points at (for the step's words, not for safety)."""
    numbers = sorted({int(n) for n in _EL.findall(code)})
    names = [m.strip() for m in _NAMED.findall(code) if m.strip()]
    return numbers, list(dict.fromkeys(names))


def types_into(code: str) -> bool:
    return bool(_TYPING.search(code))


@cache
def _call_source() -> str:
    """call.js with how one input is judged before it is sent (preflight.js) in its place."""
    preflight = script_source("browser_copilot.sandbox", "preflight.js")
    return script_source("browser_copilot.sandbox", "call.js").replace("__PREFLIGHT__", preflight, 1)


def _call(config: dict[str, Any], pacing: str = "undefined") -> str:
    """One guarded call: call.js (with preflight.js, and reach.js, what it may reach) and the session's
    facts (the MCP process's context keeps them: `__bcSession` from `BrowserSession._tell_session`,
    `__bcCall` from `BrowserSession._call`)."""
    world = script_source("browser_copilot.sandbox", "world.js")
    return (
        "async (page) => {\n"
        f"{BRING_TO_FRONT}"
        "  const c = page.context();\n"
        "  const session = c.__bcSession || {};\n"
        "  const call = c.__bcCall || { id: 'c0', deadline: Date.now() + 110000 };\n"
        f"  const __call = {_call_source()};\n"
        f"  return await __call(page, {{ ...{json.dumps(config)},\n"
        f"    version: {json.dumps(runtime_version())}, actionTimeout: {ACTION_TIMEOUT_MS},"
        f" navTimeout: {NAVIGATION_TIMEOUT_MS},\n"
        "    owned: session.owned || [], forbidden: session.forbidden || [],\n"
        "    uploads: session.uploads || [],\n"
        "    deadline: call.deadline, callId: call.id,\n"
        f"    beforeAction: {pacing}, guard: ({world})(c),\n"
        f"    reach: {script_source('browser_copilot.sandbox', 'reach.js')} }});\n"
        "}"
    )


def guarded_code(
    code: str,
    frames: dict[str, list[int]] | None = None,
    allow: Allow | None = None,
    *,
    pacing: Pacing | None = None,
    app_code: bool = False,
    close_banner: bool = False,
    skip: tuple[str, ...] = (),
    resume: tuple[str, ...] = (),
) -> str:
    """The model's `async (page) => {...}`, run in the box with `el(N)` for the observation's numbered
    elements (`frames`: the frames each one is in) and every input judged first. `allow`: a one-time
    permission; `pacing` in human mode paces the inputs (browser/pacing.js); `app_code`: the app's own
    code (no consent-banner check before its inputs); `close_banner`: the consent banner an observation
    found is closed first (its least choice, judged like any input); `skip`: the inputs an earlier run of
    the same code made (`GuardReport.sigs`), not made again when it goes on after a checked input;
    `resume`: every input of an earlier run up to the held one the user allowed (`GuardReport.trail`),
    passed over by this run, which goes on after it (that input was made by its replay)."""
    pace = pacing_hook(pacing, secret_source()) if pacing and pacing.active else "undefined"
    config = {
        "source": code.strip().rstrip(";"),
        "frames": frames or {},
        "allow": allow.to_js() if allow else None,
        "appCode": app_code,
        "closeBanner": close_banner,
        "skip": list(skip),
        **({"resume": list(resume)} if resume else {}),
    }
    return _call(config, pace)


def verdicts_code(numbers: list[int]) -> str:
    """The app's own call (no input is sent) for what a press on each numbered element of the current
    observation would be judged: [{n, facts, verdict}] (bench/policy.py). Needs the guard runtime, which
    the session's first guarded call installs."""
    world = script_source("browser_copilot.sandbox", "world.js")
    args = json.dumps({"op": "verdicts", "numbers": numbers})
    return f"async (page) => ({world})(page.context()).page(page, {args})"


def guard_report(result: CodeResult) -> GuardReport | None:
    value = result.value if result.ok else None
    if not isinstance(value, dict) or "__bcGuard" not in value:
        return None
    report = value["__bcGuard"]
    return GuardReport(
        held=list(report.get("held", [])),
        secret_blocked=int(report.get("secretBlocked", 0)),
        result=value.get("result"),
        error=value.get("error"),
        acted=int(report.get("acted", 0)),
        sigs=tuple(str(x) for x in report.get("sigs", [])),
        trail=tuple(str(x) for x in report.get("trail", [])),
        requests=tuple(str(r) for r in report.get("requests", [])),
    )


def replay_code(held_id: str, action: dict[str, Any], allow: Allow) -> str:
    """Perform a held action exactly once, as the code meant it (its kind of input on the element that
    received it, found by the guard's stamp), with the one-time permission `allow`: its window is an
    approved one for the network policy."""
    config = {
        "source": "async () => null",
        "frames": {},
        "allow": allow.to_js(),
        "appCode": True,
        "closeBanner": False,
        "replay": {"id": held_id, "action": action},
    }
    return _call(config)


__all__ = [
    "ACTION_TIMEOUT_MS",
    "BRING_TO_FRONT",
    "NAVIGATION_TIMEOUT_MS",
    "GuardReport",
    "guard_report",
    "guarded_code",
    "replay_code",
    "targets",
    "types_into",
    "verdicts_code",
]
