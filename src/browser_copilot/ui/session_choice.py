"""Which session a `run` (or `run --detach`) works in: the one named, the last one for a bare "continue",
else a new one. Light to import: `run --detach` only queues a job."""

from __future__ import annotations

import re
from typing import Literal

from browser_copilot.agent.storage import last_session
from browser_copilot.agent.turns import new_session_id
from browser_copilot.config import Settings
from browser_copilot.errors import ConfigError

CONTINUE_WORDS = frozenset(
    {
        "continue",
        "go on",
        "resume",
        "keep going",
        "carry on",
        "proceed",
        "продолжай",
        "продолжить",
        "продолжи",
        "дальше",
    }
)
"""A task that is only one of these continues the last session when no `--session` is given."""


def is_continue(task: str) -> bool:
    return " ".join(re.sub(r"[^\w\s]", " ", task.casefold()).split()) in CONTINUE_WORDS


async def choose_session(
    settings: Settings, task: str, session: str | None
) -> tuple[str, Literal["new", "given", "last"]]:
    """The session to run in: `--session`, else the last one for a bare "continue", else a new one.
    Raises `ConfigError` for "continue" with no earlier session."""
    if session:
        return session, "given"
    if is_continue(task):
        last = await last_session(settings)
        if last is None:
            raise ConfigError(
                [
                    f"Nothing to continue: there is no earlier session in {settings.data_dir}. "
                    'Fix: give the task itself, e.g. main.py run "find the cheapest flight to Oslo".'
                ]
            )
        return last, "last"
    return new_session_id(), "new"
