"""Finding a browser's DevTools endpoint: the configured one, or a `DevToolsActivePort` file.

Chrome 144+ can expose remote debugging from `chrome://inspect/#remote-debugging`: then
`/json/version` answers 404 and only the `ws://` URL written to `<user-data-dir>/DevToolsActivePort`
works (and Chrome asks the user to allow each new connection). Opening a WebSocket to probe such an
endpoint would pop that dialog, so ws endpoints are only checked for a listening port.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

HOW = Literal["configured", "devtools-active-port", "launched"]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A DevTools endpoint the MCP server can attach to with `--cdp-endpoint`."""

    url: str
    """http(s)://host:port or ws(s)://host:port/devtools/browser/ID."""
    how: HOW
    detail: str
    """Human-readable origin: the probed URL, the DevToolsActivePort file, or the executable."""
    browser: str = ""
    """Product string from `/json/version` when known (e.g. `Chrome/156.0.8078.108`)."""

    @property
    def port(self) -> int:
        port = urlsplit(self.url).port
        assert port is not None, "endpoints always carry a port"
        return port


@dataclass(frozen=True, slots=True)
class ActivePort:
    """The content of a `DevToolsActivePort` file."""

    port: int
    path: str
    file: Path

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}{self.path}"


def port_open(host: str, port: int, timeout: float = 0.3) -> bool:
    """True when something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def fetch_version(http_url: str, timeout: float = 1.0) -> dict[str, str] | None:
    """GET `<http_url>/json/version`; None when nothing answers it with DevTools JSON."""
    try:
        with urllib.request.urlopen(f"{http_url.rstrip('/')}/json/version", timeout=timeout) as r:
            data = json.loads(r.read().decode("utf-8"))
    except (OSError, urllib.error.URLError, ValueError):
        return None
    if not isinstance(data, dict) or "webSocketDebuggerUrl" not in data:
        return None
    return {str(k): str(v) for k, v in data.items()}


def probe(url: str, timeout: float = 1.0) -> Endpoint | None:
    """Check a configured endpoint. http(s): `/json/version` must answer; ws(s): the port must listen."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port
    if port is None:
        return None
    if parts.scheme in ("http", "https"):
        version = fetch_version(url, timeout)
        if version is None:
            return None
        return Endpoint(url, "configured", url, version.get("Browser", ""))
    if port_open(host, port, timeout):
        return Endpoint(url, "configured", url)
    return None


def read_active_port(file: Path) -> ActivePort | None:
    """Parse a `DevToolsActivePort` file: first line the port, second the browser target path."""
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    if len(lines) < 2 or not lines[0].strip().isdigit():
        return None
    port = int(lines[0].strip())
    path = lines[1].strip()
    if not (0 < port < 65536) or not path.startswith("/devtools/browser/"):
        return None
    return ActivePort(port, path, file)


def profile_roots(home: Path | None = None) -> list[Path]:
    """User-data folders of the installed Chrome, Edge and Chromium channels on this platform."""
    home = home or Path.home()
    if sys.platform == "darwin":
        base = home / "Library" / "Application Support"
        names = [
            "Google/Chrome",
            "Google/Chrome Beta",
            "Google/Chrome Dev",
            "Google/Chrome Canary",
            "Microsoft Edge",
            "Microsoft Edge Beta",
            "Microsoft Edge Dev",
            "Chromium",
        ]
        return [base / n for n in names]
    if sys.platform == "win32":
        local = Path(os.environ.get("LOCALAPPDATA", home / "AppData" / "Local"))
        names = [
            "Google/Chrome/User Data",
            "Google/Chrome Beta/User Data",
            "Google/Chrome SxS/User Data",
            "Microsoft/Edge/User Data",
            "Microsoft/Edge Beta/User Data",
            "Chromium/User Data",
        ]
        return [local / n for n in names]
    config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    names = [
        "google-chrome",
        "google-chrome-beta",
        "google-chrome-unstable",
        "chromium",
        "microsoft-edge",
        "microsoft-edge-beta",
        "microsoft-edge-dev",
    ]
    return [config / n for n in names]


def find_active_port(roots: Iterable[Path]) -> Endpoint | None:
    """The first `DevToolsActivePort` among `roots` whose port is listening (stale files are skipped)."""
    for root in roots:
        active = read_active_port(root / "DevToolsActivePort")
        if active is None or not port_open("127.0.0.1", active.port):
            continue
        version = fetch_version(f"http://127.0.0.1:{active.port}")
        if version is not None:
            # Classic --remote-debugging-port: the http endpoint also answers, and survives restarts.
            url = f"http://127.0.0.1:{active.port}"
            return Endpoint(url, "devtools-active-port", str(active.file), version.get("Browser", ""))
        return Endpoint(active.ws_url, "devtools-active-port", str(active.file))
    return None
