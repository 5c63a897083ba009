"""One redaction function for every sink (F47): logs, event stream, step events, error snapshots.

Masks passwords and secret values given to it, Luhn-valid card numbers, IBANs, OTP codes, API keys
and JWTs, e-mail addresses and phone numbers."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

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


def _phone(match: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", match.group(0))
    return (
        "<phone>"
        if 9 <= len(digits) <= 15 and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", match.group(0))
        else match.group(0)
    )


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with secrets and personal data masked. `secrets` are exact values to hide (typed passwords)."""
    for secret in secrets:
        if secret and len(secret) >= 3:
            text = text.replace(secret, "<secret>")
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
