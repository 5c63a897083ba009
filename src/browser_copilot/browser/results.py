"""Parsing the code tool's markdown answer into a typed `CodeResult`.

The answer of `browser_run_code(_unsafe)` is one text block of markdown sections:
`### Result` (one line of JSON; absent when the code returned `undefined`), `### Ran Playwright code`,
and `### Page` / `### Open tabs` only when they changed. Errors are `### Error` with ANSI escapes in
locator and navigation messages.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from browser_copilot.safety.redaction import mask_for_model

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_SECTION = re.compile(r"^### (.+)$", re.MULTILINE)
_TAB = re.compile(r"^- (\d+):\s*(\(current\)\s*)?\[(.*)\]\((.*)\)\s*$")
_PAGE_FIELD = re.compile(r"^- Page (URL|Title):\s?(.*)$")


class _Undefined:
    """The code returned `undefined` (no `### Result` section)."""

    _instance: _Undefined | None = None

    def __new__(cls) -> _Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDEFINED"

    def __bool__(self) -> bool:
        return False


UNDEFINED: Any = _Undefined()


@dataclass(frozen=True, slots=True)
class Tab:
    index: int
    title: str
    url: str
    current: bool


@dataclass(frozen=True, slots=True)
class CodeResult:
    """One call of the code tool, parsed."""

    ok: bool
    value: Any = UNDEFINED
    """The JSON value the code returned, or `UNDEFINED`."""
    error: str | None = None
    """The error text without ANSI escapes (when `ok` is false)."""
    page_url: str | None = None
    page_title: str | None = None
    """Set when the answer had a `### Page` section, i.e. the page changed."""
    tabs: list[Tab] | None = None
    """Set when the answer had a `### Open tabs` section, i.e. the tabs changed."""
    sections: dict[str, str] = field(default_factory=dict)
    images: tuple[str, ...] = ()
    """Screenshots the code took (base64 JPEG, secret fields masked)."""
    notes: dict[str, Any] = field(default_factory=dict)
    """What the app's own part of the call did: `banner` (a consent banner's choice it clicked),
    `bannerHeld` (the choice it left alone, because the guard would hold it)."""

    @property
    def returned(self) -> bool:
        return self.value is not UNDEFINED


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def split_sections(text: str) -> dict[str, str]:
    """`### Name` headed sections of the answer, by name, bodies stripped."""
    matches = list(_SECTION.finditer(text))
    sections: dict[str, str] = {}
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        sections[match.group(1).strip()] = text[match.end() : end].strip("\n").rstrip()
    return sections


def _parse_tabs(body: str) -> list[Tab]:
    tabs: list[Tab] = []
    for line in body.splitlines():
        match = _TAB.match(line.strip())
        if match:
            index, current, title, url = match.groups()
            tabs.append(Tab(int(index), mask_for_model(title), mask_for_model(url), current is not None))
    return tabs


def _parse_value(body: str) -> Any:
    text = body.strip()
    try:
        return json.loads(text)
    except ValueError:
        return text  # not JSON (e.g. a truncated answer): keep the text rather than lose it


def parse_code_result(text: str, *, is_error: bool) -> CodeResult:
    """Turn the tool's text into a `CodeResult`. `is_error` is MCP's `isError` flag."""
    clean = strip_ansi(text)
    sections = split_sections(clean)
    page_url = page_title = None
    if "Page" in sections:
        for line in sections["Page"].splitlines():
            match = _PAGE_FIELD.match(line.strip())
            # An address or title can carry a secret (an OAuth fragment's token, a card the page put in
            # the query): the model reads them masked, as it reads page text (F47).
            if match and match.group(1) == "URL":
                page_url = mask_for_model(match.group(2))
            elif match:
                page_title = mask_for_model(match.group(2))
    tabs = _parse_tabs(sections["Open tabs"]) if "Open tabs" in sections else None
    if is_error or "Error" in sections:
        error = sections.get("Error") or clean.strip() or "the code tool failed without a message"
        return CodeResult(
            ok=False,
            error=error.strip(),
            page_url=page_url,
            page_title=page_title,
            tabs=tabs,
            sections=sections,
        )
    value = _parse_value(sections["Result"]) if "Result" in sections else UNDEFINED
    return CodeResult(
        ok=True,
        value=value,
        page_url=page_url,
        page_title=page_title,
        tabs=tabs,
        sections=sections,
    )


_BROWSER_GONE = (
    "ECONNREFUSED",
    "Target page, context or browser has been closed",
    "Browser has been closed",
    "browser has disconnected",
    "Target closed",
    "WebSocket error",
    "socket hang up",
    "connectOverCDP",
)


def browser_gone(error: str | None) -> bool:
    """The error says the browser (or its connection) has gone."""
    return error is not None and any(marker in error for marker in _BROWSER_GONE)
