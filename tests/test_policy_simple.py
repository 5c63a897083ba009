"""The simple policy gate: destructive targets need /yes; reads, typing and safe buttons do not."""

from __future__ import annotations

import pytest

from browser_copilot.agent.policy import classify_call, classify_code, classify_text, is_acting
from browser_copilot.agent.state import ObservationState


def observation(*elements: tuple[int, str, str], dialog: dict[str, str] | None = None) -> ObservationState:
    return {
        "url": "https://shop.test/cart",
        "title": "Cart",
        "text": "",
        "fingerprint": "",
        "elements": [{"n": n, "role": role, "name": name, "state": ""} for n, role, name in elements],
        "frames": {},
        "tabs": [],
        "dialog": dialog,
        "screenshot": None,
        "full": False,
    }


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("Place order", "order"),
        ("Buy now", "pay"),
        ("Delete", "delete"),
        ("Send", "send"),
        ("Publish post", "publish"),
        ("Cancel subscription", "cancel"),
        ("I agree", "accept"),
        ("Submit application", "submit"),
        ("Оформить заказ", "order"),
        ("Удалить аккаунт", "delete"),
        ("Отправить", "send"),
        ("Оплатить", "pay"),
        ("Jetzt kaufen", "pay"),
    ],
)
def test_destructive_names_are_recognised(text: str, category: str) -> None:
    hit = classify_text(text)
    assert hit is not None
    assert hit[0] == category


@pytest.mark.parametrize(
    "text",
    [
        "Add to cart",
        "Proceed to checkout",
        "Cancel",
        "Search",
        "В корзину",
        "Next",
        "Details",
        "Sendai weather",
    ],
)
def test_ordinary_names_are_safe(text: str) -> None:
    assert classify_text(text) is None


def test_clicking_a_numbered_destructive_element_needs_confirmation() -> None:
    verdict = classify_code(
        "async (page) => { await el(4).click() }", observation((4, "button", "Place order"))
    )
    assert verdict.destructive
    assert verdict.category == "order"
    assert verdict.target is not None
    assert verdict.target.describe() == 'button "Place order"'


def test_locators_and_text_selectors_are_checked_too() -> None:
    by_role = "async (page) => { await page.getByRole('button', { name: 'Delete account' }).click() }"
    by_text = "async (page) => { await page.click('text=Отправить') }"
    assert classify_code(by_role, None).category == "delete"
    assert classify_code(by_text, None).category == "send"


def test_reading_or_typing_is_not_an_action_that_needs_confirmation() -> None:
    obs = observation((4, "button", "Place order"), (5, "textbox", "Message"))
    assert not classify_code("async (page) => await el(4).textContent()", obs).destructive
    assert not classify_code("async (page) => { await el(5).fill('Please delete my data') }", obs).destructive
    assert not is_acting("async (page) => await page.locator('h1').innerText()")


def test_a_checkbox_named_like_an_action_is_not_the_action() -> None:
    obs = observation((3, "checkbox", "Send me the newsletter"))
    assert not classify_code("async (page) => { await el(3).check() }", obs).destructive


def test_accepting_a_destructive_dialog_needs_confirmation() -> None:
    obs = observation(dialog={"kind": "confirm", "message": "Delete this user?"})
    assert classify_call("handle_dialog", {"accept": True}, obs).destructive
    assert not classify_call("handle_dialog", {"accept": False}, obs).destructive
