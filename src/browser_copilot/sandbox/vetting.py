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


_COOKIES = "it hands over the user's login cookies for every site"
_PROFILE = "it changes the user's browser profile"
_NETWORK = "it intercepts the browser's network traffic"
_EVERY_PAGE = "it changes every page the browser loads"
_BINDING = "it lets web pages call into the browser automation"
_WHOLE_BROWSER = "it controls the whole browser, all profiles and windows"

# The code tool's side doors past the in-page guard, the URL policy and this vetting. Looked for as
# member names (`.cookies`, also `['cookies']`), so a variable called `cookies` still passes. The
# membrane (membrane.js) refuses the same names at run time, however they are reached.
_SIDE_DOORS: dict[str, str] = {
    "newCDPSession": "raw DevTools protocol access past every check",
    "newBrowserCDPSession": "raw DevTools protocol access past every check",
    "cookies": _COOKIES,
    "storageState": _COOKIES,
    "setStorageState": _PROFILE,
    "addCookies": _PROFILE,
    "clearCookies": _PROFILE,
    "grantPermissions": _PROFILE,
    "clearPermissions": _PROFILE,
    "addInitScript": _EVERY_PAGE,
    "setExtraHTTPHeaders": _EVERY_PAGE,
    "exposeBinding": _BINDING,
    "exposeFunction": _BINDING,
    "route": _NETWORK,
    "routeFromHAR": _NETWORK,
    "routeWebSocket": _NETWORK,
    "unroute": _NETWORK,
    "unrouteAll": _NETWORK,
    "browser": _WHOLE_BROWSER,
    "newContext": _WHOLE_BROWSER,
    "contexts": _WHOLE_BROWSER,
}
_MEMBER = re.compile(r"\.\s*([A-Za-z_$][\w$]*)\b")
_BRACKET = re.compile(r"""\[\s*(['"`])([A-Za-z_$][\w$]*)\1\s*\]""")
_CONTEXT_CLOSE = re.compile(r"\bcontext\s*\(\s*\)\s*\??\.\s*close\b")


def _side_doors(code: str, bare: str) -> list[str]:
    names = [m.group(1) for m in _MEMBER.finditer(bare)] + [m.group(2) for m in _BRACKET.finditer(code)]
    found = [f"`{n}` ({_SIDE_DOORS[n]})" for n in dict.fromkeys(names) if n in _SIDE_DOORS]
    if _CONTEXT_CLOSE.search(bare):
        found.append("`context().close()` (it closes the user's window and every tab in it)")
    return found


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
    found += _side_doors(code, bare)
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
