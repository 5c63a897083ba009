"""The user's tabs — a tab of the app's own server above all (the agent approved its own card through
`serve`'s page open in the browser it drives) — do not exist for the model's code: `pages()` lists the
session's own tabs only, and a tab of the app's server (or of the browser's DevTools endpoint) never
becomes the session's. The tab here is opened by the *user* (through DevTools' own HTTP endpoint,
outside any code call); its origin is on the session's forbidden list, as `serve` puts its own
addresses there. A user's tab becomes the session's only through the app's own `switch_tab`."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser_copilot.browser.guarded import guarded_code
from browser_copilot.browser.launcher import LaunchedBrowser
from browser_copilot.browser.session import BrowserSession
from tests.conftest import ROOT, make_settings, start_browser
from tests.support.sites import Site
from tests.support.waiting import async_wait_until

CARD = """<!doctype html><title>Browser Copilot</title>
<p id="nonce">card 7f3a</p>
<button id="yes" onclick="fetch('/answer', {method: 'POST', body: 'yes'})">Allow once</button>
<input id="msg" aria-label="Message">"""


@pytest.fixture
def own_server() -> Iterator[Site]:
    with Site(lambda request, port: CARD if request.method == "GET" else "ok") as site:
        yield site


def users_tab(browser: LaunchedBrowser, url: str) -> None:
    """The user opens a tab (DevTools' HTTP endpoint: no code call is running)."""
    request = urllib.request.Request(f"{browser.endpoint.url}/json/new?{url}", method="PUT")
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200


WAYS = {
    "a locator click": "await tab.locator('#yes').click()",
    "evaluate": "await tab.evaluate(() => document.getElementById('yes').click())",
    "the keyboard": "await tab.locator('#yes').focus().catch(() => 0); await tab.keyboard.press('Enter')",
    "typing a message": "await tab.locator('#msg').fill('/yes')",
    "a frame's locator": "await tab.mainFrame().locator('#yes').click()",
}


@pytest.mark.parametrize("way", WAYS)
async def test_the_code_never_acts_in_a_tab_of_the_apps_own_server(
    browser_session: BrowserSession, session_browser: LaunchedBrowser, own_server: Site, way: str
) -> None:
    url = own_server.url("/?token=abc")
    browser_session.url_policy.forbid(url)
    try:
        users_tab(session_browser, url)
        await async_wait_until(lambda: own_server.received("GET", "/?token"), what="the user's tab to load")
        result = await browser_session.run_code(
            guarded_code(
                "async (page) => { const tab = page.context().pages().find((p) =>"
                f" p.url().includes(':{own_server.port}/'));"
                f" if (!tab) return 'no tab'; {WAYS[way]}; return 'acted' }}",
            )
        )
        assert result.ok and result.value == "no tab", result
        assert own_server.received("POST", "/answer") == 0
    finally:
        browser_session.url_policy.forbidden_origins.remove(f"127.0.0.1:{own_server.port}")
        await browser_session.run_code(
            "async (page) => { for (const p of page.context().pages())"
            f" if (p.url().includes(':{own_server.port}/')) await p.close(); }}"
        )


async def test_a_users_tab_becomes_the_sessions_only_through_switch_tab(
    browser_session: BrowserSession, session_browser: LaunchedBrowser, own_server: Site
) -> None:
    """The positive control: the same page on an origin that is not the app's, once the app's own
    `switch_tab` made it the agent's tab, is acted on."""
    url = own_server.url("/?token=abc")
    users_tab(session_browser, url)
    await async_wait_until(lambda: own_server.received("GET", "/?token"), what="the user's tab to load")
    msg = "page.locator('#msg')"
    fill = f"async (page) => {{ await {msg}.fill('hello'); return {msg}.inputValue() }}"
    try:
        unseen = await browser_session.run_code(
            guarded_code("async (page) => page.context().pages().map((p) => p.url()).join(' ')")
        )
        assert unseen.ok and f":{own_server.port}/" not in unseen.value
        tabs = await browser_session.tabs()
        mine = next(t for t in tabs if t.current)
        theirs = next(t for t in tabs if f":{own_server.port}/" in t.url)
        _, failed = await browser_session.select_tab(theirs.index)
        assert not failed
        result = await browser_session.run_code(guarded_code(fill))
        assert result.ok and result.value == "hello", result
    finally:
        tabs = await browser_session.tabs()
        back = next((t for t in tabs if t.url == mine.url and not t.current), None)
        if back is not None:
            await browser_session.select_tab(back.index)
        await browser_session.run_code(
            "async (page) => { for (const p of page.context().pages())"
            f" if (p.url().includes(':{own_server.port}/')) await p.close(); }}"
        )


async def test_the_apps_page_in_front_is_never_adopted_as_the_agents_tab(
    chromium_executable: Path, own_server: Site, tmp_path: Path
) -> None:
    """START_IN_CURRENT_TAB adopts the page in front, unless it is the app's own page."""
    browser = start_browser(chromium_executable, tmp_path / "user")
    try:
        blank = [t["id"] for t in devtools_json(browser, "/json/list") if t.get("type") == "page"]
        url = own_server.url("/?token=abc")
        users_tab(browser, url)
        for target in blank:
            devtools_get(browser, f"/json/close/{target}")
        await async_wait_until(lambda: own_server.received("GET", "/?token"), what="the user's tab to load")
        settings = make_settings(
            tmp_path / "data", cdp_endpoint=browser.endpoint.url, start_in_current_tab=True
        )
        session = BrowserSession(settings, root=ROOT)
        session.url_policy.forbid(url)
        async with session:
            assert session.started_on is None
            tabs = await session.tabs()
            current = [t for t in tabs if t.current]
            assert current and f":{own_server.port}/" not in current[0].url, tabs
    finally:
        browser.close()


def devtools_get(browser: LaunchedBrowser, path: str) -> bytes:
    with urllib.request.urlopen(f"{browser.endpoint.url}{path}", timeout=10) as answer:
        return bytes(answer.read())


def devtools_json(browser: LaunchedBrowser, path: str) -> Any:
    return json.loads(devtools_get(browser, path))


@pytest.mark.parametrize("host", ["copilot.localhost", "[::ffff:7f00:1]", "LOCALHOST."])
async def test_the_apps_own_server_is_never_loaded_under_another_name_of_this_machine(
    browser_session: BrowserSession, own_server: Site, host: str
) -> None:
    """The app's server forbids `127.0.0.1:port`; the code names this machine otherwise (Chrome resolves
    any name under localhost to it). The server receives nothing."""
    browser_session.url_policy.forbid(own_server.url("/"))
    try:
        result = await browser_session.run_code(
            guarded_code(
                f"async (page) => {{ const url = 'http://{host}:{own_server.port}/';"
                " const tab = await page.context().newPage();"
                " return [await page.goto(url).then(() => 'loaded', (e) => 'refused'),"
                " await tab.goto(url).then(() => 'loaded', (e) => 'refused')] }"
            )
        )
        assert result.ok, result.error
        assert own_server.received("GET", "/") == 0, result.value
        assert any("the app's own server" in r.why for r in browser_session.refusals())
    finally:
        browser_session.url_policy.forbidden_origins.remove(f"127.0.0.1:{own_server.port}")
        await browser_session.run_code(
            "async (page) => { for (const p of page.context().pages()) if (p !== page) await p.close(); }"
        )
