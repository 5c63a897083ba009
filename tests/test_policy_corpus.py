"""The destructive-action classifier against a labelled corpus (14 languages), through the stable
`main.py policy-check` interface. Prints recall on destructive targets and the false-positive rate."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).parent / "policy" / "corpus.jsonl"


def run_policy_check(lines: list[str]) -> list[dict[str, object]]:
    done = subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "policy-check"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=ROOT,
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_the_corpus_is_large_and_multilingual() -> None:
    cases = [json.loads(line) for line in CORPUS.read_text().splitlines()]
    assert len(cases) >= 300
    assert len({c["lang"] for c in cases}) >= 14
    kinds = Counter(c["expect"]["destructive"] for c in cases)
    assert kinds[True] >= 100
    assert kinds[False] >= 100


def test_recall_and_false_positive_rate_meet_the_targets(capsys: pytest.CaptureFixture[str]) -> None:
    lines = CORPUS.read_text().splitlines()
    cases = [json.loads(line) for line in lines]
    verdicts = run_policy_check(lines)
    assert len(verdicts) == len(cases)
    positives = [(c, v) for c, v in zip(cases, verdicts, strict=True) if c["expect"]["destructive"]]
    negatives = [(c, v) for c, v in zip(cases, verdicts, strict=True) if not c["expect"]["destructive"]]
    recall = sum(1 for _, v in positives if v["destructive"]) / len(positives)
    fpr = sum(1 for _, v in negatives if v["destructive"]) / len(negatives)
    categories = sum(1 for c, v in positives if v["category"] == c["expect"]["category"]) / len(positives)
    with capsys.disabled():
        print(
            f"\npolicy corpus: {len(cases)} cases, {len({c['lang'] for c in cases})} languages; "
            f"recall={recall:.3f} false_positive_rate={fpr:.3f} category_accuracy={categories:.3f}"
        )
    missed = [
        (c["lang"], c["name"] or c["value"], c["context"]) for c, v in positives if not v["destructive"]
    ]
    flagged = [(c["lang"], c["name"] or c["value"], v["reason"]) for c, v in negatives if v["destructive"]]
    assert recall >= 0.99, missed
    assert fpr <= 0.05, flagged


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
