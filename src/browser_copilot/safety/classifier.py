"""The destructive-action classifier (policy.js), run in Node for `main.py policy-check` and tests.

The same JavaScript runs inside pages (the guard, pre-flight checks), so the verdict on a DOM target
is identical wherever it is made. Its words are data: `lexicon.json` (action phrases per category,
safe, negative, generic and progress phrases, warnings; per language), injected into the source.
Facts: tag, role, type, name, value, href, form_action, form_method, context, url, and the page's
signals (lang, dialog, haspopup, danger, payment, amount, review, editable, bulk, confirm);
missing keys are null."""

from __future__ import annotations

import atexit
import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from browser_copilot.errors import CopilotError
from browser_copilot.scripts import script_source

FACT_KEYS = ("tag", "role", "type", "name", "value", "form_action", "form_method", "context", "url")
SIGNAL_KEYS = (
    "lang",
    "href",
    "dialog",
    "haspopup",
    "danger",
    "payment",
    "amount",
    "review",
    "editable",
    "bulk",
    "confirm",
    "disclosure",
    "in_nav",
    "heading",
    "step",
    "icon",
    "message",
    "consent",
    "fields",
    "text",
)
VERDICT_KEYS = ("destructive", "category", "reason")
"""The stable `policy-check` output; the classifier also says whether a judge should look (`judge`)."""

_RUNNER = """
const vm = require('node:vm');
const readline = require('node:readline');
const classify = vm.runInNewContext(require('node:fs').readFileSync(process.argv[1], 'utf8'));
const rl = readline.createInterface({ input: process.stdin, terminal: false });
rl.on('line', (line) => {
  if (!line.trim()) return;
  let out;
  try {
    const facts = JSON.parse(line);
    out = classify(facts && typeof facts === 'object' ? facts : {});
  } catch (e) {
    out = { destructive: true, category: 'error', reason: 'unreadable input: ' + e.message };
  }
  process.stdout.write(JSON.stringify(out) + '\\n');
});
"""


class ClassifierUnavailable(CopilotError):
    """Node.js is needed to run the classifier outside a page."""


@cache
def lexicon() -> dict[str, Any]:
    """The action-phrase table (`lexicon.json`)."""
    text = resources.files("browser_copilot.safety").joinpath("lexicon.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


@cache
def lexicon_json() -> str:
    """The phrase table as compact JSON, as it is put into the classifier's source."""
    return json.dumps(lexicon(), ensure_ascii=False, separators=(",", ":"))


def _script(name: str) -> str:
    return script_source("browser_copilot.safety", name)


@cache
def secret_source() -> str:
    """`(el) => boolean`: is this field a secret (secret.js), for the extractor and the guard."""
    return _script("secret.js")


@cache
def language_source() -> str:
    """`(table, lang) => language | null` (language.js): the table language of a page's `<html lang>`."""
    return _script("language.js")


@cache
def policy_template() -> str:
    """policy.js with its `__LEXICON__` placeholder (the guard runtime fills in the page's languages)."""
    return _script("policy.js").replace("__LANGUAGE_OF__", language_source())


@cache
def policy_source() -> str:
    return policy_template().replace("__LEXICON__", lexicon_json())


def normalise(facts: dict[str, Any]) -> dict[str, Any]:
    return {key: facts.get(key) for key in (*FACT_KEYS, *SIGNAL_KEYS)}


@cache
def _policy_file() -> Path:
    """The classifier's source in a file (with its phrase table it is too long for a command line)."""
    folder = Path(tempfile.mkdtemp(prefix="browser-copilot-policy-"))
    path = folder / "policy.js"
    path.write_text(policy_source(), "utf-8")
    atexit.register(shutil.rmtree, folder, True)
    return path


def classify_lines(lines: Iterable[str]) -> Iterator[str]:
    """Classify JSON lines of facts with one Node process; yields one JSON verdict per input line.

    An unreadable line gets a fail-safe verdict (`destructive: true`, category `error`)."""
    node = shutil.which("node")
    if node is None:
        raise ClassifierUnavailable("Node.js is not installed. Fix: install Node.js 18 or newer.")
    inputs = [line for line in lines if line.strip()]
    done = subprocess.run(
        [node, "-e", _RUNNER, str(_policy_file())],
        input="\n".join(inputs) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise ClassifierUnavailable(f"the classifier failed: {done.stderr.strip()[-400:]}")
    yield from done.stdout.splitlines()


def classify_many(facts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    lines = [json.dumps(normalise(f), ensure_ascii=False) for f in facts]
    return [json.loads(out) for out in classify_lines(lines)]
