"""The JavaScript files the app sends to the browser or runs in Node, without their `//` comment lines."""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path


@cache
def script_source(package: str, name: str) -> str:
    """`name` from `package` (e.g. "browser_copilot.safety", "guard.js"), comment lines dropped."""
    source = resources.files(package).joinpath(name).read_text("utf-8")
    return "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("//")).strip()


def project_root() -> Path:
    """The folder holding `package.json` and `node_modules` (a source checkout's top level)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "package.json").is_file():
            return parent
    return Path.cwd()
