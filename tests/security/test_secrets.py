"""Secrets never leave the page (F47): the values of secret fields (found by what the field is) are
masked in whatever the model's code returns or throws, however it read them; card numbers (Luhn),
valid IBANs and key shapes in page text and code results are masked for the model, all the way to
the model's prompt and the checkpoint.

Each way of reading is an attacker's: a pre-filled password read back through another API, encoded,
from a frame of another origin, after clearing the field."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from browser_copilot.browser.guarded import guarded_code
from browser_copilot.browser.session import BrowserSession
from tests.support.agent import make_runner
from tests.support.pages import PageServer
from tests.support.scripted_model import code, say
from tests.support.sites import Site

PASSWORD = "Tr0ub4dor-ECHO-77"
OTP = "482977"
CARD = "4111 1111 1111 1111"
FRAME_SECRET = "Fr4me-Secret-991"

FORM = (
    "<form><label>User <input id=user value=alice></label>"
    f"<label>Password <input type=password id=pw value={PASSWORD}></label>"
    f"<label>Code <input id=otp autocomplete=one-time-code value={OTP}></label>"
    f"<label>Card <input id=card autocomplete=cc-number value='{CARD}'></label></form>"
)

READS = {
    "inputValue()": "async (page) => await page.locator('#pw').inputValue()",
    "evaluate(() => input.value)": (
        "async (page) => await page.evaluate(() => document.querySelector('#pw').value)"
    ),
    "locator.evaluate": "async (page) => await page.locator('#pw').evaluate((e) => e.value)",
    "$eval": "async (page) => await page.$eval('#pw', (e) => e.value)",
    "evaluateHandle + jsonValue": (
        "async (page) => await (await page.evaluateHandle(() => document.querySelector('#pw').value))"
        ".jsonValue()"
    ),
    "getAttribute('value')": "async (page) => await page.locator('#pw').getAttribute('value')",
    "page.content()": "async (page) => await page.content()",
    "inside an object": (
        "async (page) => ({ fields: await page.$$eval('input', (all) => all.map((e) => [e.id, e.value])) })"
    ),
    "base64": "async (page) => btoa(await page.locator('#pw').inputValue())",
    "reversed": "async (page) => (await page.locator('#pw').inputValue()).split('').reverse().join('')",
    "hex": (
        "async (page) => [...(await page.locator('#pw').inputValue())]"
        ".map((c) => c.charCodeAt(0).toString(16).padStart(2, '0')).join('')"
    ),
    "character codes": (
        "async (page) => [...(await page.locator('#pw').inputValue())].map((c) => c.charCodeAt(0))"
    ),
    "URL-encoded": "async (page) => encodeURIComponent(await page.locator('#pw').inputValue())",
    "in a thrown error": (
        "async (page) => { throw new Error('found ' + await page.locator('#pw').inputValue()) }"
    ),
    "after clearing the field": (
        "async (page) => await page.evaluate(() => { const f = document.querySelector('#pw');"
        " const v = f.value; f.value = ''; return v })"
    ),
    "the one-time code": "async (page) => await page.locator('#otp').inputValue()",
    "the card field": "async (page) => await page.locator('#card').inputValue()",
}

ENCODED = [
    PASSWORD,
    PASSWORD[::-1],
    "VHIwdWI0ZG9yLUVDSE8tNzc",  # base64 (unpadded prefix of the padded form)
    PASSWORD.encode().hex(),
    ",".join(str(ord(c)) for c in PASSWORD),
    OTP,
    CARD,
    CARD.replace(" ", ""),
]


async def in_box(session: BrowserSession, source: str) -> Any:
    result = await session.run_code(guarded_code(source, None, preflight=False))
    return repr(result.value) + repr(result.error)


async def set_form(session: BrowserSession, html: str) -> None:
    result = await session.run_code(
        f"async (page) => {{ await page.setContent({json.dumps(html)}); }}", idempotent=True
    )
    assert result.ok, result.error


@pytest.mark.parametrize("way", list(READS))
async def test_a_secret_fields_value_never_comes_back_however_it_is_read(
    browser_session: BrowserSession, pages: PageServer, way: str
) -> None:
    await browser_session.goto(pages.url("form.html"))
    await set_form(browser_session, FORM)
    seen = await in_box(browser_session, READS[way])
    for form in ENCODED:
        assert form not in seen, (way, seen)
    assert "<masked>" in seen or "<card>" in seen, seen


async def test_the_users_own_details_stay_readable(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await browser_session.goto(pages.url("form.html"))
    await set_form(browser_session, FORM)
    assert "alice" in await in_box(
        browser_session, "async (page) => await page.locator('#user').inputValue()"
    )


async def test_a_secret_in_a_frame_of_another_origin_never_comes_back(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    with Site(lambda request, port: f"<input type=password value={FRAME_SECRET}>") as server:
        await browser_session.goto(pages.url("form.html"))
        # "localhost" is another origin than the page's 127.0.0.1.
        src = server.url("/card", host="localhost")
        result = await browser_session.run_code(
            "async (page) => { await page.setContent("
            f"{json.dumps(f'<iframe src={src}></iframe>')});"
            " await page.frameLocator('iframe').locator('input').waitFor(); }",
            idempotent=True,
        )
        assert result.ok, result.error
        seen = await in_box(
            browser_session, "async (page) => await page.frameLocator('iframe').locator('input').inputValue()"
        )
        assert FRAME_SECRET not in seen
        assert "<masked>" in seen


async def test_card_numbers_ibans_and_keys_in_page_text_never_reach_the_model(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await browser_session.goto(pages.url("form.html"))
    await set_form(
        browser_session,
        "<h1>Your wallet</h1><p>Card on file: 4012 8888 8888 1881</p><p>IBAN DE89 3704 0044 0532 0130 00</p>"
        "<p>Your key: sk-proj-A1b2C3d4E5f6G7h8I9j0KLMN</p><p>Order 12345, total €42.00</p>",
    )
    runner, _ = make_runner(
        browser_session,
        code("async (page) => await page.locator('body').innerText()"),
        say("Done."),
    )
    await runner.send("What is on this page?")
    snapshot = await runner.graph.aget_state(runner.config)
    messages = snapshot.values["messages"]
    tool_text = " ".join(str(m.content) for m in messages if isinstance(m, ToolMessage))
    everything = json.dumps([str(m.content) for m in messages])
    assert "Order 12345" in tool_text  # the code's result did come back
    for secret in ("4012 8888 8888 1881", "DE89 3704 0044 0532 0130 00", "sk-proj-A1b2C3d4E5f6G7h8I9j0KLMN"):
        assert secret not in everything
    assert "<card>" in tool_text and "<iban>" in tool_text and "<api-key>" in tool_text
    # What the model was sent (the prompts, the observation included) has none of them either.
    prompts = json.dumps([[str(m.content) for m in p] for p in runner_prompts(runner)])
    for secret in ("4012 8888 8888 1881", "DE89 3704 0044 0532 0130 00", "sk-proj-A1b2C3d4E5f6G7h8I9j0KLMN"):
        assert secret not in prompts


def runner_prompts(runner: Any) -> list[list[Any]]:
    prompts: list[list[Any]] = runner.context.llm.prompts
    assert prompts
    return prompts
