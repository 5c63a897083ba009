"""A GET that acts is held like a button (F40, F41, F46): a link whose address commits, an address the
code opens with `goto()`, and an address a page's own script opens after an ordinary click (the effect
gate holds that request) — the words are data (lexicon.json: url_commits, url_commit_keys,
url_action_keys), ids in the path are skipped. The server counts the requests it really received; an
ordinary address still opens at once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from browser_copilot.browser.guarded import guard_report, guarded_code
from browser_copilot.browser.session import BrowserSession
from tests.support.sites import Request, Site, held_then_allowed


def orders(request: Request, port: int) -> str:
    return (
        "<!doctype html><html lang=en><title>Orders</title><h1>Your order 7</h1>"
        "<a id=place href='/checkout/complete'>Place order</a>"
        "<a id=posts href='/posts/123'>Posts</a>"
        "<button id=tidy onclick=\"location.href = '/list?action=delete&id=3'\">Tidy the list</button>"
        "<button id=news onclick=\"location.assign('/newsletter/unsubscribe')\">Newsletter</button>"
    )


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with Site(orders) as site:
        yield site


COMMITTING = {
    "a link whose address completes the checkout": (
        "async (page) => { await page.locator('#place').click() }",
        "/checkout/complete",
    ),
    "goto() to cancel an order": (
        "async (page) => { await page.goto(ORIGIN + '/orders/7/cancel') }",
        "/orders/7/cancel",
    ),
    "goto() with ?confirm=1": (
        "async (page) => { await page.goto(ORIGIN + '/transfer?confirm=1') }",
        "/transfer",
    ),
    # Written out whole, the address is judged as the guard is armed (one round trip): the same verdict.
    "goto() of an address written out whole": (
        "async (page) => { await page.goto('HERE/orders/7/cancel') }",
        "/orders/7/cancel",
    ),
    "goto() written out, after a goto that moved the page": (
        "async (page) => { await page.goto('HERE/help/how-to-cancel');"
        " await page.goto('HERE/orders/7/cancel', { waitUntil: 'load' }) }",
        "/orders/7/cancel",
    ),
    "location.href set by the page's script": (
        "async (page) => { await page.locator('#tidy').click() }",
        "/list",
    ),
    "location.assign by the page's script": (
        "async (page) => { await page.locator('#news').click() }",
        "/newsletter/unsubscribe",
    ),
}


@pytest.mark.parametrize("way", list(COMMITTING))
async def test_a_get_that_acts_is_held_before_it_is_sent(
    browser_session: BrowserSession, site: Site, way: str
) -> None:
    await browser_session.goto(site.url("/orders/7"))
    code, path = COMMITTING[way]
    source = code.replace("ORIGIN", repr(site.url(""))).replace("HERE", site.url("").rstrip("/"))
    held = await held_then_allowed(browser_session, source)
    assert held["verdict"]["destructive"]
    await site.received_once_more(browser_session, 0, "GET", path)
    site.requests.clear()


@pytest.mark.parametrize(
    "code",
    [
        "async (page) => { await page.locator('#posts').click(); await page.waitForURL('**/posts/123') }",
        "async (page) => { await page.goto(ORIGIN + '/search?q=delete+account') }",
        "async (page) => { await page.goto(ORIGIN + '/help/how-to-cancel') }",
        "async (page) => { await page.goto('HERE/help/how-to-cancel') }",
    ],
)
async def test_an_ordinary_address_opens_at_once(
    browser_session: BrowserSession, site: Site, code: str
) -> None:
    await browser_session.goto(site.url("/orders/7"))
    source = code.replace("ORIGIN", repr(site.url(""))).replace("HERE", site.url("").rstrip("/"))
    result = await browser_session.run_code(guarded_code(source, None))
    assert result.ok, result.error
    assert guard_report(result) is None
