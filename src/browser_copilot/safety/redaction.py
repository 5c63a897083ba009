"""One redaction function for every sink (F47): logs, event stream, step events, error snapshots.

Masks passwords and secret values given to it, Luhn-valid card numbers, IBANs, OTP codes, API keys
and JWTs, e-mail addresses and phone numbers.

`find_secrets` / `mask_secrets` are the narrower detector for what the user writes (the chat) and what the
agent would remember: only secrets (passwords, one-time codes, card numbers, CVV, IBANs, keys and tokens),
never the user's ordinary details (name, address, e-mail, phone), which the agent may use. It finds them
by word ("my password is x"), by shape ("login is alice / x", "x is the password") and, given what the
message answers (`asked_for`: the agent asked for a code, the page has a code field), by context."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from browser_copilot.safety.secret_said import (
    LOGIN_WORD,
    ORDINARY_CODES,
    PASSWORD_WORD,
    alternation,
    codes_said,
    said,
)
from browser_copilot.safety.secret_shapes import (
    CARD,
    EMAIL,
    IBAN,
    Secret,
    SecretKind,
    cards,
    first_each,
    ibans,
    key_blocks,
    looks_secret,
    luhn_ok,
    named_values,
    provider_keys,
    shapes,
    url_passwords,
)

__all__ = [
    "WITHHELD",
    "Asked",
    "Secret",
    "SecretKind",
    "asked_for",
    "find_secrets",
    "looks_secret",
    "luhn_ok",
    "mask_for_model",
    "mask_secrets",
    "redact",
    "redact_data",
]

_BEARER = re.compile(
    r"(?i)\b(bearer|token|api[_-]?key|secret|password|passwd|pwd)(\s*[:=]\s*|\s+)(['\"]?)([^\s'\",;]{4,})"
)
_PHONE = re.compile(r"(?<![\w.])\+?\d[\d ()-]{7,}\d(?![\w.])")
_OTP = re.compile(
    r"(?i)\b(otp|code|pin|one[- ]time|verification|код|kod|código|codice)\b([^\d\n]{0,20})(\d{4,8})\b"
)


def _card(match: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", match.group(0))
    return "<card>" if 13 <= len(digits) <= 19 and luhn_ok(digits) else match.group(0)


_DATE = re.compile(
    r"(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})|(?P<d2>\d{1,2})-(?P<m2>\d{1,2})-(?P<y2>\d{4})"
)
_CLOCK_REST = re.compile(r":[0-5]\d")
"""What follows the hour of a time: `:35` of `12:35:43,364`."""


def _date_or_timestamp(match: re.Match[str]) -> bool:
    """A date (`2026-11-26`, `26-11-2026`), or a date and the hour of a time that goes on after the
    match (`2026-11-26 12` of `2026-11-26 12:35:43,364`, the log's own timestamps): not a phone."""
    date, _, hour = match.group(0).partition(" ")
    found = _DATE.fullmatch(date)
    if found is None:
        return False
    month, day = int(found["m"] or found["m2"]), int(found["d"] or found["d2"])
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return False
    if not hour:
        return True
    return hour.isdigit() and int(hour) < 24 and _CLOCK_REST.match(match.string, match.end()) is not None


def _phone(match: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", match.group(0))
    return "<phone>" if 9 <= len(digits) <= 15 and not _date_or_timestamp(match) else match.group(0)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with secrets and personal data masked. `secrets` are exact values to hide (typed passwords)."""
    for secret in secrets:
        if secret and len(secret) >= 3:
            text = text.replace(secret, "<secret>")
    words = [s for s in said(text) if s.kind == "password"]
    text = _replace(text, first_each(key_blocks(text) + url_passwords(text) + words), lambda _: "<secret>")
    text = _replace(text, first_each(provider_keys(text)), lambda _: "<api-key>")
    text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}<secret>", text)
    text = EMAIL.sub("<email>", text)
    text = IBAN.sub("<iban>", text)
    text = CARD.sub(_card, text)
    text = _OTP.sub(lambda m: f"{m.group(1)}{m.group(2)}<code>", text)
    return _PHONE.sub(_phone, text)


def redact_data(value: Any) -> Any:
    """Redact every string inside a JSON-like value (event payloads)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_data(v) for v in value]
    return value


# ----- secrets in what the user writes or the agent would remember ----------------------------------

WITHHELD = "withheld]"
"""The end of every mask `mask_secrets` puts in: `[password withheld]`."""
_MODEL_MASKS: dict[SecretKind, str] = {"password": "<secret>", "private key": "<private-key>"}


def mask_for_model(text: str) -> str:
    """What the model may read of page text and code results (F47): secrets found by their shape
    (`secret_shapes`: private-key blocks, a URL's password, `password=…` in a configuration, provider keys
    and JWTs, valid IBANs, Luhn-valid card numbers in any grouping) and one-time codes said with their word
    ("Your verification code is 482913", any language of the tables) masked; the user's own details (name,
    e-mail, phone, address) and ordinary numbers stay, so the model can check what it typed."""
    masks: dict[SecretKind, str] = {
        **_MODEL_MASKS,
        "API key or token": "<api-key>",
        "IBAN": "<iban>",
        "one-time code": "<code>",
    }
    found = first_each([*shapes(text), *codes_said(text)])
    return _replace(text, found, lambda s: masks.get(s.kind, "<card>"))


def find_secrets(text: str, asked: Asked | None = None) -> list[Secret]:
    """Secrets in `text`, by where they are: a password or key with its value ("my password is x"),
    credentials in the usual shapes ("login is alice / x"), a one-time code, a CVV, a Luhn-valid card
    number, a valid IBAN, an API key or a JWT; and, when `text` answers a request for a secret (`asked`),
    the answer itself. Ordinary numbers (a zip code, an order number, a price, a date) and personal
    details are not secrets."""
    # A secret's shape first: a key block or a provider key holds what the word rules would cut short.
    found = [*key_blocks(text), *provider_keys(text), *said(text), *url_passwords(text)]
    found += [*named_values(text), *cards(text), *ibans(text)]
    found += _answered(text, asked) if asked is not None else []  # last: a secret found by its kind wins
    return first_each(found)


def _replace(text: str, found: list[Secret], mask: Callable[[Secret], str]) -> str:
    for secret in sorted(found, key=lambda s: s.start, reverse=True):
        text = text[: secret.start] + mask(secret) + text[secret.end :]
    return text


def mask_secrets(text: str, asked: Asked | None = None) -> tuple[str, list[SecretKind]]:
    """`text` with each secret replaced by `[KIND withheld]`, and the kinds found (in order, once each);
    `asked`: what the request `text` answers asked for (see `asked_for`)."""
    found = find_secrets(text, asked)
    kinds = list(dict.fromkeys(s.kind for s in found))
    return _replace(text, found, lambda s: f"[{s.kind} {WITHHELD}"), kinds


# ----- an answer to a request for a secret -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Asked:
    """The user's next message answers a request for a secret: the agent's own question asked for it
    (`by="question"`), or the page in front has a field for it and nothing else was asked (`"page"`)."""

    kind: Literal["password", "one-time code"]
    by: Literal["question", "page"]


ANSWER_WORDS = 6
"""An answer to a question for a secret is short: a longer message is read like any other."""


@cache
def _code_asked() -> re.Pattern[str]:
    """A one-time code named in a question, in any language of the tables (lexicon.json `code_words`, the
    guard's), with the word before and after it to tell "the SMS code" from "the zip code"."""
    from browser_copilot.safety.classifier import lexicon  # the guard's table; loaded when first needed

    words = alternation(
        {"*": [*lexicon().get("code_words", []), "one-time code", "one-time password", "totp", "mfa"]},
        spaced=r"(?<![\w-]){}(?![\w-])",
        unspaced="{}",
    )
    return re.compile(rf"(?i)(?:(?P<pre>[^\W\d_]+)[ -])?(?:{words})(?:[ -](?P<post>[^\W\d_]+))?")


def _ordinary(word: str | None) -> bool:
    return (word or "").lower() in ORDINARY_CODES


def asked_for(question: str, page: Literal["password", "one-time code"] | None = None) -> Asked | None:
    """What the user's answer to `question` (the agent's last words to the user) is, when it is a secret:
    the question names a password, PIN or one-time code (words of secret_words.json and the guard's code
    words, "the SMS code" but not "the zip code"); or the page in front has a field for one (`page`, from
    what the fields *are*) and the question does not ask for something else (a user name, an order
    number)."""
    if re.search(PASSWORD_WORD, question, re.IGNORECASE):
        return Asked("password", "question")  # a PIN too, as when it is said ("my PIN is 1234")
    if any(
        not (_ordinary(m.group("pre")) or _ordinary(m.group("post")))
        for m in _code_asked().finditer(question)
    ):
        return Asked("one-time code", "question")
    other = re.search(LOGIN_WORD, question, re.IGNORECASE) or any(
        w.lower() in ORDINARY_CODES for w in re.findall(r"[^\W\d_]+", question)
    )
    return Asked(page, "page") if page is not None and not other else None


_EDGE = "\"'«»“”‘’()[]{}.,;:!?¡¿…"


def _answered(text: str, asked: Asked) -> list[Secret]:
    """In a short answer to a question for a secret, what looks like one ("Tr0ub4dor-77", "482977"; not a
    word such as "done", an e-mail or a web address, nor a number named "order 482977"); in a reply while
    the page asks for one, only a bare value (the whole message)."""
    words = list(re.finditer(r"\S+", text))
    if len(words) > (1 if asked.by == "page" else ANSWER_WORDS):
        return []
    found: list[Secret] = []
    for n, word in enumerate(words):
        value = word.group().strip(_EDGE)
        if not looks_secret(value) or re.fullmatch(r"/[a-z]+", value) or WITHHELD in word.group():
            continue
        named = [w.group().strip(_EDGE).lower() for w in words[max(0, n - 3) : n]]
        if any(w in ORDINARY_CODES for w in named):
            continue  # "order number 482977": the user said what it is
        start = word.start() + word.group().index(value)
        found.append(Secret(asked.kind, start, start + len(value)))
    return found
