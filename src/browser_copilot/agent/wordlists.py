"""Word lists of the app's own checks, as data (`plan_words.json`, `outcome_words.json`), compiled once.

A list is `{"spaced": {language: [words]}, "unspaced": [words]}`: spaced words match whole words from
their start (a `*` at the end also matches what continues the word, a space any run of spaces);
unspaced ones, for scripts written without spaces, match anywhere."""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any


@cache
def _file(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(resources.files(__package__).joinpath(name).read_text("utf-8"))
    return data


def _word(w: str) -> str:
    stem = re.escape(w.removesuffix("*")).replace(r"\ ", r"\s+")
    return stem + (r"\w*" if w.endswith("*") else "")


@cache
def word_pattern(name: str, section: str | None = None) -> re.Pattern[str]:
    """The words of `name` (or of its `section`) in every language, as one case-blind pattern."""
    data = _file(name)
    words = data[section] if section else data
    spaced = "|".join(_word(w) for listed in words["spaced"].values() for w in listed)
    unspaced = "|".join(re.escape(w) for w in words["unspaced"])
    return re.compile(rf"(?<!\w)(?:{spaced})(?!\w)|{unspaced}", re.IGNORECASE)
