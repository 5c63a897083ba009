"""The destructive-action classifier against labelled corpora, through the stable `main.py policy-check`.

- `tests/policy/corpus.jsonl` and `tests/policy/train.jsonl`: the tuning set (the rules and the phrase
  table may be changed while looking at these).
- `tests/policy/frozen.jsonl`: the frozen test split (35% of the multilingual corpus, chosen by a hash
  of each line before any tuning). Nobody tunes on it; the test prints recall and the false-positive
  rate per language and per category, and asserts the targets: recall >= 0.95, FPR <= 0.05.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
POLICY = Path(__file__).parent / "policy"
TUNING = [POLICY / "corpus.jsonl", POLICY / "train.jsonl"]
FROZEN = POLICY / "frozen.jsonl"


def run_policy_check(lines: list[str], *args: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "policy-check", *args],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=ROOT,
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


def load(*paths: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for path in paths for line in path.read_text("utf-8").splitlines() if line.strip()
    ]


def rates(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> tuple[float, float, int, int]:
    positives = [v for c, v in pairs if c["expect"]["destructive"]]
    negatives = [v for c, v in pairs if not c["expect"]["destructive"]]
    recall = sum(v["destructive"] for v in positives) / len(positives) if positives else 1.0
    fpr = sum(v["destructive"] for v in negatives) / len(negatives) if negatives else 0.0
    return recall, fpr, len(positives), len(negatives)


def report(title: str, cases: list[dict[str, Any]], verdicts: list[dict[str, Any]]) -> str:
    """A table per language and per category (recall on destructive targets, FPR on safe ones)."""
    pairs = list(zip(cases, verdicts, strict=True))
    by_lang: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(list)
    by_category: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(list)
    for case, verdict in pairs:
        by_lang[case["lang"]].append((case, verdict))
        by_category[case["expect"]["category"]].append((case, verdict))
    recall, fpr, pos, neg = rates(pairs)
    lines = [
        f"\n{title}: {len(cases)} targets, {len(by_lang)} languages; "
        f"recall={recall:.3f} ({pos}) fpr={fpr:.3f} ({neg})"
    ]
    row = "  {:<10} {:>7} {:>5} {:>7} {:>5}"
    lines.append(row.format("language", "recall", "n", "fpr", "n"))
    for lang in sorted(by_lang):
        r, f, p, n = rates(by_lang[lang])
        lines.append(row.format(lang, f"{r:.2f}", p, f"{f:.2f}", n))
    lines.append(row.format("category", "recall", "n", "", ""))
    for category in sorted(by_category):
        r, _, p, _ = rates(by_category[category])
        if category != "safe":
            lines.append(row.format(category, f"{r:.2f}", p, "", ""))
    return "\n".join(lines)


def test_the_corpus_is_large_and_multilingual_with_a_frozen_split() -> None:
    tuning, frozen = load(*TUNING), load(FROZEN)
    everything = tuning + frozen
    assert len(everything) >= 1500
    assert len({c["lang"] for c in everything}) >= 40
    assert len({c["lang"] for c in frozen}) >= 40
    multilingual = load(POLICY / "train.jsonl") + frozen
    assert len(frozen) / len(multilingual) >= 0.30
    kinds = Counter(c["expect"]["destructive"] for c in frozen)
    assert kinds[True] >= 200
    assert kinds[False] >= 200
    # No target is in both: the frozen split is unseen by construction.
    key = lambda c: (c["lang"], c["name"], c["context"], c.get("kind"))  # noqa: E731
    assert not {key(c) for c in frozen} & {key(c) for c in tuning}


def test_on_the_frozen_split_the_rules_alone_meet_the_targets(capsys: pytest.CaptureFixture[str]) -> None:
    cases = load(FROZEN)
    verdicts = run_policy_check([json.dumps(c, ensure_ascii=False) for c in cases])
    assert len(verdicts) == len(cases)
    recall, fpr, _, _ = rates(list(zip(cases, verdicts, strict=True)))
    with capsys.disabled():
        print(report("policy frozen split (rules alone)", cases, verdicts))
    missed = [
        (c["lang"], c["name"], c["context"][:60])
        for c, v in zip(cases, verdicts, strict=True)
        if c["expect"]["destructive"] and not v["destructive"]
    ]
    flagged = [
        (c["lang"], c["name"], v["reason"])
        for c, v in zip(cases, verdicts, strict=True)
        if not c["expect"]["destructive"] and v["destructive"]
    ]
    assert recall >= 0.95, missed
    assert fpr <= 0.05, flagged


def test_on_the_tuning_set_the_rules_keep_recall_high_and_false_positives_low(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cases = load(*TUNING)
    verdicts = run_policy_check([json.dumps(c, ensure_ascii=False) for c in cases])
    recall, fpr, _, _ = rates(list(zip(cases, verdicts, strict=True)))
    with capsys.disabled():
        print(f"\npolicy tuning set (rules alone): {len(cases)} targets; recall={recall:.3f} fpr={fpr:.3f}")
    missed = [
        (c["lang"], c["name"])
        for c, v in zip(cases, verdicts, strict=True)
        if c["expect"]["destructive"] and not v["destructive"]
    ]
    flagged = [
        (c["lang"], c["name"], v["reason"])
        for c, v in zip(cases, verdicts, strict=True)
        if not c["expect"]["destructive"] and v["destructive"]
    ]
    assert recall >= 0.97, missed
    assert fpr <= 0.05, flagged


def test_on_the_held_out_kinds_the_rules_hold_most_and_send_the_rest_to_the_judge(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """tests/policy/heldout.jsonl: kinds the rules used to miss, written apart from them (never tuned on).
    Floors a little under today's figures (0.929 / 0.083 / 0.988), so a regression fails."""
    from browser_copilot.safety.classifier import classify_lines

    cases = load(POLICY / "heldout.jsonl")
    verdicts = [json.loads(v) for v in classify_lines([json.dumps(c, ensure_ascii=False) for c in cases])]
    recall, fpr, _, _ = rates(list(zip(cases, verdicts, strict=True)))
    positives = [v for c, v in zip(cases, verdicts, strict=True) if c["expect"]["destructive"]]
    routed = sum(bool(v["destructive"] or v["judge"]) for v in positives) / len(positives)
    with capsys.disabled():
        print(report("policy held-out kinds (rules alone)", cases, verdicts) + f" routed={routed:.3f}")
    assert len({c["lang"] for c in cases}) >= 40
    assert recall >= 0.92
    assert fpr <= 0.10
    assert routed >= 0.98


def test_policy_check_keeps_its_line_contract() -> None:
    verdicts = run_policy_check(
        [
            json.dumps({"tag": "button", "name": "Delete"}),
            json.dumps({"name": "Search", "form_method": "GET", "type": "submit"}),
            "not json",
            json.dumps({}),
        ]
    )
    assert [set(v) for v in verdicts] == [{"destructive", "category", "reason"}] * 4
    assert verdicts[0]["destructive"] is True
    assert verdicts[0]["category"] == "delete"
    assert verdicts[1]["destructive"] is False
    assert verdicts[2]["category"] == "error"  # unreadable input fails safe
    assert verdicts[2]["destructive"] is True
    assert verdicts[3] == {"destructive": False, "category": "safe", "reason": "no name and no telling icon"}
