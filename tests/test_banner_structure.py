"""A consent banner's least choice is decided by what the banner is, not by the judge (issue 29): a
lesser choice whose word alone would want a closer look ("Confirm") is chosen like "Reject all"; a bait
layer's destructive "least choice" stays held (tests/test_guarded_call.py). The real browser and MCP."""

from __future__ import annotations

from browser_copilot.browser.observation import observe
from browser_copilot.browser.session import BrowserSession
from tests.support.pages import PageServer
from tests.test_graph import page_value


async def test_a_banners_least_choice_with_a_doubtful_word_is_chosen_by_structure(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await browser_session.goto(pages.url("consent-confirm.html"))
    observation = await observe(browser_session)
    assert (observation.banner, observation.banner_held) == ("Confirm", None)
    assert await page_value(browser_session, "window.__consent") == "mine"  # never "Accept all"
    assert "looks like an action of its own" not in observation.render()
