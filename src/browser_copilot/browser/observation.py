"""An observation of the page, and its rendering: the page as the model reads it.

One look returns URL, title, tabs, numbered interactive elements and a short text outline
(see `extractor.js`): those of the viewport and one more screen below it, and the whole of the focused
form and of an open modal, numbered region by region (each region is named once). Taking one is
`observing.py`. The model's code reaches element N as `el(N)`, a locator built by the guarded call
(sandbox/call.js) for the numbers of the *current* observation only.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

UNTRUSTED_OPEN = "<page_content untrusted>"
UNTRUSTED_CLOSE = "</page_content>"
_DELIMITER = re.compile(r"<(\s*/?\s*)page_content", re.IGNORECASE)


Region = Literal["above", "view", "below", "side"]
REGION_MARKS: dict[str, str] = {
    "above": "— above the viewport —",
    "view": "— in the viewport —",
    "below": "— below the viewport —",
    "side": "— beside the viewport —",
}
"""The line that opens each region of the element list (the viewport's own only after another)."""


@dataclass(frozen=True, slots=True)
class Element:
    n: int
    role: str
    name: str
    state: str = ""
    frame: tuple[int, ...] = ()
    region: Region = "view"
    """Where it is: above the viewport, in it, below it, or off to the side (numbered in that order)."""
    context: str = ""
    """For repeated names: the row's or item's first cell, and the first that tells it from the others."""
    covered: str = ""
    """What lies over the element's centre (hit-tested), e.g. 'dialog «We value your privacy»'."""
    behind: bool = False
    """It is the page behind an open modal (which covers it): counted in one line, not listed."""
    fold: int = 0
    """The folded link list it belongs to (`Fold.id`), listed as one line with the others."""
    row: int = 0
    """The table row, list item or card it is in, when an element of that row has a `context`: rows
    alike (the same controls, named alike but for the row's first cell) are written one line each."""

    def render(self, *, context: bool = True) -> str:
        line = f"[{self.n}] {self.role}"
        if self.name:
            line += f' "{self.name}"'
        if self.state:
            line += f" {self.state}"
        if self.context and context:
            line += f" in «{self.context}»"
        if self.frame:
            line += " (in frame)"
        if self.covered:
            line += f" (covered by {self.covered})"
        return line


@dataclass(frozen=True, slots=True)
class Fold:
    """A long run of links of one list outside the default window, in full-page mode: one line."""

    id: int
    label: str
    first: int
    last: int


@dataclass(frozen=True, slots=True)
class TabInfo:
    index: int
    current: bool
    url: str
    title: str


@dataclass(frozen=True, slots=True)
class Dialog:
    kind: str
    message: str


@dataclass
class Observation:
    url: str
    title: str
    tabs: list[TabInfo]
    elements: list[Element]
    outline: list[str]
    counts: dict[str, int]
    viewport: dict[str, int]
    full: bool = False
    dialog: Dialog | None = None
    screenshot_b64: str | None = None
    captcha: bool = False
    """A captcha is on the page: the user has to solve it."""
    banner: str | None = None
    """The label of the consent-banner button the app clicked (reject/close), if it did."""
    banner_held: str | None = None
    """The consent-banner button the app would have chosen, when the guard held that click (it looks like
    an action of its own: "Delete my account" on a page's fake cookie layer)."""
    downloads: list[dict[str, str]] = field(default_factory=list)
    """Downloads finished since the last observation: name, url, state, path."""
    extract_ms: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    modal: str | None = None
    """The heading or label of an open modal dialog or of a layer over the viewport's middle."""
    errors: list[str] = field(default_factory=list)
    """Visible error texts next to form fields (aria-invalid fields' messages, alerts in forms)."""
    covered: int = 0
    """How many listed elements something covers (see `Element.covered`)."""
    truncated: bool = False
    """Some page text was cut from the outline (the outline says where and how much)."""
    folds: list[Fold] = field(default_factory=list)
    """Full-page mode: long link lists outside the default window, one line each (see `Fold`)."""
    page_ms: float = 0.0
    """The extraction's own time in the page (settle and banner included), without the code call."""
    reused: bool = False
    """Nothing the extraction depends on changed since the last observation: its result was reused."""

    @property
    def fingerprint(self) -> str:
        """URL + element count + a hash of the visible names and text (F26 'page unchanged')."""
        digest = hashlib.sha1()
        for el in self.elements:
            digest.update(f"{el.role}|{el.name}|{el.state}\n".encode())
        for line in self.outline:
            digest.update(line.encode())
        return f"{self.url}#{len(self.elements)}#{digest.hexdigest()[:12]}"

    def asks_for_secrets(self) -> str:
        """'a password', 'a one-time code or card details'... or '' (from the masked fields listed)."""
        kinds = []
        if any(e.role == "password" for e in self.elements):
            kinds.append("a password")
        if any(e.role != "password" and "secret" in e.state for e in self.elements):
            kinds.append("a one-time code or card details")
        return " and ".join(kinds)

    def element(self, n: int) -> Element | None:
        if 1 <= n <= len(self.elements) and self.elements[n - 1].n == n:
            return self.elements[n - 1]
        return next((e for e in self.elements if e.n == n), None)

    def frames_by_number(self) -> dict[int, list[int]]:
        return {e.n: list(e.frame) for e in self.elements if e.frame}

    def render(self) -> str:
        """The page as the model reads it (without the untrusted-content delimiters)."""
        lines = [f"Page: {self.title or '(no title)'} — {self.url}" + ("" if self.dialog else self._where())]
        others = [t for t in self.tabs if not t.current]
        if others:
            # Every tab (F64), the agent's marked; switch_tab takes the index. Past 8 others, the newest
            # (tabs open in creation order): the ones this task opened are the ones it needs.
            shown = [t for t in self.tabs if t.current] + others[-8:]
            listed = " · ".join(
                f'{t.index} "{_short(t.title, 40)}" {urlsplit(t.url).netloc or t.url[:40]}'
                + (" (yours)" if t.current else "")
                for t in sorted(shown, key=lambda t: t.index)
            )
            more = f" · +{len(others) - 8} older" if len(others) > 8 else ""
            lines.append(f"Tabs: {listed}{more}")
        asks = self.asks_for_secrets()
        if asks:
            lines.append(f"This page asks for {asks}: use hand_over so the user enters it; never type it.")
        if self.captcha:
            lines.append("This page shows a captcha: only the user can solve it (hand_over).")
        if self.banner:
            lines.append(f'The app closed a consent banner or pop-up in the way by choosing "{self.banner}".')
        if self.banner_held:
            lines.append(
                f'A consent banner is open; its one option short of accepting, "{self.banner_held}", looks'
                " like an action of its own, so the app did not click it."
            )
        for download in self.downloads:
            where = download["path"] or "the browser's download folder"
            lines.append(f"Download {download['state']}: {download['name']} -> {where}")
            if download["state"] == "completed":
                lines.append(f"  (read its text with read_download, name {download['name']!r})")
        if self.dialog is not None:
            lines.append(
                f'Open dialog ({self.dialog.kind}): "{self.dialog.message}" — the page waits until it is '
                "handled with handle_dialog."
            )
            return "\n".join(lines)
        if self.modal:
            lines.append(f"Open on top of the page: «{self.modal}».")
        lines.extend(self._behind())
        if self.covered:
            lines.append(
                f"{self.covered} listed element(s) are covered by something (marked): a click on them fails "
                "until it is closed."
            )
        if self.errors:
            lines.append("Errors shown: " + " · ".join(f"«{e}»" for e in self.errors))
        lines.extend(self._elements())
        if self.outline:
            lines.append("Text:")
            lines.extend(self.outline)
        return "\n".join(lines)

    def _where(self) -> str:
        """The rest of the first line: what the viewport shows, and what is not listed."""
        vp = self.viewport
        top, height, total = vp.get("scrollY", 0), vp.get("height", 0), vp.get("height_total", 0)
        if top <= 0 and total <= height:
            where = " · whole page"
        elif self.full:
            where = f" · whole page listed; Viewport shows {top}-{top + height} of {total}px"
        else:
            where = f" · Viewport shows {top}-{top + height} of {total}px"
        words = {"above": "above", "below": "below", "side": "to the side"}
        outside = [f"{self.counts[k]} {word}" for k, word in words.items() if self.counts.get(k)]
        if outside:
            where += "; not listed: " + ", ".join(outside)
        if self.counts.get("hidden_frames"):
            where += f"; {self.counts['hidden_frames']} cross-origin frames not read"
        return where

    def _elements(self) -> list[str]:
        """The element list: each region named once, the elements of one row on one line (the row
        named once), three or more rows alike as one template and a line per row, each folded link
        list on one line."""
        front = [el for el in self.elements if not el.behind]
        if not front:
            return ["Elements: none visible" + (" in front" if self.elements else "")]
        folds = {f.id: f for f in self.folds}
        lines: list[str] = []
        region: str = "view"
        hint = True
        for unit in _runs(_units(front)):
            first = unit[0][0]
            if first.region != region:
                region = first.region
                lines.append(REGION_MARKS[region])
            if len(unit) >= ROWS_MIN:
                lines.extend(_rows(unit))
                continue
            row = unit[0]
            fold = folds.get(first.fold)
            if fold is None:
                label = next((e.context for e in row if e.context), "")
                if len(row) == 1 or not label:
                    lines.extend(e.render() for e in row)
                else:
                    lines.append(" · ".join(e.render(context=False) for e in row) + f" in «{label}»")
                continue
            if first.n != fold.first:
                continue
            names = [e.name for e in front if e.fold == fold.id]
            line = f"[{fold.first}-{fold.last}] {len(names)} links in «{fold.label}»: " + _fold_names(
                names, fold.first, every=self.full
            )
            if hint:
                line += (
                    " (folded: el(N) works for each)"
                    if self.full
                    else f" (folded: el(N) works for each; after await el({fold.first})"
                    ".scrollIntoViewIfNeeded() the next observation lists them)"
                )
                hint = False
            lines.append(line)
        return lines

    def _behind(self) -> list[str]:
        """One line per modal for the page it covers (its elements keep their numbers, unlisted)."""
        counts = Counter(el.covered for el in self.elements if el.behind)
        return [
            f"Behind the {cover}: {count} element{'s' if count != 1 else ''} of the page "
            "(covered: close or answer it first)."
            for cover, count in counts.items()
        ]


ROWS_MIN = 3
"""Rows alike written as one template and a line per row: from this many in a run."""


def _units(front: list[Element]) -> list[list[Element]]:
    """The elements in order, those of one row together (a row is named by its elements' context)."""
    units: list[list[Element]] = []
    for el in front:
        last = units[-1] if units else None
        same_row = el.row and not el.fold and last and last[0].row == el.row
        # Elements in one context, whatever their boxes ("Syntax" · "Examples" in «SELECT»).
        same_context = el.context and last and last[-1].context == el.context
        if last and (same_row or same_context) and last[0].region == el.region:
            last.append(el)
        else:
            units.append([el])
    return units


def _template(row: list[Element]) -> tuple[str, str] | None:
    """(the row's label, its elements with the label's cells as "…" and numbers as n, n+1...), or
    None when the row cannot be written so (no label, not numbered in a run, folded)."""
    label = next((e.context for e in row if e.context), "")
    if not label or any(e.fold for e in row) or any(e.n != row[0].n + i for i, e in enumerate(row)):
        return None
    cells = sorted({re.sub(r" #\d+$", "", cell) for cell in label.split(" · ")}, key=len, reverse=True)
    parts = []
    for i, e in enumerate(row):
        text = e.render(context=False).split("] ", 1)[1]
        for cell in cells:
            if len(cell) > 2:
                text = text.replace(cell, "…")
        parts.append(f"[n{'+' + str(i) if i else ''}] {text}")
    return label, " · ".join(parts)


def _runs(units: list[list[Element]]) -> list[list[list[Element]]]:
    """Consecutive rows alike (the same template, numbered in one run, in one region) grouped."""
    runs: list[list[list[Element]]] = []
    shape: str | None = None
    for unit in units:
        template = _template(unit)
        last = runs[-1] if runs else None
        if (
            last
            and template is not None
            and template[1] == shape
            and unit[0].region == last[-1][0].region
            and unit[0].n == last[-1][-1].n + 1
        ):
            last.append(unit)
            continue
        runs.append([unit])
        shape = template[1] if template else None
    return [run for group in runs for run in ([group] if len(group) >= ROWS_MIN else [[u] for u in group])]


def _rows(run: list[list[Element]]) -> list[str]:
    """Rows alike: the template once, then a line per row, `[n] row`, n its first element's number.
    (No other figure of the app's own: the answer check reads page figures from this text.)"""
    template = _template(run[0])
    assert template is not None
    note = " (… stands for the row's words)" if "…" in template[1] else ""
    lines = [f"Rows alike{note}, each {template[1]}:"]
    for unit in run:
        row = _template(unit)
        lines.append(f"[{unit[0].n}] {row[0] if row else ''}")
    return lines


def _fold_names(names: list[str], first: int, *, every: bool) -> str:
    """A folded list's names: all of them, numbered every fifth (full page), or the first three."""
    if not every:
        return ", ".join(_short(name, 30) for name in names[:3] if name) + ", …"
    return " · ".join(
        (f"[{first + i}] " if i % 5 == 0 and i else "") + _short(name or "(no name)", 40)
        for i, name in enumerate(names)
    )


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def as_untrusted(text: str) -> str:
    """Delimit page-derived text as data; a page cannot close the delimiter early, nor open another:
    every tag of that name inside, in any case or spacing (`</PAGE_CONTENT >`), becomes `page_content_`."""
    safe = _DELIMITER.sub(lambda m: f"<{m.group(1)}page_content_", text)
    return f"{UNTRUSTED_OPEN}\n{safe}\n{UNTRUSTED_CLOSE}"
