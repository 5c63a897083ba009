"""Recovery with real processes: a dead browser, a dead MCP server, and who may close what."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from browser_copilot.browser.endpoints import port_open
from browser_copilot.browser.launcher import LaunchedBrowser
from browser_copilot.browser.session import BrowserSession
from browser_copilot.errors import BrowserUnavailable, McpUnavailable
from tests.conftest import ROOT, make_settings, start_browser
from tests.support.app import launch_endpoint
from tests.support.processes import alive, pids_mentioning
from tests.support.waiting import async_wait_until


async def test_killing_chromium_and_starting_it_again_recovers(
    chromium_executable: Path, tmp_path: Path
) -> None:
    browser = start_browser(chromium_executable, tmp_path / "user")
    port = browser.endpoint.port
    notices: list[str] = []
    settings = make_settings(tmp_path / "data", cdp_endpoint=browser.endpoint.url)
    try:
        async with BrowserSession(settings, root=ROOT, notice=notices.append) as session:
            assert (await session.run_code("async () => 'before'")).value == "before"
            browser.process.kill()
            # Its helper processes keep the DevTools port open for a moment after it dies.
            await async_wait_until(
                lambda: not port_open("127.0.0.1", port) and not pids_mentioning(str(browser.profile_dir)),
                what="chromium and its helpers to exit",
            )
            with pytest.raises(BrowserUnavailable, match="has gone"):
                await session.run_code("async (page) => await page.evaluate(() => 1)")
            browser = start_browser(chromium_executable, tmp_path / "user", port=port)
            assert browser.endpoint.port == port
            result = await session.run_code("async (page) => await page.evaluate(() => 'after')")
            assert result.ok, result.error
            assert result.value == "after"
            assert session.launched is None  # still not ours: the app must not close it
        assert alive(browser.pid)
    finally:
        browser.close()


async def test_killing_the_mcp_server_restarts_the_session(
    external_browser: LaunchedBrowser, tmp_path: Path
) -> None:
    notices: list[str] = []
    settings = make_settings(tmp_path, cdp_endpoint=external_browser.endpoint.url)
    async with BrowserSession(settings, root=ROOT, notice=notices.append) as session:
        assert session.mcp is not None
        pid = session.mcp.server_pid()
        assert pid is not None
        marker = session.mcp.spec.output_dir
        os.kill(pid, signal.SIGKILL)
        # Every process of the server gone (Node in its box too): the session has seen its output end
        # before the next call is sent, and that call must still fail fast rather than wait for a reply.
        await async_wait_until(
            lambda: not alive(pid) and not pids_mentioning(marker), what="the MCP server to die"
        )
        # The app notices the exit itself, before any call is sent into the dead pipe.
        await async_wait_until(lambda: not session.mcp.alive, what="the session to see the server exit")
        # The model's code is not re-sent blindly: it is told to observe and retry.
        result = await session.run_code("async () => 'lost'")
        assert not result.ok
        assert "restarted" in (result.error or "")
        assert session.restarts["mcp"] == 1
        assert any("restarting" in n for n in notices)
        new_pid = session.mcp.server_pid()
        assert new_pid is not None and new_pid != pid
        assert (await session.run_code("async () => 'back'")).value == "back"
        # Idempotent calls (observations) are re-sent after a restart.
        os.kill(new_pid, signal.SIGKILL)
        await async_wait_until(lambda: not alive(new_pid), what="the MCP server to die again")
        tabs = await session.tabs()
        assert any(t.current for t in tabs)
    assert alive(external_browser.pid)


async def test_a_call_in_flight_when_the_session_closes_restarts_nothing(
    external_browser: LaunchedBrowser, tmp_path: Path
) -> None:
    """Closing stops the server under a running call: the call fails; no recovery starts a new server
    that nobody would stop (the web server's shutdown once left one running this way)."""
    settings = make_settings(tmp_path, cdp_endpoint=external_browser.endpoint.url)
    session = BrowserSession(settings, root=ROOT)
    await session.open()
    assert session.mcp is not None
    marker = session.mcp.spec.output_dir
    started = session.call_ended
    call = asyncio.create_task(
        session.run_code("async () => { await new Promise((r) => setTimeout(r, 20000)); }", idempotent=True)
    )
    await async_wait_until(session._lock.locked, what="the call to begin")
    await session.close()
    with pytest.raises(McpUnavailable, match="closed"):
        await call
    assert session.mcp is None and session.restarts["mcp"] == 0 and session.call_ended > started
    await async_wait_until(
        lambda: not pids_mentioning(marker), timeout=30, what="every server process to exit"
    )
    assert alive(external_browser.pid)


async def test_a_browser_the_app_launched_is_relaunched_and_closed_at_the_end(
    chromium_executable: Path, tmp_path: Path
) -> None:
    settings = make_settings(
        tmp_path,
        cdp_endpoint=launch_endpoint(),
        browser_auto_launch=True,
        browser_executable=chromium_executable,
        browser_headless="true",
    )
    async with BrowserSession(settings, root=ROOT) as session:
        assert session.launched is not None and session.endpoint is not None
        assert session.endpoint.how == "launched"
        first = session.launched.pid
        session.launched.process.kill()
        await async_wait_until(
            lambda: not pids_mentioning(str(settings.profile_dir)),
            what="the launched browser and its helpers to exit",
        )
        tabs = await session.tabs()
        assert tabs
        assert session.launched is not None and session.launched.pid != first
        second = session.launched.pid
    assert not alive(second)
    assert pids_mentioning(str(settings.profile_dir)) == []


async def test_keep_open_leaves_the_launched_browser_running(
    chromium_executable: Path, tmp_path: Path
) -> None:
    settings = make_settings(
        tmp_path,
        cdp_endpoint=launch_endpoint(),
        browser_auto_launch=True,
        browser_executable=chromium_executable,
        browser_headless="true",
        browser_keep_open=True,
    )
    async with BrowserSession(settings, root=ROOT) as session:
        assert session.launched is not None
        launched = session.launched
    try:
        assert alive(launched.pid)
        # The next run finds it through the profile's DevToolsActivePort or its port.
        again = make_settings(tmp_path, cdp_endpoint=launched.endpoint.url)
        async with BrowserSession(again, root=ROOT) as session:
            assert session.launched is None
        assert alive(launched.pid)
    finally:
        launched.close()


async def test_a_call_waiting_on_a_server_that_dies_fails_at_once(
    external_browser: LaunchedBrowser, tmp_path: Path
) -> None:
    """A request the dead server will never answer (sent after its output ended, say) does not wait for
    its timeout: the call fails as soon as the session ends under it."""
    settings = make_settings(tmp_path, cdp_endpoint=external_browser.endpoint.url)
    async with BrowserSession(settings, root=ROOT) as session:
        assert session.mcp is not None
        never_answered = asyncio.ensure_future(session.mcp._while_alive(asyncio.Event().wait()))
        pid = session.mcp.server_pid()
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        await async_wait_until(never_answered.done, what="the waiting call to fail")
        with pytest.raises(McpUnavailable, match="stopped during the call"):
            never_answered.result()
