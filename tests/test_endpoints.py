"""Endpoint discovery: configured http/ws, DevToolsActivePort files, stale files skipped."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from browser_copilot.browser.endpoints import find_active_port, probe, read_active_port
from browser_copilot.browser.launcher import LaunchedBrowser


@pytest.fixture
def listening_port() -> Iterator[int]:
    """A TCP port something listens on but which is no DevTools endpoint."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_devtools_active_port_file_is_parsed(tmp_path: Path) -> None:
    file = tmp_path / "DevToolsActivePort"
    file.write_text("9333\n/devtools/browser/abc-123\n")
    active = read_active_port(file)
    assert active is not None
    assert active.ws_url == "ws://127.0.0.1:9333/devtools/browser/abc-123"


@pytest.mark.parametrize(
    "content",
    ["", "9333\n", "port\n/devtools/browser/x\n", "70000\n/devtools/browser/x\n", "9333\n/json\n"],
)
def test_malformed_devtools_active_port_files_are_ignored(tmp_path: Path, content: str) -> None:
    file = tmp_path / "DevToolsActivePort"
    file.write_text(content)
    assert read_active_port(file) is None


def test_a_stale_devtools_active_port_file_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "DevToolsActivePort").write_text(f"{closed_port()}\n/devtools/browser/gone\n")
    assert find_active_port([tmp_path]) is None


def test_a_toggle_style_endpoint_is_used_by_its_ws_url(tmp_path: Path, listening_port: int) -> None:
    # Chrome 144+'s chrome://inspect toggle: the port listens, /json/version does not answer.
    (tmp_path / "DevToolsActivePort").write_text(f"{listening_port}\n/devtools/browser/id-1\n")
    found = find_active_port([tmp_path / "missing", tmp_path])
    assert found is not None
    assert found.url == f"ws://127.0.0.1:{listening_port}/devtools/browser/id-1"
    assert found.how == "devtools-active-port"
    assert found.detail == str(tmp_path / "DevToolsActivePort")


def test_a_classic_debugging_port_is_used_by_http(tmp_path: Path, external_browser: LaunchedBrowser) -> None:
    port = external_browser.endpoint.port
    (tmp_path / "DevToolsActivePort").write_text(f"{port}\n/devtools/browser/whatever\n")
    found = find_active_port([tmp_path])
    assert found is not None
    assert found.url == f"http://127.0.0.1:{port}"
    assert found.browser.startswith(("Chrome/", "HeadlessChrome/"))


def test_probe_accepts_a_live_http_endpoint(external_browser: LaunchedBrowser) -> None:
    found = probe(external_browser.endpoint.url)
    assert found is not None
    assert found.how == "configured"


def test_probe_rejects_a_port_that_is_not_devtools(listening_port: int) -> None:
    assert probe(f"http://127.0.0.1:{listening_port}", timeout=0.5) is None


def test_probe_accepts_a_ws_endpoint_whose_port_listens(listening_port: int) -> None:
    found = probe(f"ws://127.0.0.1:{listening_port}/devtools/browser/x")
    assert found is not None
    assert found.url.startswith("ws://")
    assert probe(f"ws://127.0.0.1:{closed_port()}/devtools/browser/x") is None
