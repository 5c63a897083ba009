"""Whether an answer's figures follow from the evidence (F28); the figures are read as people write
them (`agent.written_figures`).

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

import itertools
import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from langchain_core.messages import AnyMessage, HumanMessage, ToolMessage

from browser_copilot.agent.conversation import current_request, is_feedback
from browser_copilot.agent.state import AgentState, ObservationState
from browser_copilot.agent.written_figures import CHECKED_ABOVE, Claim, Figure, keys

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
