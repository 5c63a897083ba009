"""The browser session against a real Chromium and the real @playwright/mcp server."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path

import pytest

from browser_copilot.browser.endpoints import fetch_version
from browser_copilot.browser.launcher import LaunchedBrowser
from browser_copilot.browser.session import BrowserSession
from browser_copilot.errors import BrowserNotFound, NavigationError
from tests.conftest import ROOT, make_settings
from tests.support.pages import PageServer


async def test_the_code_tool_round_trips_a_value(browser_session: BrowserSession) -> None:
    result = await browser_session.run_code("async (page) => ({ sum: 1 + 1, list: ['a'] })")
    assert result.ok
    assert result.value == {"sum": 2, "list": ["a"]}


async def test_the_code_tool_name_is_resolved_and_exposed(browser_session: BrowserSession) -> None:
    assert browser_session.mcp is not None
    assert browser_session.mcp.code_tool_name in ("browser_run_code_unsafe", "browser_run_code")
    names = [tool.name for tool in browser_session.mcp.tools]
    assert browser_session.mcp.code_tool_name in names


async def test_a_thrown_error_comes_back_as_a_tool_error(browser_session: BrowserSession) -> None:
    result = await browser_session.run_code("async (page) => { throw new Error('boom here') }")
    assert not result.ok
    assert result.error == "Error: boom here"


async def test_a_locator_timeout_error_has_no_ansi_escapes(browser_session: BrowserSession) -> None:
    result = await browser_session.run_code(
        "async (page) => { await page.locator('#does-not-exist').click({ timeout: 200 }) }"
    )
    assert not result.ok
    assert result.error is not None
    assert "Timeout 200ms exceeded" in result.error
    assert "\x1b" not in result.error


async def test_goto_opens_a_local_page_in_the_agent_tab(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    page = await browser_session.goto(pages.url("index.html"))
    assert page == {"url": pages.url("index.html"), "title": "Test bed home", "status": 200}
    clicked = await browser_session.run_code(
        "async (page) => { await page.getByRole('button', { name: 'Say hello' }).click();"
        " return await page.locator('#out').textContent(); }"
    )
    assert clicked.value == "clicked"
    tabs = await browser_session.tabs()
    current = [t for t in tabs if t.current]
    assert [t.url for t in current] == [pages.url("index.html")]


@pytest.mark.parametrize("url", ["file:///etc/passwd", "javascript:alert(1)", "chrome://settings"])
async def test_goto_refuses_urls_that_are_not_web_pages(browser_session: BrowserSession, url: str) -> None:
    with pytest.raises(NavigationError, match="only http"):
        await browser_session.goto(url)


async def test_the_mcp_server_is_confined_by_node_permissions(
    browser_session: BrowserSession,
) -> None:
    assert browser_session.spec is not None and browser_session.spec.sandboxed
    escape = (
        "async (page) => { const p = page.constructor.constructor('return process')();"
        " return p.getBuiltinModule('child_process').execSync('id').toString(); }"
    )
    result = await browser_session.run_code(escape)
    assert not result.ok
    assert "Access to this API has been restricted" in (result.error or "")
    read_home = (
        "async (page) => { const p = page.constructor.constructor('return process')();"
        f" return p.getBuiltinModule('fs').readdirSync({json.dumps(str(Path.home()))}); }}"
    )
    result = await browser_session.run_code(read_home)
    assert not result.ok
    assert "Access to this API has been restricted" in (result.error or "")


async def test_attaching_by_ws_url_works(external_browser: LaunchedBrowser, tmp_path: Path) -> None:
    version = await asyncio.to_thread(fetch_version, external_browser.endpoint.url)
    assert version is not None
    ws_url = version["webSocketDebuggerUrl"]
    settings = make_settings(tmp_path, cdp_endpoint=ws_url)
    async with BrowserSession(settings, root=ROOT) as session:
        assert session.endpoint is not None and session.endpoint.url == ws_url
        assert (await session.run_code("async () => 40 + 2")).value == 42


async def test_a_devtools_active_port_file_is_found_when_the_endpoint_is_silent(
    external_browser: LaunchedBrowser, tmp_path: Path
) -> None:
    fake_root = tmp_path / "google-chrome"
    fake_root.mkdir()
    (fake_root / "DevToolsActivePort").write_text(
        (external_browser.profile_dir / "DevToolsActivePort").read_text()
    )
    notices: list[str] = []
    settings = make_settings(tmp_path / "data", cdp_endpoint="http://127.0.0.1:9")
    session = BrowserSession(settings, root=ROOT, notice=notices.append, extra_profile_roots=[fake_root])
    async with session:
        assert session.endpoint is not None and session.endpoint.how == "devtools-active-port"
        assert (await session.run_code("async () => 'found'")).value == "found"
    assert any("DevToolsActivePort" in n for n in notices)


async def test_no_browser_and_no_auto_launch_explains_the_fix(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, cdp_endpoint="http://127.0.0.1:9")
    with pytest.raises(BrowserNotFound) as caught:
        await BrowserSession(settings, root=ROOT).open()
    message = str(caught.value)
    assert "--remote-debugging-port=9" in message
    assert "BROWSER_AUTO_LAUNCH=true" in message


def open_user_tab(browser: LaunchedBrowser, url: str) -> str:
    """The user opens a page in a tab of their own and brings it to the front (CDP's HTTP API)."""
    request = urllib.request.Request(f"{browser.endpoint.url}/json/new?{url}", method="PUT")
    with urllib.request.urlopen(request) as response:
        target = json.load(response)["id"]
    with urllib.request.urlopen(f"{browser.endpoint.url}/json/activate/{target}"):
        pass
    return str(target)


def close_user_tab(browser: LaunchedBrowser, target: str) -> None:
    with urllib.request.urlopen(f"{browser.endpoint.url}/json/close/{target}"):
        pass


async def test_the_agent_starts_on_the_users_page_and_says_so(
    external_browser: LaunchedBrowser, pages: PageServer, tmp_path: Path
) -> None:
    target = await asyncio.to_thread(open_user_tab, external_browser, pages.url("second.html"))
    notices: list[str] = []
    try:
        async with BrowserSession(
            make_settings(
                tmp_path / "a", cdp_endpoint=external_browser.endpoint.url, start_in_current_tab=True
            ),
            root=ROOT,
            notice=notices.append,
        ) as session:
            assert session.started_on is not None
            assert session.started_on["url"] == pages.url("second.html")
            assert (await session.run_code("async (page) => page.url()")).value == pages.url("second.html")
        assert any(n.startswith("Working in your tab: Second page") for n in notices)
    finally:
        await asyncio.to_thread(close_user_tab, external_browser, target)


async def test_with_start_in_current_tab_off_the_users_tab_is_left_alone(
    external_browser: LaunchedBrowser, pages: PageServer, tmp_path: Path
) -> None:
    target = await asyncio.to_thread(open_user_tab, external_browser, pages.url("second.html"))
    try:
        async with BrowserSession(
            make_settings(
                tmp_path / "b", cdp_endpoint=external_browser.endpoint.url, start_in_current_tab=False
            ),
            root=ROOT,
        ) as session:
            assert session.started_on is None
            await session.goto(pages.url("index.html"))
            urls = [t.url for t in await session.tabs()]
            assert pages.url("second.html") in urls  # the user's tab still shows their page
            assert pages.url("index.html") in urls
            await session.run_code("async (page) => { await page.close() }")
    finally:
        await asyncio.to_thread(close_user_tab, external_browser, target)
