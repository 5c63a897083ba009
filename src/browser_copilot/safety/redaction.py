"""One redaction function for every sink (F47): logs, event stream, step events, error snapshots.

Masks passwords and secret values given to it, Luhn-valid card numbers, IBANs, OTP codes, API keys
and JWTs, e-mail addresses and phone numbers.

`find_secrets` / `mask_secrets` are the narrower detector for what the user writes (the chat) and what the
agent would remember: only secrets (passwords, one-time codes, card numbers, CVV, IBANs, keys and tokens),
never the user's ordinary details (name, address, e-mail, phone), which the agent may use. It finds them
by word ("my password is x"), by shape ("login is alice / x", "x is the password") and, given what the
message answers (`asked_for`: the agent asked for a code, the page has a code field), by context."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

_JWT = re.compile(r"\beyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}\b")
_API_KEY = re.compile(
    r"\b(sk-(?:proj-|ant-)?[\w-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}|xox[abposr]-[\w-]{10,}|"
    r"AKIA[0-9A-Z]{16}|AIza[\w-]{30,}|glpat-[\w-]{20,}|hf_[A-Za-z]{30,})\b"
)
_BEARER = re.compile(
    r"(?i)\b(bearer|token|api[_-]?key|secret|password|passwd|pwd)(\s*[:=]\s*|\s+)(['\"]?)([^\s'\",;]{4,})"
)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b")
_CARD = re.compile(r"\b(?:\d[ -]?){12,18}\d\b")
_PHONE = re.compile(r"(?<![\w.])\+?\d[\d ()-]{7,}\d(?![\w.])")
_OTP = re.compile(
    r"(?i)\b(otp|code|pin|one[- ]time|verification|код|kod|código|codice)\b([^\d\n]{0,20})(\d{4,8})\b"
)


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
    text = _replace(text, [s for s in _passwords(text) if s.kind == "password"], lambda _: "<secret>")
    text = _JWT.sub("<token>", text)
    text = _API_KEY.sub("<api-key>", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}<secret>", text)
    text = _EMAIL.sub("<email>", text)
    text = _IBAN.sub("<iban>", text)
    text = _CARD.sub(_card, text)
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

SecretKind = Literal["password", "one-time code", "card number", "CVV", "IBAN", "API key or token"]
WITHHELD = "withheld]"
"""The end of every mask `mask_secrets` puts in: `[password withheld]`."""


@dataclass(frozen=True, slots=True)
class Secret:
    kind: SecretKind
    start: int
    end: int


_WORDS = json.loads(
    resources.files("browser_copilot.safety").joinpath("secret_words.json").read_text("utf-8")
)
"""safety/secret_words.json: the words that introduce a password, and link it to its value, and the words of
the shapes credentials come in (login, user, "sign in as", "with"), per language."""
_UNSPACED_CHARS = r"\u0e00-\u0eff\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff"
_UNSPACED = re.compile(f"[{_UNSPACED_CHARS}]")


def _alternation(by_language: dict[str, list[str]], *, spaced: str, unspaced: str) -> str:
    """The words of every language, longest first; words of scripts written without spaces match inside
    text (`unspaced` around them), others as whole words (`spaced`)."""
    words = sorted({w for ws in by_language.values() for w in ws}, key=len, reverse=True)
    return "|".join(
        (unspaced if _UNSPACED.search(w) else spaced).format(re.escape(w).replace("\\ ", r"\s+"))
        for w in words
    )


_PASSWORD_WORD = _alternation(_WORDS["password_words"], spaced=r"(?<![\w-]){}(?![\w-])", unspaced="{}")
_TOKEN_WORD = (
    r"(?<![\w-])(?:api[ _-]?key|secret[ _-]?key|access[ _-]?key|client[ _-]?secret|"
    r"(?:access|auth|api|bearer|refresh)?[ _-]?token|bearer)(?![\w-])"
)
# "password IS x", "password: x": whatever follows is the value. A password followed by other words
# ("Passwort für Gmail abc123", "salasanani on abc123") counts only when the value looks like one
# (has a digit or a symbol), so that "password manager" or "password reset" is not taken for a secret.
_LINK = _alternation(_WORDS["separators"], spaced=r"\s+{}(?=\s)", unspaced=r"\s*{}")
_SEPARATOR = rf"(?:\s+[^\W\d_]{{1,8}})?\s*(?:[:=]|[—–](?!\w))\s*|(?:{_LINK})\s*(?:[:=]\s*)?"
_LOOSE = rf"(?:\s+[^\W\d_]{{1,8}}){{0,2}}\s+|(?<={_UNSPACED.pattern})\s*"
# A value is written in a script with spaces: in "密码是abc123" or "パスワードは12文字以上" it ends where the
# sentence's own script goes on ("12文字以上" is a length, not a password).
_VALUE_CHAR = rf"[^\s\"'«»“”‘’`,;{_UNSPACED_CHARS}]"
_VALUE = (
    r"(?:(?P<q>[\"'«“‘`])(?P<quoted>[^\"'»”’`\n]{1,100})[\"'»”’`]"
    rf"|(?P<value>{_VALUE_CHAR}{{3,}}))"
)
_FOR = r"(?:\s+(?:for|of|on|at|to|für|pour|para|per|voor|för|dla|для|от|на|do|za)\s+[\w.@-]{2,40}(?![\w@-]))?"
_PASSWORD_VALUE = re.compile(
    rf"(?i)(?P<word>{_PASSWORD_WORD}|{_TOKEN_WORD}){_FOR}(?:(?P<sep>{_SEPARATOR})|(?P<loose>{_LOOSE})){_VALUE}"
)
_CODE_VALUE = re.compile(
    r"(?i)(?<![\w-])(?:(?P<pre>[^\W\d_]+)[ -])?(?P<word>one[- ]time (?:pass)?code|otp|totp|2fa|mfa|sms|"
    r"(?:verification|security|confirmation|login|sign[- ]in|access|auth(?:entication)?)?[ -]?code|"
    r"код(?: подтверждения| из смс)?)(?![\w-])(?P<gap>[^\d\n]{0,20})"
    r"(?P<value>(?<!\d)\d{4,8})(?![\d.,/-]\d)(?!\d)"
)


@cache
def _code_said() -> re.Pattern[str]:
    """A one-time code said with a link word, in any language of the tables: "el código es 482913",
    "验证码是482913", "인증번호는 482913" (the code words are the guard's, lexicon.json `code_words`).
    Without the link ("código postal 28001") it is an ordinary number."""
    from browser_copilot.safety.classifier import lexicon  # the guard's table; loaded when first needed

    words = _alternation(
        {"*": list(lexicon().get("code_words", []))}, spaced=r"(?<![\w-]){}(?![\w-])", unspaced="{}"
    )
    return re.compile(
        rf"(?i)(?:(?P<pre>[^\W\d_]+)[ -])?(?:{words})(?:\s*[:=]\s*|(?:{_LINK})\s*(?:[:=]\s*)?)"
        r"(?P<value>(?<!\d)\d{4,8})(?![\d.,/-]\d)(?!\d)"
    )


_CVV_VALUE = re.compile(
    r"(?i)\b(?:cvv2?|cvc2?|csc|card (?:security|verification) (?:code|value|number))\b[^\d\n]{0,15}"
    r"(?P<value>(?<!\d)\d{3,4})(?!\d)"
)
# Words before "code" that make it an ordinary number, not a one-time code.
_ORDINARY_CODE_WORDS = """zip postal post postcode area country promo discount coupon voucher gift product
order booking tracking reference error status http tax sort bank iata airport dialling dialing phone colour
color source building qr bar barcode style dress postale pocztowy promocional invoice customer"""
_ORDINARY_CODES = frozenset(_ORDINARY_CODE_WORDS.split())
# Words after "password is" that say something about it, not what it is.
_NOT_VALUE_WORDS = """stored saved kept in the a an not never same different changed wrong correct required
needed expired too very weak strong secret private known set empty blank forgotten lost on at my your there
here below above reset manager field protected hidden managed long short case sensitive ok fine page tab
section settings box button form policy screen menu link rules requirements length hint change update
recovery strength"""
_NOT_VALUES = frozenset(_NOT_VALUE_WORDS.split())


def _passwords(text: str) -> list[Secret]:
    """Passwords (and keys) said with their word, and credentials in the usual shapes; no two overlap."""
    kept: list[Secret] = []
    for secret in sorted(_said(text) + _credentials(text), key=lambda s: (s.start, -s.end)):
        if not kept or secret.start >= kept[-1].end:
            kept.append(secret)
    return kept


def _said(text: str) -> list[Secret]:
    found: list[Secret] = []
    for match in _PASSWORD_VALUE.finditer(text):
        if match.group("quoted") is not None:
            start, end = match.span("quoted")
        else:
            value = match.group("value").rstrip(".!?)]:")
            start = match.start("value")
            end = start + len(value)
            if len(value) < 3 or value.lower() in _NOT_VALUES:
                continue
            plain = not re.search(r"[\d\W_]", value)
            if plain and match.group("sep") is None:
                continue  # "password manager", "token expired": no value, only a word
            direct = re.fullmatch(r"\s*[:=]\s*", match.group("sep") or "")
            if plain and not direct and re.match(r"\s+[^\W\d_]", text[end:]):
                continue  # "mot de passe est trop long": a sentence about it goes on, not a value
        word = match.group("word")
        kind: SecretKind = "password" if re.fullmatch(_PASSWORD_WORD, word, re.I) else "API key or token"
        if kind == "API key or token" and end - start < 8:
            continue
        found.append(Secret(kind, start, end))
    return found


# ----- credentials in the usual shapes (words: secret_words.json) -----------------------------------
# "login is alice / Tr0ub4dor", "Tr0ub4dor is the password", "sign in as alice with Tr0ub4dor",
# "user: alice pass: sunshine", "username alice password sunshine". Only the secret part is withheld: the
# user name is an ordinary detail the agent may use, like the user's e-mail.

_U = _UNSPACED_CHARS
_LOGIN_WORD = _alternation(_WORDS["login_words"], spaced=r"(?<![\w-]){}(?![\w-])", unspaced="{}")
_PASS_WORD = _alternation(_WORDS["pass_words"], spaced=r"(?<![\w-]){}(?![\w-])", unspaced="{}")
_SIGN_IN_AS = _alternation(_WORDS["sign_in_as"], spaced=r"(?<![\w-]){}(?![\w-])", unspaced="{}")
_WITH = _alternation(_WORDS["with_words"], spaced=r"(?<![\w-]){}(?![\w-])", unspaced="{}")
_LINK_BEFORE = _alternation(_WORDS["separators"], spaced=r"\s+{}\s+", unspaced=r"\s*{}\s*")
_USER = rf"(?P<user>{_VALUE_CHAR.replace(',;', ',;/')}{{1,64}})"
_AFTER_WORD = rf"(?:\s*[:=]\s*|\s+|(?<=[{_U}])\s*)"
_FOR_WORDS = r"for|of|on|at|to|für|pour|para|per|voor|för|dla|для|от|на|do|za"
_CLAUSE_END = rf"(?=\s*$|\s*[.!?,;:)\]…。！？，、]|\s+(?:{_FOR_WORDS})(?!\w)|[{_U}])"
_PAIR = re.compile(  # login word (for x) (is / :) user / secret
    rf"(?i)(?:{_LOGIN_WORD}){_FOR}(?:{_SEPARATOR}|\s+|(?<=[{_U}])\s*){_USER}\s*/\s*{_VALUE}"
)
_REVERSED = re.compile(  # secret, link, "the"/"my", password word, end of the clause
    rf"(?i)(?<![^\s\"'«“‘(\[])(?:(?P<q>[\"'«“‘`])(?P<quoted>[^\"'»”’`\n]{{1,100}})[\"'»”’`]"
    rf"|(?P<value>{_VALUE_CHAR}{{4,}}))"
    rf"(?:\s+[—–-]\s+|{_LINK_BEFORE})(?:[^\W\d_]{{1,8}}\s+){{0,2}}(?:[{_U}]{{1,3}})?"
    rf"(?:{_PASSWORD_WORD}){_CLAUSE_END}"
)
_SIGN_IN = re.compile(  # sign in as user with secret
    rf"(?i)(?:{_SIGN_IN_AS})\s+{_USER}\s+(?:{_WITH})\s+(?:[^\W\d_]{{1,8}}\s+)?{_VALUE}"
)
_USER_PASS = re.compile(  # login word user (and) pass word secret
    rf"(?i)(?:{_LOGIN_WORD})(?P<named>{_AFTER_WORD}){_USER}\s*[,;]?\s*(?:[^\W\d_]{{1,4}}\s+)?"
    rf"(?:{_PASS_WORD}|{_PASSWORD_WORD})(?P<sep>{_AFTER_WORD}){_VALUE}"
)
_PLAIN_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")


def looks_secret(value: str) -> bool:
    """Whether a bare value looks like a password, PIN or code: 4+ characters with a digit or a symbol
    ("Tr0ub4dor-77", "482977"), not a word ("sunshine", "e-mail"), an e-mail address or a web address."""
    if len(value) < 4 or _EMAIL.fullmatch(value) or re.match(r"(?i)(?:https?://|www\.)", value):
        return False
    if value.isdigit():
        return len(value) <= 12  # longer: a card or an account number, which have checks of their own
    if re.fullmatch(r"[\d.,:/-]+", value):
        return False  # a date, a time, a price, a version: "2025-06-01", "10:30", "1,299.00"
    return not _PLAIN_WORD.fullmatch(value) and bool(re.search(r"[^\W_]", value))


def _value_span(match: re.Match[str]) -> tuple[int, int, bool]:
    """(start, end, quoted) of a `_VALUE` group, trailing punctuation left out."""
    if match.group("quoted") is not None:
        return *match.span("quoted"), True
    start = match.start("value")
    return start, start + len(match.group("value").rstrip(".!?)]:")), False


def _credentials(text: str) -> list[Secret]:
    found: list[Secret] = []
    for pattern in (_PAIR, _REVERSED, _SIGN_IN):
        for match in pattern.finditer(text):
            start, end, quoted = _value_span(match)
            if "user" in match.groupdict() and not re.search(r"[^\W\d_]", match.group("user")):
                continue  # a user name has a letter: "účet ••••/0100" is an account number and a bank
            if quoted or looks_secret(text[start:end]):
                found.append(Secret("password", start, end))
    for match in _USER_PASS.finditer(text):
        start, end, quoted = _value_span(match)
        value = text[start:end]
        if quoted or looks_secret(value):
            found.append(Secret("password", start, end))
            continue
        if len(value) < 3 or value.lower() in _NOT_VALUES or value.lower() == match.group("user").lower():
            continue
        named = ":" in match.group("named") or "=" in match.group("named")
        said = ":" in match.group("sep") or "=" in match.group("sep")
        if named or said or re.fullmatch(r"\s*[.!]?\s*", text[end:]):
            found.append(Secret("password", start, end))  # "user alice pass sunshine": a plain word too
    return found


def _iban_ok(text: str) -> bool:
    compact = re.sub(r"\s", "", text)
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def mask_for_model(text: str) -> str:
    """What the model may read of page text and code results (F47): Luhn-valid card numbers, valid
    IBANs, API keys and tokens masked; the user's own details (name, e-mail, phone, address) and
    ordinary numbers stay, so the model can check what it typed."""

    def card(match: re.Match[str]) -> str:
        digits = re.sub(r"\D", "", match.group(0))
        before = match.string[match.start() - 1] if match.start() else ""
        return "<card>" if before != "+" and 13 <= len(digits) <= 19 and luhn_ok(digits) else match.group(0)

    text = _JWT.sub("<token>", text)
    text = _API_KEY.sub("<api-key>", text)
    text = _IBAN.sub(lambda m: "<iban>" if _iban_ok(m.group(0)) else m.group(0), text)
    return _CARD.sub(card, text)


def find_secrets(text: str, asked: Asked | None = None) -> list[Secret]:
    """Secrets in `text`, by where they are: a password or key with its value ("my password is x"),
    credentials in the usual shapes ("login is alice / x"), a one-time code, a CVV, a Luhn-valid card
    number, a valid IBAN, an API key or a JWT; and, when `text` answers a request for a secret (`asked`),
    the answer itself. Ordinary numbers (a zip code, an order number, a price, a date) and personal
    details are not secrets."""
    found = _passwords(text)
    for match in _CODE_VALUE.finditer(text):
        word = match.group("word").lower().strip(" -")
        if word == "code" and (match.group("pre") or "").lower() in _ORDINARY_CODES:
            continue
        if word == "code" and not re.fullmatch(r"(?i)\s*(?:is|was|[:=—–])\s*", match.group("gap")):
            continue  # "item code 1234" is as likely a product as a code: only "the code is 1234"
        found.append(Secret("one-time code", *match.span("value")))
    found += [
        Secret("one-time code", *m.span("value"))
        for m in _code_said().finditer(text)
        if (m.group("pre") or "").lower() not in _ORDINARY_CODES  # "zip code is 10115"
    ]
    found += [Secret("CVV", *m.span("value")) for m in _CVV_VALUE.finditer(text)]
    for match in _CARD.finditer(text):
        digits = re.sub(r"\D", "", match.group(0))
        before = text[match.start() - 1] if match.start() else ""
        if before != "+" and 13 <= len(digits) <= 19 and luhn_ok(digits):
            found.append(Secret("card number", *match.span()))
    found += [Secret("IBAN", *m.span()) for m in _IBAN.finditer(text) if _iban_ok(m.group(0))]
    found += [Secret("API key or token", *m.span()) for m in (*_API_KEY.finditer(text), *_JWT.finditer(text))]
    found += _answered(text, asked) if asked is not None else []  # last: a secret found by its kind wins
    kept: list[Secret] = []
    for secret in sorted(found, key=lambda s: (s.start, -s.end)):
        if not kept or secret.start >= kept[-1].end:
            kept.append(secret)
    return kept


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

    words = _alternation(
        {"*": [*lexicon().get("code_words", []), "one-time code", "one-time password", "totp", "mfa"]},
        spaced=r"(?<![\w-]){}(?![\w-])",
        unspaced="{}",
    )
    return re.compile(rf"(?i)(?:(?P<pre>[^\W\d_]+)[ -])?(?:{words})(?:[ -](?P<post>[^\W\d_]+))?")


def _ordinary(word: str | None) -> bool:
    return (word or "").lower() in _ORDINARY_CODES


def asked_for(question: str, page: Literal["password", "one-time code"] | None = None) -> Asked | None:
    """What the user's answer to `question` (the agent's last words to the user) is, when it is a secret:
    the question names a password, PIN or one-time code (words of secret_words.json and the guard's code
    words, "the SMS code" but not "the zip code"); or the page in front has a field for one (`page`, from
    what the fields *are*) and the question does not ask for something else (a user name, an order
    number)."""
    if re.search(_PASSWORD_WORD, question, re.IGNORECASE):
        return Asked("password", "question")  # a PIN too, as when it is said ("my PIN is 1234")
    if any(
        not (_ordinary(m.group("pre")) or _ordinary(m.group("post")))
        for m in _code_asked().finditer(question)
    ):
        return Asked("one-time code", "question")
    other = re.search(_LOGIN_WORD, question, re.IGNORECASE) or any(
        w.lower() in _ORDINARY_CODES for w in re.findall(r"[^\W\d_]+", question)
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
        if any(w in _ORDINARY_CODES for w in named):
            continue  # "order number 482977": the user said what it is
        start = word.start() + word.group().index(value)
        found.append(Secret(asked.kind, start, start + len(value)))
    return found
