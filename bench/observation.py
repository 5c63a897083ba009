"""Observation size, speed and coverage against @playwright/mcp's own `browser_snapshot`.

For each page of the test bed and of real documentation from Debian packages (python3-doc,
postgresql-doc-15, sqlite3-doc, cppreference-doc-en-html, python-django-doc, apache2-doc,
libjs-jquery-ui-docs), served on 127.0.0.1, in one run and one browser:
  tokens     exact o200k tokens of what the model reads: our observation message (default, viewport
             mode) vs the text `browser_snapshot` returns for the same page
  ms         our extraction (one code call) vs `browser_snapshot`, medians of 3
  coverage   share of the page's interactive elements in Playwright's aria snapshot (whole page) that
             our whole-page observation lists, matched by role and name
  actionable share of the numbers we list (default mode) whose `el(N)` resolves to one visible element
  fidelity   share of the page's visible sentences (its innerText split into lines, table cells and
             sentences) that appear whole in our whole-page observation ("sent"), and share of its
             numbers (tokens with a digit: prices, dates, totals) that appear there ("nums")

Usage: uv run python bench/observation.py [--only testbed|docs]
Missing documentation packages are skipped with a note (`apt-get install` them for the full corpus).
The last line is the summary others script against:
median_token_ratio=... coverage=... actionable=... median_extract_ms=... median_tokens=...
fidelity_sentences=... fidelity_numbers=...
(fidelity pooled over all pages' sentences and numbers; median_tokens: our default observation)
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import threading
import time
from collections import Counter
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from browser_copilot.agent.conversation import observation_message, to_state  # noqa: E402
from browser_copilot.browser.observation import Observation, observe, wrap_model_code  # noqa: E402
from browser_copilot.browser.session import BrowserSession  # noqa: E402
from browser_copilot.config import load_settings  # noqa: E402
from browser_copilot.llm.tokens import count_tokens  # noqa: E402
from common import bench_browser  # noqa: E402

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


def coverage(aria: list[tuple[str, str]], ours: Observation) -> float:
    if not aria:
        return 1.0
    pool = Counter((our_role(e.role), norm(e.name)) for e in ours.elements)
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
    result = await session.run_code(wrap_model_code(code, frames), idempotent=True)
    values = result.value if result.ok and isinstance(result.value, list) else []
    return sum(1 for v in values if v) / len(numbers)


async def snapshot(session: BrowserSession) -> tuple[str, float]:
    assert session.mcp is not None
    started = time.perf_counter()
    text, _ = await session.mcp.call("browser_snapshot", {})
    return text, (time.perf_counter() - started) * 1000


async def measure(session: BrowserSession, url: str) -> dict[str, Any]:
    await session.goto(url)
    ours_ms, peer_ms = [], []
    observation = None
    for _ in range(3):
        observation = await observe(session)
        ours_ms.append(observation.extract_ms)
        peer_text, elapsed = await snapshot(session)
        peer_ms.append(elapsed)
    assert observation is not None
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
    return {
        "ours_tokens": ours_tokens,
        "peer_tokens": peer_tokens,
        "full_tokens": full_tokens,
        "ratio": ours_tokens / max(1, peer_tokens),
        "coverage": coverage(aria_elements(peer_text), full),
        "actionable": act,
        "ours_ms": statistics.median(ours_ms),
        "peer_ms": statistics.median(peer_ms),
        "elements": len(view.elements),
        "aria": len(aria_elements(peer_text)),
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


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", choices=["testbed", "docs"])
    args = parser.parse_args()
    roots, pages, skipped = corpus(args.only)
    MultiRoot.roots = roots
    server = ThreadingHTTPServer(("127.0.0.1", 0), MultiRoot)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    rows: list[tuple[str, str, dict[str, Any]]] = []
    try:
        with bench_browser("bc-bench-obs-") as (browser, work):
            settings = load_settings(
                None, data_dir=work / "data", cdp_endpoint=browser.endpoint.url, browser_auto_launch=False
            )
            async with BrowserSession(settings) as session:
                for package, key, page in pages:
                    rows.append((package, page, await measure(session, f"{base}/{key}/{page}")))
    finally:
        server.shutdown()

    header = (
        f"{'source':<26} {'page':<28} {'snapshot':>8} {'ours':>5} {'ratio':>6} {'full':>5} "
        f"{'cover':>6} {'act':>5} {'ours ms':>8} {'snap ms':>8} {'sent':>5} {'nums':>5}"
    )
    print(header)
    print("-" * len(header))
    for package, page, r in rows:
        print(
            f"{package:<26} {page[:28]:<28} {r['peer_tokens']:>8} {r['ours_tokens']:>5} {r['ratio']:>6.3f} "
            f"{r['full_tokens']:>5} {r['coverage']:>6.3f} {r['actionable']:>5.2f} {r['ours_ms']:>8.1f} "
            f"{r['peer_ms']:>8.1f} {r['sent']:>5.2f} {r['nums']:>5.2f}"
        )
    if skipped:
        print(f"skipped (not installed): {', '.join(skipped)}")

    def med(key: str, subset: list[dict[str, Any]]) -> float:
        return statistics.median(r[key] for r in subset)

    results = [r for _, _, r in rows]
    docs = [r for package, _, r in rows if package != "testbed"]
    bed = [r for package, _, r in rows if package == "testbed"]

    def pooled(found: str, total: str, subset: list[dict[str, Any]]) -> float:
        return sum(r[found] for r in subset) / max(1, sum(r[total] for r in subset))

    for label, subset in (("test bed", bed), ("documentation", docs)):
        if subset:
            print(
                f"{label}: {len(subset)} pages, median token ratio {med('ratio', subset):.3f}, "
                f"median tokens {med('ours_tokens', subset):.0f}, "
                f"coverage {statistics.mean(r['coverage'] for r in subset):.3f}, "
                f"fidelity sentences {pooled('sent_found', 'sent_total', subset):.3f} "
                f"numbers {pooled('num_found', 'num_total', subset):.3f}, "
                f"median extraction {med('ours_ms', subset):.1f} ms "
                f"vs snapshot {med('peer_ms', subset):.1f} ms"
            )
    cover = sum(r["coverage"] * r["aria"] for r in results) / max(1, sum(r["aria"] for r in results))
    act = sum(r["actionable"] * r["elements"] for r in results) / max(1, sum(r["elements"] for r in results))
    print(
        f"median_token_ratio={med('ratio', results):.3f} coverage={cover:.3f} actionable={act:.2f} "
        f"median_extract_ms={med('ours_ms', results):.1f} median_tokens={med('ours_tokens', results):.0f} "
        f"fidelity_sentences={pooled('sent_found', 'sent_total', results):.3f} "
        f"fidelity_numbers={pooled('num_found', 'num_total', results):.3f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
