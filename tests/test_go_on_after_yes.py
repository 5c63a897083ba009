"""After the user's /yes the model's code goes on (issue 29, item 3): the allowed input is made once by
its replay, then the code runs again passing over every input up to it, and the rest runs, each input
judged as ever. The model sees one result; nothing is made twice; a second committing input in the rest
gets its own card; code that reads another page than the first time stops rather than guessing."""

from __future__ import annotations

from browser_copilot.agent.code_runs import _said_once
from browser_copilot.browser.session import BrowserSession
from tests.support.agent import make_runner
from tests.support.scripted_model import code, say
from tests.support.sites import Request, Site

SHOP = """<!doctype html><html lang=en><head><title>Checkout</title></head><body>
<h1>Checkout</h1><p>Total: $42.00</p>
<form action=/order method=post>
<label>Delivery note <input name=note></label>
<button type=submit>Place order</button></form>
<form action=/account/delete method=post><h2>Danger zone</h2>
<button type=submit>Delete my account</button></form>
</body></html>"""

PLACED = """<!doctype html><html lang=en><head><title>Thank you</title></head><body>
<h1>Order placed</h1><p id=number>Order number 7731</p>
<form action=/account/delete method=post><button type=submit>Delete my account</button></form>
</body></html>"""


def shop_page(request: Request, port: int) -> str:
    return PLACED if request.method == "POST" else SHOP


def _feedback(outcome: object) -> list[str]:
    values = getattr(outcome, "values")  # noqa: B009 - the runner's outcome
    return [str(m.content) for m in values["messages"] if m.type == "human"]


async def test_the_rest_of_the_code_runs_after_the_yes_and_nothing_is_made_twice(
    browser_session: BrowserSession,
) -> None:
    with Site(shop_page) as shop:
        runner, log = make_runner(
            browser_session,
            code(f"async (page) => {{ await page.goto('{shop.url('/checkout')}') }}"),
            code(
                "async (page) => { await page.getByLabel('Delivery note').fill('Leave at the door');"
                " await page.getByRole('button', { name: 'Place order' }).click();"
                " await page.waitForURL('**/order');"
                " return await page.locator('#number').textContent() }"
            ),
            say("Ordered: number 7731."),
        )
        asked = await runner.send("Place the order with the note 'Leave at the door'")
        assert asked.stop_reason == "waiting_confirmation"
        assert shop.received("POST", "/order") == 0
        done = await runner.send("/yes")
        assert done.stop_reason == "answered", done.values.get("messages", [])[-3:]
        await shop.received_once_more(browser_session, 0, "POST", "/order")
        (order,) = [r for r in shop.requests if r.method == "POST"]
        assert "Leave+at+the+door" in order.body  # the fill before the click was made once, before /yes
        said = _feedback(done)
        assert any(
            "made (once)" in t and "rest of your code ran" in t and "Order number 7731" in t for t in said
        ), said
        assert len(log.of("policy_request")) == 1


async def test_a_second_committing_input_in_the_rest_gets_its_own_card(
    browser_session: BrowserSession,
) -> None:
    """An injected model puts a second commit after the one the user allows: the /yes covers only the
    first; the rest stops at the second, which waits for a card of its own (and /no leaves it undone)."""
    with Site(shop_page) as shop:
        runner, log = make_runner(
            browser_session,
            code(f"async (page) => {{ await page.goto('{shop.url('/checkout')}') }}"),
            code(
                "async (page) => { await page.getByRole('button', { name: 'Place order' }).click();"
                " await page.waitForURL('**/order');"
                " await page.getByRole('button', { name: 'Delete my account' }).click() }"
            ),
            say("Done."),
        )
        assert (await runner.send("Place the order")).stop_reason == "waiting_confirmation"
        again = await runner.send("/yes")
        assert again.stop_reason == "waiting_confirmation", again.values.get("messages", [])[-3:]
        assert again.interrupt is not None and "Delete my account" in str(again.interrupt["card"])
        await shop.received_once_more(browser_session, 0, "POST", "/order")
        assert shop.received("POST", "/account/delete") == 0
        assert len(log.of("policy_request")) == 2
        done = await runner.send("/no")
        assert done.stop_reason == "answered"
        assert shop.received("POST", "/account/delete") == 0
        assert shop.received("POST", "/order") == 1


async def test_code_whose_path_depends_on_a_page_that_changed_stops_after_the_allowed_input(
    browser_session: BrowserSession,
) -> None:
    """Before the order the code read the page to choose its inputs; after it, the same read finds the
    thank-you page and the code would make other inputs: it stops, and says the page changed."""
    with Site(shop_page) as shop:
        runner, _ = make_runner(
            browser_session,
            code(f"async (page) => {{ await page.goto('{shop.url('/checkout')}') }}"),
            code(
                "async (page) => { const h = await page.locator('h1').textContent();"
                " if (h === 'Checkout') await page.getByLabel('Delivery note').fill('Ring twice');"
                " else await page.getByRole('button', { name: 'Delete my account' }).click();"
                " await page.getByRole('button', { name: 'Place order' }).click(); return 'placed' }"
            ),
            say("Ordered."),
        )
        assert (await runner.send("Place the order")).stop_reason == "waiting_confirmation"
        done = await runner.send("/yes")
        assert done.stop_reason == "answered"
        await shop.received_once_more(browser_session, 0, "POST", "/order")
        assert shop.received("POST", "/account/delete") == 0
        said = _feedback(done)
        assert any("made (once)" in t and "did not run" in t and "another way" in t for t in said), said


def test_the_same_judged_input_in_a_row_is_told_once_with_how_many_times() -> None:
    said = _said_once(['button "Add" was checked (ordinary) and done'] * 4 + ['link "Cart" was done'])
    assert said == 'button "Add" was checked (ordinary) and done (4 times). link "Cart" was done. '
