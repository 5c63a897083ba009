"""Running the model's code under the in-page guard (guard.js), and the pre-flight check of targets.

The guard is armed just before the code runs and disarmed right after, so only the agent's actions
are checked; what it held comes back as `GuardReport`. Approved actions carry a one-time token: the
guard lets exactly one matching event through.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from browser_copilot.browser.observation import code_prelude
from browser_copilot.browser.pacing import Pacing, pacing_hook
from browser_copilot.browser.results import CodeResult
from browser_copilot.browser.scripts import script_source
from browser_copilot.safety.classifier import language_source, lexicon_json, policy_template, secret_source
from browser_copilot.sandbox.box import box_install_lines, exposed_globals_js, globals_policy, membrane_source

_EL = re.compile(r"\bel\(\s*(\d+)\s*\)")
_NAMED = re.compile(
    r"getBy(?:Role|Text|Label|Title|AltText)\s*\((?:\s*['\"`][^'\"`]*['\"`]\s*,)?\s*"
    r"(?:\{[^}]*?name\s*:\s*)?['\"`]([^'\"`]+)['\"`]",
)
_TEXT_SELECTOR = re.compile(r"""(?:text=|has-text\(|:text\()\s*['"]?([^'")\]]{1,80})""")
_TYPING = re.compile(
    r"\.(fill|type|pressSequentially|press|setInputFiles|selectText)\s*\(|keyboard\.(type|insertText|press)"
)


@cache
def guard_template() -> str:
    """guard.js with the classifier in it and `__LEXICON__` left for the phrase table."""
    body = script_source("browser_copilot.safety", "guard.js")
    return body.replace("__POLICY__", policy_template()).replace("__IS_SECRET__", secret_source())


@dataclass(frozen=True, slots=True)
class Allow:
    """A one-time permission for the guard: numbered targets, names, or a held element."""

    numbers: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    token: str = field(default_factory=lambda: uuid.uuid4().hex[:12])

    def with_checks(self, checks: list[dict[str, Any]]) -> Allow:
        """This permission widened to the pre-flight checks' targets (`el(N)` refs and locator names),
        under the same one-time token."""
        numbers = [int(c["ref"][3:-1]) for c in checks if c["ref"].startswith("el(")]
        names = [c["ref"] for c in checks if not c["ref"].startswith("el(")]
        return Allow(
            numbers=[*self.numbers, *numbers], names=[*self.names, *names], held=self.held, token=self.token
        )

    def to_js(self) -> dict[str, Any]:
        return {
            "token": self.token,
            "numbers": self.numbers,
            "names": [n.lower() for n in self.names],
            "held": self.held,
        }


@dataclass(frozen=True, slots=True)
class GuardReport:
    held: list[dict[str, Any]]
    secret_blocked: int
    result: Any = None
    error: str | None = None


def targets(code: str) -> tuple[list[int], list[str]]:
    """Numbered elements and locator names the code points at."""
    numbers = sorted({int(n) for n in _EL.findall(code)})
    names = [*_NAMED.findall(code), *_TEXT_SELECTOR.findall(code)]
    return numbers, list(dict.fromkeys(n.strip() for n in names if n.strip()))


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


RUNTIME_MISSING = "__bcNeedsRuntime"  # call.js returns it
"""What guarded code returns, before running anything, when the MCP server lacks the guard runtime."""


@cache
def runtime_version() -> str:
    """Changes with what the install call leaves (the pinned `ses` changes only with a new server)."""
    parts = (guard_template(), lexicon_json(), membrane_source(), json.dumps(globals_policy()))
    # world.js and early.js travel with each call: a change there needs no new install.
    return hashlib.sha256("".join(parts).encode()).hexdigest()[:12]


_RUNTIME_FOR = """
  // The runtime for a document: the phrase table of its language (<html lang>) and English when the
  // table has that language, else all of it. Built once per language and kept on the context.
  const made = new Map();
  c.__bcRuntimeFor = (lang) => {
    const found = languageOf(table, lang);
    const key = found || '*';
    if (!made.has(key)) {
      const languages = found
        ? Object.fromEntries(Object.entries(table.languages).filter(([k]) => k === found || k === 'en'))
        : table.languages;
      made.set(key, template.replace('__LEXICON__', () => JSON.stringify({ ...table, languages })));
    }
    return made.get(key);
  };
"""


def runtime_install_code(root: Path) -> str:
    """Code that leaves, once per MCP server, the box the model's code runs in (a locked-down realm,
    sandbox/box.py) and the guard runtime (guard, classifier, phrase table) on the browser context
    object; guarded calls then carry only a stub, and put the runtime into a document the first time
    they meet it there, with the phrase table of the page's language (a few tens of kB, not ~0.5 MB)."""
    return (
        "async (page) => { const c = page.context();\n"
        f"  const template = {json.dumps(guard_template())};\n"
        f"  const table = JSON.parse({json.dumps(lexicon_json())});\n"
        f"  const languageOf = {language_source()};\n"
        f"{_RUNTIME_FOR}"
        f"{box_install_lines(root)}"
        f"  c.__bcRuntimeV = {json.dumps(runtime_version())};\n"
        "  return 'installed'; }"
    )


def needs_runtime(result: CodeResult) -> bool:
    return result.ok and isinstance(result.value, dict) and RUNTIME_MISSING in result.value


def guarded_code(
    code: str,
    frames: dict[str, list[int]] | None = None,
    allow: Allow | None = None,
    *,
    preflight: bool = True,
    pacing: Pacing | None = None,
) -> str:
    """The model's `async (page) => {...}` with `el(N)`, timeouts and the guard around it; with
    `pacing` in human mode, the membrane paces its actions (browser/pacing.js)."""
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
    world = script_source("browser_copilot.safety", "world.js")
    early = json.dumps(script_source("browser_copilot.safety", "early.js"))
    return (
        "async (page) => {\n"
        f"{code_prelude(frames)}"
        f"  const __call = {script_source('browser_copilot.safety', 'call.js')};\n"
        f"  return await __call(page, {{ version: {json.dumps(runtime_version())},"
        f" source: {json.dumps(code.strip().rstrip(';'))},\n"
        f"    allow: {json.dumps(allow.to_js() if allow else None)}, preflight: {json.dumps(check)},\n"
        f"    exposed: {exposed_globals_js()},\n"
        f"    el: (n) => el(n), beforeAction: {pace},\n"
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
    )


def replay_code(held_id: str, kind: str, allow: Allow, url: str | None = None) -> str:
    """Perform a held action exactly once, with the guard letting that one event through (a held
    address, kind `navigate`, is opened once)."""
    if kind == "navigate" and url:
        once = Allow(names=[url], held=allow.held, token=allow.token)
        code = f"async (page) => {{ await page.goto({json.dumps(url)}); return 'done'; }}"
        return guarded_code(code, None, once)
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
    )
