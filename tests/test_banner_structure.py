"""A consent banner's least choice is decided by what the banner is, not by the judge (issue 29): a
lesser choice whose word alone would want a closer look ("Confirm") is chosen like "Reject all"; a bait
layer's destructive "least choice" stays held (tests/test_guarded_call.py). A newsletter pop-up in the way
is declined (never subscribed), also when it comes after the first look. The real browser and MCP."""

from __future__ import annotations

from browser_copilot.browser.guarded import guarded_code
from browser_copilot.browser.observing import observe
from browser_copilot.browser.session import BrowserSession
from tests.support.pages import PageServer
from tests.support.waiting import eventually
from tests.test_graph import page_value


async def test_a_banners_least_choice_with_a_doubtful_word_is_chosen_by_structure(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await browser_session.goto(pages.url("consent-confirm.html"))
    observation = await observe(browser_session)
    assert (observation.banner, observation.banner_held) == ("Confirm", None)
    assert await page_value(browser_session, "window.__consent") == "mine"  # never "Accept all"
    assert "looks like an action of its own" not in observation.render()


async def test_a_newsletter_pop_up_in_the_way_is_declined_never_subscribed(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await browser_session.goto(pages.url("newsletter-popup.html"))
    observation = await observe(browser_session)
    assert observation.banner == "Nein, danke", observation.render()
    assert await page_value(browser_session, "[window.__declined, window.__subscribed]") == [1, 0]


async def test_a_pop_up_that_comes_late_is_declined_before_the_codes_click(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await browser_session.goto(pages.url("newsletter-popup.html?late=1"))
    await observe(browser_session)  # before the pop-up: nothing to close yet
    shown = "!document.getElementById('promo').hidden"
    await eventually(lambda: page_value(browser_session, shown), what="the late pop-up")
    result = await browser_session.run_code(
        guarded_code("async (page) => { await page.getByText('In den Warenkorb').click({ timeout: 3000 }) }")
    )
    assert result.ok, result.error
    assert await page_value(browser_session, "[window.__declined, window.__subscribed]") == [1, 0]
