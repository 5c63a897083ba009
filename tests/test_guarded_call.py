"""One guarded code call (sandbox/call.js) around its inputs: a consent banner that came up late is
closed before a pointer's input (its least choice, judged like any input), and when the call's last input
came back (the observation's settle counts from there)."""

from __future__ import annotations

import time

from browser_copilot.browser.calls import unwrap
from browser_copilot.browser.guarded import guarded_code
from browser_copilot.browser.observing import observe
from browser_copilot.browser.results import UNDEFINED, CodeResult
from browser_copilot.browser.session import BrowserSession
from tests.support.pages import PageServer

SEARCH = (
    "await page.locator('#search').click({ timeout: 3000 }); return await page.locator('#out').textContent();"
)


async def opened(session: BrowserSession, pages: PageServer, layer: str | None = None) -> None:
    """The test page, observed; with `layer` (`consent` or `bait`), the page then puts its layer up (after
    the look, as a layer that comes up a moment after the load)."""
    await session.goto(pages.url(f"banner-between.html?layer={layer or 'consent'}"))
    await observe(session)
    if layer:
        await session.run_code("async (page) => page.evaluate(() => consentLayer())")


async def consent(session: BrowserSession) -> object:
    answer = await session.run_code("async (page) => page.evaluate(() => window.__consent ?? null)")
    return answer.value


async def test_a_banner_that_comes_up_between_two_actions_of_one_call_is_closed_before_the_second(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    """The guard found no banner when the call began; the first click brings one up a moment later, over
    the whole page: before the second click the guard sees the page changed, looks again and rejects it,
    and the click lands (no time-out on the layer)."""
    await opened(browser_session, pages)
    result = await browser_session.run_code(
        guarded_code(
            "async (page) => { await page.locator('#more').click();"
            f" await page.locator('#backdrop').waitFor(); {SEARCH} }}"
        )
    )
    assert result.ok, result.error
    assert result.value == "Open 9 to 5"
    assert await consent(browser_session) == "other"


async def test_a_banner_that_came_up_after_the_last_look_is_closed_before_the_calls_first_action(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await opened(browser_session, pages, "consent")
    result = await browser_session.run_code(guarded_code(f"async (page) => {{ {SEARCH} }}"))
    assert result.ok, result.error
    assert result.value == "Open 9 to 5"
    assert await consent(browser_session) == "other"


async def test_a_banner_that_baits_the_closer_into_a_destructive_click_is_left_alone(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    """A page's cookie layer whose one option short of "Accept all" deletes the account: the app's click
    is judged like any input, so the guard would hold it, and the app leaves the layer alone (and says
    so); the model's own click then meets the layer."""
    await opened(browser_session, pages, "bait")
    result = await browser_session.run_code(guarded_code(f"async (page) => {{ {SEARCH} }}"))
    assert not result.ok
    assert "intercepts pointer events" in (result.error or "")
    assert result.notes.get("bannerHeld") == "Delete my account"
    assert await consent(browser_session) is None


async def test_the_settle_counts_from_the_calls_last_action_not_from_its_answer(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    """The code clicks, then reads for a while: the call's end as the observation's settle sees it is
    the click's return, well before the answer; a call that did not act ends with its answer."""
    await opened(browser_session, pages)
    result = await browser_session.run_code(
        guarded_code(
            "async (page) => { await page.locator('#search').click();"
            " await page.locator('#never').waitFor({ timeout: 400 }).catch(() => null); return 'read' }"
        )
    )
    answered = time.monotonic()
    assert result.ok and result.value == "read", result
    assert answered - browser_session.call_ended >= 0.35
    result = await browser_session.run_code(guarded_code("async (page) => { await page.title(); }"))
    answered = time.monotonic()
    assert result.ok and result.value is UNDEFINED, result
    assert 0 <= answered - browser_session.call_ended < 0.2


def test_only_the_guarded_calls_wrapper_is_taken_off_and_only_once() -> None:
    assert unwrap(CodeResult(ok=True, value={"__bcActed": None, "value": [1]}))[0].value == [1]
    assert unwrap(CodeResult(ok=True, value={"__bcActed": None}))[0].value is UNDEFINED
    # The model's own value that looks like the wrapper is the model's (inside the real one).
    inner = {"__bcActed": 0, "value": "x"}
    assert unwrap(CodeResult(ok=True, value={"__bcActed": None, "value": inner}))[0].value == inner
    # What the app's side said besides the value stays on the result; the tabs the code opened come apart.
    result, acted, opened = unwrap(
        CodeResult(ok=True, value={"__bcActed": 1000, "value": 1, "opened": ["T1"], "banner": "Reject all"})
    )
    assert (result.value, acted, opened, result.notes) == (1, 1.0, ["T1"], {"banner": "Reject all"})


async def test_an_observation_has_the_armed_guard_close_a_banner_and_never_makes_a_click_it_holds(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    """The observation finds the banner and its choice; the click is the guard's. A genuine layer is
    closed by rejecting it; a bait layer's "Delete my account" is held: not clicked, and the model is
    told why the layer is still there."""
    await opened(browser_session, pages, "consent")
    observation = await observe(browser_session, settle=True)
    assert (observation.banner, observation.banner_held) == ("Reject all", None)
    assert await consent(browser_session) == "other"

    await opened(browser_session, pages, "bait")
    observation = await observe(browser_session, settle=True)
    assert (observation.banner, observation.banner_held) == (None, "Delete my account")
    assert '"Delete my account", looks like an action of its own' in observation.render()
    assert await consent(browser_session) is None
    assert any(e.name == "Accept all" for e in observation.elements)
