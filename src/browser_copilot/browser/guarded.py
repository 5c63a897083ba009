"""The model's code as the agent sends it (F41, F45): `guarded_code` puts it in the box with the guard
around it (sandbox/call.js, the app's side of the call), `replay_code` performs a held action once, and
the report and pre-flight verdicts are read back from the call's result.

The guard is armed just before the code runs and disarmed right after, so only the agent's actions
are checked; what it held comes back as `GuardReport`. Approved actions carry a one-time token: the
guard lets exactly one matching event through.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from browser_copilot.browser.observation import code_prelude
from browser_copilot.browser.pacing import Pacing, pacing_hook
from browser_copilot.browser.results import CodeResult
from browser_copilot.safety.classifier import secret_source
from browser_copilot.sandbox.box import exposed_globals_js
from browser_copilot.sandbox.guard import Allow, runtime_version
from browser_copilot.scripts import script_source

_EL = re.compile(r"\bel\(\s*(\d+)\s*\)")
_NAMED = re.compile(
    r"getBy(?:Role|Text|Label|Title|AltText)\s*\((?:\s*['\"`][^'\"`]*['\"`]\s*,)?\s*"
    r"(?:\{[^}]*?name\s*:\s*)?['\"`]([^'\"`]+)['\"`]",
)
_TEXT_SELECTOR = re.compile(r"""(?:text=|has-text\(|:text\()\s*['"]?([^'")\]]{1,80})""")
_GOTO = re.compile(r"""\.\s*goto\s*\(\s*(['"`])([^'"`$\\\n]{1,2000})\1\s*[,)]""")
"""An address written out for goto(): the guard judges it as it is armed (one round trip less)."""
_TYPING = re.compile(
    r"\.(fill|type|pressSequentially|press|setInputFiles|selectText)\s*\(|keyboard\.(type|insertText|press)"
)


@dataclass(frozen=True, slots=True)
class GuardReport:
    held: list[dict[str, Any]]
    secret_blocked: int
    result: Any = None
    error: str | None = None
    acted: int = 0
    """Actions that ran in the call before it stopped (clicks the guard let through, keys typed): when
    none did, the call can run again with a permission for what was held."""


def targets(code: str) -> tuple[list[int], list[str]]:
    """Numbered elements and locator names the code points at."""
    numbers = sorted({int(n) for n in _EL.findall(code)})
    names = [*_NAMED.findall(code), *_TEXT_SELECTOR.findall(code)]
    return numbers, list(dict.fromkeys(n.strip() for n in names if n.strip()))


def goto_addresses(code: str) -> list[str]:
    """The addresses the code opens with goto(), where it writes them out whole (at most 8)."""
    return list(dict.fromkeys(m.group(2) for m in _GOTO.finditer(code)))[:8]


def types_into(code: str) -> bool:
    return bool(_TYPING.search(code))


_STATEMENT_END = re.compile(r"[;\n]")
_ACTIVATES = re.compile(
    r"\.\s*(click|dblclick|tap|check|uncheck|setChecked|dispatchEvent|selectOption|submit|requestSubmit|dragTo)"
    r"\s*\(|\.\s*press\s*\(\s*['\"`](Enter|NumpadEnter|Space| )['\"`]"
)


def activated(code: str) -> list[str]:
    """The targets (`el(N)` refs and locator names) that the code activates where it names them:
    click, check, select, Enter... Reading them (`textContent`, `evaluateAll`, `count`) or typing into
    them is not activation; a target kept in a variable is left to the in-page guard."""
    found: list[str] = []
    for pattern, ref in ((_EL, lambda m: f"el({m.group(1)})"), (_NAMED, lambda m: m.group(1).strip())):
        for match in pattern.finditer(code):
            rest = code[match.end() : match.end() + 300]
            end = _STATEMENT_END.search(rest)
            if _ACTIVATES.search(rest[: end.start() if end else None]):
                found.append(ref(match))
    return list(dict.fromkeys(found))


def guarded_code(
    code: str,
    frames: dict[str, list[int]] | None = None,
    allow: Allow | None = None,
    *,
    preflight: bool = True,
    pacing: Pacing | None = None,
    app_code: bool = False,
    close_banner: bool = False,
) -> str:
    """The model's `async (page) => {...}` with `el(N)`, timeouts and the guard around it; with
    `pacing` in human mode, the membrane paces its actions (browser/pacing.js). `app_code`: the app's
    own code (a replay), whose page functions are not named as the model's (network policy);
    `close_banner`: the guard closes the consent banner an observation found as the call begins (armed:
    a choice it would hold is held, not clicked)."""
    pace = pacing_hook(pacing, secret_source()) if pacing and pacing.active else "undefined"
    numbers, names = targets(code) if preflight else ([], [])
    check = (
        {
            "numbers": numbers,
            "names": names,
            "typing": types_into(code),
            "acts": [a.lower() for a in activated(code)],
        }
        if numbers or names
        else None
    )
    # The model's code runs in the box (sandbox/membrane.js), a compartment of a locked-down realm
    # that gets its source as a string and reaches Playwright only through the membrane; call.js, the
    # app's side of the call, runs here with the real page.
    world = script_source("browser_copilot.sandbox", "world.js")
    early = json.dumps(script_source("browser_copilot.sandbox", "early.js"))
    return (
        "async (page) => {\n"
        f"{code_prelude(frames)}"
        f"  const __call = {script_source('browser_copilot.sandbox', 'call.js')};\n"
        f"  return await __call(page, {{ version: {json.dumps(runtime_version())},"
        f" source: {json.dumps(code.strip().rstrip(';'))},\n"
        f"    allow: {json.dumps(allow.to_js() if allow else None)}, preflight: {json.dumps(check)},\n"
        f"    exposed: {exposed_globals_js()},\n"
        f"    el: (n) => el(n), beforeAction: {pace}, appCode: {json.dumps(app_code)},"
        f" closeBanner: {json.dumps(close_banner)}, addresses: {json.dumps(goto_addresses(code))},\n"
        f"    guard: ({world})(page.context(), {early}) }});\n"
        "}"
    )


def preflight_checks(result: CodeResult) -> list[dict[str, Any]] | None:
    """The pre-flight verdicts when the guarded call stopped before running the model's code."""
    value = result.value if result.ok else None
    if isinstance(value, dict) and "__bcPreflight" in value:
        return list(value["__bcPreflight"])
    return None


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
    )


def replay_code(held_id: str, kind: str, allow: Allow, url: str | None = None) -> str:
    """Perform a held action exactly once, with the guard letting that one event through (a held
    address, kind `navigate`, is opened once)."""
    if kind == "navigate" and url:
        once = Allow(names=[url], held=allow.held, token=allow.token)
        code = f"async (page) => {{ await page.goto({json.dumps(url)}); return 'done'; }}"
        return guarded_code(code, None, once, app_code=True)
    action = (
        "await target.click();"
        if kind == "click"
        else "await target.evaluate((el) => { const form = el.form || el.closest('form') || el;"
        " form.requestSubmit ? form.requestSubmit(el.form ? el : undefined) : form.submit(); });"
    )
    selector = f'[data-bc-held="{held_id}"]'
    return guarded_code(
        "async (page) => { let target = null;"
        " for (const tab of [page, ...page.context().pages().filter((p) => p !== page)]) {"
        f" for (const frame of tab.frames()) {{ const l = frame.locator({json.dumps(selector)});"
        " if (await l.count()) { target = l.first(); break; } } if (target) break; }"
        " if (!target) throw new Error('the held element is no longer on the page');"
        f" {action} return 'done'; }}",
        None,
        allow,
        app_code=True,
    )
