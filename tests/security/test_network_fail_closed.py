"""A request the network policy pauses is never left paused (F46): if deciding it fails (a bug in the
app, not something the page did), it is refused at once and the log says so. Left paused, it would hang
the page's load and the code call waiting for it until the call's own time-out."""

from __future__ import annotations

import logging
import time

import pytest

from browser_copilot.browser.session import BrowserSession
from browser_copilot.errors import NavigationError
from browser_copilot.sandbox.urls import Request
from tests.support.pages import PageServer
from tests.support.waiting import eventually


async def test_a_request_the_policy_fails_to_decide_is_refused_at_once_not_left_hanging(
    browser_session: BrowserSession,
    pages: PageServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    guard = browser_session.network
    assert guard is not None

    def broken(request: Request, sites: set[str]) -> str | None:
        raise RuntimeError("a bug in the policy")

    monkeypatch.setattr(guard.policy, "judge", broken)
    started = time.monotonic()
    with caplog.at_level(logging.ERROR), pytest.raises(NavigationError) as failed:
        await browser_session.goto(pages.url("index.html?broken=1"), timeout=30)
    assert time.monotonic() - started < 10, "the paused request hung the load"
    assert "BLOCKED_BY_CLIENT" in str(failed.value), failed.value
    assert any("deciding" in r.getMessage() and "refused" in r.getMessage() for r in caplog.records)
    monkeypatch.undo()

    async def on_the_error_page() -> bool:
        url = await browser_session.run_code("async (page) => page.url()", idempotent=True)
        return str(url.value).startswith("chrome-error:")

    await eventually(on_the_error_page, what="the refused load's error page")
    opened = await browser_session.goto(pages.url("index.html"))  # the policy decides again
    assert opened["url"].endswith("/index.html"), opened
