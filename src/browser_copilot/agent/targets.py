"""What an action aims at, as words (for loop detection and cards), and whether it acts at all.

Whether an action is destructive is decided by the classifier (safety/policy.js) from the DOM facts
of its targets, before the code runs and again inside the page while it runs (sandbox/guard.js)."""

from __future__ import annotations

import re

from browser_copilot.agent.state import ObservationState
from browser_copilot.browser.guarded import targets

_ACTION = re.compile(
    r"\.(click|dblclick|tap|press|check|uncheck|submit|requestSubmit|dispatchEvent|setChecked|"
    r"selectOption|dragTo|fill|type|pressSequentially|setInputFiles|goto|goBack|goForward|reload)\s*\(|"
    r"mouse\.(click|down|up|wheel)|keyboard\.(press|down|type|insertText)"
)
_LITERAL = re.compile(r"'([^'\\\n]{1,80})'|\"([^\"\\\n]{1,80})\"|`([^`\\\n$]{1,80})`")


def is_acting(code: str) -> bool:
    """Whether code changes the page (clicks, typing, navigation); reading alone does not."""
    return bool(_ACTION.search(code))


def describe_target(
    code: str, observation: ObservationState | None, made: list[list[str]] | None = None
) -> str:
    """A stable description of what an action aims at (never element numbers, which change). `made`:
    the inputs the call really made, as the guard saw their elements ([input, role, name]); then the
    description is theirs (with the addresses the code opened), not read from the code's text."""
    if made:
        pieces = list(
            dict.fromkeys(f'{role} "{name}"' if role else f'"{name}"' for _, role, name in made if name)
        )
        urls = [
            m
            for m in (next(g for g in m if g) for m in _LITERAL.findall(code) if any(m))
            if m.startswith("http")
        ]
        if pieces:
            return "; ".join([*pieces, *urls[:1]])
    numbers, names = targets(code)
    elements = {e["n"]: e for e in (observation["elements"] if observation else [])}
    described = [f'{elements[n]["role"]} "{elements[n]["name"]}"' for n in numbers if n in elements]
    described += [f'"{name}"' for name in names]
    if described:
        return "; ".join(described)
    literals = [next(g for g in m if g) for m in _LITERAL.findall(code) if any(m)]
    return "; ".join(literals[:2]) or " ".join(code.split())[:80]
