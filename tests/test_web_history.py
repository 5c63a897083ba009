"""The web chat after a reload, and the live view people use, in real browsers.

The agent works in the suite's shared Chromium (the real MCP server, the real graph, the real `ChatOpenAI`
against the scripted model server); the user's page runs in a Chromium of its own, driven by Playwright
with real clicks and keys (`tests/test_live_view.py`). After a reload, and after a restart of the server,
the chat shows again what it showed: each card with its decision, each hand-over with its answer, each
answer with its Unverified mark and reasons, in order (`server/history.py`, `static/history.js`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from playwright.async_api import Page

from browser_copilot.browser.session import BrowserSession
from browser_copilot.server.history import History
from browser_copilot.server.serve import Server
from browser_copilot.server.sessions import SessionManager
from tests.support.openai_server import ScriptedOpenAI, call, text
from tests.support.pages import PageServer
from tests.support.server import serving_over
from tests.support.waiting import eventually
from tests.test_honest_outcome import FIGURES, MUG
from tests.test_live_view import _is, agent_page, ask, goto, hand_over_asked, red, shot, sign_in, until
from tests.test_server_page import script_the_email_task

CHAT = """[...document.querySelectorAll('#messages .message')].map((m) => {
  const card = m.querySelector('.card');
  const result = card && card.querySelector('.card-result').textContent;
  if (card) return 'card ' + (card.dataset.decision || 'open') + ': ' + result;
  const kind = m.classList.contains('handover-note') ? 'handover ' + (m.dataset.decision || 'open')
    : m.classList.contains('unverified') ? 'unverified' : m.classList.contains('final') ? 'final'
    : m.classList.contains('user') ? 'user' : 'other';
  return kind + ': ' + m.querySelector(':scope > :not(.who)').textContent.trim().slice(0, 40);
})"""


async def chat(page: Page) -> list[str]:
    shown: list[str] = await page.evaluate(CHAT)
    return shown


async def reloaded(page: Page, count: int) -> list[str]:
    """The chat after a reload, once its `count` messages are back."""
    await page.reload()
    await until(page, "document.getElementById('status-text').textContent === 'Idle'")
    await until(page, f"document.querySelectorAll('#messages .message:not(.hint)').length >= {count}")
    return await chat(page)


def click(name: str) -> dict[str, Any]:
    return call(
        "browser_run_code",
        code=f"async (page) => {{ await page.getByRole('button', {{ name: {json.dumps(name)} }}).click() }}",
    )


# ----- the chat after a reload ----------------------------------------------------------------------


async def test_a_reload_after_an_allowed_card_shows_the_card_allowed_once_and_the_answer_in_order(
    page: Page,
    served: tuple[Server, SessionManager, str],
    llm: ScriptedOpenAI,
    pages: PageServer,
    browser_session: BrowserSession,
    tmp_path: Path,
) -> None:
    server, manager, printed = served
    script_the_email_task(llm, pages)
    await sign_in(page, printed, server.base_url)
    await ask(page, "Email Alice about lunch")
    await until(page, "!(document.querySelector('.card .allow') || { disabled: true }).disabled")
    await page.get_by_role("button", name="Allow once").click()
    await until(page, "document.querySelector('.message.final') !== null")
    await until(page, "document.getElementById('status-text').textContent === 'Idle'")
    before = await chat(page)
    assert await agent_page(browser_session, "window.__sent ?? 0") == 1

    after = await reloaded(page, 3)
    assert after == before, (before, after)
    assert [line.split(":")[0] for line in after] == ["user", "card allowed", "final"], after
    assert after[1] == "card allowed: Allowed once.", after
    # The card is drawn as it was (its rows), settled: nothing on it can be clicked again.
    rows = await page.eval_on_selector_all(".card dl .row", "(rows) => rows.map((r) => r.innerText)")
    assert any("Send" in r for r in rows), rows
    assert await page.eval_on_selector_all(".card button", "(bs) => bs.every((b) => b.disabled)") is True
    assert await page.evaluate("document.querySelectorAll('.message.final').length") == 1  # not twice
    # What the record keeps is redacted as any other tab sees it, and carries no nonce.
    kept = (manager.settings.data_dir / "history").glob("*.jsonl")
    (record,) = list(kept)
    assert "nonce" not in record.read_text()
    await shot(page, tmp_path, "history-allowed-after-reload")


async def test_a_reload_after_a_declined_card_shows_it_refused_with_the_note(
    page: Page,
    served: tuple[Server, SessionManager, str],
    llm: ScriptedOpenAI,
    pages: PageServer,
    browser_session: BrowserSession,
) -> None:
    server, _, printed = served
    llm.script(
        goto(pages.url("mail.html")),
        call(
            "browser_run_code",
            code="async (page) => { await page.getByLabel('To').fill('bob@example.test') }",
        ),
        click("Send"),
        text("I did not send the message, as you asked."),
    )
    await sign_in(page, printed, server.base_url)
    await ask(page, "Email Bob")
    await until(page, "document.querySelector('.card .refuse') !== null")
    await page.get_by_label("A note for the agent with your answer").fill("write to Carol instead")
    await page.get_by_role("button", name="Refuse").click()
    await until(page, "document.querySelector('.message.final') !== null")
    await until(page, "document.getElementById('status-text').textContent === 'Idle'")
    assert await agent_page(browser_session, "window.__sent ?? 0") == 0

    after = await reloaded(page, 3)
    assert [line.split(":")[0] for line in after] == ["user", "card declined", "final"], after
    assert after[1] == "card declined: Refused. Your note: “write to Carol instead”", after
    assert after[2].startswith("final: I did not send the message"), after


async def test_a_reload_after_a_hand_over_shows_it_answered_and_the_users_done(
    page: Page,
    served: tuple[Server, SessionManager, str],
    llm: ScriptedOpenAI,
    pages: PageServer,
) -> None:
    await hand_over_asked(page, served, llm, pages)
    await page.get_by_role("button", name="Done").click()
    await until(page, "document.querySelector('.message.final') !== null")
    await until(page, "document.getElementById('status-text').textContent === 'Idle'")

    after = await reloaded(page, 4)
    assert [line.split(":")[0] for line in after] == ["user", "handover answered", "user", "final"], after
    assert after[2] == "user: done", after
    assert after[3] == "final: Signed in, thank you.", after
    assert await page.evaluate("document.getElementById('handover').hidden") is True  # nothing waits


async def test_an_unverified_answer_keeps_its_mark_and_reasons_after_a_reload_and_a_restart(
    page: Page,
    llm: ScriptedOpenAI,
    pages: PageServer,
    browser_session: BrowserSession,
    tmp_path: Path,
) -> None:
    llm.script(goto(pages.url("shop.html")), text(MUG), text(MUG), text("It is on the shop's page."))
    async with serving_over(browser_session, llm, tmp_path) as (server, _, printed):
        await sign_in(page, printed, server.base_url)
        await ask(page, "What does the blue mug cost?")
        await until(page, "document.querySelector('.message.final.unverified') !== null")
        await until(page, "document.getElementById('status-text').textContent === 'Idle'")
        await ask(page, "Where did you see it?")
        await until(page, "document.querySelectorAll('.message.final').length === 2")
        await until(page, "document.getElementById('status-text').textContent === 'Idle'")
        after = await reloaded(page, 4)
        assert [line.split(":")[0] for line in after] == ["user", "unverified", "user", "final"], after
        assert FIGURES in await page.inner_text(".message.unverified .unverified-mark")
    # A new server process on the same data: the record is read back from its file.
    async with serving_over(browser_session, llm, tmp_path) as (server, _, printed):
        await sign_in(page, printed, server.base_url)
        await until(page, "document.querySelectorAll('#messages .message:not(.hint)').length >= 4")
        assert [line.split(":")[0] for line in await chat(page)] == ["user", "unverified", "user", "final"]
        assert FIGURES in await page.inner_text(".message.unverified .unverified-mark")


def test_the_record_keeps_a_cards_decision_and_masks_a_secret_given_in_answer() -> None:
    from browser_copilot.safety.redaction import Asked
    from browser_copilot.server.history import said

    assert said("/yes", {"kind": "confirm"}, None) == {
        "kind": "user_message",
        "text": "/yes",
        "answers": "confirm",
        "decision": "allowed",
        "note": "",
    }
    assert said("no, use cash", {"kind": "confirm"}, None)["decision"] == "declined"
    assert said("ok", None, None) == {"kind": "user_message", "text": "ok"}
    answer = said("482977", {"kind": "manual"}, Asked(kind="one-time code", by="question"))
    assert "482977" not in answer["text"] and answer["answers"] == "manual", answer


def test_the_record_is_read_back_bounded_and_forgotten(tmp_path: Path) -> None:
    history = History.of(tmp_path, "s1")
    for n in range(310):
        history.add({"v": 1, "kind": "agent_message", "text": f"answer {n}", "stop_reason": "answered"})
    history.add({"v": 1, "kind": "agent_message", "text": "/status", "command": "/status"})  # not kept
    history.add({"v": 1, "kind": "status", "state": "idle"})  # not kept
    again = History.of(tmp_path, "s1").entries()
    assert len(again) == 300 and again[-1]["text"] == "answer 309" and "v" not in again[-1]
    history.forget()
    assert History.of(tmp_path, "s1").entries() == []


# ----- the live view people can use -------------------------------------------------------------------


async def test_the_live_view_enlarges_and_escape_closes_it(
    page: Page,
    served: tuple[Server, SessionManager, str],
    llm: ScriptedOpenAI,
    pages: PageServer,
    tmp_path: Path,
) -> None:
    server, _, printed = served
    llm.script(goto(pages.url("live.html")), text("The page is open."))
    await sign_in(page, printed, server.base_url)
    await ask(page, "Open the live page")
    await until(page, "document.querySelector('.message.final') !== null")
    await eventually(lambda: _is(page, red, 0.5, 0.2), what="the live picture", timeout=30)
    small = await page.locator("#live-img").bounding_box()
    await page.get_by_role("button", name="Enlarge").click()
    await until(page, "document.getElementById('live-large').open")
    large = await page.locator("#live-img").bounding_box()
    assert small is not None and large is not None
    assert large["width"] > small["width"] * 1.5, (small, large)
    assert large["y"] + large["height"] <= 768 and large["x"] + large["width"] <= 1366, large  # on screen
    # The same picture, with its handlers: still the agent's page, still red.
    assert await _is(page, red, 0.5, 0.2)
    await shot(page, tmp_path, "live-view-large")
    await page.keyboard.press("Escape")
    await until(page, "!document.getElementById('live-large').open")
    await until(page, "document.getElementById('live-screen').parentElement.id === 'live-box'")
    back = await page.locator("#live-img").bounding_box()
    assert back is not None and abs(back["width"] - small["width"]) < 2, (small, back)
    # Take over (this tab may act now: the run is over) opens it large too, ready for keys.
    await page.get_by_role("button", name="Take over").click()
    await until(page, "document.getElementById('live-large').open")
    assert await page.evaluate("document.activeElement.id") == "live-screen"
    await page.get_by_role("button", name="Close").click()
    await until(page, "!document.getElementById('live-large').open")


async def test_the_outline_of_what_was_acted_on_is_cleared_when_the_page_changes(
    page: Page,
    served: tuple[Server, SessionManager, str],
    llm: ScriptedOpenAI,
    pages: PageServer,
) -> None:
    server, _, printed = served
    llm.script(
        goto(pages.url("live.html")),
        text("The page is open."),
        click("Paint"),
        goto(pages.url("second.html")),
        text("Painted, then opened the second page."),
    )
    await sign_in(page, printed, server.base_url)
    await ask(page, "Open the live page")
    await until(page, "document.querySelector('.message.final') !== null")
    await eventually(lambda: _is(page, red, 0.5, 0.2), what="the live picture", timeout=30)
    await ask(page, "Paint it, then open the second page")
    await until(page, "(document.getElementById('live-mark').dataset.actions || '').includes('click')")
    await until(page, "document.querySelectorAll('.message.final').length === 2")
    # The outline went with the page it belonged to, not by the clock.
    await until(page, "document.getElementById('live-mark').hidden")
    cleared = await page.evaluate("document.getElementById('live-mark').dataset.cleared")
    assert cleared in ("observation", "page", "viewport"), cleared


async def test_on_a_phone_the_picture_and_take_over_are_on_the_first_screen_under_the_header(
    page: Page,
    served: tuple[Server, SessionManager, str],
    llm: ScriptedOpenAI,
    pages: PageServer,
    tmp_path: Path,
) -> None:
    server, _, printed = served
    llm.script(goto(pages.url("live.html")), text("The page is open."))
    await page.set_viewport_size({"width": 390, "height": 844})
    await sign_in(page, printed, server.base_url)
    await ask(page, "Open the live page")
    await until(page, "document.querySelector('.message.final') !== null")
    await eventually(lambda: _is(page, red, 0.5, 0.2), what="the live picture on a phone", timeout=30)
    layout = await page.evaluate(
        """(() => {
          const box = (s) => { const r = document.querySelector(s).getBoundingClientRect();
            return { top: r.top + scrollY, bottom: r.bottom + scrollY, left: r.left, right: r.right }; };
          return { img: box('#live-img'), take: box('#live-take'), header: box('.top'),
            layout: box('.layout'), chat: box('.chat'), height: innerHeight, width: innerWidth,
            scroll: document.documentElement.scrollWidth };
        })()"""
    )
    assert layout["img"]["bottom"] <= layout["height"], layout  # the picture: on the first screen
    assert layout["take"]["bottom"] <= layout["height"], layout  # and Take over
    assert layout["img"]["bottom"] <= layout["chat"]["top"], layout  # above the chat, not past it
    assert layout["header"]["bottom"] <= layout["layout"]["top"], layout  # the header covers nothing
    assert layout["scroll"] <= 390 and layout["take"]["right"] <= 390, layout
    await page.evaluate("window.scrollTo(0, 0)")
    await shot(page, tmp_path, "phone-first-screen")
