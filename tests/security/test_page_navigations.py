"""What the model's page code may not do even with a GET (F45, F46, F47): open an address that acts
(`fetch('/orders/7/cancel')`, an image, XHR: no click or navigation check sees a request), move the
agent's tab to another site from inside the page (`location`, `window.open`, a link's `click()` in
`evaluate`: other sites are opened with `page.goto`, where the policy sees the address the model chose),
or move it after its call ended (a timer it left behind). The site counts what it really received; the
controls (the same-site navigation, `goto` to the other site, an ordinary read) still go through."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from browser_copilot.browser.guarded import guarded_code
from browser_copilot.browser.session import BrowserSession
from browser_copilot.sandbox.network import MODEL_ELSEWHERE, MODEL_LATE, MODEL_WRITE, Refusal
from tests.support.sites import Request, Site
from tests.support.waiting import async_wait_until

PAGE = (
    "<!doctype html><html lang=en><title>Orders</title><h1>Your orders</h1>"
    "<a id=away href='OTHER/plain'>Partner</a>"
)


def pages(request: Request, port: int) -> str:
    return PAGE.replace("OTHER", f"http://localhost:{port}")


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with Site(pages) as s:
        yield s


_visits = itertools.count()


async def start(session: BrowserSession, site: Site) -> None:
    await session.goto(site.url(f"/orders?visit={next(_visits)}"))
    session.refusals()


async def refused(session: BrowserSession, path: str) -> Refusal:
    guard = session.network
    assert guard is not None
    found = await async_wait_until(
        lambda: [r for r in guard._refusals if r.url.split("?")[0].endswith(path)],
        what=f"the refusal of {path}",
    )
    return found[0]


def received(site: Site, path: str) -> int:
    return sum(1 for r in site.requests if r.path.split("?")[0] == path)


COMMITTING_READS = {
    "fetch": "await page.evaluate(() => fetch('/orders/7/cancel').catch(() => 0))",
    "an image": "await page.evaluate(() => { new Image().src = '/orders/8/cancel' })",
    "XMLHttpRequest GET": (
        "await page.evaluate(() => { const x = new XMLHttpRequest();"
        " x.open('GET', '/list?action=delete&id=3'); x.send() })"
    ),
    "a fetch on a timer": "await page.evaluate(() => setTimeout(() => fetch('/newsletter/unsubscribe'), 5))",
}
PATHS = {
    "fetch": "/orders/7/cancel",
    "an image": "/orders/8/cancel",
    "XMLHttpRequest GET": "/list",
    "a fetch on a timer": "/newsletter/unsubscribe",
}


@pytest.mark.parametrize("way", list(COMMITTING_READS))
async def test_a_get_that_acts_is_refused_when_the_models_page_code_sends_it(
    browser_session: BrowserSession, site: Site, way: str
) -> None:
    await start(browser_session, site)
    result = await browser_session.run_code(
        guarded_code(f"async (page) => {{ {COMMITTING_READS[way]}; return 1 }}", None, preflight=False)
    )
    assert result.ok, result.error
    assert (await refused(browser_session, PATHS[way])).why == MODEL_WRITE
    # An ordinary read from the same code still arrives (and the request above never did).
    read = await browser_session.run_code(
        "async (page) => page.evaluate(async () => (await fetch('/orders/7')).status)"
    )
    assert read.value == 200
    assert received(site, PATHS[way]) == 0


ELSEWHERE = {
    "location.href": "await page.evaluate((u) => { location.href = u + '/plain' }, OTHER)",
    "location.assign": "await page.evaluate((u) => location.assign(u + '/plain'), OTHER)",
    "a link's click() in evaluate": "await page.evaluate(() => document.getElementById('away').click())",
    "window.open": "await page.evaluate((u) => { window.open(u + '/plain') }, OTHER)",
}


@pytest.mark.parametrize("way", list(ELSEWHERE))
async def test_the_models_page_code_cannot_move_a_tab_to_another_site(
    browser_session: BrowserSession, site: Site, way: str
) -> None:
    """Even to an address without data (which `goto` may open): the code opens other sites with goto."""
    await start(browser_session, site)
    other = repr(site.url("", host="localhost"))
    source = ELSEWHERE[way].replace("OTHER", other)
    try:
        result = await browser_session.run_code(
            guarded_code(
                f"async (page) => {{ {source}; await page.waitForTimeout(1) }}", None, preflight=False
            )
        )
        assert result.ok or "BLOCKED" in (result.error or "").upper(), result.error
        assert (await refused(browser_session, "/plain")).why == MODEL_ELSEWHERE
        assert received(site, "/plain") == 0
        here = await browser_session.run_code("async (page) => page.url()", idempotent=True)
        assert "/orders?visit=" in str(here.value)  # the agent's tab stays on its page
        # The way it may: goto, an address the model wrote where the policy sees it.
        went = await browser_session.run_code(
            guarded_code(
                f"async (page) => {{ await page.goto({other} + '/plain'); return page.url() }}", None
            )
        )
        assert went.ok, went.error
        await async_wait_until(lambda: received(site, "/plain") == 1, what="goto's request")
    finally:
        await browser_session.run_code(
            "async (page) => { for (const p of page.context().pages())"
            " if (p !== page && /plain/.test(p.url())) await p.close(); }",
            idempotent=True,
        )
        site.requests.clear()


async def test_the_models_page_code_still_moves_its_tab_within_the_site(
    browser_session: BrowserSession, site: Site
) -> None:
    await start(browser_session, site)
    result = await browser_session.run_code(
        guarded_code("async (page) => { await page.evaluate(() => { location.href = '/orders/2' }) }", None)
    )
    assert result.ok, result.error
    await async_wait_until(lambda: received(site, "/orders/2") >= 1, what="the same-site navigation")
    assert browser_session.refusals() == []


async def test_a_navigation_the_code_leaves_for_after_its_call_is_refused(
    browser_session: BrowserSession, site: Site
) -> None:
    await start(browser_session, site)
    result = await browser_session.run_code(
        guarded_code(
            "async (page) => { await page.evaluate(() =>"
            " setTimeout(() => { location.href = '/later' }, 1200)) }",
            None,
            preflight=False,
        )
    )
    assert result.ok, result.error
    assert (await refused(browser_session, "/later")).why == MODEL_LATE
    assert received(site, "/later") == 0
    # The tab stays on its page (no error page replaces it).
    here = await browser_session.run_code("async (page) => page.url()", idempotent=True)
    assert "/orders?visit=" in str(here.value)
    # The app's own navigation between calls is not the code's.
    await browser_session.goto(site.url("/orders/3"))
    assert received(site, "/orders/3") == 1
