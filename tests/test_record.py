"""What ran is what the app says ran (issue 27): an allowed action's step names the request it let
leave, or says that none was seen; a step-limit summary after an allowed order says it was placed and
never suggests placing it again; the answer check finds the plan's committing step in the record, also
after the request's action list has moved on. A scripted model, the real browser and MCP server."""

from __future__ import annotations

import json
import re
from typing import Any

from browser_copilot.agent.context import Limits
from browser_copilot.agent.runner import TurnOutcome
from browser_copilot.browser.guarded import guarded_code
from browser_copilot.browser.observing import observe
from browser_copilot.browser.session import BrowserSession
from browser_copilot.events import EventLog
from browser_copilot.plain_steps import Narrator
from tests.support.pages import PageServer
from tests.support.scripted_model import call, code, goto, say
from tests.test_graph import page_value
from tests.test_honest_outcome import runner_for

PLACE = "async (page) => { await page.getByRole('button', { name: 'Place order' }).click() }"
PLAN = call(
    "update_working_state",
    current_goal="Order the espresso machine",
    plan=["Open the checkout", "Place the order", "Tell the user it is ordered"],
)


def line(outcome: TurnOutcome, start: str) -> str:
    return next((x for x in outcome.text.splitlines() if x.startswith(start)), "")


def replay_result(log: EventLog) -> dict[str, Any]:
    (event,) = [e for e in log.of("tool_result") if e.data["tool"] == "replay"]
    return event.data


async def test_after_an_allowed_order_the_step_limit_summary_says_it_was_placed_and_not_to_place_it_again(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    runner, log = runner_for(
        browser_session,
        PLAN,
        goto(pages.url("checkout-post.html")),
        code(PLACE),
        limits=Limits(max_tool_steps=2),
    )
    held = await runner.send("Order the espresso machine")
    assert held.stop_reason == "waiting_confirmation", held.text
    stopped = await runner.send("/yes")
    assert stopped.stop_reason == "step_limit", stopped.text
    (entry,) = stopped.values["committed"]
    assert entry["category"] == "order"
    assert re.fullmatch(r"POST 127\.0\.0\.1:\d+/orders", entry["sent"][0]), entry
    done = line(stopped, "Done: ")
    assert "allowed by you (POST 127.0.0.1:" in done and "/orders)" in done, stopped.text
    # The model never marked the plan's step done: the record shows it ran.
    assert "Place the order" not in line(stopped, "Not done: ")
    suggested = line(stopped, "Suggested next step: ")
    assert suggested and not suggested.startswith("Suggested next step: Place the order"), stopped.text
    assert "not again" in suggested or "Place" not in suggested
    # The step says what went.
    result = replay_result(log)
    assert result["ok"] is True and "The browser sent POST 127.0.0.1:" in result["result"]
    step = Narrator()("tool_result", result)
    assert step["outcome"] == "done" and "sent POST 127.0.0.1:" in step["summary"], step


async def test_an_allowed_click_that_sends_nothing_is_not_reported_as_done(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    # checkout.html places its order in the page itself: no request leaves for it.
    runner, log = runner_for(
        browser_session, goto(pages.url("checkout.html")), code(PLACE), say("The order is placed.")
    )
    assert (await runner.send("Place my order")).stop_reason == "waiting_confirmation"
    await runner.send("/yes")
    result = replay_result(log)
    assert "No request to the site was seen" in result["result"], result
    step = Narrator()("tool_result", result)
    assert step["outcome"] == "unsure" and "no request to the site was seen" in step["summary"], step


async def test_the_answer_check_finds_the_allowed_order_in_the_record_after_more_actions(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    reads = [code("async (page) => await page.title()") for _ in range(14)]  # the action list keeps 12
    runner, log = runner_for(
        browser_session,
        PLAN,
        goto(pages.url("checkout-post.html")),
        code(PLACE),
        *reads,
        say("Your espresso machine is ordered."),
        limits=Limits(max_tool_steps=30),
    )
    assert (await runner.send("Order the espresso machine")).stop_reason == "waiting_confirmation"
    done = await runner.send("/yes")
    assert done.stop_reason == "answered", done.text
    (final,) = log.of("final")
    assert not any("Place the order" in d for d in final.data["doubts"]), final.data


async def test_a_text_the_page_cleared_is_not_reported_as_typed(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    runner, log = runner_for(
        browser_session,
        goto(pages.url("clearing-field.html")),
        code("async (page) => { await page.getByLabel('Note').fill('ring twice'); }"),
        code("async (page) => { await page.getByLabel('Coupon').fill('SAVE20'); }"),
        say("Done."),
    )
    await runner.send("Add my note and the coupon")
    note, coupon = [e.data for e in log.of("tool_result") if e.data["tool"] == "browser_run_code"][-2:]
    assert note["ok"] is True and note["outcome"] == "done", note
    assert coupon["ok"] is False and coupon["outcome"] == "failed", coupon
    assert "empty after typing" in coupon["result"]


async def test_the_summary_names_the_inputs_that_were_made_not_what_the_code_mentions(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    runner, _ = runner_for(
        browser_session,
        goto(pages.url("form.html")),
        code(
            "async (page) => { await page.locator('h1').innerText();"
            " await page.getByLabel('Full name').fill('Ann Lee');"
            " await page.getByLabel('Phone').fill('555 0100', { timeout: 300 }) }"
        ),
        limits=Limits(max_tool_steps=2),
    )
    stopped = await runner.send("Apply for a library card")
    assert stopped.stop_reason == "step_limit", stopped.text
    done = line(stopped, "Done: ")
    assert "filled “Full name”" in done, stopped.text
    assert "h1" not in done and "Phone" not in done, stopped.text


async def test_an_option_label_the_observation_shortened_selects_its_option(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await browser_session.goto(pages.url("long-options.html"))
    shown = (await observe(browser_session)).render()
    cut = next(part for part in re.findall(r'"([^"]*…)"', shown) if "5678" in part)
    for label in (cut, {"label": cut}):
        result = await browser_session.run_code(
            guarded_code(f"async (page) => page.getByLabel('From account').selectOption({json.dumps(label)})")
        )
        assert result.ok, result.error
        picked = await page_value(browser_session, "document.getElementById('from').selectedOptions[0].label")
        assert picked == "High-Yield Savings •••• 5678 — available $12,004.10 (3.9% APY)"
        await page_value(browser_session, "(document.getElementById('from').selectedIndex = 0)")
