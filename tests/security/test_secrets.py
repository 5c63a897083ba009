"""Secrets never leave the page (F47): the value of a secret field (found by what the field is) is not
readable by the model's code through any read of the API, in any tab or frame, and the values the page
holds are masked in whatever the code returns or throws; card numbers (Luhn), valid IBANs and key shapes
in page text and code results are masked for the model, all the way to the model's prompt and the
checkpoint.

Each way of reading is an attacker's: a pre-filled password read back through another API, encoded,
from a frame of another origin, through the page's own shortcuts, or through APIs that are absent."""

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
    "getAttribute('value')": "async (page) => await page.locator('#pw').getAttribute('value')",
    "getAttribute('VALUE')": "async (page) => await page.locator('#pw').getAttribute('VALUE')",
    "the page's shortcut": "async (page) => await page.inputValue('#pw')",
    "every field in turn": (
        "async (page) => { const out = []; for (const f of await page.locator('input').all())"
        " out.push(await f.inputValue()); return out }"
    ),
    "every field's value attribute": (
        "async (page) => Promise.all((await page.locator('input').all()).map((f) => f.getAttribute('value')))"
    ),
    "a label's locator": "async (page) => await page.getByLabel('Password').inputValue()",
    "the form's text": "async (page) => await page.locator('form').innerText()",
    "reversed": "async (page) => (await page.locator('#pw').inputValue()).split('').reverse().join('')",
    "in a thrown error": (
        "async (page) => { throw new Error('found ' + await page.locator('#pw').inputValue()) }"
    ),
    "evaluate (absent)": "async (page) => await page.evaluate(() => document.querySelector('#pw').value)",
    "locator.evaluate (absent)": "async (page) => await page.locator('#pw').evaluate((e) => e.value)",
    "page.content() (absent)": "async (page) => await page.content()",
    "innerHTML (absent)": "async (page) => await page.locator('form').innerHTML()",
    "the one-time code": "async (page) => await page.locator('#otp').inputValue()",
    "the card field": "async (page) => await page.locator('#card').inputValue()",
}
UNREAD = ("<masked>", "<card>", "is not readable", "is not part of the browser API here")
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
    result = await session.run_code(guarded_code(source))
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
    assert way == "the form's text" or any(u in seen for u in UNREAD), seen


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
        assert "is not readable" in seen


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
