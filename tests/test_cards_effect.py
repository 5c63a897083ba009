"""A card describes what would be committed (issue 27): the values the form would send after the
code's own changes (a payment switched, an address typed), the order's total rather than the first
money on the page, the choice made rather than every option; a control whose text and accessible
name differ is named by both and judged by the more committing. A scripted model, the real browser
and MCP server."""

from __future__ import annotations

from typing import Any

import pytest

from browser_copilot.browser.session import BrowserSession
from tests.support.pages import PageServer
from tests.support.scripted_model import code, goto, say
from tests.test_graph import page_value
from tests.test_honest_outcome import runner_for


async def card_for(
    browser_session: BrowserSession, pages: PageServer, page: str, source: str
) -> dict[str, Any]:
    runner, _ = runner_for(browser_session, goto(pages.url(page)), code(source), say("Done."))
    outcome = await runner.send("Do it")
    assert outcome.interrupt is not None and outcome.interrupt["kind"] == "confirm", outcome.text
    card: dict[str, Any] = outcome.interrupt["card"]
    return card


async def test_the_card_shows_the_order_as_the_code_left_it_with_its_total(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    card = await card_for(
        browser_session,
        pages,
        "checkout-post.html",
        "async (page) => { await page.getByLabel('Cash on delivery').check();"
        " await page.getByLabel('Shipping address').fill('99 Oak Road');"
        " await page.getByRole('button', { name: 'Place order' }).click() }",
    )
    assert card["category"] == "order"
    assert card["amount"] == "$500.00"  # the total, not the shipping line's $5.00
    assert "$500.00" in card["happens"]
    values = dict(map(tuple, card["values"]))
    assert values["Shipping address"] == "99 Oak Road" and values["payment"] == "Cash on delivery"
    shown = " ".join(line for _, line in card["details"])
    assert "Visa" not in shown, card["details"]  # the choice the form sends, not every option
    assert await page_value(browser_session, "document.title") == "Checkout (sent)"  # nothing sent


@pytest.mark.parametrize(
    ("shows", "named"), [("Send", "Save draft"), ("Save draft", "Send")], ids=["shows-send", "named-send"]
)
async def test_a_control_whose_text_and_name_differ_is_named_by_both_and_judged_by_the_more_committing(
    browser_session: BrowserSession, pages: PageServer, shows: str, named: str
) -> None:
    source = (
        "async (page) => { await page.getByLabel('Message').fill('Hello all');"
        " await page.locator('#send').click() }"
    )
    html = pages.url("compose-named.html")
    runner, _ = runner_for(
        browser_session,
        goto(f"{html}?shows={shows}&named={named}"),
        code(source),
        say("Sent."),
    )
    outcome = await runner.send("Write to the team")
    assert outcome.interrupt is not None, outcome.text
    card = outcome.interrupt["card"]
    assert card["category"] == "send", card
    assert card["what"] == f'button "{shows}" (named "{named}")'
    assert await page_value(browser_session, "window.__sent") == 0


async def test_a_button_that_opens_the_sites_confirmation_is_not_carded_its_confirming_button_is(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    runner, log = runner_for(
        browser_session,
        goto(pages.url("opener-dialog.html")),
        code("async (page) => { await page.locator('#open').click() }"),
        code("async (page) => { await page.locator('#yes').click() }"),
        say("Cancelled."),
    )
    outcome = await runner.send("Cancel my subscription")
    # One decision, at the dialog that shows the fee: the opener went without a card.
    assert outcome.interrupt is not None and outcome.interrupt["kind"] == "confirm", outcome.text
    card = outcome.interrupt["card"]
    assert card["category"] == "cancel", card
    assert "$30.00" in " ".join(line for _, line in card["details"]), card
    assert len(log.of("policy_request")) == 1
    assert await page_value(browser_session, "window.__cancelled") == 0
    done = await runner.send("/yes")
    assert done.stop_reason == "answered", done.text
    assert await page_value(browser_session, "window.__cancelled") == 1
