"""Logging: a rotating file in the data dir; the terminal stays quiet unless LOG_LEVEL=DEBUG."""

from __future__ import annotations

import json
import logging
import time
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any

from browser_copilot.config import Settings
from browser_copilot.events import Event
from browser_copilot.safety.redaction import redact, redact_data

LOG_FILE = "browser-copilot.log"


class RedactingFormatter(logging.Formatter):
    """Every log line passes through the one redaction function (F47), except the line's own
    timestamp: the app wrote it, it is never personal data (and never masked as a phone number)."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        stamp = str(getattr(record, "asctime", "")) if self.usesTime() else ""
        if stamp and line.startswith(stamp):
            return stamp + redact(line[len(stamp) :])
        return redact(line)


def setup_logging(settings: Settings) -> Path:
    """Send the package's log records to `<data dir>/logs/browser-copilot.log`; returns its path."""
    settings.logs_dir.mkdir(parents=True, exist_ok=True)
    path = settings.logs_dir / LOG_FILE
    handler = RotatingFileHandler(path, maxBytes=5_000_000, backupCount=3, encoding="utf-8")
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, RotatingFileHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(settings.log_level)
    if settings.log_level == "DEBUG" and not any(type(h) is logging.StreamHandler for h in root.handlers):
        console = logging.StreamHandler()
        console.setFormatter(RedactingFormatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(console)  # asked for: the terminal shows the log too
    # Third-party chatter (HTTP client lines) only when debugging.
    for noisy in ("httpx", "httpcore", "openai", "mcp", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.DEBUG if settings.log_level == "DEBUG" else logging.WARNING)
    return path


class StepEventLog:
    """The JSONL step-event log (seed 003 §11.1), redacted, next to the log file; an event sink.

    One line per tool step: `step` (n, start, end, duration), `call` (tool, masked args, status, error),
    `page` (url, title, elements, extraction ms, banner/downloads seen); plus lines for confirmations,
    hand-overs, errors and final outcomes."""

    MAX_BYTES = 5_000_000

    def __init__(self, path: Path, session: str) -> None:
        self.path = path
        self.session = session
        self._call: dict[str, Any] | None = None
        self._page: dict[str, Any] = {}
        self._step = 0

    def _write(self, record: dict[str, Any]) -> None:
        record = {"session": self.session, **redact_data(record)}
        try:
            if self.path.exists() and self.path.stat().st_size > self.MAX_BYTES:
                self.path.replace(self.path.with_suffix(".jsonl.1"))
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        except OSError:
            logging.getLogger(__name__).warning("cannot write %s", self.path)

    def __call__(self, event: Event) -> None:
        data = event.data
        if event.kind == "observation":
            self._page = {k: data.get(k) for k in ("url", "title", "elements", "ms", "dialog")}
        elif event.kind == "tool_call":
            self._step += 1
            self._call = {
                "n": self._step,
                "start": event.at,
                "tool": data.get("tool"),
                "args": data.get("args"),
            }
        elif event.kind == "tool_result" and self._call is not None:
            call, self._call = self._call, None
            ok = bool(data.get("ok", True))
            self._write(
                {
                    "type": "step",
                    "step": {
                        "n": call["n"],
                        "start": call["start"],
                        "end": event.at,
                        "duration_ms": round((event.at - call["start"]) * 1000, 1),
                    },
                    "call": {
                        "tool": call["tool"],
                        "args": call["args"],
                        "status": "ok" if ok else "error",
                        "error": None if ok else data.get("result"),
                    },
                    "summary": data.get("summary"),  # the step in plain words (plain_steps)
                    "page": self._page,
                }
            )
        elif event.kind in ("policy_request", "policy_result", "error", "final"):
            self._write({"type": event.kind, "at": event.at, **data})


def save_snapshot(folder: Path, html: str, png: bytes) -> tuple[Path, Path]:
    """Write an error snapshot (screenshot + redacted HTML); returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    shot, page = folder / f"error-{stamp}.png", folder / f"error-{stamp}.html"
    shot.write_bytes(png)
    page.write_text(redact(html), encoding="utf-8")
    return shot, page


def log_tail(path: Path, lines: int, *, since: str | None = None) -> list[str]:
    """The last `lines` non-empty lines of a log file (after the last line starting with `since`, when
    given), stripped; [] when it cannot be read. What a failure message quotes from a child's stderr."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    rows = text.splitlines()
    if since is not None:
        starts = [i for i, row in enumerate(rows) if row.startswith(since)]
        rows = rows[starts[-1] + 1 :] if starts else rows
    return [row.strip() for row in rows if row.strip()][-lines:]
