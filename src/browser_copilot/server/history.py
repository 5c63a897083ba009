"""What a session's web chat showed, kept so that a reloaded page (or one opened after a restart of the
server) shows it again: the user's messages, each confirmation card, hand-over and question with the
answer it got ("Allowed once", declined, "done"), and each run's answer with its Unverified mark and
reasons, in order.

The hub records the messages it sends to the chat (`agent_question`, a run's `agent_message`); the app
records the user's message that starts a turn (`said`), with what it answered. Entries are the chat's
own WebSocket messages, redacted as for any other tab (`hub.outgoing`: a card's details as the logs keep
them; a secret the user typed in answer to a request for one is masked first), appended to
`DATA_DIR/history/SESSION.jsonl`. The page reads them with `GET /api/sessions/{id}?history=1` and draws
each with the same functions as a live message (`static/history.js`).

A session with no file (started in the terminal, or before this record existed) falls back to the
conversation of its checkpoint (`chat`)."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from browser_copilot.agent.nodes.human_in_loop import reading
from browser_copilot.safety.redaction import Asked, mask_secrets

log = logging.getLogger(__name__)
FOLDER = "history"
KEEP = 300
"""Entries a page gets (the last ones); the file is cut back to them when it grows past MAX_BYTES."""
MAX_BYTES = 1_000_000
KINDS = frozenset({"user_message", "agent_question", "agent_message"})


def said(text: str, pending: dict[str, Any] | None, asked: Asked | None) -> dict[str, Any]:
    """The user's message that starts a turn: what it answers (`confirm`, `manual`, `question` or
    nothing) and, for a card, the decision the graph reads in it (its `reading`) and the note after it."""
    entry: dict[str, Any] = {"kind": "user_message", "text": mask_secrets(text, asked)[0]}
    answers = str(pending.get("kind") or "question") if pending is not None else None
    if answers is not None:
        entry["answers"] = answers
    if answers == "confirm":
        allowed, note = reading(text)
        entry["decision"] = "allowed" if allowed else "declined"
        entry["note"] = mask_secrets(note, asked)[0]
    return entry


class History:
    """One session's chat record (redacted entries), in memory and in its file when it has one."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._entries: list[dict[str, Any]] | None = None

    @classmethod
    def of(cls, data_dir: Path, session_id: str) -> History:
        """The record of `session_id` (an id the server checked: letters, digits, - and _)."""
        return cls(data_dir / FOLDER / f"{session_id}.jsonl")

    def add(self, message: dict[str, Any]) -> None:
        """Keep one chat message (already redacted by the caller: `hub.outgoing`)."""
        if message.get("kind") not in KINDS or message.get("command"):
            return
        entry = {k: v for k, v in message.items() if k not in ("v", "nonce")}
        entry.setdefault("at", time.time())
        entries = self.entries()
        entries.append(entry)
        del entries[:-KEEP]
        self._write(entry)

    def entries(self) -> list[dict[str, Any]]:
        if self._entries is None:
            self._entries = self._read()
        return self._entries

    def forget(self) -> None:
        self._entries = []
        if self.path is not None:
            self.path.unlink(missing_ok=True)

    def _read(self) -> list[dict[str, Any]]:
        if self.path is None:
            return []
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        except OSError as exc:
            log.warning("cannot read %s: %s", self.path, exc)
            return []
        entries: list[dict[str, Any]] = []
        for line in lines[-KEEP:]:
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a line cut short by a crash
            if isinstance(entry, dict) and entry.get("kind") in KINDS:
                entries.append(entry)
        return entries

    def _write(self, entry: dict[str, Any]) -> None:
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.exists() and self.path.stat().st_size > MAX_BYTES:
                kept = "".join(_line(e) for e in self.entries()[:-1])
                self.path.write_text(kept, encoding="utf-8")
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(_line(entry))
        except OSError as exc:
            log.warning("cannot write %s: %s", self.path, exc)


def _line(entry: dict[str, Any]) -> str:
    return json.dumps(entry, ensure_ascii=False, default=str, separators=(",", ":")) + "\n"
