"""Shared fixtures: one Chromium and one MCP session for the whole run, local pages, clean settings.

Browser tests fail (never skip) when Chromium is missing: CI must install it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from browser_copilot.browser.launcher import LaunchedBrowser, launch
from browser_copilot.browser.session import BrowserSession
from browser_copilot.config import FALLBACKS, Settings, env_names, load_settings
from browser_copilot.errors import CopilotError
from tests.support.openai_server import ScriptedOpenAI
from tests.support.pages import PageServer
from tests.support.postgres import postgres_server, postgres_url  # noqa: F401  (fixtures)

# The developer's own settings and browser profiles must not leak into the tests.
for _name in [*env_names(), *(n for names in FALLBACKS.values() for n in names)]:
    os.environ.pop(_name, None)
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="bc-tests-config-")
# Tests share one Chromium, where "the user's tab" would be another test's tab: sessions (and the app
# processes the tests start) get a tab of their own, except in the tests of starting on the user's page.
os.environ["START_IN_CURRENT_TAB"] = "false"
# Human pacing (the default for a browser the app did not launch) is tested in tests/test_pacing.py;
# elsewhere it would only make the suite slower.
os.environ["PACING"] = "off"

ROOT = Path(__file__).resolve().parent.parent


def find_chromium() -> Path | None:
    configured = os.environ.get("CHROMIUM")
    candidates = [configured] if configured else []
    candidates += [shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


@pytest.fixture(scope="session")
def chromium_executable() -> Path:
    path = find_chromium()
    if path is None:
        pytest.fail(
            "Chromium is not installed, and the browser tests need it. "
            "Fix: `apt-get install chromium`, or set CHROMIUM=/path/to/chrome."
        )
    return path


def start_browser(executable: Path, folder: Path, *, port: int = 0) -> LaunchedBrowser:
    """A headless Chromium started by the *tests*: to the app it is the user's own browser."""
    return launch(
        executable=executable,
        profile_dir=folder / "profile",
        preferred_port=port,
        headless=True,
        log_file=folder / "browser.log",
    )


@pytest.fixture(scope="session")
def external_browser(
    chromium_executable: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LaunchedBrowser]:
    browser = start_browser(chromium_executable, tmp_path_factory.mktemp("user-browser"))
    yield browser
    browser.close()


@pytest.fixture(scope="session")
def pages() -> Iterator[PageServer]:
    with PageServer() as server:
        yield server


def make_settings(data_dir: Path, **overrides: Any) -> Settings:
    """Settings for a test: no .env, the given data dir, no auto-launch unless asked."""
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "browser_auto_launch": False,
        "start_in_current_tab": False,
        "pacing": "off",
    }
    values.update(overrides)
    return load_settings(None, **values)


@pytest.fixture(scope="session")
def session_browser(
    chromium_executable: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LaunchedBrowser]:
    """The shared session's own Chromium. Its network policy holds a browser-wide interception during
    and just after each code call, answered by this process's event loop; the app processes that the
    synchronous tests start use `external_browser`, which no idle loop here holds up."""
    browser = start_browser(chromium_executable, tmp_path_factory.mktemp("session-browser"))
    yield browser
    browser.close()


@pytest_asyncio.fixture(scope="session")
async def browser_session(
    session_browser: LaunchedBrowser, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[BrowserSession]:
    """The shared session: one MCP server attached to its Chromium over http."""
    settings = make_settings(
        tmp_path_factory.mktemp("shared-data"), cdp_endpoint=session_browser.endpoint.url
    )
    async with BrowserSession(settings, root=ROOT) as session:
        _SHARED.append(session)
        try:
            yield session
        finally:
            _SHARED.remove(session)


_SHARED: list[BrowserSession] = []
_CLOSE_OTHER_TABS = (
    "async (page) => { let n = 0; for (const p of page.context().pages())"
    " if (p !== page && !p.isClosed()) { await p.close(); n += 1; } return n }"
)


@pytest_asyncio.fixture(scope="module", autouse=True)
async def no_tabs_left_behind() -> AsyncIterator[None]:
    """A module's tests share the session's browser with the next module's: the tabs they opened (and
    did not close) are closed when the module ends, so an observation's tab list starts the same."""
    yield
    for session in _SHARED:
        with contextlib.suppress(CopilotError):  # a test that ended the browser: nothing is left open
            await session.run_code(_CLOSE_OTHER_TABS, idempotent=True)


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAI]:
    """The scripted OpenAI-compatible server the app's real `ChatOpenAI` talks to (model
    `scripted-model`, key `sk-test-123`); a test scripts its replies."""
    with ScriptedOpenAI(models=["scripted-model"], api_key="sk-test-123") as server:
        yield server


pytest_plugins = ["tests.support.viewer"]
"""The web page's fixtures (`viewer`, `served`, `page`), shared by the modules that test it."""


# ----- the fast tier (`make check`): only the tests that need no browser, MCP server or Postgres -------
_SLOW_FIXTURES = {"chromium_executable", "postgres_server"}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--no-browser",
        action="store_true",
        help="run only the tests that need no browser, MCP server or Postgres (make check)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("--no-browser"):
        return
    slow = [i for i in items if _SLOW_FIXTURES & set(getattr(i, "fixturenames", ()))]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [i for i in items if i not in slow]
