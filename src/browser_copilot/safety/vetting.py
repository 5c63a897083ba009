"""Static vetting of the model's code before it reaches the MCP server (F45).

The code tool runs in Node and is RCE-equivalent. These checks refuse the obvious ways out; the
server also runs under Node's permission model, because static checks can be dodged."""

from __future__ import annotations

import re

_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\brequire\s*\("), "require() loads Node modules"),
    (re.compile(r"\bprocess\b"), "`process` is Node's process object"),
    (re.compile(r"\bimport\s*\("), "dynamic import() loads modules"),
    (re.compile(r"\bimport\s+[\w{*]"), "import statements load modules"),
    (re.compile(r"child_process|\bexecSync\b|\bspawn(Sync)?\s*\("), "child processes"),
    (re.compile(r"\bfs\b|node:fs|readFileSync|writeFileSync"), "the file system"),
    (re.compile(r"\bFunction\s*\(|new\s+Function\b"), "the Function constructor"),
    (re.compile(r"(?<![\w.])eval\s*\("), "eval()"),
    (
        re.compile(r"constructor\s*[.\[]\s*['\"`]?\s*constructor|\[\s*['\"`]constructor['\"`]\s*\]"),
        "constructor.constructor reaches Function",
    ),
    (re.compile(r"getBuiltinModule|globalThis\s*\.\s*process|\bmodule\s*\.\s*constructor"), "Node internals"),
    (re.compile(r"\[\s*\"\"\s*\+|\+\s*\"\"\s*\]"), "property names glued together from strings"),
    (
        re.compile(
            r"\b(setDefaultTimeout|setExtraHTTPHeaders|route|unroute|exposeFunction|exposeBinding|addInitScript)\s*\("
        ),
        "changing how the browser itself works",
    ),
    (
        re.compile(r"\bcontext\(\)\s*\.\s*(close|clearCookies|addCookies|setOffline|grantPermissions)\s*\("),
        "changing the user's browser profile",
    ),
    (re.compile(r"\bbrowser\(\)\s*\.\s*close\s*\("), "closing the user's browser"),
]


_URLS = re.compile(
    r"""['"`]\s*(file|chrome|chrome-extension|javascript|devtools|view-source|edge)\s*:""", re.IGNORECASE
)
_STRING = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"|`(?:[^`\\]|\\.)*`")


def vet_code(code: str) -> str | None:
    """None when the code may run; otherwise what it uses that is refused.

    Identifiers are looked for outside string literals (typing "process improvement" is fine); URL
    schemes are looked for inside them."""
    bare = _STRING.sub('""', code)
    found = [why for pattern, why in _RULES if pattern.search(bare)]
    if re.search(r"constructor", code) and "constructor.constructor reaches Function" not in found:
        found.append("constructor.constructor reaches Function")
    if _URLS.search(code):
        found.append("file:, chrome:, javascript: and similar URLs")
    if not found:
        return None
    return (
        "Refused before running: the code uses "
        + "; ".join(dict.fromkeys(found))
        + ". Browser code may only "
        "use the Playwright `page` API (and `el(N)`); rewrite it without those."
    )
