"""Reading the user's lines: readline editing and persistent history on a terminal, plain lines from
a pipe. Reading happens on a daemon thread so the event loop keeps handling Ctrl+C and SIGTERM.

A line ending in a backslash continues on the next line; a multi-line paste arrives as one message
when the terminal supports bracketed paste (readline's default)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from pathlib import Path

from browser_copilot.safety.redaction import Asked, find_secrets

try:
    import readline
except ImportError:  # Windows without pyreadline: no editing, still works
    readline = None  # type: ignore[assignment]

HISTORY_LENGTH = 1000


def _drop_from_history(count: int) -> None:
    """Take the last `count` lines out of readline's history."""
    if readline is None:
        return
    for _ in range(count):
        length = readline.get_current_history_length()
        if length:
            readline.remove_history_item(length - 1)


class LineReader:
    def __init__(self, loop: asyncio.AbstractEventLoop, *, history: Path | None, prompt: str) -> None:
        self._loop = loop
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._wanted = threading.Event()
        self._asked: Asked | None = None
        self.prompt = prompt
        self.interactive = sys.stdin.isatty()
        self.history = history
        if self.interactive and readline is not None and history is not None:
            with contextlib.suppress(OSError):
                readline.read_history_file(history)
            readline.set_history_length(HISTORY_LENGTH)
        threading.Thread(target=self._pump, name="stdin", daemon=True).start()

    def _read_one(self) -> str:
        if self.interactive:
            return input(self.prompt)
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        return line.rstrip("\r\n")

    def _pump(self) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            parts: list[str] = []
            try:
                line = self._read_one()
                while line.endswith("\\"):
                    parts.append(line[:-1])
                    line = self._read_one() if not self.interactive else input("… ")
                parts.append(line)
            except (EOFError, OSError):
                self._loop.call_soon_threadsafe(self._queue.put_nowait, None)
                return
            if self.interactive and find_secrets("\n".join(parts), self._asked):
                _drop_from_history(len(parts))  # a password typed here never reaches the history file
            self._loop.call_soon_threadsafe(self._queue.put_nowait, "\n".join(parts))

    async def read(self, asked: Asked | None = None) -> str | None:
        """The next message; None at end of input (Ctrl+D). `asked`: the secret the message would answer
        (the agent asked for a code...): such an answer, like any secret, stays out of the history."""
        self._asked = asked
        self._wanted.set()
        return await self._queue.get()

    def save_history(self) -> None:
        if self.interactive and readline is not None and self.history is not None:
            with contextlib.suppress(OSError):
                self.history.parent.mkdir(parents=True, exist_ok=True)
                readline.write_history_file(self.history)
