"""What a request commits, read from the request itself (F46): an address that acts when it is opened (a
GET that commits, decided exactly as the page's classifier decides it, `policy.js` `urlCommits`, from the
same data: `lexicon.json` `url_commits`, `url_commit_keys`, `url_action_keys`), and for a request that
writes, the resource it creates or the action it names (`request_commits`: `request_verbs`,
`request_nouns`, `request_creates`, `request_action_keys`). The network policy's effect gate uses it:
an action the guard let go as ordinary may not send a request that commits (sandbox/effects.py)."""

from __future__ import annotations

import json
import re
import unicodedata
from functools import cache
from urllib.parse import parse_qsl, unquote_to_bytes

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


@cache
def _formats() -> frozenset[str]:
    return frozenset(lexicon().get("url_formats") or ())


def segment(text: str) -> str:
    """A path segment as the server routes it: without its matrix parameters (`cancel;v=2`,
    `orders;jsessionid=…`) and its format suffix (`orders.json`: `url_formats`), as policy.js's."""
    base = _decoded(text).split(";", 1)[0]
    stem, dot, ext = base.rpartition(".")
    return stem if dot and stem and ext.lower() in _formats() else base


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
        for word in (squash(segment(s)) for s in (parts.group(2) or "").split("/"))
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


_READS = frozenset({"GET", "HEAD", "OPTIONS"})
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+|[^\W\d_]+", re.UNICODE)
_MUTATION = re.compile(r"\bmutation\b\s*(\w+)?[^{]*\{", re.IGNORECASE)
_FIELD = re.compile(r"(?:\w+\s*:\s*)?(\w+)\s*[({]")
"""A GraphQL selection's field (its alias skipped): `cancelOrder(`, `result: cancelOrder {`."""
_PART = re.compile(
    r'(?i)content-disposition:\s*form-data;\s*name="([^"]{1,100})"\r?\n(?:[^\r\n]+\r?\n)*\r?\n([^\r\n]{0,200})'
)
"""A part of a multipart form: its name and the first line of its value."""


_Tables = tuple[dict[str, str], dict[str, str], frozenset[str], frozenset[str], frozenset[str]]


@cache
def _request_tables() -> _Tables:
    table = lexicon()
    return (
        dict(table.get("request_verbs") or {}),
        dict(table.get("request_nouns") or {}),
        frozenset(table.get("request_creates") or ()),
        frozenset(table.get("request_action_keys") or ()),
        frozenset(table.get("request_exempt") or ()),
    )


def _words(text: str) -> list[str]:
    """`placeOrder`, `place_order`, `chat.postMessage` -> their words, lower case (a dotted name: its last
    part)."""
    last = text.rsplit(".", 1)[-1]
    return [squash(w) for w in _WORD.findall(unicodedata.normalize("NFKC", _decoded(last))) if squash(w)]


def _phrase(text: str, *, alone_noun: bool) -> str | None:
    """The category an action's name commits: a committing address word (`placeorder`), a creating verb
    and what it creates (`createOrder`, `post_message`), a committing verb (`deleteAccount`, `send`); a
    resource's name alone (`orders`) when `alone_noun` (a path written to). Not what only sends a login
    code or saves a draft (`request_exempt`)."""
    verbs, nouns, creates, _, exempt = _request_tables()
    commits, _, _ = _tables()
    words = [w for w in _words(text) if not _NUMBER.match(w) and not _HEX_ID.match(w)]
    if not words or any(w in exempt for w in words):
        return None
    joined = "".join(words)
    if joined in commits:
        return commits[joined]
    first, last = words[0], words[-1]
    if len(words) > 1 and first in creates and last in nouns:
        return nouns[last]
    if first in verbs:
        return verbs[first]
    if len(words) == 1 and alone_noun and first in nouns:
        return nouns[first]
    return None


def _body_actions(body: str, content_type: str) -> list[str]:
    """The action names a request body carries: the values of its action keys (a form or JSON), a
    GraphQL mutation's name and first field."""
    _, _, _, keys, _ = _request_tables()
    found: list[str] = []
    text = body[:20_000]
    pairs: list[tuple[str, object]] = []
    if "json" in content_type or text.lstrip().startswith(("{", "[")):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        items = data if isinstance(data, list) else [data]
        for item in items[:20]:
            if isinstance(item, dict):
                pairs += list(item.items())
                query = item.get("query")
                if isinstance(query, str):
                    for match in _MUTATION.finditer(query):
                        found += [match.group(1)] if match.group(1) else []
                        found += _FIELD.findall(query, match.end())
    elif "multipart/form-data" in content_type or _PART.search(text):
        pairs += [(m.group(1), m.group(2)) for m in _PART.finditer(text)]
    elif "=" in text:
        pairs += parse_qsl(text, keep_blank_values=True)
    for key, value in pairs:
        if squash(str(key)) in keys and isinstance(value, str):
            found.append(value)
    return found


def request_commits(method: str, url: str, body: str = "", content_type: str = "") -> tuple[str, str] | None:
    """(category, what says so) when this request commits something, else None: a DELETE; an address
    that acts (`url_commits`); for a request that writes, the last part of its path as a committing verb
    or the resource it creates (`POST /orders`, `POST /messages/send`), or an action its body names."""
    verb = method.upper()
    if verb == "DELETE":
        return "delete", "DELETE"
    found = url_commits(url)
    if found is not None:
        return found
    if verb in _READS:
        return None
    parts = _PARTS.match(url or "")
    segments = [segment(s) for s in (parts.group(2) or "").split("/") if segment(s)] if parts else []
    if segments:
        category = _phrase(segments[-1], alone_noun=verb in ("POST", "PUT"))
        if category is not None:
            return category, f"{verb} /{segments[-1]}"
    for action in _body_actions(body or "", content_type.lower()):
        category = _phrase(action, alone_noun=False)
        if category is not None:
            return category, action[:60]
    return None


def together(allowed: str | None, category: str) -> bool:
    """Whether a request that commits `category` is part of the action a card of category `allowed` showed:
    the same category, or one family of the lexicon's `together` (a checkout's payment and its order).
    An unknown `allowed` (a card that named no category) covers what it sets off, as before."""
    table = lexicon()
    if allowed is None or allowed == category or allowed not in table.get("categories", []):
        return True
    return any(allowed in family and category in family for family in table.get("together", []))


__all__ = ["request_commits", "squash", "together", "url_commits"]
