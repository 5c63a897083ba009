"""Whole flows a person does, driven by a scripted model through the real graph, browser and MCP server
(F40-F42): a four-step checkout and a two-step registration. The site records what it received.

What is asserted: exactly one card per committing action (placing the order, agreeing and signing up),
none for the steps on the way (a link to the checkout, an address form, choosing delivery and payment,
the sign-up's first step); each committing request reaches the site once, after /yes; and the card shows
what a person checks (the order's lines, the delivery address, the payment method, the total). The judge
is scripted to call everything safe, so any card comes from the rules and the page's structure; how
often it was asked is printed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs

import pytest
from langchain_core.messages import AIMessage, BaseMessage

from browser_copilot.browser.session import BrowserSession
from tests.support.agent import make_runner
from tests.support.scripted_model import ScriptedModel, code, goto, say
from tests.support.sites import Request, Site

HEAD = (
    "<!doctype html><html lang=en><head><meta charset=utf-8>"
    "<title>{title} — Northpeak Store</title></head><body>"
)
NAV = '<header><nav><a href="/shop/cart">Cart</a> · <a href="/orders">Orders</a></nav></header>'
LINES = """<table><thead><tr><th>Item</th><th>Qty</th><th>Price</th></tr></thead><tbody>
<tr><td>Trail shoes</td><td>2</td><td>€98.00</td></tr>
<tr><td>Wool socks</td><td>1</td><td>€6.00</td></tr></tbody></table><p>Order total: €104.00</p>"""

CART = (
    HEAD.format(title="Cart")
    + NAV
    + f"""<main><h1>Your cart</h1>{LINES}<a href="/shop/address">Proceed to checkout</a></main>"""
)
ADDRESS = (
    HEAD.format(title="Checkout — address")
    + NAV
    + """<main><h1>Delivery address</h1><p>Order total: €104.00</p>
<form method=post action=/shop/address>
<label>Full name <input name=name autocomplete=name></label>
<label>Street <input name=street></label><label>City <input name=city></label>
<label>Postcode <input name=postcode></label>
<button type=submit>Continue</button></form></main>"""
)
METHODS = (
    HEAD.format(title="Checkout — delivery and payment")
    + NAV
    + """<main><h1>Delivery and payment</h1><p>Order total: €104.00</p>
<form method=post action=/shop/methods>
<fieldset><legend>Delivery</legend>
<label><input type=radio name=delivery value=standard> Standard (free, 3–5 days)</label>
<label><input type=radio name=delivery value=express> Express (€9.00, next day)</label></fieldset>
<fieldset><legend>Payment</legend>
<label><input type=radio name=payment value=card> Card</label>
<label><input type=radio name=payment value=cod> Cash on delivery</label></fieldset>
<button type=submit>Continue to review</button></form></main>"""
)


def review(address: dict[str, list[str]], methods: dict[str, list[str]]) -> str:
    where = ", ".join(address.get(k, [""])[0] for k in ("name", "street", "city", "postcode"))
    delivery = {"standard": "Standard (free, 3–5 days)", "express": "Express (next day)"}
    payment = {"card": "Card", "cod": "Cash on delivery"}
    return (
        HEAD.format(title="Checkout — review")
        + NAV
        + f"""<main><h1>Review your order</h1>{LINES}
<section><h2>Deliver to</h2><address>{where}</address></section>
<section><h2>Delivery</h2><p>{delivery[methods["delivery"][0]]}</p></section>
<section><h2>Payment</h2><p>{payment[methods["payment"][0]]}</p></section>
<form method=post action=/shop/order><button type=submit>Place order</button></form></main>"""
    )


JOIN = (
    HEAD.format(title="Join")
    + """<main><h1>Create your account</h1><p>Step 1 of 2</p>
<form method=post action=/join/details>
<label>Full name <input name=name></label><label>Email <input name=email type=email></label>
<button type=submit>Next</button></form></main>"""
)
TERMS = (
    HEAD.format(title="Join — plan")
    + """<main><h1>Choose your plan</h1><p>Step 2 of 2</p>
<form method=post action=/join/finish>
<fieldset><legend>Plan</legend>
<label><input type=radio name=plan value=free> Free</label>
<label><input type=radio name=plan value=team> Team (€8 per month)</label></fieldset>
<label><input type=checkbox name=terms id=terms> I agree to the <a href="/terms">Terms of Service</a></label>
<button type=submit>Agree and sign up</button></form></main>"""
)
DONE = HEAD.format(title="Thank you") + "<main><h1>Thank you</h1><p>{what}</p></main>"


class Store:
    """The site's state: what each form step sent."""

    def __init__(self) -> None:
        self.address: dict[str, list[str]] = {}
        self.methods: dict[str, list[str]] = {}

    def __call__(self, request: Request, port: int) -> str:
        form = parse_qs(request.body)
        if request.method == "POST" and request.path == "/shop/address":
            self.address = form
            return METHODS
        if request.method == "POST" and request.path == "/shop/methods":
            self.methods = form
            return review(self.address, self.methods)
        if request.method == "POST" and request.path == "/shop/order":
            return DONE.format(what="Order NP-1001 is placed.")
        if request.method == "POST" and request.path == "/join/details":
            return TERMS
        if request.method == "POST" and request.path == "/join/finish":
            return DONE.format(what="Your account is ready.")
        if request.path.startswith("/shop/address"):
            return ADDRESS
        if request.path.startswith("/join"):
            return JOIN
        return CART


@pytest.fixture
def store() -> Iterator[tuple[Site, Store]]:
    state = Store()
    with Site(state) as site:
        yield site, state


def safe_judge() -> tuple[ScriptedModel, list[int]]:
    """A judge that calls every target it is asked about safe, and counts the questions."""
    asked = [0]

    def answer(messages: list[BaseMessage]) -> AIMessage:
        asked[0] += 1
        return AIMessage(content='{"destructive": false, "category": "safe", "reason": "a step on the way"}')

    return ScriptedModel(replies=[answer] * 40), asked


async def run_flow(
    session: BrowserSession, judge: ScriptedModel, task: str, *steps: AIMessage
) -> tuple[list[dict[str, Any]], str]:
    """Run the scripted steps; answer /yes to every card. The cards asked and the final answer."""
    runner, _ = make_runner(session, *steps, judge_model=judge)
    cards: list[dict[str, Any]] = []
    outcome = await runner.send(task)
    while outcome.stop_reason == "waiting_confirmation":
        assert outcome.interrupt is not None
        cards.append(outcome.interrupt["card"])
        outcome = await runner.send("/yes")
    assert outcome.stop_reason == "answered", outcome.text
    return cards, outcome.text


async def test_a_four_step_checkout_asks_once_with_what_the_order_commits(
    browser_session: BrowserSession, store: tuple[Site, Store]
) -> None:
    site, state = store
    judge, asked = safe_judge()
    cards, answer = await run_flow(
        browser_session,
        judge,
        "Buy my cart; deliver to Ann Lee, 5 Elm Road, Leeds LS1 4AB, standard delivery, cash on delivery",
        goto(site.url("/shop/cart")),
        code("async (page) => { await page.getByRole('link', { name: 'Proceed to checkout' }).click() }"),
        code(
            "async (page) => { await page.getByLabel('Full name').fill('Ann Lee');"
            " await page.getByLabel('Street').fill('5 Elm Road');"
            " await page.getByLabel('City').fill('Leeds');"
            " await page.getByLabel('Postcode').fill('LS1 4AB');"
            " await page.getByRole('button', { name: 'Continue' }).click() }"
        ),
        code(
            "async (page) => { await page.getByLabel('Standard (free, 3–5 days)').check();"
            " await page.getByLabel('Cash on delivery').check();"
            " await page.getByRole('button', { name: 'Continue to review' }).click() }"
        ),
        code("async (page) => { await page.getByRole('button', { name: 'Place order' }).click() }"),
        say("Order NP-1001 is placed: €104.00, cash on delivery."),
    )
    assert [c["category"] for c in cards] == ["order"]
    assert asked[0] <= 2, asked  # at most the two form steps on the way were uncertain enough to ask
    await site.received_once_more(browser_session, 0, "POST", "/shop/order")
    assert state.methods == {"delivery": ["standard"], "payment": ["cod"]}
    shown = " | ".join(f"{label}: {text}" for label, text in cards[0]["details"])
    assert "Trail shoes" in shown and "Wool socks" in shown, shown
    assert "Ann Lee, 5 Elm Road, Leeds, LS1 4AB" in shown, shown
    assert "Cash on delivery" in shown and "Standard" in shown, shown
    assert cards[0]["amount"] == "€104.00"
    assert "NP-1001" in answer


async def test_a_two_step_registration_asks_once_when_it_agrees_and_signs_up(
    browser_session: BrowserSession, store: tuple[Site, Store]
) -> None:
    site, _ = store
    judge, asked = safe_judge()
    cards, _ = await run_flow(
        browser_session,
        judge,
        "Sign me up for the free plan as Ann Lee, ann@example.com",
        goto(site.url("/join")),
        code(
            "async (page) => { await page.getByLabel('Full name').fill('Ann Lee');"
            " await page.getByLabel('Email').fill('ann@example.com');"
            " await page.getByRole('button', { name: 'Next' }).click() }"
        ),
        code(
            "async (page) => { await page.getByLabel('Free').check(); await page.locator('#terms').check();"
            " await page.getByRole('button', { name: 'Agree and sign up' }).click() }"
        ),
        say("Your account is ready."),
    )
    assert [c["category"] for c in cards] == ["accept"]
    assert asked[0] <= 1, asked  # at most the first step
    await site.received_once_more(browser_session, 0, "POST", "/join/finish")
    assert site.received("POST", "/join/details") == 1
