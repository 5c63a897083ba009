"""The destructive-action classifier (policy.js), run in Node for `main.py policy-check` and tests.

The same JavaScript runs inside pages (the guard, pre-flight checks), so the verdict on a DOM target
is identical wherever it is made. Facts: tag, role, type, name, value, form_action, form_method,
context, url (missing keys are null)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from functools import cache
from importlib import resources
from typing import Any

from browser_copilot.errors import CopilotError

FACT_KEYS = ("tag", "role", "type", "name", "value", "form_action", "form_method", "context", "url")

_RUNNER = """
const vm = require('node:vm');
const readline = require('node:readline');
const classify = vm.runInNewContext(process.argv[1]);
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
def policy_source() -> str:
    source = resources.files("browser_copilot.safety").joinpath("policy.js").read_text("utf-8")
    return "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("//")).strip()


def normalise(facts: dict[str, Any]) -> dict[str, Any]:
    return {key: facts.get(key) for key in FACT_KEYS}


def classify_lines(lines: Iterable[str]) -> Iterator[str]:
    """Classify JSON lines of facts with one Node process; yields one JSON verdict per input line.

    An unreadable line gets a fail-safe verdict (`destructive: true`, category `error`)."""
    node = shutil.which("node")
    if node is None:
        raise ClassifierUnavailable("Node.js is not installed. Fix: install Node.js 18 or newer.")
    inputs = [line for line in lines if line.strip()]
    done = subprocess.run(
        [node, "-e", _RUNNER, policy_source()],
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
