"""/yes runs a held action exactly once on every kind of element the guard can hold (F40, F41, F42):
a button, a committing link, a submit input, a button inside a custom element's open shadow root, a
button in a same-origin frame, keyboard Enter, a `dispatchEvent` click and a click at mouse
coordinates; inside a closed shadow root, the model's own click runs again with the host allowed.
The site counts what it really received: after /yes the action's request arrives once;
after /no (nothing replayed) none. Ticking a checkbox or radio through its label is not an action: no
card, and it is ticked."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from browser_copilot.browser.guarded import guard_report, guarded_code
from browser_copilot.browser.session import BrowserSession
from tests.support.agent import make_runner, value
from tests.support.pages import PageServer
from tests.support.scripted_model import code, say
from tests.support.sites import Request, Site, held_then_allowed

POST = "(p) => fetch(p, { method: 'POST', body: '1' })"

PAGE = f"""<!doctype html><html lang=en><head><title>Kinds</title>
<style>x-consent {{ display: block; width: 600px; }}</style></head><body>
<h1>Your account</h1>
<section><h2>Review your order</h2><p>Total: $42.00</p>
<button id=button type=button>Place order</button></section>
<section><h2>Orders</h2><a id=link href="/orders/9/cancel">Cancel order 9</a></section>
<section><h2>Checkout</h2><form id=form action=/k/submit method=post><p>Total: $42.00</p>
<input id=submit type=submit value="Place order"></form></section>
<section><h2>Community</h2><x-consent id=consent></x-consent></section>
<section><h2>Danger zone</h2><iframe id=frame src="/frame" width=400 height=80></iframe></section>
<section><h2>Messages</h2><button id=enter type=button>Send message</button></section>
<section><h2>Blog</h2><button id=dispatch type=button>Publish post</button></section>
<section><h2>Bill</h2><p>Due: $9.00</p><button id=mouse type=button>Pay now</button></section>
<section><h2>Workshop</h2>
<label><input type=radio name=plan value=std> Standard — €390</label>
<label><input type=radio name=plan value=pro> Pro — €590</label>
<label><input type=checkbox id=ws> Add the workshop (€120)</label></section>
<script>
const post = {POST};
const on = (id, path) => document.getElementById(id).addEventListener('click', () => post(path));
on('button', '/k/button'); on('enter', '/k/enter'); on('dispatch', '/k/dispatch'); on('mouse', '/k/mouse');
customElements.define('x-consent', class extends HTMLElement {{
  connectedCallback() {{
    const root = this.attachShadow({{ mode: 'open' }});
    root.innerHTML = '<p style="height:120px">Please read the Code of Conduct of this community before you'
      + ' take part: be kind, be patient, credit others.</p><button>I agree to the Code of Conduct</button>';
    root.querySelector('button')
      .addEventListener('click', () => {{ this.agreed = true; post('/k/shadow'); }});
  }}
}});
</script></body></html>"""

FRAME = (
    f"<!doctype html><html lang=en><title>Frame</title><button id=del>Delete account</button>"
    f"<script>document.getElementById('del').addEventListener('click', () => ({POST})('/k/frame'))</script>"
)


def pages(request: Request, port: int) -> str:
    if request.method == "POST" or request.path.startswith("/orders/"):
        return "<!doctype html><title>Done</title>done"
    return FRAME if request.path.startswith("/frame") else PAGE


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with Site(pages) as s:
        yield s


KINDS = {
    "a button": ("await page.locator('#button').click()", "POST", "/k/button"),
    "a committing link": ("await page.locator('#link').click()", "GET", "/orders/9/cancel"),
    "a submit input": ("await page.locator('#submit').click()", "POST", "/k/submit"),
    "a button in an open shadow root": (
        "await page.getByRole('button', { name: 'I agree to the Code of Conduct' }).click()",
        "POST",
        "/k/shadow",
    ),
    "a button in a same-origin frame": (
        "await page.frameLocator('#frame').locator('#del').click()",
        "POST",
        "/k/frame",
    ),
    "keyboard Enter": ("await page.locator('#enter').press('Enter')", "POST", "/k/enter"),
    "mouse coordinates": (
        "await page.locator('#mouse').scrollIntoViewIfNeeded();"
        " const b = await page.locator('#mouse').boundingBox();"
        " await page.mouse.click(b.x + b.width / 2, b.y + b.height / 2)",
        "POST",
        "/k/mouse",
    ),
}

_visits = itertools.count()


async def open_page(session: BrowserSession, site: Site) -> None:
    await session.goto(site.url(f"/?visit={next(_visits)}"))
    site.requests.clear()


def received(site: Site, method: str, path: str) -> int:
    return sum(1 for r in site.requests if r.method == method and r.path == path)


@pytest.mark.parametrize("kind", list(KINDS))
async def test_yes_runs_the_held_action_once(browser_session: BrowserSession, site: Site, kind: str) -> None:
    code, method, path = KINDS[kind]
    await open_page(browser_session, site)
    await held_then_allowed(browser_session, f"async (page) => {{ {code} }}")
    await site.received_once_more(browser_session, 0, method, path)
    if kind == "a button in an open shadow root":
        agreed = await browser_session.run_code(
            "async (page) => page.evaluate(() => document.getElementById('consent').agreed === true)",
            idempotent=True,
        )
        assert agreed.value is True  # the page registered it, not only the server


@pytest.mark.parametrize("kind", list(KINDS))
async def test_no_leaves_the_site_untouched(browser_session: BrowserSession, site: Site, kind: str) -> None:
    code, method, path = KINDS[kind]
    await open_page(browser_session, site)
    result = await browser_session.run_code(guarded_code(f"async (page) => {{ {code} }}"))
    report = guard_report(result)
    assert report is not None and report.held, result
    # A round trip through the session: anything the held action had sent would have arrived before.
    assert (await browser_session.run_code("async (page) => page.url()", idempotent=True)).ok
    assert received(site, method, path) == 0


async def test_a_click_between_the_controls_is_not_held(browser_session: BrowserSession, site: Site) -> None:
    """The page's background, or a section around its buttons, is not a control (the mouse landed
    beside them, or off the viewport on the document)."""
    await open_page(browser_session, site)
    result = await browser_session.run_code(
        guarded_code(
            "async (page) => { await page.mouse.click(5, 5); await page.mouse.click(5, 5000);"
            " await page.locator('section').first().click({ position: { x: 2, y: 2 } }) }"
        )
    )
    assert guard_report(result) is None, result
    assert result.ok, result.error


async def test_ticking_through_a_label_is_not_held(browser_session: BrowserSession, site: Site) -> None:
    await open_page(browser_session, site)
    result = await browser_session.run_code(
        guarded_code(
            "async (page) => { await page.getByText('Standard — €390').click();"
            " await page.getByText('Add the workshop (€120)').click();"
            " return [await page.locator('[value=std]').isChecked(), await page.locator('#ws').isChecked()] }"
        )
    )
    assert guard_report(result) is None, result
    assert result.ok, result.error
    assert result.value == [True, True]


async def test_a_delete_that_opens_the_sites_own_dialog_asks_once(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    """The row's Delete is held and allowed; it only opens the site's "Delete George Adams?" dialog, whose
    Delete is the same action: it goes through without a second card (the code goes on: its result
    arrives)."""
    runner, log = make_runner(
        browser_session,
        code(f"async (page) => {{ await page.goto('{pages.url('delete-dialog.html')}') }}"),
        code("async (page) => { await page.locator('.del').first().click() }"),
        code("async (page) => { await page.locator('#sure #yes').click(); return 'confirmed' }"),
        say("George Adams was removed."),
    )
    asked = await runner.send("Remove George Adams from the team")
    assert asked.stop_reason == "waiting_confirmation"
    assert asked.interrupt is not None
    assert ["row", "George Adams"] in asked.interrupt["card"]["details"]  # which row the card is about
    done = await runner.send("/yes")
    assert done.stop_reason == "answered", done.values.get("messages", [])[-3:]
    assert await value(browser_session, "window.__deleted") == ["George Adams"]
    assert len(log.of("policy_request")) == 1
    said = [str(m.content) for m in done.values["messages"] if m.type == "tool"]
    assert any("part of the action the user allowed" in t and "confirmed" in t for t in said), said


CLOSED = f"""<!doctype html><html lang=en><head><title>Account</title>
<style>x-danger {{ display: block; width: 400px; height: 60px; }}</style></head><body>
<h1>Account</h1><x-danger></x-danger>
<script>
customElements.define('x-danger', class extends HTMLElement {{
  constructor() {{
    super();
    const root = this.attachShadow({{ mode: 'closed' }});
    root.innerHTML = '<div style="display:flex">'
      + '<button id=keep style="width:300px;height:60px">Keep it</button>'
      + '<button id=drop style="width:100px;height:60px">Delete account</button></div>';
    root.getElementById('drop').addEventListener('click', () => ({POST})('/k/closed'));
  }}
}});
</script></body></html>"""


async def test_yes_in_a_closed_shadow_root_runs_the_models_own_click_once(
    browser_session: BrowserSession,
) -> None:
    """Inside a closed shadow root the guard sees only the host (the judge, here failing closed, asks the
    user); the held "element" is the host, so a replay could not click what the code clicked inside it:
    /yes runs the model's code again with the host allowed once, and the site receives the POST once."""
    with Site(lambda request, port: "<!doctype html>done" if request.method == "POST" else CLOSED) as shop:
        runner, log = make_runner(
            browser_session,
            code(f"async (page) => {{ await page.goto('{shop.url('/account')}') }}"),
            code(
                "async (page) => { const b = await page.locator('x-danger').boundingBox();"
                " await page.mouse.click(b.x + b.width * 0.875, b.y + b.height / 2) }"
            ),
            say("Your account is deleted."),
        )
        asked = await runner.send("Delete my account")
        assert asked.stop_reason == "waiting_confirmation"
        assert shop.received("POST", "/k/closed") == 0
        done = await runner.send("/yes")
        assert done.stop_reason == "answered"
        await shop.received_once_more(browser_session, 0, "POST", "/k/closed")
        assert len(log.of("policy_request")) == 1
