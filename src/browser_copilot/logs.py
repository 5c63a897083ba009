"""Logging: a rotating file in the data dir; the terminal stays quiet unless LOG_LEVEL=DEBUG."""

from __future__ import annotations

import logging
from logging.handlers import RotatingFileHandler
from pathlib import Path

from browser_copilot.config import Settings
from browser_copilot.safety.redaction import redact

LOG_FILE = "browser-copilot.log"


class RedactingFormatter(logging.Formatter):
    """Every log line passes through the one redaction function (F47)."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


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
    # Third-party chatter (HTTP client lines) only when debugging.
    for noisy in ("httpx", "httpcore", "openai", "mcp", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.DEBUG if settings.log_level == "DEBUG" else logging.WARNING)
    return path
