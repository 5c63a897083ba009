"""Reading the user's lines: readline editing, Tab completion of the slash commands and persistent
history on a terminal, plain lines from a pipe; and single key presses for one-key questions. Reading
happens on a daemon thread so the event loop keeps handling Ctrl+C and SIGTERM.

A line ending in a backslash continues on the next line; a multi-line paste arrives as one message
when the terminal supports bracketed paste (readline's default)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from browser_copilot.safety.redaction import Asked, find_secrets

try:
    import readline
except ImportError:  # Windows without pyreadline: no editing, still works
    readline = None  # type: ignore[assignment]

HISTORY_LENGTH = 1000
ESCAPE_SEQUENCE_WAIT = 0.05
"""After an Esc byte, how long the rest of an escape sequence (an arrow key) may take to arrive: Esc
pressed alone is followed by nothing."""


def complete_commands(commands: Sequence[str]) -> None:
    """Tab completes the slash commands (the first word of a line that starts with '/')."""
    if readline is None:
        return

    def complete(text: str, state: int) -> str | None:
        line = readline.get_line_buffer()
        if not line.startswith("/") or " " in line[: readline.get_begidx()]:
            return None
        matches = [c for c in commands if c.startswith(text)]
        return matches[state] if state < len(matches) else None

    readline.set_completer(complete)
    readline.set_completer_delims(" \t\n")
    if "libedit" in (readline.__doc__ or ""):  # macOS's readline
        readline.parse_and_bind("bind ^I rl_complete")
    else:
        readline.parse_and_bind("tab: complete")


def _key_name(data: bytes) -> str:
    """'enter', 'escape', 'ctrl-c', 'ctrl-d', 'other', or the character typed."""
    named = {b"\r": "enter", b"\n": "enter", b"\x1b": "escape", b"\x03": "ctrl-c", b"\x04": "ctrl-d"}
    if data in named:
        return named[data]
    if data.startswith(b"\x1b"):
        return "other"  # an arrow or function key
    text = data.decode("utf-8", errors="replace")
    return text if len(text) == 1 and text.isprintable() else "other"


def _read_key(fd: int) -> str:
    """One key press from the terminal `fd`, without echo and without waiting for Enter (Ctrl+C is
    read as a key, not a signal); the terminal's mode is restored after."""
    import termios

    saved = termios.tcgetattr(fd)
    raw = termios.tcgetattr(fd)
    raw[3] &= ~(termios.ICANON | termios.ECHO | termios.ISIG)
    raw[6][termios.VMIN], raw[6][termios.VTIME] = 1, 0
    termios.tcsetattr(fd, termios.TCSANOW, raw)
    try:
        data = os.read(fd, 8)
        if data == b"\x1b":
            while select.select([fd], [], [], ESCAPE_SEQUENCE_WAIT)[0]:
                data += os.read(fd, 8)
        elif data and data[0] >= 0xC0 and len(data) == 1:  # the rest of a UTF-8 character
            data += os.read(fd, 3 if data[0] >= 0xF0 else 2 if data[0] >= 0xE0 else 1)
        return _key_name(data)
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _drop_from_history(count: int) -> None:
    """Take the last `count` lines out of readline's history."""
    if readline is None:
        return
    for _ in range(count):
        length = readline.get_current_history_length()
        if length:
            readline.remove_history_item(length - 1)


class LineReader:
    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        history: Path | None,
        prompt: str,
        commands: Sequence[str] = (),
    ) -> None:
        self._loop = loop
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._wanted = threading.Event()
        self._asked: Asked | None = None
        self._key = False
        """The next read is one key press, not a line."""
        self.prompt = prompt
        self.interactive = sys.stdin.isatty()
        self.history = history
        if self.interactive and readline is not None and history is not None:
            with contextlib.suppress(OSError):
                readline.read_history_file(history)
            readline.set_history_length(HISTORY_LENGTH)
        if self.interactive and commands:
            complete_commands(commands)
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
            if self._key:
                try:
                    key: str | None = _read_key(sys.stdin.fileno())
                except (ImportError, OSError):  # no termios (Windows) or no terminal any more
                    key = None
                self._loop.call_soon_threadsafe(self._queue.put_nowait, key)
                continue
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

    async def read_key(self) -> str | None:
        """One key press (`_key_name`: 'enter', 'escape', 'ctrl-c', a character...), read without Enter;
        None when keys cannot be read (input from a pipe, no terminal support)."""
        if not self.interactive:
            return None
        self._key = True
        self._wanted.set()
        try:
            return await self._queue.get()
        finally:
            self._key = False

    def save_history(self) -> None:
        if self.interactive and readline is not None and self.history is not None:
            with contextlib.suppress(OSError):
                self.history.parent.mkdir(parents=True, exist_ok=True)
                readline.write_history_file(self.history)
