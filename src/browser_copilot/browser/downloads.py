"""What a download brought, as text (the `read_download` tool): a CSV, TXT, JSON or other text file as it
is, a PDF's text (pypdf). Only files the browser itself reported saving for a download of the agent's
tabs are read (the network policy's own DevTools connection saw it: `NetworkGuard.downloads`), never a
path the model or the MCP server names."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

from browser_copilot.safety.classifier import secret_names
from browser_copilot.sandbox.download_events import Download

MAX_BYTES = 50 * 1024 * 1024
"""A larger file is not read (a PDF of many scans, an archive)."""


class DownloadUnreadable(ValueError):
    """The file cannot be read as text: the message says why, for the model."""


def read_text(download: Download, limit: int = 20_000) -> str:
    """The text of a finished download, at most `limit` characters (the rest counted)."""
    if download.state != "completed" or not download.path:
        raise DownloadUnreadable(f"{download.name} has not finished downloading ({download.state})")
    path = Path(download.path)
    try:
        size = path.stat().st_size
    except OSError:
        raise DownloadUnreadable(f"{download.name} is no longer where the browser saved it") from None
    if size > MAX_BYTES:
        raise DownloadUnreadable(f"{download.name} is too large to read ({size // 1_000_000} MB)")
    data = path.read_bytes()
    if data.startswith(b"%PDF-"):
        text = _pdf_text(path, download.name)
    elif b"\0" in data[:8192]:
        raise DownloadUnreadable(f"{download.name} is not a text file (CSV, TXT, JSON and PDF can be read)")
    else:
        text = data.decode("utf-8", "replace").lstrip("\ufeff")
        if download.name.lower().endswith(".json"):
            text = _json_text(text)
        elif download.name.lower().endswith((".csv", ".tsv")):
            text = _csv_text(text)
    if len(text) > limit:
        return f"{text[:limit]}\n… ({len(text) - limit} more characters)"
    return text


def _pdf_text(path: Path, name: str) -> str:
    # pypdf is imported when a PDF is read: it is a seventh of what every process of the app imports
    # at start (chat, run, serve, worker), and most runs never read one.
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(path)
        pages = [page.extract_text() or "" for page in reader.pages[:200]]
    except (PyPdfError, ValueError, KeyError, OSError) as exc:
        raise DownloadUnreadable(f"{name} is a PDF that cannot be read ({type(exc).__name__})") from None
    text = "\n\n".join(p.strip() for p in pages if p.strip())
    if not text:
        raise DownloadUnreadable(f"{name} is a PDF without text (scanned pages?)")
    return text


MASK = "<secret withheld>"


def secret_name(name: str) -> bool:
    """A column or key that holds a secret by what it is named, as a secret field is (`secret_names.json`,
    shared with `secret.js`): a password, a one-time code, a card's number or code, a PIN; never a
    substring ("Passenger")."""
    names = secret_names()
    split = [t for t in re.split(r"[\W_]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", name).lower()) if t]
    tokens = set(split)
    if tokens & set(names["words"]) or "".join(split) in names["joined"]:
        return True
    return any(tokens & set(first) and tokens & set(second) for first, second in names["pairs"])


def _masked(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: (MASK if secret_name(str(k)) and v not in (None, "") else _masked(v)) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return value


def _json_text(text: str) -> str:
    """A JSON file laid out one value per line (a minified one is one long line otherwise), the values of
    its secret keys withheld."""
    try:
        return json.dumps(_masked(json.loads(text)), ensure_ascii=False, indent=1)
    except ValueError:
        return text


def _csv_text(text: str) -> str:
    """A CSV (or TSV) file with the values of its secret columns (by the header's name) withheld."""
    try:
        dialect: Any = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    rows = list(csv.reader(io.StringIO(text), dialect))
    if not rows:
        return text
    secret = [i for i, name in enumerate(rows[0]) if secret_name(name)]
    if not secret:
        return text
    out = io.StringIO()
    writer = csv.writer(out, dialect, lineterminator="\n")
    writer.writerow(rows[0])
    for row in rows[1:]:
        writer.writerow([MASK if i in secret and cell else cell for i, cell in enumerate(row)])
    return out.getvalue()


__all__ = ["Download", "DownloadUnreadable", "read_text"]
