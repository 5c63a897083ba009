"""The labelled secrets corpus (`tests/data/secrets/corpus.json`): every secret shape vanishes from what
its reader passes on (the chat: `mask_secrets`; pages and code results: `mask_for_model`), and every
harmless look-alike comes back unchanged. The counts per kind and language are printed (`pytest -s`)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from browser_copilot.safety.redaction import mask_for_model, mask_secrets

CORPUS: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data" / "secrets" / "corpus.json").read_text(encoding="utf-8")
)
SECRETS: list[dict[str, Any]] = CORPUS["secrets"]
LOOKALIKES: list[dict[str, Any]] = CORPUS["lookalikes"]
READERS: dict[str, Callable[[str], str]] = {
    "chat": lambda text: mask_secrets(text)[0],
    "page": mask_for_model,
}


def leaked(entry: dict[str, Any]) -> list[str]:
    masked = READERS[entry["where"]](entry["text"])
    return [secret for secret in entry["secrets"] if secret in masked]


def test_the_corpus_is_large_and_multilingual_enough() -> None:
    assert len(SECRETS) >= 60
    assert len(LOOKALIKES) >= 60
    assert len({e["lang"] for e in SECRETS + LOOKALIKES}) >= 6
    assert {e["where"] for e in SECRETS} == {"chat", "page"} == {e["where"] for e in LOOKALIKES}
    for entry in SECRETS:
        assert entry["secrets"], entry
        assert all(secret in entry["text"] for secret in entry["secrets"]), entry


@pytest.mark.parametrize("entry", SECRETS, ids=lambda e: f"{e['lang']}-{e['where']}-{e['kind']}")
def test_a_secret_shape_never_reaches_its_reader(entry: dict[str, Any]) -> None:
    assert leaked(entry) == [], READERS[entry["where"]](entry["text"])


@pytest.mark.parametrize("entry", LOOKALIKES, ids=lambda e: f"{e['lang']}-{e['where']}-{e['like']}")
def test_a_harmless_look_alike_comes_back_unchanged(entry: dict[str, Any]) -> None:
    assert READERS[entry["where"]](entry["text"]) == entry["text"]
    if entry["where"] == "chat":
        assert mask_secrets(entry["text"])[1] == []


def test_the_counts_by_kind_and_language() -> None:
    caught = Counter(e["kind"] for e in SECRETS if not leaked(e))
    kinds = Counter(e["kind"] for e in SECRETS)
    passed = Counter(e["lang"] for e in LOOKALIKES if READERS[e["where"]](e["text"]) == e["text"])
    languages = Counter(e["lang"] for e in LOOKALIKES)
    lines = [f"  {kind}: {caught[kind]}/{total}" for kind, total in sorted(kinds.items())]
    lines += [f"  look-alikes {lang}: {passed[lang]}/{total}" for lang, total in sorted(languages.items())]
    summary = (
        f"secrets caught {sum(caught.values())}/{len(SECRETS)}, "
        f"look-alikes unchanged {sum(passed.values())}/{len(LOOKALIKES)}, "
        f"languages {sorted({e['lang'] for e in SECRETS + LOOKALIKES})}"
    )
    print("\n".join(["", summary, *lines]))  # noqa: T201 - the numbers to report
    assert caught == kinds
    assert passed == languages
