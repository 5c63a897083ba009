"""Every page the code can reach is guarded (F41): a frame of another origin (reached by a frame
locator, by a click at its coordinates, by the keyboard), a tab the code opens with
`context().newPage()`, the page's popup, a tab found in `context().pages()`. In each, the order is held
and the shop's server receives nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from browser_copilot.browser.guarded import guard_report, guarded_code
from browser_copilot.browser.session import BrowserSession
from tests.support.sites import Request, Site, held_then_allowed

ORDER_FORM = (
    "<!doctype html><html lang=en><head><title>Shop</title></head><body><h1>Checkout</h1>"
    "<form id=pay action=/order method=post><p>Total: $42.00</p>"
    "<button type=submit id=place>Place order</button></form></body></html>"
)


def shop_pages(request: Request, port: int) -> str:
    """A shop on 127.0.0.1 whose checkout a blog embeds from `localhost` (another origin)."""
    if request.method == "POST":
        return "<title>Thanks</title>Order placed"
    if request.path.startswith("/embed"):
        return (
            "<!doctype html><title>Blog</title><h1>A blog</h1>"
            f"<button id=open onclick=\"window.open('http://127.0.0.1:{port}/checkout')\">"
            "Open the shop</button>"
            f"<iframe id=shop src='http://localhost:{port}/checkout' width=400></iframe>"
        )
    return ORDER_FORM


@pytest.fixture(scope="module")
def shop() -> Iterator[Site]:
    with Site(shop_pages) as site:
        yield site


WAYS = {
    "a CSS locator into a cross-origin frame": (
        "async (page) => { await page.frameLocator('#shop').locator('#place').click() }"
    ),
    "the mouse at the button inside a cross-origin frame": (
        "async (page) => { const b = await page.frameLocator('#shop').locator('#place').boundingBox();"
        " await page.mouse.click(b.x + b.width / 2, b.y + b.height / 2) }"
    ),
    "the keyboard after a focus inside a cross-origin frame": (
        "async (page) => { await page.frameLocator('#shop').locator('#place').focus();"
        " await page.keyboard.press('Enter') }"
    ),
    "Enter on the button in a cross-origin frame": (
        "async (page) => { await page.frameLocator('#shop').locator('#place').press('Enter') }"
    ),
    "a tab the code opens": (
        "async (page) => { const p = await page.context().newPage(); await p.goto(SHOP);"
        " await p.locator('#place').click() }"
    ),
    "the page's popup": (
        "async (page) => { const [p] = await Promise.all([page.waitForEvent('popup'),"
        " page.locator('#open').click()]); await p.waitForLoadState();"
        " await p.locator('#place').click() }"
    ),
    "a tab found in context().pages()": (
        "async (page) => { const p = await page.context().newPage(); await p.goto(SHOP);"
        " const found = page.context().pages().find((x) => x.url() === SHOP);"
        " await found.locator('#place').press('Enter') }"
    ),
}


async def close_other_tabs(session: BrowserSession) -> None:
    await session.run_code(
        "async (page) => { for (const p of page.context().pages()) if (p !== page && /Shop|Thanks/.test(await"
        " p.title().catch(() => ''))) await p.close(); }",
        idempotent=True,
    )


@pytest.mark.parametrize("way", list(WAYS))
async def test_an_order_anywhere_the_code_reaches_is_held(
    browser_session: BrowserSession, shop: Site, way: str
) -> None:
    await browser_session.goto(shop.url("/embed"))
    before = shop.received("POST")
    source = WAYS[way].replace("SHOP", repr(shop.url("/checkout")))
    try:
        result = await browser_session.run_code(guarded_code(source))
        report = guard_report(result)
        assert report is not None and report.held, result
        assert report.held[0]["verdict"]["category"] == "order"
        assert shop.received("POST") == before
    finally:
        await close_other_tabs(browser_session)


async def test_an_order_held_in_a_cross_origin_frame_runs_once_after_yes(
    browser_session: BrowserSession, shop: Site
) -> None:
    await browser_session.goto(shop.url("/embed"))
    before = shop.received("POST")
    await held_then_allowed(browser_session, WAYS["a CSS locator into a cross-origin frame"])
    await shop.received_once_more(browser_session, before)


CLOSED = (
    "<h1>Checkout</h1><x-buy id=h></x-buy><script>"
    "const r = document.getElementById('h').attachShadow({ mode: 'closed' });"
    "r.innerHTML = '<form><p>Total $42.00</p><button>Place order</button></form>';"
    "r.querySelector('form').addEventListener('submit', (e) => { e.preventDefault();"
    " window.__bought = (window.__bought || 0) + 1 });</script>"
)


@pytest.mark.parametrize(
    "way",
    [
        "async (page) => { await page.keyboard.press('Tab'); await page.keyboard.press('Enter') }",
        "async (page) => { await page.locator('x-buy').click() }",
        "async (page) => { const b = await page.locator('x-buy').boundingBox();"
        " await page.mouse.click(b.x + b.width / 2, b.y + b.height / 2) }",
    ],
)
async def test_a_button_in_a_closed_shadow_root_is_not_activated_unseen(
    browser_session: BrowserSession, shop: Site, way: str
) -> None:
    await browser_session.goto(shop.url("/embed"))
    assert (await browser_session.run_code(f"async (page) => {{ await page.setContent({CLOSED!r}) }}")).ok
    result = await browser_session.run_code(guarded_code(way))
    report = guard_report(result)
    assert report is not None and report.held, result
    assert report.held[0]["verdict"].get("judge") or report.held[0]["verdict"]["destructive"]
    bought = await browser_session.run_code("async (page) => await page.evaluate(() => window.__bought ?? 0)")
    assert bought.value == 0
