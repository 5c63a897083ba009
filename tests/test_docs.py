"""The README and docs/ stay short, true and linked: every link, command and setting they name is real."""

from __future__ import annotations

import re
from pathlib import Path

from browser_copilot.cli import build_parser
from browser_copilot.config import Settings

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
CONFIGURATION = ROOT / "docs" / "configuration.md"

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
SUBCOMMAND = re.compile(r"main\.py ([a-z][a-z-]+)")
TABLE_SETTING = re.compile(r"^\|\s*`([A-Z][A-Z0-9_]+)`")


def _subcommands() -> set[str]:
    parser = build_parser()
    for action in parser._actions:
        choices = getattr(action, "choices", None)
        if isinstance(choices, dict):
            return set(choices)
    raise AssertionError("build_parser() has no subcommands")


def _settings_in_config() -> set[str]:
    return {name.upper() for name in Settings.model_fields}


def _settings_in_table() -> set[str]:
    names: set[str] = set()
    for line in CONFIGURATION.read_text(encoding="utf-8").splitlines():
        match = TABLE_SETTING.match(line)
        if match and match.group(1) != "Variable":
            names.add(match.group(1))
    return names


def _quick_start_block() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    return block.splitlines()[1:]


def test_the_readme_is_at_most_350_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 350, f"README.md has {len(lines)} lines; move reference to docs/"


def test_the_quick_start_block_has_exactly_two_commands() -> None:
    commands = [line for line in _quick_start_block() if line.strip() and not line.strip().startswith("#")]
    assert len(commands) == 2, commands


def test_every_relative_link_in_the_readme_and_docs_points_to_an_existing_file() -> None:
    broken: list[str] = []
    for doc in [README, *DOCS]:
        for target in LINK.findall(doc.read_text(encoding="utf-8")):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue
            path = target.split("#", 1)[0]
            if not (doc.parent / path).exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
    assert not broken, broken


def test_every_main_py_subcommand_named_in_the_docs_is_real() -> None:
    real = _subcommands()
    unknown: list[str] = []
    for doc in [README, *DOCS]:
        for name in SUBCOMMAND.findall(doc.read_text(encoding="utf-8")):
            if name not in real:
                unknown.append(f"{doc.relative_to(ROOT)}: main.py {name}")
    assert not unknown, f"{unknown}; real subcommands: {sorted(real)}"


def test_every_setting_in_the_configuration_table_exists_in_config_py() -> None:
    unknown = _settings_in_table() - _settings_in_config()
    assert not unknown, f"docs/configuration.md names settings config.py lacks: {sorted(unknown)}"


def test_every_setting_in_config_py_is_in_the_configuration_table() -> None:
    missing = _settings_in_config() - _settings_in_table()
    assert not missing, f"docs/configuration.md lacks settings of config.py: {sorted(missing)}"
