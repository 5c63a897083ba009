"""A form is never sent without the secret it needs (issue 27): a sign-in whose password is empty, a
payment whose card number is empty, sent by a click or by Enter, becomes a hand-over and nothing is
sent; a form whose empty secret is optional (a settings form's "new password") goes. A scripted model,
the real browser and MCP server."""

from __future__ import annotations

from typing import Any

import pytest

from browser_copilot.browser.session import BrowserSession
from tests.support.pages import PageServer
from tests.support.scripted_model import code, goto, say
from tests.test_graph import page_value
from tests.test_honest_outcome import runner_for

SENDS = {
    "a click on the sign-in button": "await page.getByLabel('Username').fill('ann');"
    " await page.getByRole('button', { name: 'Sign in' }).click()",
    "Enter in the username field": "await page.getByLabel('Username').fill('ann');"
    " await page.getByLabel('Username').press('Enter')",
    "a typed text ending in a new line": "await page.getByLabel('Username').pressSequentially('ann\\n')",
    "the keyboard after a focus": "await page.getByLabel('Username').focus();"
    " await page.keyboard.press('Enter')",
    "a payment with no card number": "await page.getByRole('button', { name: 'Continue' }).click()",
}


@pytest.mark.parametrize("how", list(SENDS))
async def test_a_form_without_its_secret_is_handed_over_and_not_sent(
    browser_session: BrowserSession, pages: PageServer, how: str
) -> None:
    runner, _ = runner_for(
        browser_session,
        goto(pages.url("signin-form.html")),
        code(f"async (page) => {{ {SENDS[how]} }}"),
        say("Signed in."),
    )
    outcome = await runner.send("Sign in to my bank")
    assert outcome.stop_reason == "waiting_user", outcome.text
    assert outcome.interrupt is not None and outcome.interrupt["kind"] == "manual", outcome.interrupt
    sent: Any = await page_value(browser_session, "window.__sent")
    assert sent == [], sent


async def test_a_form_whose_empty_secret_is_optional_is_sent(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    runner, _ = runner_for(
        browser_session,
        goto(pages.url("signin-form.html")),
        code("async (page) => { await page.getByRole('button', { name: 'Save profile' }).click() }"),
        say("Saved."),
    )
    outcome = await runner.send("Save my profile")
    # Not a hand-over: without a judge here, the unknown "Save profile" is the user's to allow.
    assert outcome.interrupt is not None and outcome.interrupt["kind"] == "confirm", outcome.text
    assert (await runner.send("/yes")).stop_reason == "answered"
    assert await page_value(browser_session, "window.__sent") == ["profile"]
