"""The guard's runtime in the MCP server (F41): what one install call leaves there, and the one-time
permission a `/yes` gives (`Allow`).

The install call leaves, on the browser context object, the box the model's code runs in (box.py,
facade.js) and the guard runtime: guard.js with the facts it reads (safety/facts.js), the classifier
(safety/policy.js) and the phrase table, built per page language when a document first meets it. The
guard lives in an isolated world of each page (world.js); call.js is the app's side of one code call.
`browser.guarded` builds the calls.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from browser_copilot.safety.classifier import (
    language_source,
    lexicon,
    lexicon_json,
    policy_template,
    secret_source,
)
from browser_copilot.sandbox.box import box_install_lines, facade_source
from browser_copilot.scripts import script_source


@cache
def guard_template() -> str:
    """guard.js with what an input activates (controls.js), the facts, the classifier, the secret-field
    test and the consent-banner chooser in it, and `__LEXICON__` left for the phrase table."""
    body = script_source("browser_copilot.sandbox", "guard.js")
    return (
        body.replace("__CONTROLS__", script_source("browser_copilot.sandbox", "controls.js").strip())
        .replace("__FACTS__", script_source("browser_copilot.safety", "facts.js").strip())
        .replace("__BANNER__", script_source("browser_copilot.sandbox", "banner.js").strip())
        .replace("__COOKIE_WORDS__", cookie_words())
        .replace("__POLICY__", policy_template())
        .replace("__SECRETS__", script_source("browser_copilot.sandbox", "guard_secrets.js").strip())
        .replace("__IS_SECRET__", secret_source())
        .replace("__TOGGLE_STATES__", json.dumps(lexicon().get("toggle_states") or {}, ensure_ascii=False))
    )


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


RUNTIME_MISSING = "__bcNeedsRuntime"  # call.js returns it
"""What guarded code returns, before running anything, when the MCP server lacks the guard runtime."""


@cache
def cookie_words() -> str:
    """The lexicon's words for cookies in many languages (`cookie_words`), as JSON: one sign of a consent
    banner (`banner.js`)."""
    return json.dumps([str(w) for w in lexicon().get("cookie_words", [])], ensure_ascii=False)


@cache
def runtime_version() -> str:
    """Changes with what the install call leaves (the pinned `ses` changes only with a new server)."""
    parts = (guard_template(), lexicon_json(), facade_source())
    # world.js, call.js, preflight.js and reach.js travel with each call: a change there needs no new install.
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


ACTED = "__bcActed"  # call.js wraps what guarded code returns in it
"""A guarded call's answer: `{ACTED: when its last action came back (epoch ms, or null), "value": ...}`."""


def needs_runtime(value: Any) -> bool:
    """A code call's value that says the MCP server lacks the runtime (a new or restarted server)."""
    return isinstance(value, dict) and RUNTIME_MISSING in value
