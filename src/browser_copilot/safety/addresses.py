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
    """`decodeURIComponent` until nothing more decodes (a server or a proxy in front of it may decode
    twice: `cancel%252Ejson`), keeping the text as it is where it does not decode (as the page does)."""
    for _ in range(3):
        if "%" not in text:
            break
        try:
            text = unquote_to_bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            break
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
_GRAPHQL_TOKEN = re.compile(r'"""[\s\S]*?"""|"(?:\\.|[^"\\])*"|#[^\n]*|\.\.\.|[{}():]|[_A-Za-z]\w*|[^\s,]')
_PART = re.compile(
    r'(?i)content-disposition:\s*form-data;\s*name="([^"]{1,100})"[^\r\n]*\r?\n(?:[^\r\n]+\r?\n)*\r?\n'
)
"""The head of a part of a multipart form: its name (its value runs to the next boundary)."""
_XML_METHOD = re.compile(r"<(?:\w+:)?methodName>\s*([^<\s]{1,100})\s*<", re.IGNORECASE)
_XML_BODY = re.compile(r"<(?:\w+:)?Body\b[^>]*>\s*<(?:\w+:)?([\w.-]{1,100})", re.IGNORECASE)
_XML_ROOT = re.compile(r"^\s*(?:<\?xml[^>]*\?>\s*)?(?:<!--[\s\S]*?-->\s*)*<(?:\w+:)?([\w.-]{1,100})")
_TYPE_ACTION = re.compile(r'(?i);\s*action="?([^";]{1,200})')
_BRACKETS = re.compile(r"\[([^\]]*)\]")


def _mutation_fields(query: str) -> list[str]:
    """A GraphQL document's mutations: each one's name and every field of its selection, with or without
    arguments or a selection of their own (aliases, fragments' spreads, strings and comments skipped)."""
    found: list[str] = []
    for match in _MUTATION.finditer(query):
        found += [match.group(1)] if match.group(1) else []
        depth, parens, skip_name = 1, 0, False
        tokens = _GRAPHQL_TOKEN.findall(query, match.end())
        for i, token in enumerate(tokens):
            if token == "{":
                depth += 1
            elif token == "}":
                depth -= 1
                if depth == 0:
                    break
            elif token == "(":
                parens += 1
            elif token == ")":
                parens -= 1
            elif token == "...":
                skip_name = True
            elif depth == 1 and parens == 0 and (token[0].isalpha() or token[0] == "_"):
                if skip_name or token == "on":
                    skip_name = token == "on"
                    continue
                if i + 1 < len(tokens) and tokens[i + 1] == ":":
                    continue  # an alias: the field follows
                found.append(token)
    return found


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
    """The action names a request body carries, however it is written: the values of its action keys
    at any depth (a form, its nested keys `order[action]`, JSON, the parts of a multipart body, a JSON
    part such as an upload's `operations`), a state it sets (`status=cancelled`), a GraphQL mutation's
    name and fields (in JSON or as `application/graphql`), an XML-RPC `methodName`, a SOAP call's
    operation (its body's first element, or its action in the header or the type)."""
    named = _TYPE_ACTION.search(content_type)
    found: list[str] = [re.split(r"[/:#]", named.group(1))[-1]] if named else []  # a URI: its last part
    _read_piece(body[:20_000].lstrip("\ufeff"), content_type, found, 0)
    return found


def _read_piece(text: str, content_type: str, found: list[str], depth: int) -> None:
    stripped = text.lstrip()
    if depth > 3 or not stripped:
        return
    if "graphql" in content_type or stripped.startswith(("mutation", "fragment", "#")):
        found += _mutation_fields(text)
        return
    if "json" in content_type or stripped.startswith(("{", "[")):
        try:
            _read_json(json.loads(stripped), found, depth)
            return
        except ValueError:
            pass
    if stripped.startswith("<"):
        found += [m.group(1) for m in (_XML_METHOD.search(text), _XML_BODY.search(text)) if m]
        root = _XML_ROOT.match(text)
        if root and root.group(1).lower() not in ("envelope", "methodcall", "html"):
            found.append(root.group(1))
        return
    parts = list(_PART.finditer(text))
    if parts:
        for i, head in enumerate(parts[:50]):
            end = parts[i + 1].start() if i + 1 < len(parts) else len(text)
            value = re.sub(r"\r?\n--[^\r\n]*\s*$", "", text[head.end() : end])
            _read_pair(head.group(1), value, found, depth)
        return
    if "=" in text:
        for key, value in parse_qsl(text, keep_blank_values=True)[:200]:
            _read_pair(key, value, found, depth)


def _read_pair(key: str, value: object, found: list[str], depth: int) -> None:
    """One key and its value: an action key's value, a state key's committing state, a key of nested
    form names (`order[action]`: `action`), a value that is itself JSON or GraphQL."""
    _, _, _, keys, _ = _request_tables()
    names = [squash(n) for n in [key, *_BRACKETS.findall(key)] if squash(n)]
    if isinstance(value, str):
        if any(n in keys for n in names):
            found.append(value)
        elif any(n in _STATE_KEYS for n in names) and squash(value) in _states():
            found.append(_states()[squash(value)])
        elif squash(key) == "query":
            _read_piece(value, "graphql", found, depth + 1)
        elif value.lstrip().startswith(("{", "[", "mutation")) or squash(key) == "operations":
            _read_piece(value, "", found, depth + 1)
    elif isinstance(value, (dict, list)):
        _read_json(value, found, depth + 1)


def _read_json(data: object, found: list[str], depth: int) -> None:
    if depth > 6:
        return
    if isinstance(data, list):
        for item in data[:50]:
            _read_json(item, found, depth + 1)
    elif isinstance(data, dict):
        for key, value in list(data.items())[:200]:
            _read_pair(str(key), value, found, depth)


_STATE_KEYS = frozenset({"status", "state"})


@cache
def _states() -> dict[str, str]:
    """A state a write sets that commits (`cancelled`, `deleted`, `published`): the verb it is of."""
    return {squash(k): v for k, v in (lexicon().get("request_states") or {}).items()}


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
