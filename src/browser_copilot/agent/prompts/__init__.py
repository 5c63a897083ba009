"""Prompt files composed into the system prompts (seed 001 §4); rendered by `render`.

`SYSTEM_PROMPT` = base + browser rules + Playwright patterns + error recovery;
`SYSTEM_PROMPT_COMPLEX` adds the examples (multi-step plans); `SYSTEM_PROMPT_MINIMAL` is base +
browser rules, used after many steps to save tokens. Tool descriptions come from `bind_tools`.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_VARIABLE = re.compile(r"\{\{(\w+)\}\}")


@cache
def load(name: str) -> str:
    return resources.files(__name__).joinpath(f"{name}.md").read_text("utf-8").strip()


def render(template: str, **values: object) -> str:
    """Fill `{{name}}` placeholders; a missing or unused value is an error, not a silent gap."""
    needed = set(_VARIABLE.findall(template))
    missing = needed - values.keys()
    if missing:
        raise KeyError(f"prompt variables missing: {sorted(missing)}")
    unused = values.keys() - needed
    if unused:
        raise KeyError(f"prompt variables not in the template: {sorted(unused)}")
    return _VARIABLE.sub(lambda m: str(values[m.group(1)]), template)


def _compose(*names: str) -> str:
    return "\n\n".join(load(name) for name in names)


SYSTEM_PROMPT = _compose("base", "browser_rules", "playwright_patterns", "error_recovery")
SYSTEM_PROMPT_COMPLEX = _compose("base", "browser_rules", "playwright_patterns", "error_recovery", "examples")
SYSTEM_PROMPT_MINIMAL = _compose("base", "browser_rules")
