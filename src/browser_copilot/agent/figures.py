"""Figures as people write them, and whether an answer's figures follow from the evidence (F28).

Reading. `1,234.50`, `1.234,50`, `1 234,50` (a space, U+00A0, U+202F or U+2009 between groups) and
`1'234.50` are one figure, so are Indian lakhs (`1,23,456`); `1,234` is read both as 1234 and as 1.234,
and `30 123` also as 30 and 123. Escapes of JSON or repr text (`\\t512`, `\\u00a0`) and HTML entities
are decoded first. A currency sign or code next to a figure (`$1,234.50`, `1 234,50 €`, `350 руб.`) marks
money, `%` a percentage, a minus a negative figure, `k`/`M`/`тыс.`/`млн` a scale (`€1.2M`). Dates
(`2026-11-26`, `26.11.2026`, `11/26/26`) and times (`14:30`, `2:30 pm`) are read as their parts, a
two-digit year as 20yy; in evidence a year also by its last two digits and a pm hour also as 13-23.
Evidence is read loosely: digits after letters count too (`A320`, `ID-512`). An answer is read strictly:
figures standing alone, not list numbering, not inside URLs or words.

Matching (`Evidence.unsupported`). An answer's figure above 12 is supported when, rounded to the places
it is written with, it equals an evidence figure (sign aside), or when it follows in one step from
figures that sit together:

- *cited*: the answer's own figures that are observed (the first `CITED`): the sum of any of them
  (beyond `CITED_SUBSETS` of them: of two, of three, of all, of all but one), the difference of two,
  a mean, a count times one, a percentage of one, one as a percentage of another;
- *near* sources, each on its own (the user's words and the newest `NEAR_RESULTS` tool results of this
  request, the current page, the working-state facts, the newest `NEAR_PAGES` sources the session
  kept): with at most `SMALL` operands, the sum of two or three, the difference of two, a count times
  one, a percentage of one (and with at most `RATIO_OPERANDS`, one as a percentage of another); with
  any number, the total and the mean of all;
- *far* sources (earlier requests' messages, the summary, memories, older pages): the total of all.

Operands are a source's money figures when it has two or more, else its figures that are money, have
decimals or are above 12 (small integers are counts). A count is an integer 2..99 written in the
answer or in the user's request. Sums, differences and products must be exact to the cent (an answer
may round them to cents, not to whole units); means and percentages may be rounded to the places the
answer writes. The candidates are thus bounded: about 600 from the cited figures and 350 per near
source, plus 12 per count and 36 per percentage each; built once per answer, and only when one of its
figures is not observed as such. Bounds trade coverage for the chance that an invented figure
matches a candidate by coincidence (measured in `tests/test_answer_check.py`). Not recognised: chains of
steps (a subtotal, then a discount), a sum rounded to whole units, and arithmetic on figures of
different sources that the answer does not cite.
"""

from __future__ import annotations

import html
import itertools
import re
import unicodedata
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from langchain_core.messages import AnyMessage, HumanMessage, ToolMessage

from browser_copilot.agent.conversation import current_request, is_feedback
from browser_copilot.agent.state import AgentState, ObservationState

CHECKED_ABOVE = 12
"""Figures at or below this (counts, list positions, months) are not checked."""
# The bounds of the arithmetic (see above).
CITED = 12
CITED_SUBSETS = 8
SMALL = 12
TERMS = 3
RATIO_OPERANDS = 6
NEAR_PAGES = 6
NEAR_RESULTS = 8
PERCENTS = 12

SESSION_SOURCES = 40
"""Sources whose figures `session_figures` keeps (the newest)."""
SOURCE_FIGURES = 100
"""Figures kept per source (the first)."""

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


def _tokens(text: str, *, loose: bool) -> Iterator[tuple[str, Readings]]:
    """Each figure (or date, or time) in `text`: as written, and its readings."""
    text = _unescape(text)
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


# --- matching ------------------------------------------------------------------------------------------


class _Values:
    """Sorted candidate values; `near(x, tolerance)` looks one up."""

    def __init__(self, values: Iterable[float]) -> None:
        self._sorted = sorted({round(abs(v), 9) for v in values})

    def __len__(self) -> int:
        return len(self._sorted)

    def near(self, x: float, tolerance: float) -> bool:
        index = bisect_left(self._sorted, abs(x) - tolerance)
        return index < len(self._sorted) and self._sorted[index] <= abs(x) + tolerance


def _operands(figures: Sequence[Figure], limit: int) -> list[float]:
    usable = [f for f in figures if f.operand]
    money = [f for f in usable if f.money]
    return list(dict.fromkeys(f.value for f in (money if len(money) >= 2 else usable)))[:limit]


def _percent_of(operands: Sequence[float], percents: Iterable[float]) -> Iterator[float]:
    for p in percents:
        for a in operands:
            yield from (a * p / 100, a * (1 - p / 100), a * (1 + p / 100))


def is_count(figure: Figure) -> bool:
    """An integer 2..99 that is neither money nor a percentage: a quantity that may multiply a price."""
    plain = figure.primary and not (figure.money or figure.percent) and figure.places == 0
    return plain and 2 <= figure.value <= 99


def _ratios(operands: Sequence[float]) -> Iterator[float]:
    """Each operand as a percentage of another, and the change from one to another in percent."""
    for a, b in itertools.permutations(operands, 2):
        if b:
            yield from (100 * a / b, 100 * (a - b) / b)


def _rounding(places: int) -> float:
    """How far a figure written with `places` decimals may be from what it rounds."""
    return 0.5 * 10.0**-places + 1e-9


def _holds(reading: tuple[Figure, ...], test: Callable[[Figure], bool]) -> bool:
    """Its figures above 12 pass `test` (a reading of small figures only: all of them do)."""
    big = [f for f in reading if abs(f.value) > CHECKED_ABOVE]
    return all(test(f) for f in big or reading)


@dataclass(frozen=True, slots=True)
class _Candidates:
    exact: _Values
    """Sums, differences, products: exact to the cent."""
    rounded: _Values
    """Means and percentages of amounts: may be rounded to the answer's places."""
    ratios: _Values
    """One cited figure as a percentage of another, or the change between them in percent."""

    def match(self, figure: Figure) -> bool:
        tolerance = _rounding(figure.places)
        if figure.percent and self.ratios.near(figure.value, tolerance):
            return True
        cents = tolerance if figure.places >= 2 else 1e-6
        return self.rounded.near(figure.value, tolerance) or self.exact.near(figure.value, cents)


class Evidence:
    """What an answer may rest on: `near` and `far` sources, each a list of figures (see the module);
    `counts`: integers 2..99 of the user's request that may multiply a price."""

    def __init__(
        self, near: Sequence[Sequence[Figure]], far: Sequence[Sequence[Figure]], counts: Iterable[int] = ()
    ) -> None:
        self.near, self.far, self.counts = near, far, set(counts)
        everything = [f for source in [*near, *far] for f in source]
        self._direct = _Values(f.value for f in everything)
        self._percents = [abs(f.value) for source in near for f in source if f.percent]

    def observed(self, figure: Figure) -> bool:
        """The figure, rounded to its places, is one of the evidence's (sign aside)."""
        return self._direct.near(figure.value, _rounding(figure.places))

    def unsupported(self, answer: Sequence[Claim]) -> list[Claim]:
        """The checked claims of `answer` that are neither observed nor one step of arithmetic away."""
        open_claims = [
            c for c in answer if c.checked and not any(_holds(r, self.observed) for r in c.readings)
        ]
        if not open_claims:
            return []
        written = [f for c in answer for r in c.readings for f in r]
        cited = [f.value for f in written if f.operand and self.observed(f)]
        counts = self.counts | {int(f.value) for f in written if is_count(f)}
        percents = [abs(f.value) for f in written if f.percent] + self._percents
        candidates = self._derived(
            list(dict.fromkeys(cited))[:CITED], sorted(counts), list(dict.fromkeys(percents))[:PERCENTS]
        )

        def supported(figure: Figure) -> bool:
            return self.observed(figure) or candidates.match(figure)

        return [c for c in open_claims if not any(_holds(r, supported) for r in c.readings)]

    def _derived(self, cited: list[float], counts: list[int], percents: list[float]) -> _Candidates:
        """The candidates one step of arithmetic gives (bounds: see the module)."""
        exact: list[float] = []
        rounded: list[float] = []
        ratios: list[float] = []
        sizes = list(range(2, len(cited) + 1))
        if len(cited) > CITED_SUBSETS:  # many cited figures: pairs, threes, all of them, all but one
            sizes = [2, 3, len(cited) - 1, len(cited)]
        for size in sizes:
            for terms in itertools.combinations(cited, size):
                exact.append(sum(terms))
                if len(cited) <= 6:
                    rounded.append(sum(terms) / size)
        exact.extend(a - b for a, b in itertools.combinations(cited, 2))
        ratios.extend(_ratios(cited))
        exact.extend(a * k for a in cited for k in counts)
        rounded.extend(_percent_of(cited, percents))
        for source in self.near:
            operands = _operands(source, 24)
            if len(operands) >= 2:
                exact.append(sum(operands))
                rounded.append(sum(operands) / len(operands))
            if len(operands) > SMALL:
                continue
            for size in range(2, min(TERMS, len(operands)) + 1):
                exact.extend(sum(terms) for terms in itertools.combinations(operands, size))
            exact.extend(a - b for a, b in itertools.combinations(operands, 2))
            exact.extend(a * k for a in operands for k in counts)
            rounded.extend(_percent_of(operands, percents))
            if len(operands) <= RATIO_OPERANDS:
                ratios.extend(_ratios(operands))
        for source in self.far:
            operands = _operands(source, 200)
            if len(operands) >= 3:
                exact.append(sum(operands))
        return _Candidates(_Values(exact), _Values(rounded), _Values(ratios))


# --- the session's evidence ----------------------------------------------------------------------------

_FRAMEWORK = re.compile(
    r"(?m)^\[\d+\] |(?<= · )\[\d+\] |^\[\d+-\d+\] \d+ links |el\(\d+\)"  # element numbers, folded lists
    r"|Viewport shows \d+-\d+ of \d+px|^Tabs: .*$"
)


def page_text(observation: ObservationState) -> str:
    """An observation's text without the extractor's own numbers (element numbers, scroll offsets) and
    without the list of the browser's other tabs (their indices, hosts and titles are not this page's:
    they would feed the arithmetic with figures of whatever else is open)."""
    return _FRAMEWORK.sub(" ", observation["text"])


def said(messages: Iterable[AnyMessage]) -> list[str]:
    """The texts among `messages` that are evidence: tool results and the user's own words."""
    return [
        m.text
        for m in messages
        if isinstance(m, ToolMessage) or (isinstance(m, HumanMessage) and not is_feedback(m))
    ]


def remembered(state: AgentState, observation: ObservationState) -> dict[str, list[str] | list[list[str]]]:
    """The figure update for a new observation: `seen_numbers` (this request's pages) and
    `session_figures` (the session's sources: this page; at the request's first observation also the
    messages before the request and the facts, which `memory_manager` may summarise away later)."""
    page = keys(page_text(observation), SOURCE_FIGURES)
    seen = list(state.get("seen_numbers") or [])
    session = [list(g) for g in state.get("session_figures") or []]
    if not seen:
        messages = state.get("messages", [])
        earlier = messages[: len(messages) - len(current_request(state))]
        facts = "\n".join(f["fact"] for f in state.get("facts") or [])
        for text in [*said(earlier), facts]:
            group = keys(text, SOURCE_FIGURES)
            if group and group not in session:
                session.append(group)
    if page:
        session = [g for g in session if g != page] + [page]
    return {
        "seen_numbers": list(dict.fromkeys([*seen, *page]))[-400:],
        "session_figures": session[-SESSION_SOURCES:],
    }
