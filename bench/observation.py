"""Observation size, speed and coverage against @playwright/mcp's own `browser_snapshot`.

For each page of the test bed (its `app-*.html` pages are the "app pages", its `doc-*.html` pages
long documents) and of real documentation from Debian packages (python3-doc, postgresql-doc-15,
sqlite3-doc, cppreference-doc-en-html, python-django-doc, apache2-doc, libjs-jquery-ui-docs), served
on 127.0.0.1, in one run and one browser:
  tokens     exact o200k tokens of what the model reads: our observation message (default view) vs the
             text `browser_snapshot` returns for the same page; "full": our full-page observation
  ms         our extraction (the app's own look over its DevTools connection, browser/look.py), median
             of 3 repeated observations of the same unchanged document (the page's half reuses its last
             extraction), vs `browser_snapshot`, median of 3; "tool": the same observation through the
             code tool (one code call, as every observation was before the look), median of 3;
             "chg": median of 3 observations each after a change of the DOM (an attribute of <body>
             set by a code call before it: the page is extracted again); "first": the first observation
             of a new document (it also puts the extractor into the document); "page": the extraction's
             own time in the page (after a change)
  coverage   share of the page's interactive elements in Playwright's aria snapshot (whole page) that
             our observation lists, matched by role and name (a select's listed options count as its
             options): "cover" for the whole-page observation, "view" for the default view
  actionable share of the numbers we list (default mode) whose `el(N)` resolves to one visible element
  fidelity   share of the page's visible sentences (its innerText split into lines, table cells and
             sentences) that appear whole in our whole-page observation ("sent"), and share of its
             numbers (tokens with a digit: prices, dates, totals) that appear there ("nums")
Timings depend on what else runs on the machine: the summary gives the load average and the time of
an empty code call (the floor every observation pays) next to them.

Usage: uv run python bench/observation.py [--only testbed|docs]
Missing documentation packages are skipped with a note (`apt-get install` them for the full corpus).
The last line is the summary others script against:
median_token_ratio=... coverage=... actionable=... median_extract_ms=... median_tokens=...
fidelity_sentences=... fidelity_numbers=... view_coverage=... app_view_coverage=... app_token_ratio=...
app_median_extract_ms=... first_extract_ms=... median_page_ms=... call_floor_ms=... loadavg=...
doc_full_token_ratio=... changed_extract_ms=... app_changed_extract_ms=... doc_full_coverage=...
tool_extract_ms=... app_tool_extract_ms=... look_share=...
(fidelity pooled over all pages' sentences and numbers; median_tokens: our default observation;
coverage and view_coverage pooled over all pages' aria elements; app_* over the app pages;
doc_full_token_ratio: median of our full-page tokens / snapshot tokens on long documents, and
doc_full_coverage their pooled full-page coverage; *changed_extract_ms: the "chg" medians;
*tool_extract_ms: the "tool" medians; look_share: the share of all observations the app's own look made)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from browser_copilot.agent.conversation import observation_message, to_state  # noqa: E402
from browser_copilot.browser.observation import Observation  # noqa: E402
from browser_copilot.browser.observing import observe  # noqa: E402
from browser_copilot.browser.session import BrowserSession  # noqa: E402
from browser_copilot.config import load_settings  # noqa: E402
from browser_copilot.llm.tokens import count_tokens  # noqa: E402
from common import bench_browser, raw_code  # noqa: E402

DOCS: dict[str, tuple[str, list[str]]] = {
    "python3-doc": ("/usr/share/doc/python3-doc/html", ["library/functions.html", "tutorial/index.html"]),
    "postgresql-doc-15": ("/usr/share/doc/postgresql-doc-15/html", ["sql-select.html", "index.html"]),
    "sqlite3-doc": ("/usr/share/doc/sqlite3", ["lang_select.html", "index.html"]),
    "cppreference-doc-en-html": ("/usr/share/cppreference/doc/html/en", ["cpp/container/vector.html"]),
    "python-django-doc": (
        "/usr/share/doc/python-django-doc/html",
        ["ref/models/querysets.html", "index.html"],
    ),
    "apache2-doc": ("/usr/share/doc/apache2-doc/manual/en", ["mod/core.html", "index.html"]),
    "libjs-jquery-ui-docs": (
        "/usr/share/doc/libjs-jquery-ui-docs/examples",
        ["datepicker/default.html", "tabs/default.html", "index.html"],
    ),
}
TESTBED = ROOT / "tests" / "pages"
INTERACTIVE = {
    "link",
    "button",
    "textbox",
    "searchbox",
    "checkbox",
    "radio",
    "combobox",
    "listbox",
    "slider",
    "spinbutton",
    "switch",
    "tab",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "option",
    "treeitem",
}
_ARIA_LINE = re.compile(r'^\s*- (\w+)(?: "((?:[^"\\]|\\.)*)")?')


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None


class MultiRoot(_Quiet):
    """Serves /<name>/... from the folder registered under <name>."""

    roots: ClassVar[dict[str, str]] = {}

    def translate_path(self, path: str) -> str:
        name, _, rest = path.lstrip("/").partition("/")
        base = self.roots.get(name)
        if base is None:
            return "/nonexistent"
        self.directory = base
        return super().translate_path("/" + rest)


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")
_NUMBER = re.compile(r"\S*\d\S*")
_EDGE_PUNCT = "\"'()[]{}.,;:!?«»“”‘’"


def sentences(inner_text: str) -> list[str]:
    """The page's visible text as pieces a reader takes in one go: lines, cells, sentences."""
    found = []
    for line in re.split(r"[\n\t]+", inner_text):
        for piece in _SENTENCE_END.split(line):
            piece = " ".join(piece.split())
            if re.search(r"\w", piece):
                found.append(piece)
    return found


def numbers(inner_text: str) -> set[str]:
    """Tokens with a digit (prices, dates, totals, counts), without surrounding punctuation."""
    return {t.strip(_EDGE_PUNCT) for t in _NUMBER.findall(inner_text) if t.strip(_EDGE_PUNCT)}


def fidelity(inner_text: str, observed: str) -> tuple[int, int, int, int]:
    """(sentences found, sentences, numbers found, numbers) of the page text in the observation."""
    flat = " ".join(observed.split())
    pieces = sentences(inner_text)
    digits = numbers(inner_text)
    found = sum(1 for p in pieces if p in flat)
    found_numbers = sum(1 for n in digits if n in flat)
    return found, len(pieces), found_numbers, len(digits)


def norm(text: str) -> str:
    return " ".join(text.replace('\\"', '"').split()).lower().rstrip("…")


def aria_elements(snapshot: str) -> list[tuple[str, str]]:
    found = []
    for line in snapshot.splitlines():
        match = _ARIA_LINE.match(line)
        if match and match.group(1) in INTERACTIVE:
            found.append((match.group(1), norm(match.group(2) or "")))
    return found


def our_role(role: str) -> str:
    return {"password": "textbox", "clickable": "button"}.get(role, role)


_OPTIONS = re.compile(r"options=\d+: (.*)$")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


def listed(ours: Observation) -> list[tuple[str, str]]:
    """(role, name) of what the observation names: its elements (a folded list only by the names its
    line shows: all in full-page mode, the first three otherwise; rows alike by their template and
    row lines), and the options a select lists and its chosen value."""
    folds = {f.id: f for f in ours.folds}
    found: list[tuple[str, str]] = []
    shown: dict[int, int] = {}
    for e in ours.elements:
        if e.fold in folds and not ours.full:
            shown[e.fold] = shown.get(e.fold, 0) + 1
            if shown[e.fold] > 3:
                continue
        found.append((our_role(e.role), norm(e.name)))
        if e.role in ("combobox", "listbox"):
            value = re.search(r'value="([^"]*)"', e.state)
            options = _OPTIONS.search(e.state)
            names = ([value.group(1)] if value else []) + (
                _QUOTED.findall(options.group(1)) if options else []
            )
            found.extend(("option", norm(name)) for name in names)
    return found


def coverage(aria: list[tuple[str, str]], ours: Observation) -> float:
    if not aria:
        return 1.0
    pool = Counter(listed(ours))
    by_role: dict[str, list[str]] = {}
    for (role, name), count in pool.items():
        by_role.setdefault(role, []).extend([name] * count)
    matched = 0
    unnamed: list[str] = []
    for role, name in aria:
        names = by_role.get(role, [])
        if not name:
            unnamed.append(role)  # the aria snapshot shows rich content as children: match by role later
            continue
        hit = next((n for n in names if n == name or (n and name.startswith(n)) or n.startswith(name)), None)
        if hit is not None:
            names.remove(hit)
            matched += 1
    for role in unnamed:
        names = by_role.get(role, [])
        if names:
            names.pop()
            matched += 1
    return matched / len(aria)


async def actionable(session: BrowserSession, observation: Observation) -> float:
    numbers = [e.n for e in observation.elements]
    if not numbers:
        return 1.0
    frames = {str(k): v for k, v in observation.frames_by_number().items()}
    code = (
        "async (page) => { const ns = " + str(numbers) + "; const out = [];"
        " for (const n of ns) { const l = el(n); out.push((await l.count()) === 1 && await l.isVisible()); }"
        " return out; }"
    )
    result = await session.run_code(raw_code(code, frames), idempotent=True)
    values = result.value if result.ok and isinstance(result.value, list) else []
    return sum(1 for v in values if v) / len(numbers)


async def snapshot(session: BrowserSession) -> tuple[str, float]:
    assert session.mcp is not None
    started = time.perf_counter()
    text, _ = await session.mcp.call("browser_snapshot", {})
    return text, (time.perf_counter() - started) * 1000


async def floor_ms(session: BrowserSession) -> float:
    """An empty code call: what every observation pays before it does anything (median of 5)."""
    times = []
    for _ in range(5):
        started = time.perf_counter()
        await session.run_code("async (page) => 1", idempotent=True)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def measure(session: BrowserSession, url: str) -> dict[str, Any]:
    await session.goto(url)
    first = await observe(session)
    ours_ms, peer_ms = [], []
    observation = first
    for _ in range(3):
        observation = await observe(session)
        ours_ms.append(observation.extract_ms)
        peer_text, elapsed = await snapshot(session)
        peer_ms.append(elapsed)
    tool_ms = []
    for _ in range(3):
        session.look.through_code_tool_next()
        tool_ms.append((await observe(session)).extract_ms)
    changed_ms, page_ms = [], []
    for mark in range(3):
        change = f"document.body.setAttribute('data-bench', '{mark}')"
        await session.run_code(f"async (page) => {{ await page.evaluate(() => {change}) }}")
        changed = await observe(session)
        changed_ms.append(changed.extract_ms)
        page_ms.append(changed.page_ms)
    ours_text = str(observation_message(to_state(observation)).content)
    full = await observe(session, full=True)
    full_text = str(observation_message(to_state(full)).content)
    inner = await session.run_code(
        "async (page) => await page.evaluate(() => document.body ? document.body.innerText : '')",
        idempotent=True,
    )
    sent_found, sent_total, num_found, num_total = fidelity(str(inner.value or ""), full_text)
    view = await observe(session)
    act = await actionable(session, view)
    (ours_tokens, peer_tokens, full_tokens), exact = count_tokens([ours_text, peer_text, full_text])
    if not exact:
        raise SystemExit("exact token counts need `npm ci` (the gpt-tokenizer package)")
    aria = aria_elements(peer_text)
    return {
        "ours_tokens": ours_tokens,
        "peer_tokens": peer_tokens,
        "full_tokens": full_tokens,
        "ratio": ours_tokens / max(1, peer_tokens),
        "full_ratio": full_tokens / max(1, peer_tokens),
        "coverage": coverage(aria, full),
        "view_coverage": coverage(aria, view),
        "actionable": act,
        "ours_ms": statistics.median(ours_ms),
        "tool_ms": statistics.median(tool_ms),
        "first_ms": first.extract_ms,
        "changed_ms": statistics.median(changed_ms),
        "page_ms": statistics.median(page_ms),
        "peer_ms": statistics.median(peer_ms),
        "elements": len(view.elements),
        "aria": len(aria),
        "sent_found": sent_found,
        "sent_total": sent_total,
        "num_found": num_found,
        "num_total": num_total,
        "sent": sent_found / sent_total if sent_total else 1.0,
        "nums": num_found / num_total if num_total else 1.0,
    }


def corpus(only: str | None) -> tuple[dict[str, str], list[tuple[str, str, str]], list[str]]:
    roots: ClassVar[dict[str, str]] = {}
    pages: list[tuple[str, str, str]] = []
    skipped: list[str] = []
    if only in (None, "testbed"):
        roots["testbed"] = str(TESTBED)
        for page in sorted(p.name for p in TESTBED.glob("*.html") if p.name != "frame-inner.html"):
            pages.append(("testbed", "testbed", page))
    if only in (None, "docs"):
        for package, (folder, files) in DOCS.items():
            if not Path(folder).is_dir():
                skipped.append(package)
                continue
            key = re.sub(r"\W", "", package)
            roots[key] = folder
            pages.extend((package, key, f) for f in files if (Path(folder) / f).is_file())
    return roots, pages, skipped


@contextlib.asynccontextmanager
async def served(roots: dict[str, str], prefix: str) -> AsyncIterator[tuple[str, BrowserSession]]:
    """The corpus served on 127.0.0.1 (its base URL) and a session over a headless browser of its own."""
    MultiRoot.roots = roots
    server = ThreadingHTTPServer(("127.0.0.1", 0), MultiRoot)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with bench_browser(prefix) as (browser, work):
            settings = load_settings(
                None, data_dir=work / "data", cdp_endpoint=browser.endpoint.url, browser_auto_launch=False
            )
            async with BrowserSession(settings) as session:
                yield f"http://127.0.0.1:{server.server_address[1]}", session
    finally:
        server.shutdown()


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", choices=["testbed", "docs"])
    args = parser.parse_args()
    roots, pages, skipped = corpus(args.only)
    rows: list[tuple[str, str, dict[str, Any]]] = []
    floors: list[float] = []
    async with served(roots, "bc-bench-obs-") as (base, session):
        for package, key, page in pages:
            rows.append((package, page, await measure(session, f"{base}/{key}/{page}")))
            floors.append(await floor_ms(session))
        session_looks = (session.look.looks, session.look.through_code_tool)
    load = os.getloadavg()[0]

    header = (
        f"{'source':<26} {'page':<28} {'snapshot':>8} {'ours':>5} {'ratio':>6} {'full':>5} "
        f"{'cover':>6} {'view':>6} {'act':>5} {'ours ms':>8} {'tool':>5} {'chg':>5} {'first':>6} {'page':>5} "
        f"{'snap ms':>8} {'sent':>5} {'nums':>5}"
    )
    print(header)
    print("-" * len(header))
    for package, page, r in rows:
        print(
            f"{package:<26} {page[:28]:<28} {r['peer_tokens']:>8} {r['ours_tokens']:>5} {r['ratio']:>6.3f} "
            f"{r['full_tokens']:>5} {r['coverage']:>6.3f} {r['view_coverage']:>6.3f} {r['actionable']:>5.2f} "
            f"{r['ours_ms']:>8.1f} {r['tool_ms']:>5.1f} {r['changed_ms']:>5.1f} {r['first_ms']:>6.1f} "
            f"{r['page_ms']:>5.1f} "
            f"{r['peer_ms']:>8.1f} "
            f"{r['sent']:>5.2f} {r['nums']:>5.2f}"
        )
    if skipped:
        print(f"skipped (not installed): {', '.join(skipped)}")

    def med(key: str, subset: list[dict[str, Any]]) -> float:
        return statistics.median(r[key] for r in subset) if subset else 0.0

    results = [r for _, _, r in rows]
    docs = [r for package, _, r in rows if package != "testbed"]
    bed = [r for package, _, r in rows if package == "testbed"]
    apps = [r for package, page, r in rows if package == "testbed" and page.startswith("app-")]
    long_docs = [r for package, page, r in rows if package != "testbed" or page.startswith("doc-")]

    def pooled(found: str, total: str, subset: list[dict[str, Any]]) -> float:
        return sum(r[found] for r in subset) / max(1, sum(r[total] for r in subset))

    def cover(key: str, subset: list[dict[str, Any]]) -> float:
        return sum(r[key] * r["aria"] for r in subset) / max(1, sum(r["aria"] for r in subset))

    for label, subset in (
        ("test bed", bed),
        ("app pages", apps),
        ("documentation", docs),
        ("long documents", long_docs),
    ):
        if subset:
            print(
                f"{label}: {len(subset)} pages, median token ratio {med('ratio', subset):.3f} "
                f"(full page {med('full_ratio', subset):.3f}), "
                f"median tokens {med('ours_tokens', subset):.0f}, coverage {cover('coverage', subset):.3f} "
                f"(default view {cover('view_coverage', subset):.3f}), "
                f"fidelity sentences {pooled('sent_found', 'sent_total', subset):.3f} "
                f"numbers {pooled('num_found', 'num_total', subset):.3f}, "
                f"median extraction {med('ours_ms', subset):.1f} ms (through the code tool "
                f"{med('tool_ms', subset):.1f}, after a change "
                f"{med('changed_ms', subset):.1f}, first in a document "
                f"{med('first_ms', subset):.1f}, in the page {med('page_ms', subset):.1f}) "
                f"vs snapshot {med('peer_ms', subset):.1f} ms"
            )
    print(
        f"timings measured at load average {load:.2f} ({os.cpu_count()} cores); an empty code call took "
        f"{statistics.median(floors):.1f} ms (median)"
    )
    act = sum(r["actionable"] * r["elements"] for r in results) / max(1, sum(r["elements"] for r in results))
    print(
        f"median_token_ratio={med('ratio', results):.3f} coverage={cover('coverage', results):.3f} "
        f"actionable={act:.2f} median_extract_ms={med('ours_ms', results):.1f} "
        f"median_tokens={med('ours_tokens', results):.0f} "
        f"fidelity_sentences={pooled('sent_found', 'sent_total', results):.3f} "
        f"fidelity_numbers={pooled('num_found', 'num_total', results):.3f} "
        f"view_coverage={cover('view_coverage', results):.3f} "
        f"app_view_coverage={cover('view_coverage', apps):.3f} "
        f"app_token_ratio={med('ratio', apps):.3f} app_median_extract_ms={med('ours_ms', apps):.1f} "
        f"first_extract_ms={med('first_ms', results):.1f} median_page_ms={med('page_ms', results):.1f} "
        f"call_floor_ms={statistics.median(floors):.1f} loadavg={load:.2f} "
        f"doc_full_token_ratio={med('full_ratio', long_docs):.3f} "
        f"changed_extract_ms={med('changed_ms', results):.1f} "
        f"app_changed_extract_ms={med('changed_ms', apps):.1f} "
        f"doc_full_coverage={cover('coverage', long_docs):.3f} "
        f"tool_extract_ms={med('tool_ms', results):.1f} app_tool_extract_ms={med('tool_ms', apps):.1f} "
        f"look_share={session_looks[0] / max(1, sum(session_looks)):.3f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
