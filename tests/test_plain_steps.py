"""Steps in plain language (plain_steps): real Playwright code as the model writes it -> one sentence, for
every event kind, put into the events at the source so the terminal, the logs and the SSE stream agree;
typed secrets never shown; code it cannot read gets an honest generic sentence, never a dump."""

from __future__ import annotations

import re
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from browser_copilot.browser.session import BrowserSession
from browser_copilot.events import Event, EventLog
from browser_copilot.plain_steps import code_phrases, element_targets, narrate, shorten
from tests.support.agent import make_runner
from tests.support.pages import PageServer
from tests.support.scripted_model import AIMessage, call, code, goto, say

TARGETS = {
    "3": {"role": "button", "name": "Next"},
    "4": {"role": "button", "name": "Add to cart"},
    "5": {"role": "textbox", "name": "To"},
    "6": {"role": "link", "name": "Invoice March.pdf"},
    "7": {"role": "combobox", "name": "Region"},
    "8": {"role": "checkbox", "name": "I agree to the terms"},
    "9": {"role": "textbox", "name": "Passcode", "secret": True},
    "12": {"role": "button", "name": "Place order"},
    "14": {"role": "textbox", "name": ""},
}

# Code as models write it (the prompt's patterns, the repository's tests, real sessions) -> what the
# user reads once the step ran.
DONE = {
    "async (page) => { await el(12).click() }": "clicked “Place order”",
    "async (page) => { await page.getByRole('button', { name: 'Place order' }).click(); }": (
        "clicked “Place order”"
    ),
    "async (page) => { await page.getByRole('button', { name: /place order/i }).click() }": (
        "clicked “place order”"
    ),
    "async (page) => { await page.getByText('Next', { exact: true }).click() }": "clicked “Next”",
    "async (page) => { await page.click('text=Sign up') }": "clicked “Sign up”",
    "async (page) => { await page.locator('button:has-text(\"Buy now\")').click() }": "clicked “Buy now”",
    "async (page) => { await page.locator('#place-order').click() }": "clicked “place order”",
    "async (page) => { await page.locator('.add-to-cart').first().click() }": "clicked “add to cart”",
    "async (page) => { await el(5).fill('Riga'); await el(5).press('Enter'); }": (
        "typed “Riga” into “To” and pressed Enter"
    ),
    "async (page) => {\n  await page.getByLabel('Street').fill('1 Main St');\n"
    "  await page.getByLabel('City').fill('Bath');\n  await page.getByLabel('Postcode').fill('BA1 1AA');\n"
    "  await page.getByLabel('Country').fill('United Kingdom');\n"
    "  await page.getByLabel('Address line 2').fill('Flat 2');\n}": "typed the address into 5 fields",
    "async (page) => { await page.getByLabel('Full name').fill('Ada Lovelace'); "
    "await page.getByLabel('Email').fill('ada@example.com'); "
    "await page.getByRole('button', { name: 'Next' }).click() }": (
        "typed the contact details into 2 fields, then clicked “Next”"
    ),
    "async (page) => { await page.getByLabel('Title').fill('Hello'); await page.getByLabel('Body').fill('x');"
    " await page.getByLabel('Tags').fill('a'); await page.getByLabel('Notes').fill('b') }": (
        "typed into 4 fields (“Title”, “Body”, “Tags”…)"
    ),
    "async (page) => { await page.goto('https://shop.example/checkout?step=2#top') }": (
        "opened shop.example/checkout"
    ),
    "async (page) => { await page.goBack() }": "went back",
    "async (page) => { await page.reload(); }": "reloaded the page",
    "async (page) => { await page.waitForTimeout(4000) }": "waited 4 s",
    "async (page) => { await page.waitForTimeout(1500) }": "waited 1.5 s",
    "async (page) => { return await el(12).innerText() }": "read “Place order”",
    "async (page) => { const main = page.getByRole('main');\n"
    "  return await ((await main.count()) ? main.first() : page.locator('body')).innerText() }": (
        "read the page"
    ),
    "async (page) => { return await page.locator('tr').allInnerTexts() }": "read the table rows",
    "async (page) => { return await page.evaluate(() => document.body.innerText) }": "read the page",
    "async (page) => { return await page.title() }": "read the page",
    "async (page) => { await el(7).selectOption({ label: 'North' }); await el(8).check(); }": (
        "chose “North” in “Region”, then ticked “I agree to the terms”"
    ),
    "async (page) => { await page.selectOption('#size', 'M') }": "chose “M” in “size”",
    "async (page) => { await page.getByRole('checkbox', { name: 'Newsletter' }).uncheck() }": (
        "unticked “Newsletter”"
    ),
    "async (page) => { await el(4).setInputFiles('/home/ann/cv.pdf') }": "attached “cv.pdf” to “Add to cart”",
    "async (page) => { const [d] = await Promise.all([page.waitForEvent('download'), el(6).click()]);\n"
    "  return await d.path() }": "clicked “Invoice March.pdf”, then downloaded a file",
    "async (page) => { const p = await page.context().newPage(); await p.goto('https://b.example/docs');\n"
    "  return await p.locator('body').innerText() }": (
        "opened b.example/docs in a new tab, then read the page"
    ),
    "async (page) => { await page.getByRole('row').filter({ hasText: 'Ann Lee' })"
    ".getByRole('button', { name: 'Delete' }).click() }": "clicked “Delete” in “Ann Lee”",
    "async (page) => { for (const box of await page.getByRole('checkbox').all()) await box.check() }": (
        "ticked each checkbox"
    ),
    "async (page) => { const buy = page.getByRole('button', { name: 'Buy' }); await buy.click(); }": (
        "clicked “Buy”"
    ),
    "async (page) => { await el(3).click(); await el(3).click(); await el(3).click() }": (
        "clicked “Next” 3 times"
    ),
    "async (page) => { await page.evaluate(() => window.scrollBy(0, 800)) }": "scrolled down the page",
    "async (page) => { await page.evaluate(() => document.querySelector('#buy-now').click()) }": (
        "clicked “buy now”"
    ),
    "async (page) => { await page.keyboard.press('Escape') }": "pressed Escape",
    "async (page) => { await page.keyboard.press('Control+A') }": "pressed Ctrl+A",
    "async (page) => { await el(14).fill('hello') }": "typed “hello” into a text field",
    "async (page) => { await page.getByPlaceholder('Search docs').fill('locator');\n"
    "  await page.keyboard.press('Enter');\n  await page.waitForLoadState('domcontentloaded') }": (
        "typed “locator” into “Search docs” and pressed Enter"
    ),
    "async (page) => { await page.getByRole('link', { name: 'Docs' }).click(); "
    "await page.getByRole('link', { name: 'API' }).click(); await page.getByRole('link', { name: 'Page' })"
    ".click(); await page.getByRole('link', { name: 'Locator' }).click(); await page.getByRole('link', "
    "{ name: 'click' }).click() }": "clicked “Docs”, clicked “API”, clicked “Page” and 2 more actions",
    # Names in other languages and scripts, as the page spells them.
    "async (page) => { await page.getByRole('button', { name: 'Оформить заказ' }).click() }": (
        "clicked “Оформить заказ”"
    ),
    "async (page) => { await page.getByRole('button', { name: 'Bestellung abschicken' }).click() }": (
        "clicked “Bestellung abschicken”"
    ),
    "async (page) => { await page.getByRole('button', { name: '注文を確定する' }).click() }": (
        "clicked “注文を確定する”"
    ),
    'async (page) => { await page.getByText("إرسال الطلب").click() }': "clicked “إرسال الطلب”",
    "async (page) => { await page.getByLabel('Adresse de livraison').fill('12 rue de la Paix') }": (
        "typed “12 rue de la Paix” into “Adresse de livraison”"
    ),
    "async (page) => { await page.getByLabel('Город').fill('Рига'); "
    "await page.getByLabel('Улица').fill('Бривибас 1') }": "typed the address into 2 fields",
    "async (page) => { await page.getByRole('link', { name: 'Ελληνικά \\u00e9' }).click() }": (
        "clicked “Ελληνικά é”"
    ),
}


@pytest.mark.parametrize(("source", "sentence"), DONE.items(), ids=range(len(DONE)))
def test_real_code_reads_as_what_it_did(source: str, sentence: str) -> None:
    phrases = code_phrases(source, TARGETS)
    assert phrases is not None
    assert phrases[1] == sentence


def test_the_step_under_way_is_said_in_the_present_and_never_with_the_typed_value() -> None:
    phrases = code_phrases("async (page) => { await el(5).fill('Riga'); await el(3).click() }", TARGETS)
    assert phrases == (
        "type into “To”, then click “Next”",
        "typed “Riga” into “To”, then clicked “Next”",
        "typing into “To”, then clicking “Next”",
    )


SECRETS = [
    ("async (page) => { await page.getByLabel('Password').fill('sunshine') }", "sunshine"),
    ("async (page) => { await page.getByLabel('Пароль').fill('солнце') }", "солнце"),
    ("async (page) => { await page.getByLabel('Mot de passe').fill('soleil') }", "soleil"),
    ("async (page) => { await page.fill('input[type=password]', 'sunshine') }", "sunshine"),
    ("async (page) => { await page.fill('#pw', 'sunshine') }", "sunshine"),
    ("async (page) => { await el(9).fill('correct horse') }", "correct horse"),  # the page says: secret
    ("async (page) => { await page.getByLabel('Code').fill('482977') }", "482977"),
    ("async (page) => { await page.getByLabel('Verification').fill('482977') }", "482977"),  # digits alone
    ("async (page) => { await el(5).fill('Tr0ub4dor&3') }", "Tr0ub4dor&3"),  # looks like a password
    ("async (page) => { await page.getByLabel('Card number').fill('4111 1111 1111 1111') }", "4111"),
    ("async (page) => { await page.getByLabel('CVV').fill('123') }", "123"),
]


@pytest.mark.parametrize(("source", "secret"), SECRETS)
def test_a_typed_secret_is_never_shown(source: str, secret: str) -> None:
    phrases = code_phrases(source, TARGETS)
    assert phrases is not None
    assert all(secret not in phrase for phrase in phrases), phrases
    assert phrases[1].startswith("typed into")


@pytest.mark.parametrize(
    "source",
    [
        "async (page) => { return 1 + 1 }",
        "async (page) => { const x = await someHelper(page); return x }",
        "this is not javascript at all ((( '",
        "",
    ],
)
def test_code_that_names_no_action_gets_an_honest_generic_sentence_never_a_dump(source: str) -> None:
    assert code_phrases(source, TARGETS) is None
    log = EventLog()
    sink = narrate(log)
    sink(Event("tool_call", {"tool": "browser_run_code", "args": {"code": source}, "step": 1}))
    sink(Event("tool_result", {"tool": "browser_run_code", "ok": True, "result": "Returned: 2"}))
    call_text, done = (e.data["summary"] for e in log.events)
    assert call_text == "Running code in the page"
    assert done == "Ran code in the page"
    for text in (call_text, done):
        assert "=>" not in text and "page." not in text and "await" not in text


def sentences(*events: tuple[str, dict[str, Any]]) -> list[str]:
    log = EventLog()
    sink = narrate(log)
    for kind, data in events:
        sink(Event(kind, data))  # type: ignore[arg-type]
    return [str(e.data.get("summary")) for e in log.events]


CLICK = {
    "tool": "browser_run_code",
    "args": {"code": "async (page) => { await el(3).click() }"},
    "step": 2,
    "targets": {"3": TARGETS["3"]},
}


def test_each_result_says_what_happened_with_its_true_outcome() -> None:
    log = EventLog()
    sink = narrate(log)
    for result in (
        {"ok": True, "result": "Done (the code returned nothing)."},
        {
            "ok": False,
            "result": "Error: locator.click: Timeout 5000ms exceeded. Call log: - waiting for el(3)",
        },
        {"ok": False, "result": "Error: <div id=consent> intercepts pointer events"},
        {
            "ok": True,
            "result": "Held for the user's confirmation: your code tried to activate button "
            '"Place order" ("place order"). It did not happen',
        },
        {"ok": False, "result": "Refused: the app never types passwords, one-time codes or card numbers."},
        {"ok": True, "result": 'button "Next" was checked by the safety judge (ordinary) and done. Done.'},
    ):
        sink(Event("tool_call", CLICK))
        sink(Event("tool_result", {"tool": "browser_run_code", **result}))
    results = log.of("tool_result")
    assert [(e.data["summary"], e.data["outcome"]) for e in results] == [
        ("Clicked “Next”", "done"),
        ("Could not click “Next”: it did not appear in time", "failed"),
        ("Could not click “Next”: something lay on top of it", "failed"),
        ("Stopped before the button “Place order”: it needs your confirmation", "held"),
        ("Did not type a password, code or card number: you enter those yourself", "refused"),
        ("Clicked “Next” (the safety judge checked it first)", "done"),
    ]
    # The result text stays with the event, for whoever shows the details.
    assert results[1].data["result"].startswith("Error: locator.click: Timeout")
    assert [e.data["summary"] for e in log.of("tool_call")] == ["Clicking “Next”"] * 6


def test_requests_the_network_policy_blocked_and_code_that_failed_are_said() -> None:
    refused = (
        "Done (the code returned nothing). Refused by Browser Copilot (nothing was sent): "
        "- https://evil.example/collect (2×): not a site of the task "
        "- https://t.example/p: not a site of the task Act through the page's controls."
    )
    assert sentences(
        ("tool_call", CLICK),
        ("tool_result", {"tool": "browser_run_code", "ok": True, "result": refused}),
        ("tool_call", {"tool": "browser_run_code", "args": {"code": "async (page) => { return x.y }"}}),
        (
            "tool_result",
            {"tool": "browser_run_code", "ok": False, "result": "Error: ReferenceError: x is not defined"},
        ),
    )[1::2] == [
        "Clicked “Next”; the app blocked 2 requests to sites outside the task",
        "The code in the page failed: the code had a mistake",
    ]


def test_a_step_the_judge_let_through_is_not_a_refusal() -> None:
    log = EventLog()
    narrate(log)(
        Event(
            "policy_result",
            {"judge": "judge", "destructive": False, "reason": "adds to the cart", "what": 'button "Add"'},
        )
    )
    (event,) = log.events
    assert event.data["outcome"] == "judged_safe"
    assert event.data["summary"] == "The safety judge let the button “Add” go ahead (adds to the cart)"
    assert "refus" not in event.data["summary"].lower()


def test_policy_events_name_the_action_and_who_decided() -> None:
    card = {"what": 'button "Place order"', "site": "shop.example", "category": "order"}
    assert sentences(
        ("policy_request", {"card": card, "question": "Allow?"}),
        ("policy_result", {"approved": True, "card": card}),
        ("policy_result", {"approved": False, "card": card}),
        ("policy_result", {"approved": False, "refused": "left http://evil.example/x: not in the task"}),
        ("policy_result", {"judge": "judge", "destructive": True, "reason": "pays", "what": 'button "Pay"'}),
        (
            "tool_result",
            {"tool": "replay", "ok": True, "result": 'The user allowed button "Place order" and it ran.'},
        ),
    ) == [
        "Asked you to confirm the button “Place order” on shop.example (order)",
        "You allowed the button “Place order” (once)",
        "You declined the button “Place order”: it did not happen",
        "Took the tab back from evil.example/x: not in the task",
        "The safety judge thinks the button “Pay” commits to something (pays): you decide",
        "Went ahead with the button “Place order”, as you allowed",
    ]


def test_pages_plans_and_the_run_in_words() -> None:
    plan = ["Open the cart", "Check out", "Answer the user"]
    assert sentences(
        ("observation", {"url": "https://shop.example/", "title": "Northpeak Store", "elements": 40}),
        ("observation", {"url": "https://shop.example/checkout", "title": "Northpeak Store — Checkout"}),
        ("observation", {"url": "https://shop.example/checkout", "title": "Checkout", "dialog": {"k": 1}}),
        ("plan", {"plan": plan, "progress": {"current": 1, "done": []}}),
        ("plan", {"plan": plan, "progress": {"current": 2, "done": [1]}}),
        ("progress", {"done": 1, "total": 3, "steps": 1, "limit": 10}),
        ("node", {"node": "critical_action_validator"}),
        ("node", {"node": "agent"}),
        ("status", {"state": "waiting_user"}),
        ("final", {"stop_reason": "answered", "steps": 1, "verified": False}),
        ("final", {"stop_reason": "step_limit", "steps": 10}),
        ("error", {"kind": "llm", "message": "Connection refused"}),
        ("notice", {"text": 'new tab: 2 "Docs" https://docs.example/'}),
    ) == [
        "Looked at Northpeak Store (shop.example)",
        "Opened Northpeak Store — Checkout (shop.example)",
        "Looked at the page again; the site shows a dialog",
        "Planned 3 steps: Open the cart; Check out; Answer the user",
        "Plan: 1 of 3 done; now 2. Check out",
        "1 of 3 plan steps done, 1 of 10 browser steps used",
        "acting in the browser",
        "checking the next step",
        "Waiting for you",
        "Answered (unverified: the app's checks doubt it) after 1 step",
        "Stopped at the step limit after 10 steps",
        "The model could not be reached: Connection refused",
        'New tab: 2 "Docs" https://docs.example/',
    ]


def test_other_tools_in_words() -> None:
    def step(tool: str, args: dict[str, Any], ok: bool = True, result: str = "ok") -> list[str]:
        return sentences(
            ("tool_call", {"tool": tool, "args": args, "step": 1}),
            ("tool_result", {"tool": tool, "ok": ok, "result": result}),
        )

    assert step("observe_page", {"full_page": True}) == ["Looking at the whole page", "Looked at the page"]
    assert step("switch_tab", {"index": 2}) == ["Switching to tab 2", "Switched to tab 2"]
    assert step("handle_dialog", {"accept": False}) == [
        "Dismissing the site's dialog",
        "Dismissed the site's dialog",
    ]
    assert step("update_working_state", {"plan": ["a", "b", "c"]})[0] == "Making a plan of 3 steps"
    assert step("update_working_state", {"add_facts": [{"fact": "x", "source": "y"}]})[0] == "Noting 1 fact"
    assert step("hand_over", {"what": "Sign in, please."}, result="The user answered: done") == [
        "Handing over to you: Sign in, please.",
        "You answered: “done”",
    ]
    assert step("remember_about_user", {"fact": "The name on bookings is Ada.", "user_words": "x"}) == [
        "Remembering “The name on bookings is Ada.”",
        "Remembered “The name on bookings is Ada.” for later sessions",
    ]
    assert (
        step("remember_about_user", {"withheld": "it is a password"}, ok=False, result="Refused, nothing")[0]
        == "Not remembering something secret"
    )
    assert step("fs__read_text_file", {"path": "/notes.txt"}) == [
        "Using read_text_file from “fs”",
        "Used read_text_file from “fs”",
    ]
    assert step("upload_file", {"element": 4, "path": "/home/ann/Documents/cv.pdf"})[1] == "Attached “cv.pdf”"


def test_a_narrated_sink_keeps_a_summary_given_at_the_source_and_is_not_wrapped_twice() -> None:
    log = EventLog()
    sink = narrate(log)
    assert narrate(sink) is sink
    sink(Event("notice", {"text": "x", "summary": "Given"}))
    sink(Event("usage", {"prompt_tokens": 1, "completion_tokens": 1}))
    sink(Event("answer_stream", {"call": 1, "text": "Hi", "done": False}))
    assert log.events[0].data["summary"] == "Given"
    assert "summary" not in log.events[1].data and "summary" not in log.events[2].data


def test_a_broken_event_still_reaches_the_sinks_without_a_sentence() -> None:
    log = EventLog()
    narrate(log)(Event("progress", {"done": "many", "total": 3}))
    assert log.kinds() == ["progress"] and "summary" not in log.events[0].data


def test_cuts_fall_between_words_and_say_so() -> None:
    text = "Clicked “Place order”, then typed the address into 5 fields and pressed Enter"
    cut = shorten(text, 40)
    assert cut == "Clicked “Place order”, then typed the…"
    assert len(cut) <= 40
    assert shorten("short", 40) == "short"
    assert shorten("a  b\n c", 40) == "a b c"


def test_targets_come_from_the_observation_the_model_acted_on() -> None:
    elements = [
        {"n": 3, "role": "button", "name": "Next", "state": ""},
        {"n": 9, "role": "textbox", "name": "Passcode", "state": "value=<masked> secret"},
        {"n": 10, "role": "textbox", "name": "Note", "state": 'value="my secret plan"'},
        {"n": 11, "role": "link", "name": "Elsewhere", "state": ""},
    ]
    found = element_targets(
        {"code": "async (page) => { await el(3).click(); await el(9).fill('x'); el(10) }"}, elements
    )
    assert found == {
        "3": {"role": "button", "name": "Next"},
        "9": {"role": "textbox", "name": "Passcode", "secret": True},
        "10": {"role": "textbox", "name": "Note"},
    }
    assert element_targets({"element": 11, "path": "/x"}, elements) == {
        "11": {"role": "link", "name": "Elsewhere"}
    }


# ----- through the agent: a real browser, the real MCP server, a scripted model -----------------------


def _number_of(messages: list[BaseMessage], role: str, name: str) -> str:
    found = re.search(rf'\[(\d+)\] {role} "{re.escape(name)}"', str(messages[-1].content))
    assert found is not None, "the page view lists the element"
    return found.group(1)


async def test_a_run_gives_every_event_its_sentence_at_the_source(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    def fill_by_number(messages: list[BaseMessage]) -> AIMessage:
        n = _number_of(messages, "textbox", "Full name")
        return code(
            f"async (page) => {{ await el({n}).fill('Ada Lovelace');"
            " await page.getByLabel('Email').fill('ada@example.com');"
            " await page.getByRole('button', { name: 'Next' }).click() }"
        )

    runner, log = make_runner(
        browser_session,
        call("update_working_state", current_goal="Apply", plan=["Open the form", "Fill it in", "Answer"]),
        goto(pages.url("form.html")),
        fill_by_number,
        code(
            "async (page) => { await page.getByRole('button', { name: 'Nowhere' }).click({ timeout: 300 }) }"
        ),
        say("Filled in step 1."),
    )
    outcome = await runner.send("Fill in the library card form for Ada")
    assert outcome.stop_reason == "answered"
    calls = [e for e in log.of("tool_call") if e.data["tool"] == "browser_run_code"]
    results = [e for e in log.of("tool_result") if e.data["tool"] == "browser_run_code"]
    host = pages.url("form.html").split("/")[2]
    assert [e.data["summary"] for e in calls] == [
        f"Opening {host}/form.html",
        "Typing the contact details into 2 fields, then clicking “Next”",
        "Clicking “Nowhere”",
    ]
    assert [(e.data["summary"], e.data["outcome"]) for e in results] == [
        (f"Opened {host}/form.html", "done"),
        ("Typed the contact details into 2 fields, then clicked “Next”", "done"),
        ("Could not click “Nowhere”: it did not appear in time", "failed"),
    ]
    # The number the model used is named from the observation it acted on.
    assert list(calls[1].data["targets"].values()) == [{"role": "textbox", "name": "Full name"}]
    assert results[2].data["result"].startswith("Error:")
    opened = [e.data["summary"] for e in log.of("observation")]
    assert f"Opened Application form ({host})" in opened
    # Every kind a person sees has its sentence, none is a node's name or a piece of code.
    for event in log.events:
        if event.kind in ("usage", "answer_stream"):
            continue
        text = event.data["summary"]
        assert text and "=>" not in text and "el(" not in text and "_validator" not in text, event


async def test_a_russian_shop_reads_in_its_own_words_and_the_declined_order_says_so(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    def address(messages: list[BaseMessage]) -> AIMessage:
        n = _number_of(messages, "textbox", "Адрес доставки")
        return code(f"async (page) => {{ await el({n}).fill('ул. Ленина, 1') }}")

    runner, log = make_runner(
        browser_session,
        goto(pages.url("shop-ru.html")),
        code("async (page) => { await page.getByRole('button', { name: 'В корзину' }).first().click() }"),
        address,
        code("async (page) => { await page.getByRole('button', { name: 'Оформить заказ' }).click() }"),
        say("Заказ не оформлен."),
    )
    asked = await runner.send("Купи зелёный чай")
    assert asked.stop_reason == "waiting_confirmation"
    await runner.send("/no")
    said = [
        e.data["summary"] for e in log.events if e.kind in ("tool_result", "policy_request", "policy_result")
    ]
    assert "Clicked “В корзину”" in said
    assert "Typed “ул. Ленина, 1” into “Адрес доставки”" in said
    request = next(s for s in said if s.startswith("Asked you to confirm"))
    assert "“Оформить заказ”" in request
    assert any(s.startswith("You declined") and "“Оформить заказ”" in s for s in said)


async def test_a_password_the_model_tries_to_type_appears_in_no_sentence(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    runner, log = make_runner(
        browser_session,
        goto(pages.url("login.html")),
        code("async (page) => { await page.getByLabel('Password').fill('Tr0ub4dor&3') }"),
        say("Please sign in yourself."),
    )
    await runner.send("Sign me in")
    texts = [str(e.data.get("summary")) for e in log.events]
    assert any("“Password”" in t for t in texts), texts
    assert not any("Tr0ub4dor" in t for t in texts)
