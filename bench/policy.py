"""The destructive-action classifier: accuracy on the frozen split and speed of `main.py policy-check`.

Peer in the same run: the first release's phrase-list classifier (`policy.js` at FIRST_RELEASE, read
from git history), on the same lines. With an LLM configured (LLM_* in the environment or .env), the
lines the rules call ambiguous also go to the judge (`policy-check --judge`) and its recall is shown.

Judge calls per observed action: on ordinary pages (the test bed's shop, wiki, search, contact and
user-list pages, and the documentation pages of bench/observation.py that are installed), every
button, link and menu item of the observation is checked as the pre-flight would check a click on it;
the share that would go to the judge is what a model clicking around such pages would cost in judge
calls (the judge's verdicts are cached per origin and element, so this is an upper bound).

Also the held-out corpus (tests/policy/heldout.jsonl: kinds written apart from the rules, by someone
who did not see them) and, per language and category, the frozen split.

Usage: uv run python bench/policy.py
The last line is the summary others script against:
policy_lines=... policy_seconds=... recall=... fpr=... first_release_recall=... first_release_fpr=...
judge_recall=...|none judge_fpr=...|none heldout_recall=... heldout_fpr=... heldout_routed=...
judge_per_action=...
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from browser_copilot.config import load_settings  # noqa: E402
from browser_copilot.safety.classifier import _RUNNER  # noqa: E402

FIRST_RELEASE = "29458e7"
POLICY = ROOT / "tests" / "policy"
ORDINARY = [
    "outline-shop.html",
    "outline-wiki.html",
    "outline-contact.html",
    "outline-users.html",
    "outline-review.html",
    "shop.html",
    "search.html",
    "results.html",
    "long.html",
    "index.html",
]
"""Test-bed pages of ordinary browsing (the others are built to hold actions)."""
ACTION_ROLES = {"button", "link", "menuitem", "tab"}


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def policy_check(lines: list[str], *extra: str) -> tuple[list[dict[str, Any]], float]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "policy-check", *extra],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return [json.loads(v) for v in done.stdout.splitlines()], time.perf_counter() - started


def first_release(lines: list[str]) -> list[dict[str, Any]] | None:
    """The first release's classifier on the same lines (None without git history)."""
    git, node = shutil.which("git"), shutil.which("node")
    if git is None or node is None:
        return None
    shown = subprocess.run(
        [git, "show", f"{FIRST_RELEASE}:src/browser_copilot/safety/policy.js"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    if shown.returncode != 0:
        return None
    source = "\n".join(line for line in shown.stdout.splitlines() if not line.lstrip().startswith("//"))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "policy.js"
        path.write_text(source, "utf-8")
        done = subprocess.run(
            [node, "-e", _RUNNER, str(path)], input="\n".join(lines) + "\n", capture_output=True, text=True
        )
    return [json.loads(v) for v in done.stdout.splitlines()] if done.returncode == 0 else None


def rates(cases: list[dict[str, Any]], verdicts: list[dict[str, Any]]) -> tuple[float, float]:
    pairs = list(zip(cases, verdicts, strict=True))
    positives = [v for c, v in pairs if c["expect"]["destructive"]]
    negatives = [v for c, v in pairs if not c["expect"]["destructive"]]
    return (
        sum(v["destructive"] for v in positives) / len(positives),
        sum(v["destructive"] for v in negatives) / len(negatives),
    )


def routed(cases: list[dict[str, Any]], verdicts: list[dict[str, Any]]) -> float:
    """Of the destructive targets, the share the rules hold or send to the judge."""
    positives = [v for c, v in zip(cases, verdicts, strict=True) if c["expect"]["destructive"]]
    return sum(bool(v["destructive"] or v.get("judge")) for v in positives) / max(1, len(positives))


def with_judge_flags(lines: list[str]) -> list[dict[str, Any]]:
    """The classifier's whole verdicts (policy-check prints only its stable fields)."""
    from browser_copilot.safety.classifier import classify_lines

    return [json.loads(v) for v in classify_lines(lines)]


def breakdown(cases: list[dict[str, Any]], verdicts: list[dict[str, Any]], key: str) -> list[str]:
    """Recall and false-positive rate per value of `key` (language, or the expected category)."""
    groups: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for case, verdict in zip(cases, verdicts, strict=True):
        value = case["expect"]["category"] if key == "category" else str(case.get(key))
        groups.setdefault(value, []).append((case, verdict))
    out = []
    for value, pairs in sorted(groups.items()):
        pos = [v for c, v in pairs if c["expect"]["destructive"]]
        neg = [v for c, v in pairs if not c["expect"]["destructive"]]
        recall = f"{sum(v['destructive'] for v in pos) / len(pos):.2f}" if pos else "  - "
        fpr = f"{sum(v['destructive'] for v in neg) / len(neg):.2f}" if neg else "  - "
        out.append(f"{value:<10} {len(pairs):>4} {recall:>6} {fpr:>6}")
    return out


async def judge_per_action() -> tuple[int, int, list[str]]:
    """Observed actions on ordinary pages, and how many of them the pre-flight would send to the judge."""
    from browser_copilot.browser.guarded import guarded_code, verdicts_code
    from browser_copilot.browser.observing import observe
    from observation import corpus, served

    roots, pages, _ = corpus(None)
    pages = [p for p in pages if p[0] != "testbed" or p[2] in ORDINARY]
    actions = judged = 0
    lines: list[str] = []
    async with served(roots, "bc-bench-policy-") as (base, session):
        for _package, key, page in pages:
            await session.goto(f"{base}/{key}/{page}")
            observation = await observe(session, full=True)
            numbers = [e.n for e in observation.elements if e.role in ACTION_ROLES]
            if not numbers:
                continue
            # What a press on each would be judged (the guard's verdicts; no input is sent).
            await session.run_code(guarded_code("async (page) => null"))  # the guard runtime is in
            result = await session.run_code(verdicts_code(numbers), idempotent=True)
            checks = [
                c
                for c in (result.value if result.ok and isinstance(result.value, list) else [])
                if c["verdict"]
            ]
            asked = [c for c in checks if c["verdict"].get("judge")]
            actions += len(numbers)
            judged += len(asked)
            names = ", ".join(sorted({str(c["facts"].get("name"))[:24] for c in asked}))[:80]
            lines.append(f"{page[:28]:<28} {len(numbers):>7} {len(asked):>6}  {names}")
    return actions, judged, lines


def main() -> int:
    frozen = load(POLICY / "frozen.jsonl")
    lines = [json.dumps(c, ensure_ascii=False) for c in frozen]
    verdicts, _ = policy_check(lines)
    recall, fpr = rates(frozen, verdicts)
    everything = [json.dumps(c, ensure_ascii=False) for c in load(POLICY / "train.jsonl") + frozen]
    thousand = (everything * 2)[:1000]
    policy_check(thousand)  # warm the file cache
    _, seconds = policy_check(thousand)
    old = first_release(lines)
    old_recall, old_fpr = rates(frozen, old) if old is not None else (float("nan"), float("nan"))
    judge = "none"
    judge_fpr = "none"
    settings = load_settings(ROOT / ".env" if (ROOT / ".env").is_file() else None)
    if settings.llm_configured and os.environ.get("BENCH_JUDGE", "1") != "0":
        judged, _ = policy_check(lines, "--judge")
        j_recall, j_fpr = rates(frozen, judged)
        judge, judge_fpr = f"{j_recall:.3f}", f"{j_fpr:.3f}"
    heldout_path = POLICY / "heldout.jsonl"
    held = load(heldout_path) if heldout_path.is_file() else []
    held_verdicts = with_judge_flags([json.dumps(c, ensure_ascii=False) for c in held]) if held else []
    h_recall, h_fpr = rates(held, held_verdicts) if held else (float("nan"), float("nan"))
    h_routed = routed(held, held_verdicts) if held else float("nan")
    frozen_full = with_judge_flags(lines)
    actions, judged, page_lines = asyncio.run(judge_per_action())
    languages = len({c["lang"] for c in frozen})
    print(f"Destructive-action classifier on the frozen split: {len(frozen)} targets, {languages} languages")
    print(f"{'classifier':<42} {'recall':>7} {'fpr':>7}")
    print(f"{'rules (this release)':<42} {recall:>7.3f} {fpr:>7.3f}")
    print(f"{'first release phrase list (' + FIRST_RELEASE + ')':<42} {old_recall:>7.3f} {old_fpr:>7.3f}")
    print(f"{'rules + judge (configured model)':<42} {judge:>7} {judge_fpr:>7}")
    print(f"{'frozen: held or sent to the judge':<42} {routed(frozen, frozen_full):>7.3f}")
    if held:
        languages_held = len({c["lang"] for c in held})
        print(f"\nHeld-out kinds (tests/policy/heldout.jsonl): {len(held)} targets, {languages_held} langs")
        print(f"{'rules alone':<42} {h_recall:>7.3f} {h_fpr:>7.3f}")
        print(f"{'held or sent to the judge':<42} {h_routed:>7.3f}")
        print(f"{'kind':<28} {'n':>4} {'recall':>6} {'fpr':>6}")
        for row in breakdown(held, held_verdicts, "kind"):
            print(row)
    print("\nFrozen split per language (n, recall, fpr):")
    per_language = breakdown(frozen, frozen_full, "lang")
    for start in range(0, len(per_language), 3):
        print("   ".join(per_language[start : start + 3]))
    print("\nFrozen split per category (n, recall, fpr):")
    for row in breakdown(frozen, frozen_full, "category"):
        print(row)
    print(f"\nJudge calls per observed action on ordinary pages: {judged} of {actions}")
    print(f"{'page':<28} {'actions':>7} {'judge':>6}  names sent to the judge")
    for row in page_lines:
        print(row)
    per_action = judged / max(1, actions)
    print(f"policy-check: 1000 lines in {seconds:.2f} s (Python and Node start included)")
    print(
        f"policy_lines=1000 policy_seconds={seconds:.2f} recall={recall:.3f} fpr={fpr:.3f} "
        f"first_release_recall={old_recall:.3f} first_release_fpr={old_fpr:.3f} "
        f"judge_recall={judge} judge_fpr={judge_fpr} heldout_recall={h_recall:.3f} heldout_fpr={h_fpr:.3f} "
        f"heldout_routed={h_routed:.3f} judge_per_action={per_action:.3f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
