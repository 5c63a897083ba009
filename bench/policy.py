"""The destructive-action classifier: accuracy on the frozen split and speed of `main.py policy-check`.

Peer in the same run: the first release's phrase-list classifier (`policy.js` at FIRST_RELEASE, read
from git history), on the same lines. With an LLM configured (LLM_* in the environment or .env), the
lines the rules call ambiguous also go to the judge (`policy-check --judge`) and its recall is shown.

Usage: uv run python bench/policy.py
The last line is the summary others script against:
policy_lines=... policy_seconds=... recall=... fpr=... first_release_recall=... first_release_fpr=...
judge_recall=...|none judge_fpr=...|none
"""

from __future__ import annotations

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
    languages = len({c["lang"] for c in frozen})
    print(f"Destructive-action classifier on the frozen split: {len(frozen)} targets, {languages} languages")
    print(f"{'classifier':<42} {'recall':>7} {'fpr':>7}")
    print(f"{'rules (this release)':<42} {recall:>7.3f} {fpr:>7.3f}")
    print(f"{'first release phrase list (' + FIRST_RELEASE + ')':<42} {old_recall:>7.3f} {old_fpr:>7.3f}")
    print(f"{'rules + judge (configured model)':<42} {judge:>7} {judge_fpr:>7}")
    print(f"policy-check: 1000 lines in {seconds:.2f} s (Python and Node start included)")
    print(
        f"policy_lines=1000 policy_seconds={seconds:.2f} recall={recall:.3f} fpr={fpr:.3f} "
        f"first_release_recall={old_recall:.3f} first_release_fpr={old_fpr:.3f} "
        f"judge_recall={judge} judge_fpr={judge_fpr}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
