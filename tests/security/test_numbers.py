"""`el(N)` is found by the guard by its number (no round trip): a page that copies or moves the number of
the field the model fills onto its password field gets nothing typed there (the guard judges the element
the number is on, and takes it only when one element carries it; else the app stamps what Playwright
resolves, which a copied number makes ambiguous)."""

from __future__ import annotations

import pytest
from langchain_core.messages import ToolMessage

from browser_copilot.browser.session import BrowserSession
from tests.support.agent import make_runner, value
from tests.support.pages import PageServer
from tests.support.scripted_model import code, say


@pytest.mark.parametrize("how", ["copy", "move"])
async def test_a_page_that_puts_a_fields_number_on_its_password_field_gets_nothing_typed_there(
    browser_session: BrowserSession, pages: PageServer, how: str
) -> None:
    await browser_session.goto(pages.url("index.html"))  # the user's pages on 127.0.0.1 are in the task
    runner, _ = make_runner(
        browser_session,
        code(f"async (page) => {{ await page.goto('{pages.url('copied-number.html')}#{how}') }}"),
        code("async (page) => { await el(1).fill('Ada') }"),
        say("Done."),
    )
    outcome = await runner.send("Set my display name to Ada")
    said = [str(m.content) for m in outcome.values["messages"] if isinstance(m, ToolMessage)]
    password = await value(browser_session, "document.querySelector('input[name=password]').value")
    assert password == "hunter2-secret", said
    assert await value(browser_session, "document.querySelector('[name=display]').value") == "", said
