"""What the model's code sends from inside the page to the *same* site is refused (F45, F46): a
`fetch`/XHR POST, a beacon, a page function it calls, a timer, promise or event it sets off, a script,
frame or worker it makes. Only the page's own controls send data, where the guard checks them.

The model's page code carries a name (`//# sourceURL`, `sandbox/box.py` MODEL_CODE_URL) that every
request it sets off keeps in its initiator stack, across timers and promises; the network policy
(`sandbox/network.py`) refuses a request that sends something and carries it. The shop's server counts
what it really received; every test first sees a positive control (the page's own button, clicked
through a locator, whose handler posts) arrive."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

import pytest

from browser_copilot.browser.guarded import guard_report, guarded_code
from browser_copilot.browser.session import BrowserSession
from browser_copilot.sandbox.network import MODEL_WRITE, refusal_note
from tests.support.sites import Request, Site, held_then_allowed
from tests.support.waiting import async_wait_until

SHOP = """<!doctype html><html><head><title>Shop</title></head><body>
<h1>Cart</h1>
<button id="save" type="button">Save for later</button>
<form id="order"><label>Note <input name="note"></label>
<button id="place" type="submit">Place order</button></form>
<script>
  const post = (path) => fetch(path, { method: 'POST', body: 'x' });
  document.getElementById('save').addEventListener('click', () => post('/own/saved'));
  document.getElementById('order').addEventListener('submit', (e) => { e.preventDefault(); post('/order'); });
  window.shop = { checkout: () => post('/viaapp') };
</script></body></html>"""

WAYS = {
    "fetch POST": "await page.evaluate(() => fetch('/w/fetch', { method: 'POST' }).catch(() => 0))",
    "XMLHttpRequest": (
        "await page.evaluate(() => { const x = new XMLHttpRequest(); x.open('PUT', '/w/xhr'); x.send('1') })"
    ),
    "sendBeacon": "await page.evaluate(() => navigator.sendBeacon('/w/beacon', '1'))",
    "a page function": "await page.evaluate(() => window.shop.checkout().catch(() => 0))",
    "a native function on a timer": (
        "await page.evaluate(() => setTimeout(fetch.bind(null, '/w/timer', { method: 'POST' }), 5))"
    ),
    "a string timer": (
        "await page.evaluate(() => setTimeout(\"fetch('/w/stringtimer', {method: 'DELETE'})\", 5))"
    ),
    "a promise chain": (
        "await page.evaluate(() => Promise.resolve().then(() => 0)"
        ".then(fetch.bind(null, '/w/promise', { method: 'POST', body: '1' })))"
    ),
    "eval": "await page.evaluate(() => (0, eval)(\"fetch('/w/eval', {method: 'POST', body: '1'})\"))",
    "a string expression": "await page.evaluate(\"fetch('/w/string', {method: 'POST', body: '1'})\")",
    "$eval": "await page.$eval('body', () => fetch('/w/dollar', { method: 'POST', body: '1' }))",
    "a locator's evaluate": (
        "await page.locator('h1').evaluate(() => fetch('/w/locator', { method: 'POST', body: '1' }))"
    ),
    "a script element": (
        "await page.evaluate(() => { const s = document.createElement('script');"
        " s.textContent = \"fetch('/w/script', {method: 'POST', body: '1'})\"; document.body.append(s) })"
    ),
    "addScriptTag": (
        "await page.addScriptTag({ content: \"fetch('/w/scripttag', {method: 'POST', body: '1'})\" })"
    ),
    "a javascript: URL": (
        "await page.evaluate(() => { location.href = \"javascript:fetch('/w/jsurl',"
        "{method:'POST',body:'1'});void 0\" })"
    ),
    "a frame it makes": (
        "await page.evaluate(() => { const f = document.createElement('iframe');"
        " f.srcdoc = \"<script>fetch('/w/srcdoc', {method: 'POST', body: '1'})<\\/script>\";"
        " document.body.append(f) })"
    ),
    "a worker it makes": (
        "await page.evaluate(() => new Worker(URL.createObjectURL(new Blob("
        "[\"fetch(location.origin.replace('blob:', '') + '/w/worker', {method: 'POST', body: '1'})\"]))))"
    ),
    "a self-message": (
        "await page.evaluate(() => { addEventListener('message', fetch.bind(null, '/w/message',"
        " { method: 'POST', body: '1' }), { once: true }); postMessage(1, '*') })"
    ),
}
"""Each way sends one request the shop must never receive."""


def path_of(source: str) -> str:
    """The path a way sends to: the first `'/...'` literal of its source (the shop's function: /viaapp)."""
    found = re.search(r"'(/w/[a-z]+|/viaapp)'", source) or re.search(r"shop\.checkout", source)
    assert found is not None, source
    return found.group(1) if found.lastindex else "/viaapp"


def shop_pages(request: Request, port: int) -> str:
    return SHOP if request.method == "GET" else "ok"


@pytest.fixture(scope="module")
def shop() -> Iterator[Site]:
    with Site(shop_pages) as site:
        yield site


_visits = itertools.count()


async def open_shop(session: BrowserSession, shop: Site) -> None:
    await session.goto(shop.url(f"/?visit={next(_visits)}"))
    session.refusals()


async def control(session: BrowserSession, shop: Site) -> None:
    """The page's own button, clicked through a locator: its handler's POST arrives."""
    before = shop.received("POST", "/own/")
    result = await session.run_code(
        guarded_code("async (page) => { await page.locator('#save').click() }", None, preflight=False)
    )
    assert result.ok, result.error
    await async_wait_until(lambda: shop.received("POST", "/own/") > before, what="the page's own POST")


@pytest.mark.parametrize("way", WAYS)
async def test_what_the_models_page_code_sends_to_the_same_site_is_refused(
    browser_session: BrowserSession, shop: Site, way: str
) -> None:
    source = WAYS[way]
    path = path_of(source)
    await open_shop(browser_session, shop)
    guard = browser_session.network
    assert guard is not None
    result = await browser_session.run_code(
        guarded_code(f"async (page) => {{ {source}; return 'sent' }}", None, preflight=False)
    )
    assert result.ok or "Failed to fetch" in (result.error or ""), result.error  # it ran
    refused = await async_wait_until(
        lambda: [r for r in guard._refusals if r.url.endswith(path)], what=f"the refusal of {path}"
    )
    assert refused[0].why == MODEL_WRITE
    await control(browser_session, shop)
    assert shop.received("POST", path) + shop.received("PUT", path) + shop.received("DELETE", path) == 0


async def test_the_model_reads_why_and_what_to_do_instead(
    browser_session: BrowserSession, shop: Site
) -> None:
    await open_shop(browser_session, shop)
    result = await browser_session.run_code(
        guarded_code(
            "async (page) => page.evaluate(() => fetch('/w/told', { method: 'POST' }).then(() => 'sent',"
            " (e) => 'failed: ' + e.message))",
            None,
            preflight=False,
        )
    )
    assert result.ok, result.error
    assert str(result.value).startswith("failed")
    refusals = browser_session.refusals()
    assert [r.url for r in refusals if r.why == MODEL_WRITE and r.url.endswith("/w/told")], refusals
    assert "Act through locators" in refusal_note(refusals)


async def test_reads_from_the_models_page_code_still_work(
    browser_session: BrowserSession, shop: Site
) -> None:
    await open_shop(browser_session, shop)
    result = await browser_session.run_code(
        guarded_code(
            "async (page) => page.evaluate(async () => (await fetch('/data.json?q=1')).status)",
            None,
            preflight=False,
        )
    )
    assert result.ok, result.error
    assert result.value == 200
    assert shop.received("GET", "/data.json") >= 1


async def test_the_pages_own_requests_after_a_locator_action_pass(
    browser_session: BrowserSession, shop: Site
) -> None:
    await open_shop(browser_session, shop)
    await control(browser_session, shop)
    assert browser_session.refusals() == []


async def test_an_approved_submit_replayed_by_the_app_sends_once(
    browser_session: BrowserSession, shop: Site
) -> None:
    """The held submit (the page's script posts the order) is replayed by the app's own code, which is not
    the model's: the order arrives, once."""
    await open_shop(browser_session, shop)
    before = shop.received("POST", "/order")
    held = await held_then_allowed(
        browser_session,
        "async (page) => { await page.evaluate(() => document.getElementById('order').requestSubmit()) }",
    )
    assert held["kind"] in ("submit", "click"), held
    await async_wait_until(lambda: shop.received("POST", "/order") == before + 1, what="the approved order")
    await control(browser_session, shop)
    assert shop.received("POST", "/order") == before + 1


async def test_a_held_submit_is_not_sent_by_the_models_code_either(
    browser_session: BrowserSession, shop: Site
) -> None:
    await open_shop(browser_session, shop)
    before = shop.received("POST", "/order")
    result = await browser_session.run_code(
        guarded_code(
            "async (page) => { await page.evaluate(() => document.getElementById('order').requestSubmit()) }",
            None,
            preflight=False,
        )
    )
    report = guard_report(result)
    assert report is not None and report.held
    await control(browser_session, shop)
    assert shop.received("POST", "/order") == before


async def test_after_the_tab_moves_to_another_site_a_timers_request_is_still_the_codes(
    browser_session: BrowserSession, shop: Site
) -> None:
    """Another site's page lives in a new renderer process, which forgets how deep stacks follow timers:
    the policy tells it again when the document starts."""
    await open_shop(browser_session, shop)
    await browser_session.goto(shop.url(f"/?visit={next(_visits)}", host="localhost"))
    browser_session.refusals()
    guard = browser_session.network
    assert guard is not None
    result = await browser_session.run_code(
        guarded_code(f"async (page) => {{ {WAYS['a native function on a timer']} }}", None, preflight=False)
    )
    assert result.ok, result.error
    await async_wait_until(
        lambda: [r for r in guard._refusals if r.url.endswith("/w/timer") and "localhost" in r.url],
        what="the refusal on the other site",
    )
    await control(browser_session, shop)
    assert shop.received("POST", "/w/timer") == 0
