"""Reading what happened: error kinds (F27), loops (F26) and the tool result text the model reads."""

from __future__ import annotations

import json
import re

from browser_copilot.agent.state import ActionRecord, ErrorKind
from browser_copilot.browser.observation import UNTRUSTED_CLOSE, UNTRUSTED_OPEN, as_untrusted
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
_COVERED = re.compile(r"<([a-z][\w-]{0,30})([^>]{0,300})>.{0,200}?intercepts pointer events", re.IGNORECASE)
_ATTRIBUTE = re.compile(r"\b(id|role)=\"?([\w-]{1,30})", re.IGNORECASE)
_DIALOG = re.compile(r"does not handle the modal state|dialog", re.IGNORECASE)


def classify_error(error: str | None) -> ErrorKind:
    if not error:
        return "none"
    if _COVERED.search(error):  # first: the call log names what covers it (maybe a role=dialog)
        return "covered"
    if _DIALOG.search(error):
        return "dialog"
    if _STALE.search(error):
        return "stale"
    if _NAVIGATION.search(error):
        return "navigation"
    if _TIMEOUT.search(error):
        return "timeout"
    return "other"


CORRECTABLE: set[ErrorKind] = {"stale", "covered", "timeout", "navigation"}


def covering(error: str | None) -> str:
    """What covered the element, from Playwright's call log ("<div id=\"consent\">… intercepts pointer
    events"): its tag, id and role, one word each (no page text beyond them); '' when the log does not
    say."""
    found = _COVERED.search(error or "")
    if found is None:
        return ""
    attributes = [f"{k.lower()}={v}" for k, v in _ATTRIBUTE.findall(found.group(2))][:2]
    return " ".join([found.group(1).lower(), *attributes])


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


ERROR_LINES = 6
"""Lines of an error shown to the model: the message and the start of Playwright's call log."""
_RETURN_LESS = "; return less, or a part of it"


def _clip(text: str, limit: int, *, lines: int | None = None) -> tuple[str, str]:
    """`text` within `lines` lines and `limit` characters, cut at a word; and the note of what the cut
    left out, e.g. 'cut: 37 more lines, 2,140 more characters' ('' when nothing was)."""
    text = text.strip()
    kept = text
    if lines is not None and kept.count("\n") >= lines:
        kept = "\n".join(kept.split("\n")[:lines]).rstrip()
    if len(kept) > limit:
        cut = kept[:limit]
        space = max(cut.rfind(" ", int(limit * 0.8)), cut.rfind("\n", int(limit * 0.8)))
        kept = (cut[:space] if space > 0 else cut).rstrip()
    if kept == text:
        return text, ""
    rest = text[len(kept) :]
    more_lines = rest.count("\n")
    parts = [f"{more_lines:,} more line{'s' if more_lines != 1 else ''}"] if more_lines else []
    parts.append(f"{len(rest):,} more characters")
    return kept, f"cut: {', '.join(parts)}"


def _short(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a word; a cut says so and how much is left (never silent)."""
    kept, note = _clip(text, limit)
    return f"{kept}… [{note}{_RETURN_LESS}]" if note else kept


def cut(text: str, limit: int = 4000) -> str:
    """`text` within the tool-result budget; a cut says how much is left (other tools' results)."""
    return _short(text, limit)


def _as_data(text: str, limit: int, *, lines: int | None = None, hint: str = "") -> str:
    """Page-derived text as untrusted data (the observation's delimiters), masked and within budget;
    a cut ends the data with '…' and the app's note of what it left out follows, outside."""
    kept, note = _clip(mask_for_model(text), limit, lines=lines)
    if not note:
        return as_untrusted(kept)
    return f"{as_untrusted(kept + '…')}\n[{note}{hint}]"


def result_text(result: CodeResult, *, limit: int = 4000) -> str:
    """The tool message for a code call: the returned value or the error, compactly.

    Both can carry the page's words (an `innerText()`, an error quoting an element), so they reach the
    model delimited as untrusted data, like the observation; a number, true, false or null cannot and
    stays plain. The app's own words (the "Returned:" / "Error:" label, the cut mark) stay outside."""
    if not result.ok:
        return "Error:\n" + _as_data(
            result.error or "the code failed without a message", limit, lines=ERROR_LINES
        )
    if not result.returned:
        return "Done (the code returned nothing)."
    value = result.value
    if value is None or isinstance(value, bool | int | float):
        return f"Returned: {json.dumps(value)}"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if not text.strip():
        return "Returned: an empty string."
    return "Returned:\n" + _as_data(text, limit, hint=_RETURN_LESS)


def step_summary(text: str, limit: int = 300) -> str:
    """A tool result as one line for the step lists (terminal, web page): the untrusted-data delimiters
    left out (they are for the model), spaces folded, and a cut marked."""
    flat = " ".join(text.replace(UNTRUSTED_OPEN, " ").replace(UNTRUSTED_CLOSE, " ").split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
