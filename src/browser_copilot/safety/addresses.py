"""An address that acts when it is opened (a GET that commits), decided in Python exactly as the page's
classifier decides it (`policy.js`: `urlCommits`), from the same data (`lexicon.json`: `url_commits`,
`url_commit_keys`, `url_action_keys`). The network policy uses it for requests the model's page code
makes (`fetch('/orders/7/cancel')`), which no click or navigation check sees."""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from urllib.parse import unquote_to_bytes

from browser_copilot.safety.classifier import lexicon

_PARTS = re.compile(r"^(?:([a-z][a-z0-9+.-]*):)?(?://[^/?#]*)?([^?#]*)(?:\?([^#]*))?", re.IGNORECASE)
_WEB = re.compile(r"^https?$", re.IGNORECASE)
_NUMBER = re.compile(r"^[0-9]+$")
_HEX_ID = re.compile(r"^[0-9a-f]{12,}$")
_LONG_NUMBER = re.compile(r"[0-9]{4,}")
_YES = frozenset({"1", "true", "yes", "y", "on", ""})


@cache
def _tables() -> tuple[dict[str, str], frozenset[str], frozenset[str]]:
    table = lexicon()
    return (
        dict(table.get("url_commits") or {}),
        frozenset(table.get("url_commit_keys") or ()),
        frozenset(table.get("url_action_keys") or ()),
    )


def _decoded(text: str) -> str:
    """`decodeURIComponent`, keeping the text as it is when it does not decode (as the page does)."""
    if "%" not in text:
        return text
    try:
        return unquote_to_bytes(text).decode("utf-8")
    except UnicodeDecodeError:
        return text


def squash(text: str) -> str:
    """Lower-case letters and digits only, after decoding and NFKC (the classifier's `squash`)."""
    folded = unicodedata.normalize("NFKC", _decoded(text)).lower()
    return "".join(ch for ch in folded if unicodedata.category(ch)[0] in "LN")


def url_commits(url: str) -> tuple[str, str] | None:
    """(category, the word or query pair that commits) when opening `url` acts, else None."""
    commits, yes_keys, action_keys = _tables()
    parts = _PARTS.match(url or "")
    if parts is None or (parts.group(1) and not _WEB.match(parts.group(1))):
        return None
    segments = [
        word
        for word in (squash(s) for s in (parts.group(2) or "").split("/"))
        if word and not _NUMBER.match(word) and not _HEX_ID.match(word) and not _LONG_NUMBER.search(word)
    ]
    last = segments[-1] if segments else ""
    pair = "".join(segments[-2:])
    for word in (pair, last):
        if word and word in commits:
            return commits[word], word
    for item in (parts.group(3) or "").split("&"):
        if not item:
            continue
        raw_key, _, raw_value = item.partition("=")
        key = squash(raw_key.replace("+", " "))
        value = squash(raw_value.replace("+", " "))
        shown = f"{raw_key}={raw_value}"
        if key in yes_keys and value in _YES:
            return commits.get(key) or "submit", shown
        if key in action_keys and value in commits:
            return commits[value], shown
    return None


__all__ = ["squash", "url_commits"]
