"""Reading what happened: error kinds (F27), loops (F26) and the tool result text the model reads."""

from __future__ import annotations

import json
import re

from browser_copilot.agent.state import ActionRecord, ErrorKind
from browser_copilot.browser.results import CodeResult
from browser_copilot.safety.redaction import mask_for_model

_STALE = re.compile(
    r"not attached to the DOM|element is detached|detached from (the )?DOM|stale|"
    r"waiting for locator\('\[data-bc-id|resolved to 0 elements|Node is detached",
    re.IGNORECASE,
)
_NAVIGATION = re.compile(
    r"Execution context was destroyed|navigation|frame was detached|Frame has been detached|"
    r"net::ERR_ABORTED|interrupted by another navigation",
    re.IGNORECASE,
)
_TIMEOUT = re.compile(r"Timeout \d+ms exceeded|TimeoutError|timed out", re.IGNORECASE)
_DIALOG = re.compile(r"does not handle the modal state|dialog", re.IGNORECASE)


def classify_error(error: str | None) -> ErrorKind:
    if not error:
        return "none"
    if _DIALOG.search(error):
        return "dialog"
    if _STALE.search(error):
        return "stale"
    if _NAVIGATION.search(error):
        return "navigation"
    if _TIMEOUT.search(error):
        return "timeout"
    return "other"


CORRECTABLE: set[ErrorKind] = {"stale", "timeout", "navigation"}


def detect_loop(actions: list[ActionRecord], repeats: int) -> ActionRecord | None:
    """The repeated action when the last `repeats` are the same tool on the same target, all failed."""
    if len(actions) < repeats:
        return None
    last = actions[-repeats:]
    first = last[0]
    same = all(a["tool"] == first["tool"] and a["target"] == first["target"] for a in last)
    if same and not any(a["ok"] for a in last):
        return first
    return None


def _short(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a word; a cut says so and how much is left (never silent)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ", int(limit * 0.8))
    if space > 0:
        cut = cut[:space]
    left = len(text) - len(cut)
    return f"{cut}… [cut: {left:,} more characters; return less, or a part of it]"


def cut(text: str, limit: int = 4000) -> str:
    """`text` within the tool-result budget; a cut says how much is left (other tools' results)."""
    return _short(text, limit)


def result_text(result: CodeResult, *, limit: int = 4000) -> str:
    """The tool message for a code call: the returned value or the error, compactly."""
    if not result.ok:
        lines = (result.error or "").splitlines()
        return "Error: " + _short(mask_for_model("\n".join(lines[:6])), limit)
    if not result.returned:
        return "Done (the code returned nothing)."
    value = result.value
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return "Returned: " + _short(mask_for_model(text), limit)
