"""The guard is in every document a code call reaches, with the phrase table of that document's language
(F41). A page's next document gets the runtime for its last one's language ahead of the guard's first
op there (one round trip instead of three), but only when the new document has that language and no
runtime yet; a document of another language is asked, and gets its own. Each case clicks the page's
"delete account" button after going through documents of one or two languages: it must be held."""

from __future__ import annotations

import pytest

from browser_copilot.browser.guarded import guard_report, guarded_code
from browser_copilot.browser.session import BrowserSession
from tests.support.agent import value
from tests.support.pages import PageServer

RUSSIAN = "shop-ru.html"
"""lang="ru"; its «Удалить аккаунт» (delete account) is destructive only to the Russian table."""


@pytest.mark.parametrize(
    "route",
    [
        ["index.html", RUSSIAN],  # English, then Russian: the English guess is not installed there
        [RUSSIAN, f"{RUSSIAN}?again=1"],  # Russian twice: the guess is right
        [RUSSIAN, "index.html", f"{RUSSIAN}?back=1"],  # the guess of the page in between is wrong again
    ],
)
async def test_a_delete_in_each_new_document_is_held_in_its_own_language(
    browser_session: BrowserSession, pages: PageServer, route: list[str]
) -> None:
    await browser_session.goto(pages.url("index.html"))
    await browser_session.run_code(guarded_code("async (page) => 1"))  # the guard has met a document
    gotos = " ".join(f"await page.goto({pages.url(p)!r});" for p in route)
    code = f"async (page) => {{ {gotos} await page.locator('#del').click(); return 'clicked' }}"
    result = await browser_session.run_code(guarded_code(code))
    report = guard_report(result)
    assert report is not None and report.held, result
    assert "Удалить" in str(report.held[0]), report.held[0]
    assert report.held[0]["verdict"]["destructive"], report.held[0]
    assert await value(browser_session, "document.documentElement.lang") == "ru"


async def test_a_document_that_fakes_the_runtime_before_the_guess_still_gets_the_guard(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    """The guessed install checks `window.__bcRuntime` in the guard's own world: a page that defines
    the name in its own world changes nothing there."""
    await browser_session.goto(pages.url(RUSSIAN))
    await browser_session.run_code(guarded_code("async (page) => 1"))
    await browser_session.run_code(
        guarded_code(f"async (page) => {{ await page.goto({pages.url(RUSSIAN + '?fake=1')!r}) }}")
    )
    # The page's own script defines the name (in its world).
    await browser_session.run_code(
        "async (page) => page.evaluate(() => { window.__bcRuntime = () => ({ held: [] }); })"
    )
    code = "async (page) => { await page.locator('#del').click(); return 'clicked' }"
    result = await browser_session.run_code(guarded_code(code))
    report = guard_report(result)
    assert report is not None and report.held, result
