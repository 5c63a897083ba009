"""The destructive-action classifier (policy.js), run in Node for `main.py policy-check` and tests.

The same JavaScript runs inside pages (the guard, pre-flight checks), so the verdict on a DOM target
is identical wherever it is made. Its words are data: `lexicon.json` (action phrases per category,
safe, negative, generic and progress phrases, warnings; per language), injected into the source.
Facts: tag, role, type, name, value, href, form_action, form_method, context, url, and the page's
signals (lang, dialog, haspopup, danger, payment, amount, review, editable, bulk, confirm);
missing keys are null."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import threading
import time
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
    names = json.dumps(secret_names(), separators=(",", ":"))
    return _script("secret.js").replace("/*SECRET_NAMES*/null", names)


@cache
def secret_names() -> dict[str, Any]:
    """What a field, column or key holding a secret is called (`secret_names.json`)."""
    text = resources.files("browser_copilot.safety").joinpath("secret_names.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


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


class _Node:
    """One Node process that classifies line by line, started at the first use and kept for the
    process's life (a process per call spent ~0.2 s compiling the phrase table each time). Calls take
    turns; a process that died is started again once."""

    TIMEOUT = 120.0

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._pending = b""
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (Node's stderr for the app's life)

    def lines(self, inputs: list[str]) -> list[str]:
        with self._lock:
            for attempt in (1, 2):
                try:
                    return self._ask(inputs)
                except (OSError, ClassifierUnavailable):
                    self.stop()
                    if attempt == 2:
                        self._stderr.seek(0)
                        said = self._stderr.read().decode(errors="replace").strip()[-400:]
                        raise ClassifierUnavailable(
                            f"the classifier failed: {said or 'it stopped'}"
                        ) from None
            raise AssertionError("unreachable")

    def _ask(self, inputs: list[str]) -> list[str]:
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(("\n".join(inputs) + "\n").encode())
        proc.stdin.flush()
        out: list[str] = []
        until = time.monotonic() + self.TIMEOUT
        while len(out) < len(inputs):
            if b"\n" in self._pending:
                line, self._pending = self._pending.split(b"\n", 1)
                out.append(line.decode())
                continue
            left = until - time.monotonic()
            if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
                raise ClassifierUnavailable("the classifier did not answer")
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            if not chunk:
                raise ClassifierUnavailable("the classifier stopped")
            self._pending += chunk
        return out

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        node = shutil.which("node")
        if node is None:
            raise ClassifierUnavailable("Node.js is not installed. Fix: install Node.js 18 or newer.")
        self._pending = b""
        self._proc = subprocess.Popen(
            [node, "-e", _RUNNER, str(_policy_file())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        return self._proc

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.close()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


_NODE = _Node()
atexit.register(_NODE.stop)


def classify_lines(lines: Iterable[str]) -> Iterator[str]:
    """Classify JSON lines of facts (one Node process for the app's life); one JSON verdict per input
    line that is not blank.

    An unreadable line gets a fail-safe verdict (`destructive: true`, category `error`)."""
    # One line in, one verdict out: Node's reader also ends a line at a lone carriage return.
    inputs = [" ".join(line.splitlines()) for line in lines if line.strip()]
    if inputs:
        yield from _NODE.lines(inputs)


def classify_many(facts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    lines = [json.dumps(normalise(f), ensure_ascii=False) for f in facts]
    return [json.loads(out) for out in classify_lines(lines)]
