"""The user's own browser with the app's web page open in it (a Chromium of its own, driven by
Playwright), and the app's server over the shared browser session: fixtures for the web page's tests
(a plugin of tests/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, async_playwright

from browser_copilot.browser.session import BrowserSession
from browser_copilot.server.serve import Server
from browser_copilot.server.sessions import SessionManager
from tests.support.openai_server import ScriptedOpenAI
from tests.support.server import serving_over


@pytest_asyncio.fixture(scope="module")
async def viewer(
    chromium_executable: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Browser]:
    """The user's own browser, where the web page is open: a Chromium of its own, driven by Playwright."""
    from tests.conftest import start_browser

    launched = start_browser(chromium_executable, tmp_path_factory.mktemp("viewer"))
    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.connect_over_cdp(launched.endpoint.url)
            try:
                yield browser
            finally:
                await browser.close()
    finally:
        launched.close()


@pytest_asyncio.fixture
async def served(
    llm: ScriptedOpenAI, browser_session: BrowserSession, tmp_path: Path
) -> AsyncIterator[tuple[Server, SessionManager, str]]:
    async with serving_over(browser_session, llm, tmp_path) as running:
        yield running


@pytest_asyncio.fixture
async def page(viewer: Browser) -> AsyncIterator[Page]:
    """A tab of the user's browser at a laptop's size, in a fresh profile (no cookie yet)."""
    context = await viewer.new_context(viewport={"width": 1366, "height": 768})
    try:
        yield await context.new_page()
    finally:
        await context.close()
