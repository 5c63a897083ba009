"""Figures as people write them (F28), read from the evidence and from an answer (`agent.figures`
matches the two).

`1,234.50`, `1.234,50`, `1 234,50` (a space, U+00A0, U+202F or U+2009 between groups) and
`1'234.50` are one figure, so are Indian lakhs (`1,23,456`); `1,234` is read both as 1234 and as 1.234,
and `30 123` also as 30 and 123. Escapes of JSON or repr text (`\\t512`, `\\u00a0`) and HTML entities
are decoded first. A currency sign or code next to a figure (`$1,234.50`, `1 234,50 €`, `350 руб.`) marks
money, `%` a percentage, a minus a negative figure, `k`/`M`/`тыс.`/`млн` a scale (`€1.2M`). Dates
(`2026-11-26`, `26.11.2026`, `11/26/26`) and times (`14:30`, `2:30 pm`) are read as their parts, a
two-digit year as 20yy; in evidence a year also by its last two digits and a pm hour also as 13-23.
Evidence is read loosely: digits after letters count too (`A320`, `ID-512`). An answer is read strictly:
figures standing alone, not list numbering, not inside URLs or words.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

CHECKED_ABOVE = 12
"""Figures at or below this (counts, list positions, months) are not checked."""
Readings = tuple[tuple["Figure", ...], ...]


@dataclass(frozen=True, slots=True)
class Figure:
    value: float
    places: int = 0
    """Decimal places as written (negative for a scale: `1.2M` is rounded to 10^5)."""
    money: bool = False
    percent: bool = False
    primary: bool = True
    """False for a second reading (the parts of `1 234,50` or `30 123`, a date's parts): such a figure
    supports an answer's figure, but is never added up."""

    @property
    def key(self) -> str:
        """The figure as short text (`-$1234.50`, `20%`, `~234`): how state keeps it (`from_keys`)."""
        body = f"{abs(self.value):.{max(self.places, 0)}f}"
        marks = ("" if self.primary else "~") + ("-" if self.value < 0 else "") + ("$" if self.money else "")
        return f"{marks}{body}{'%' if self.percent else ''}"

    @property
    def operand(self) -> bool:
        """Worth adding up: money, or written with decimals, or above 12 (small integers are counts)."""
        big = abs(self.value) > CHECKED_ABOVE
        usable = self.primary and self.value != 0 and not self.percent
        return usable and (self.money or self.places > 0 or big)


@dataclass(frozen=True, slots=True)
class Claim:
    """A figure of the answer as written, with its possible readings (each one or more figures)."""

    written: str
    readings: Readings

    @property
    def checked(self) -> bool:
        return any(abs(f.value) > CHECKED_ABOVE for reading in self.readings for f in reading)


# --- reading -------------------------------------------------------------------------------------------

_ESCAPE = re.compile(r"\\+(?:u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2})|[ntrfvb0])")
_GAPS = " \u00a0\u202f\u2009"
_NUMBER = re.compile(rf"\d+(?:[.,'’]\d+|[{_GAPS}](?=\d{{3}}(?!\d))\d{{3}})*")
_SEPARATOR = re.compile(rf"[.,'’{_GAPS}]")
_DATE = re.compile(
    r"(?<![\d.,/-])(?:(?P<y>\d{4})(?P<s>[-/.])(?P<m>\d{1,2})(?P=s)(?P<d>\d{1,2})"
    r"|(?P<a>\d{1,2})(?P<t>[-/.])(?P<b>\d{1,2})(?P=t)(?P<c>\d{4}|\d{2}))(?![\d])"
)
_TIME = re.compile(
    r"(?<![\d:.])(?P<h>[01]?\d|2[0-3])(?::|h)(?P<m>[0-5]\d)(?::(?P<s>[0-5]\d))?(?![\d:])"
    r"(?:\s?(?P<half>[AaPp])\.?\s?[Mm]\b\.?)?"
)
_SHORT_DATE = re.compile(r"(\d{1,2})[.,](\d{2})")
"""A day and month without a year (`28.10`), as people write dates in many countries."""
_URL = re.compile(r"https?://\S+|www\.\S+")
_LIST_ITEM = re.compile(r"(?m)^[ \t]*(?:[-*•][ \t]*)?\d{1,3}[.)](?=\s)")
_ALNUM = re.compile(r"[^\W_]{8,}")
_RUNS = re.compile(r"\d+|[^\W\d_]+")
_WORD_AFTER = re.compile(r"[^\W\d_]+\.?|[^\w\s]")
_CODES = frozenset(
    re.findall(
        r"\S+",
        "USD EUR GBP JPY CNY RMB RUB CHF PLN SEK NOK DKK CZK HUF RON UAH INR CAD AUD NZD TRY BRL MXN KRW "
        "ILS ZAR SGD HKD RUR",
    )
)
_CURRENCY_WORDS = frozenset(
    re.findall(r"\S+", "руб р грн тг zł zl kr kč lei yen euro euros dollar dollars рублей рубля рубль")
)
_SCALES = {
    "k": 1e3, "тыс": 1e3, "thousand": 1e3, "m": 1e6, "mn": 1e6, "mio": 1e6, "mln": 1e6, "млн": 1e6,
    "million": 1e6, "millionen": 1e6, "millions": 1e6, "bn": 1e9, "mrd": 1e9, "млрд": 1e9, "billion": 1e9,
}  # fmt: skip
_PERCENT_WORDS = ("percent", "per cent", "prozent", "pour cent", "por ciento", "процент")


def _unescape(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        code = match.group(1) or match.group(2)
        if code is None:
            return " "
        char = chr(int(code, 16))
        return " " if 0xD800 <= ord(char) <= 0xDFFF else char

    text = _ESCAPE.sub(one, text) if "\\" in text else text
    return html.unescape(text) if "&" in text else text


def _is_money(word: str) -> bool:
    return (
        any(unicodedata.category(c) == "Sc" for c in word)
        or word.rstrip(".") in _CODES
        or word.lower().rstrip(".") in _CURRENCY_WORDS
    )


def _before(text: str, start: int) -> tuple[bool, bool, int]:
    """(money, negative, where the figure's marks begin) from what stands right before a figure:
    `-$12`, `US$ 12`, `EUR 12`, `−12`."""
    end = start - 1 if start > 0 and text[start - 1] in _GAPS else start
    begin = end
    while begin > max(0, end - 4) and not (text[begin - 1].isspace() or text[begin - 1] in "-−(+"):
        begin -= 1
    word = text[begin:end]
    money = bool(word) and _is_money(word) and not any(c.isdigit() for c in word)
    sign_at = begin - 1 if money else start - 1
    negative = (
        sign_at >= 0
        and text[sign_at] in "-−"
        and (sign_at == 0 or not (text[sign_at - 1].isalnum() or text[sign_at - 1] in ".,"))
    )
    return money, negative, begin if money else start


def _after(text: str, end: int) -> tuple[bool, bool, float, int]:
    """(money, percent, scale, where the figure's marks end) from what follows a figure: `12 €`,
    `12%`, `1.2M`, `350 руб.`."""
    index = end + 1 if end < len(text) and text[end] in _GAPS else end
    found = _WORD_AFTER.match(text, index)
    word = found.group(0) if found else ""
    lower = word.lower().rstrip(".")
    percent = word in ("%", "％") or text[index : index + 12].lower().startswith(_PERCENT_WORDS)
    scale = _SCALES.get(lower, 1.0) if word and (lower != "m" or word == "M") else 1.0
    money = _is_money(word)
    marked = money or scale != 1.0 or word in ("%", "％")
    return money, percent, scale, index + len(word) if marked else end


def _grouped(groups: Sequence[str]) -> bool:
    """Thousands (`1,234,567`) or Indian lakhs (`12,34,567`)."""
    if 1 <= len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:]):
        return True
    middle = groups[1:-1]
    return bool(middle) and len(groups[0]) <= 2 and all(len(g) == 2 for g in middle) and len(groups[-1]) == 3


def _piece(text: str) -> list[tuple[float, int]]:
    """A piece without grouping marks: `12`, `3.5`, or `1.2.3` (parts)."""
    parts = text.split(".")
    if len(parts) == 2 and parts[1]:
        return [(float(text), len(parts[1]))]
    return [(float(p), 0) for p in parts if p]


def _values(body: str, *, loose: bool) -> list[tuple[bool, list[tuple[float, int]]]]:
    """The readings of a number as written: each (primary, [(value, places), ...])."""
    groups = _SEPARATOR.split(body)
    found = _SEPARATOR.findall(body)
    marks = ["g" if s not in ".," else s for s in found]
    if not marks:
        return [(True, [(float(body), 0)])]
    readings: list[tuple[bool, list[tuple[float, int]]]] = []
    last, head = marks[-1], marks[:-1]
    if len(set(marks)) == 1 and len(marks) == 1 and last != "g":
        whole, fraction = groups
        if len(fraction) == 3 and whole.lstrip("0") != "":  # `1,234`, `3.333`: either may be meant
            readings.append((True, [(float(whole + fraction), 0)]))
        readings.append((True, [(float(f"{whole}.{fraction}"), len(fraction))]))
    elif len(set(marks)) == 1:
        if _grouped(groups):
            readings.append((True, [(float("".join(groups)), 0)]))
    elif last not in head and len(set(head)) == 1 and _grouped(groups[:-1]):
        readings.append((True, [(float("".join(groups[:-1]) + "." + groups[-1]), len(groups[-1]))]))
    spaced = all(s in _GAPS for s in found)
    pieces = [value for piece in re.split(rf"[,'’{_GAPS}]", body) for value in _piece(piece)]
    if (loose or not readings or spaced) and all(pieces != values for _, values in readings):
        readings.append((not readings, pieces))
    return readings


def _dates(text: str, *, loose: bool) -> Iterator[tuple[int, int, list[int]]]:
    """(start, end, parts) of each date and time."""
    for match in _DATE.finditer(text):
        y, m, d = match.group("y", "m", "d")
        if y is None:
            a, b, year = (int(x) for x in match.group("a", "b", "c"))
            if not (1 <= a <= 31 and 1 <= b <= 31 and min(a, b) <= 12):
                continue
            parts = [a, b, 2000 + year if year < 100 else year]
            if loose:
                parts.append(year % 100)
        else:
            if not (1 <= int(m) <= 12 and 1 <= int(d) <= 31):
                continue
            parts = [int(y), int(m), int(d)] + ([int(y) % 100] if loose else [])
        yield match.start(), match.end(), parts
    for match in _TIME.finditer(text):
        hour, half = int(match.group("h")), (match.group("half") or "").lower()
        parts = [hour, int(match.group("m"))] + ([int(match.group("s"))] if match.group("s") else [])
        if loose and half == "p" and hour < 12:
            parts.append(hour + 12)
        if loose and hour > 12:
            parts.append(hour - 12)
        yield match.start(), match.end(), parts


def _in_word(before: str) -> bool:
    """A figure after this character is part of a word or code (`A320`, `v2.1`, `1/2`), not a figure.
    Letters of scripts without case (CJK, Thai, Arabic) do not join words to figures."""
    cased = before.isalpha() and before.lower() != before.upper()
    return before.isdigit() or cased or before in "._/"


def _blank(text: str, spans: Iterable[tuple[int, int]]) -> str:
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def _identifiers(text: str) -> list[tuple[int, int]]:
    """Runs of letters and digits that switch between them three times or more (`482add276b42c81a`,
    `SKU12AB34`): tokens and codes, whose digits are no figures (`81 - 42` would "support" an answer of 39).
    `1920x1080` and `10kg` stay figures."""
    return [m.span() for m in _ALNUM.finditer(text) if len(_RUNS.findall(m.group(0))) >= 4]


def _tokens(text: str, *, loose: bool) -> Iterator[tuple[str, Readings]]:
    """Each figure (or date, or time) in `text`: as written, and its readings."""
    text = _unescape(text)
    text = _blank(text, _identifiers(text))
    if not loose:
        text = _blank(text, [m.span() for m in _URL.finditer(text)])
        text = _blank(text, [m.span() for m in _LIST_ITEM.finditer(text)])
    dates = list(_dates(text, loose=loose))
    for start, end, parts in dates:
        yield text[start:end], (tuple(Figure(float(p), primary=False) for p in parts),)
    text = _blank(text, [(start, end) for start, end, _ in dates])
    for match in _NUMBER.finditer(text):
        start, end = match.span()
        if not loose and start > 0 and _in_word(text[start - 1]):
            continue
        money_before, negative, begin = _before(text, start)
        money_after, percent, scale, until = _after(text, end)
        money, sign = money_before or money_after, -1.0 if negative else 1.0
        readings: list[tuple[Figure, ...]] = []
        shift = len(str(int(scale))) - 1
        short = _SHORT_DATE.fullmatch(match.group(0))
        if short is not None and not money and not percent and scale == 1.0:
            # `28.10` may be a day and month (`2026-10-28` on the page) as well as a number.
            day, month = int(short.group(1)), int(short.group(2))
            if 1 <= day <= 31 and 1 <= month <= 12:
                readings.append((Figure(float(day), primary=False), Figure(float(month), primary=False)))
        for primary, values in _values(match.group(0), loose=loose):
            if scale != 1.0:
                scaled = (Figure(sign * v * scale, p - shift, money, percent, primary) for v, p in values)
                readings.append(tuple(scaled))
            if scale == 1.0 or loose:
                plain = (Figure(sign * v, p, money, percent, primary and scale == 1.0) for v, p in values)
                readings.append(tuple(plain))
        yield text[begin:until], tuple(dict.fromkeys(readings))


def read(text: str) -> list[Figure]:
    """Every figure evidence `text` may mean (all readings, loosely)."""
    found = [f for _, readings in _tokens(text, loose=True) for reading in readings for f in reading]
    return list(dict.fromkeys(found))


def keys(text: str, limit: int = 120) -> list[str]:
    """`read(text)` as short texts for state (`Figure.key`), the first `limit`."""
    return list(dict.fromkeys(f.key for f in read(text)))[:limit]


_KEY = re.compile(r"(~?)(-?)(\$?)(\d+(?:\.(\d+))?)(%?)")


def from_keys(kept: Iterable[str]) -> list[Figure]:
    """The figures `keys` kept; anything else (text kept by an older version) is read as text."""
    figures: list[Figure] = []
    for key in kept:
        match = _KEY.fullmatch(key)
        if match is None:
            figures.extend(read(key))
            continue
        secondary, minus, money, body, fraction, percent = match.groups()
        value = -float(body) if minus else float(body)
        figures.append(Figure(value, len(fraction or ""), bool(money), bool(percent), not secondary))
    return figures


def claims(answer: str) -> list[Claim]:
    """The figures an answer states, read strictly."""
    return [Claim(written, readings) for written, readings in _tokens(answer, loose=False) if readings]
