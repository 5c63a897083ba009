"""Secrets found by what they ARE, whatever words are around them: the shapes `redaction` masks in every
sink, in the chat and in what the model reads of pages.

- provider keys in their published formats, and secrets after the word that names them in a configuration
  or connection string (`password=…`, `aws_secret_access_key = …`): data, `secret_formats.json`;
- private-key blocks (`-----BEGIN … PRIVATE KEY-----` to its END line, or to the end of the text);
- the password of a URL's user part (`postgres://u:p@host/db`; a URL with a user and no password is kept);
- card numbers (Luhn) written in groups with any separator: spaces, dashes, dots, a line break, table
  cells (tabs, `|`); a card with separators other than spaces or dashes must also start like a card
  (its issuer digits) and stand apart from other groups of digits (not one row of a table of numbers);
- IBANs (mod 97), JWTs.

Every finder returns `Secret` spans; `redaction` decides what replaces them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

SecretKind = Literal[
    "password", "one-time code", "card number", "CVV", "IBAN", "API key or token", "private key"
]


@dataclass(frozen=True, slots=True)
class Secret:
    kind: SecretKind
    start: int
    end: int


def luhn_ok(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def iban_ok(text: str) -> bool:
    compact = re.sub(r"\s", "", text)
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
JWT = re.compile(r"\beyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}\b")
IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b")
CARD = re.compile(r"\b(?:\d[ -]?){12,18}\d\b")
"""A card number in one piece or in groups split by spaces or dashes (Luhn decides)."""
_PLAIN_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")


def looks_secret(value: str) -> bool:
    """Whether a bare value looks like a password, PIN or code: 4+ characters with a digit or a symbol
    ("Tr0ub4dor-77", "482977"), not a word ("sunshine", "e-mail"), an e-mail address or a web address."""
    if len(value) < 4 or EMAIL.fullmatch(value) or re.match(r"(?i)(?:https?://|www\.)", value):
        return False
    if value.isdigit():
        return len(value) <= 12  # longer: a card or an account number, which have checks of their own
    if re.fullmatch(r"[\d.,:/-]+", value):
        return False  # a date, a time, a price, a version: "2025-06-01", "10:30", "1,299.00"
    return not _PLAIN_WORD.fullmatch(value) and bool(re.search(r"[^\W_]", value))


@cache
def _formats() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("secret_formats.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _found(haystack: str, anchor: str) -> Iterator[int]:
    """Every place `anchor` occurs (`str.find` is many times faster than a regular expression tried at
    every position, and `mask_for_model` runs on every observation)."""
    at = haystack.find(anchor)
    while at >= 0:
        yield at
        at = haystack.find(anchor, at + 1)


@cache
def _key_anchors() -> tuple[str, ...]:
    anchors = {a for k in _formats()["keys"] for a in k["anchors"]}
    return tuple(a for a in anchors if not any(b != a and a.startswith(b) for b in anchors))  # "sk-ant-"


@cache
def _key_pattern() -> re.Pattern[str]:
    """Every provider's key format, each its own group (`k3`), as a whole token."""
    keys = _formats()["keys"]
    parts = "|".join(f"(?P<k{i}>{k['pattern']})" for i, k in enumerate(keys))
    return re.compile(rf"(?<![\w-])(?:{parts})(?![\w-])")


@cache
def _needs_digit() -> frozenset[str]:
    return frozenset(f"k{i}" for i, k in enumerate(_formats()["keys"]) if k.get("digit"))


def provider_keys(text: str) -> list[Secret]:
    """Keys in a provider's format (Stripe, Slack, AWS, Google, OpenAI, Anthropic, GitHub, GitLab, npm,
    SendGrid, Twilio, ...) and JWTs."""
    found: list[Secret] = []
    for anchor in _key_anchors():
        for at in _found(text, anchor):
            match = _key_pattern().match(text, at)
            if match is None or (match.lastgroup in _needs_digit() and not re.search(r"\d", match.group())):
                continue  # "sk-spinner-pulse-animation": a word with the prefix, not a key
            found.append(Secret("API key or token", *match.span()))
    jwts = (JWT.match(text, at) for at in _found(text, "eyJ"))
    return found + [Secret("API key or token", *m.span()) for m in jwts if m is not None]


@cache
def _after_word_patterns() -> tuple[tuple[re.Pattern[str], tuple[str, ...], bool], ...]:
    return tuple(
        (
            re.compile(
                rf"(?<![\w-])(?i:{entry['words']})(?P<q>[\"']?)[ \t]*(?P<sep>[:=])[ \t]*"
                rf"(?P<open>[\"']?)(?P<value>{entry['value']})"
            ),
            tuple(entry["anchors"]),
            bool(entry.get("shaped")),
        )
        for entry in _formats()["after_words"]
    )


_NAME_TAIL = re.compile(r"[\w \t.-]{0,40}[\"']?[ \t]*[:=]")
"""A name (of words, for "AWS Secret Access Key: …") goes on from the anchor to a `:` or `=`."""
_NAME_HEAD = re.compile(r"[\w-]{0,40}")
"""Read on the reversed text: how far the name an anchor is in begins before it."""


def _named_at(
    pattern: re.Pattern[str], text: str, lower: str, anchors: Iterable[str]
) -> Iterator[re.Match[str]]:
    """`pattern`'s matches at the words around each anchor that a `:` or `=` follows."""
    starts: set[int] = set()
    backwards = ""
    for anchor in anchors:
        for at in _found(lower, anchor):
            if _NAME_TAIL.match(lower, at):
                backwards = backwards or lower[::-1]
                head = _NAME_HEAD.match(backwards, len(lower) - at)
                starts.add(at - (head.end() - head.start() if head is not None else 0))
    for start in sorted(starts):
        match = pattern.match(text, start)
        if match is not None:
            yield match


def named_values(text: str) -> list[Secret]:
    """Secrets after the word that names them, as configuration and connection strings write them:
    `password=…`, `"client_secret": "…"`, `aws_secret_access_key = …`. After a colon only when the key is
    quoted or the value looks like a secret ("Password: required" is a label, not a password)."""
    if "=" not in text and ":" not in text:
        return []
    found: list[Secret] = []
    lower = text.lower()
    for pattern, anchors, shaped in _after_word_patterns():
        for match in _named_at(pattern, text, lower, anchors):
            value = match.group("value")
            if match.group("open"):
                value = value.split(match.group("open"))[0]
            value = value.rstrip(".,)]}")
            loose = shaped or (match.group("sep") == ":" and not match.group("q"))
            if len(value) < 3 or (loose and not looks_secret(value)):
                continue
            start = match.start("value")
            found.append(Secret("password", start, start + len(value)))
    return found


@cache
def _key_block() -> re.Pattern[str]:
    armour = _formats()["private_key"]
    return re.compile(rf"{armour['begin']}.*?(?:{armour['end']}|\Z)", re.DOTALL)


def key_blocks(text: str) -> list[Secret]:
    """Private-key blocks (PEM, OpenSSH, PGP), whole; a block cut off before its END line to the end."""
    if "-----BEGIN" not in text:
        return []
    return [Secret("private key", *m.span()) for m in _key_block().finditer(text)]


_USERINFO = re.compile(r"//[^\s:/?#@\[\]]*:(?P<password>[^\s/?#@\[\]]+)@(?=[\w\[])")
"""After a scheme's `:` (`https:`, `postgres:`): the user part, `:`, the password, `@` and the host."""


def url_passwords(text: str) -> list[Secret]:
    """The password of a URL's user part: `https://bob:pa55word@example.com/`, `postgres://u:p@db/x`."""
    found: list[Secret] = []
    at = text.find("://")
    while at >= 0:
        match = _USERINFO.match(text, at + 1)
        if match is not None:
            found.append(Secret("password", *match.span("password")))
        at = text.find("://", at + 1)
    return found


_S = r"(?:[ .\-]|[ \t]*(?:\r?\n|\t|\|)[ \t]*)"
_CARD_GROUPS = re.compile(
    rf"(?<![\d.,])(?:\d{{4}}{_S}\d{{4}}{_S}\d{{4}}{_S}\d{{1,7}}|\d{{4}}{_S}\d{{6}}{_S}\d{{4,5}})(?![.,]?\d)"
)
_CLUSTER = re.compile(r"\d+(?:(?:[ \t]*(?:\r?\n|[\t|.\-])[ \t]*|[ \t]+)\d+)*")
"""Groups of digits joined by one separator each: where a card may be (its digits and separators)."""
_ISSUER = re.compile(r"4|5[1-5]|2[2-7]|3[0478]|35|6")
_NEAR_BEFORE = re.compile(r"\d[ \t]*(?:[\n\t|.\-][ \t]*)?$")
_NEAR_AFTER = re.compile(r"[ \t]*(?:[\r\n\t|.\-][ \t]*)?\d")


_AS_SEPARATOR = str.maketrans(
    {
        **dict.fromkeys(map(ord, "\u00a0\u2007\u2009\u200a\u202f"), " "),
        **dict.fromkeys(map(ord, "/\u200b\u200c\u200d\u2060"), "."),
    }
)
_ESCAPED_BREAK = re.compile(r"\\([ntr])")
"""No-break and thin spaces read as a space; a slash or an invisible join as a dot (the stricter grouped
rule); a line break or tab written as JSON writes it (`\\n`, in a code result) as the break: one or two
characters for as many, so what is found is found where it is."""


def cards(text: str) -> list[Secret]:
    """Luhn-valid card numbers (13 to 19 digits), in one piece or in groups (see the module's note)."""
    found: list[Secret] = []
    text = _ESCAPED_BREAK.sub(
        lambda m: " " + {"n": "\n", "t": "\t", "r": "\r"}[m.group(1)], text.translate(_AS_SEPARATOR)
    )
    clusters = [m.span() for m in _CLUSTER.finditer(text) if m.end() - m.start() >= 13]
    # One character past a cluster, for `CARD`'s `\b` to see what follows it.
    for match in (m for start, end in clusters for m in CARD.finditer(text, start, end + 1)):
        digits = re.sub(r"\D", "", match.group())
        before = text[match.start() - 1] if match.start() else ""
        if before != "+" and 13 <= len(digits) <= 19 and luhn_ok(digits):
            found.append(Secret("card number", *match.span()))
    for start, end in clusters:
        grouped = _CARD_GROUPS.match(text, start) if end - start <= 64 else None
        if grouped is None or grouped.end() != end or re.fullmatch(r"[\d -]+", grouped.group()):
            continue  # spaces and dashes: the plain card's rule above
        digits = re.sub(r"\D", "", grouped.group())
        if not (13 <= len(digits) <= 19 and luhn_ok(digits) and _ISSUER.match(digits)):
            continue
        if _NEAR_BEFORE.search(text, max(0, start - 8), start) or _NEAR_AFTER.match(text, end):
            continue  # one stretch of a longer run of numbers: a table, not a card
        found.append(Secret("card number", start, end))
    return found


_IBAN_FAST = re.compile(IBAN.pattern.removeprefix(r"\b"))
"""`IBAN` without its leading `\b`, which would stop the search from skipping to the next capital."""


def ibans(text: str) -> list[Secret]:
    return [
        Secret("IBAN", *m.span())
        for m in _IBAN_FAST.finditer(text)
        if not re.match(r"\w", text[m.start() - 1 : m.start()]) and iban_ok(m.group())
    ]


def shapes(text: str) -> list[Secret]:
    """Every secret found by its shape alone (possibly overlapping: `first_each` keeps one of each)."""
    return [
        *key_blocks(text),
        *url_passwords(text),
        *named_values(text),
        *provider_keys(text),
        *ibans(text),
        *cards(text),
    ]


def first_each(found: list[Secret]) -> list[Secret]:
    """`found` without overlaps: of two that overlap, the one that starts first (then the longer) stays."""
    kept: list[Secret] = []
    for secret in sorted(found, key=lambda s: (s.start, -s.end)):
        if not kept or secret.start >= kept[-1].end:
            kept.append(secret)
    return kept
