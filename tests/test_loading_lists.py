"""An observation taken while a list says it is loading waits for it, bounded (issue 29): the model is
shown the rows, not the placeholder, in any language the words are kept for; a list that never loads
costs a bounded wait. The real browser and MCP server."""

from __future__ import annotations

import time
from urllib.parse import quote

import pytest

from browser_copilot.browser.observing import observe
from browser_copilot.browser.session import BrowserSession
from tests.support.pages import PageServer


@pytest.mark.parametrize("say", ["Loading…", "Cargando...", "Wird geladen", "Загрузка…", "読み込み中"])
async def test_a_list_that_says_it_is_loading_is_awaited(
    browser_session: BrowserSession, pages: PageServer, say: str
) -> None:
    await browser_session.goto(pages.url(f"late-list.html?say={quote(say)}"))
    text = (await observe(browser_session, settle=True)).render().split("Text:", 1)[1]
    assert "Order 1042" in text, text
    assert say.rstrip(".…") not in text


async def test_a_list_that_never_loads_is_shown_as_it_is_after_a_bounded_wait(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await browser_session.goto(pages.url("late-list.html?ms=0"))
    started = time.monotonic()
    text = (await observe(browser_session, settle=True)).render().split("Text:", 1)[1]
    assert "Loading" in text
    assert time.monotonic() - started < 10
