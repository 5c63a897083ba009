"""The guard cannot be switched off by the page, nor walked around by the code (F41, F45).

The guard judges each input before it is sent, in an isolated world of its own, from what lies under
the point the pointer will press or what the key goes to: a page that pre-defines its names, replaces
`addEventListener`, `click`, `submit`, `confirm`, `setAttribute` or `Function.prototype.toString`, or
stops every event first, changes nothing that is held (the page never sees an input of a held action,
so it cannot let one through either). The shop's server counts the orders it really received."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest

from browser_copilot.browser.guarded import guard_report, guarded_code
from browser_copilot.browser.session import BrowserSession
from tests.support.sites import Request, Site, held_then_allowed

HOSTILE = {
    "none": "",
    "fake guard names": (
        "window.__bcRuntime = () => ({ held: [], secretBlocked: 0, secrets: [] });"
        " window.__bcGuard = { armed: false, held: [] }; window.__bcEarly = { listen() {} };"
    ),
    "addEventListener dropped": (
        "const add = EventTarget.prototype.addEventListener;"
        " EventTarget.prototype.addEventListener = function (t, f, o) {"
        " if (['click', 'submit', 'navigate'].includes(t)) return; return add.call(this, t, f, o) };"
    ),
    "every event stopped first": (
        "const stop = (e) => e.stopImmediatePropagation();"
        " for (const t of ['click', 'submit']) window.addEventListener(t, stop, true);"
        " if (window.navigation) navigation.addEventListener('navigate', stop);"
    ),
    "document.open() erases every listener": (
        "window.addEventListener('DOMContentLoaded', () => { const html = document.documentElement.outerHTML;"
        " document.open(); document.write(html.replace(/<script>.*?<\\/script>/s, '')); document.close(); });"
    ),
    "stamps refused": (
        "const set = Element.prototype.setAttribute;"
        " Element.prototype.setAttribute = function (n, v) {"
        " if (!String(n).startsWith('data-bc')) set.call(this, n, v) };"
    ),
    "methods replaced": (
        "HTMLFormElement.prototype.submit = HTMLFormElement.prototype.submit;"
        " const real = HTMLFormElement.prototype.requestSubmit;"
        " HTMLFormElement.prototype.requestSubmit = function (s) { return real.call(this, s) };"
        " window.confirm = () => true; HTMLElement.prototype.click = HTMLElement.prototype.click;"
        " Function.prototype.toString = () => 'function () { [native code] }';"
    ),
}

WAYS = {
    "a click": "async (page) => { await page.getByRole('button', { name: 'Place order' }).click() }",
    "Enter in the form": "async (page) => { await page.getByLabel('Note').press('Enter') }",
    "the mouse at its centre": (
        "async (page) => { const b = await page.locator('#place').boundingBox();"
        " await page.mouse.click(b.x + b.width / 2, b.y + b.height / 2) }"
    ),
    "Enter on the focused button": (
        "async (page) => { await page.locator('#place').focus(); await page.keyboard.press('Enter') }"
    ),
    "Space on the focused button": (
        "async (page) => { await page.locator('#place').focus(); await page.keyboard.press(' ') }"
    ),
    "a newline typed into the form": (
        "async (page) => { await page.getByLabel('Note').pressSequentially('y\\n') }"
    ),
}


def checkout(request: Request, port: int) -> str:
    """The checkout page (with the hostile script the query names), and the shop's answer to an order."""
    if request.method == "POST":
        return "<title>Thank you</title><p>Order placed"
    hostile = parse_qs(urlsplit(request.path).query).get("hostile", ["none"])[0]
    return (
        "<!doctype html><html lang=en><head><title>Checkout</title>"
        f"<script>{HOSTILE[hostile]}</script></head><body><h1>Checkout</h1>"
        "<form id=pay action=/order method=post><label>Note <input name=note value=x></label>"
        "<p>Total: $42.00</p><button type=submit id=place>Place order</button></form>"
        "</body></html>"
    )


@pytest.fixture(scope="module")
def shop() -> Iterator[Site]:
    with Site(checkout) as site:
        yield site


def shop_url(shop: Site, hostile: str) -> str:
    return shop.url(f"/checkout?hostile={hostile.replace(' ', '+')}")


async def open_shop(session: BrowserSession, shop: Site, hostile: str) -> None:
    # The guard has seen this tab before (an earlier test, or this line's first call), so the page's
    # document is a new one, with the early script in first.
    await session.run_code(guarded_code("async (page) => 1"))
    await session.goto(shop_url(shop, hostile))


@pytest.mark.parametrize("hostile", list(HOSTILE))
@pytest.mark.parametrize("way", list(WAYS))
async def test_an_order_is_held_whatever_the_page_does_to_the_guard(
    browser_session: BrowserSession, shop: Site, hostile: str, way: str
) -> None:
    await open_shop(browser_session, shop, hostile)
    before = shop.received("POST")
    result = await browser_session.run_code(guarded_code(WAYS[way]))
    report = guard_report(result)
    if hostile == "stamps refused" and report is None:
        # A page that refuses the stamps hides its elements from the guard: nothing is sent (fail closed).
        assert not result.ok and "could not be checked" in (result.error or ""), result
    else:
        assert report is not None and report.held, result
        assert report.held[0]["verdict"]["destructive"] or report.held[0]["verdict"].get("judge")
    title = await browser_session.run_code(
        "async (page) => await page.evaluate(() => document.title)", idempotent=True
    )
    assert title.value == "Checkout"  # still on the checkout page
    assert shop.received("POST") == before  # the shop received nothing


async def test_a_held_submission_runs_once_after_yes(browser_session: BrowserSession, shop: Site) -> None:
    await open_shop(browser_session, shop, "every event stopped first")
    before = shop.received("POST")
    await held_then_allowed(browser_session, WAYS["Enter in the form"])
    await shop.received_once_more(browser_session, before)
