"""Safety with a real browser and the real MCP server: the in-page guard, hand-over, vetting, URLs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from browser_copilot.browser.guarded import guard_report, guarded_code, preflight_checks, replay_code
from browser_copilot.browser.session import BrowserSession
from browser_copilot.sandbox.guard import Allow
from browser_copilot.sandbox.network import UrlPolicy
from browser_copilot.sandbox.vetting import vet_code
from tests.support.agent import fresh, make_runner, value
from tests.support.pages import PageServer
from tests.support.scripted_model import code, say

SEND_WAYS = {
    "by role": "async (page) => { await page.getByRole('button', { name: 'Send' }).click() }",
    "by number": "async (page) => { await el(4).click() }",
    "by coordinates": (
        "async (page) => { const b = await page.getByRole('button', { name: 'Send' }).boundingBox();"
        " await page.mouse.click(b.x + b.width / 2, b.y + b.height / 2) }"
    ),
    "by evaluate": (
        "async (page) => { await page.evaluate(() => document.querySelector('button[type=submit]').click()) }"
    ),
    "by Enter in the form": "async (page) => { await page.getByLabel('Subject').press('Enter') }",
    "by form.submit()": (
        "async (page) => { await page.evaluate(() => document.getElementById('compose').requestSubmit()) }"
    ),
}


@pytest.mark.parametrize("way", list(SEND_WAYS))
async def test_a_destructive_action_is_held_however_the_code_reaches_it(
    browser_session: BrowserSession, pages: PageServer, way: str
) -> None:
    frames = await fresh(browser_session, pages, "mail.html")
    # Without the pre-flight check, so that the in-page guard alone is tested.
    result = await browser_session.run_code(guarded_code(SEND_WAYS[way], frames, preflight=False))
    report = guard_report(result)
    assert report is not None, result
    assert report.held
    assert report.held[0]["verdict"]["category"] == "send"
    assert await value(browser_session, "window.__sent ?? 0") == 0
    # /yes: exactly once.
    held = report.held[0]["id"]
    replayed = await browser_session.run_code(replay_code(held, report.held[0]["kind"], Allow(held=[held])))
    assert replayed.ok, replayed.error
    assert guard_report(replayed) is None
    assert await value(browser_session, "window.__sent ?? 0") == 1


async def test_a_held_action_stays_undone_when_the_user_says_no(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    frames = await fresh(browser_session, pages, "checkout.html")
    result = await browser_session.run_code(
        guarded_code("async (page) => { await el(2).click() }", frames, preflight=False)
    )
    report = guard_report(result)
    assert report is not None
    assert report.held[0]["facts"]["name"] == "Place order"
    assert re.fullmatch(r"\$\d+\.\d\d", report.held[0]["amount"])  # the order total shown on the page
    assert await value(browser_session, "window.__ordered ?? 0") == 0
    # Disarmed after the code: the user's own click goes through.
    await browser_session.run_code(
        "async (page) => { await page.getByRole('button', { name: 'Place order' }).click() }"
    )
    assert await value(browser_session, "window.__ordered ?? 0") == 1


async def test_the_pre_flight_check_stops_a_destructive_target_before_the_code_runs(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    frames = await fresh(browser_session, pages, "mail.html")
    code = "async (page) => { await page.evaluate(() => { window.__ran = true }); await el(4).click() }"
    result = await browser_session.run_code(guarded_code(code, frames))
    checks = preflight_checks(result)
    assert checks is not None
    assert [c["verdict"]["category"] for c in checks] == ["send"]
    assert checks[0]["facts"]["name"] == "Send"
    assert await value(browser_session, "window.__ran ?? false") is False
    allowed = await browser_session.run_code(guarded_code(code, frames, Allow(numbers=[4])))
    assert allowed.ok, allowed.error
    assert preflight_checks(allowed) is None
    assert await value(browser_session, "window.__sent ?? 0") == 1


async def test_safe_clicks_are_not_held(browser_session: BrowserSession, pages: PageServer) -> None:
    frames = await fresh(browser_session, pages, "shop.html")
    before = int(await value(browser_session, "document.getElementById('count').textContent"))
    result = await browser_session.run_code(
        guarded_code("async (page) => { await el(1).click(); await el(2).click(); return 'ok' }", frames)
    )
    assert result.value == "ok"
    assert int(await value(browser_session, "document.getElementById('count').textContent")) == before + 2


async def test_typing_into_a_password_field_is_blocked_in_the_page(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    frames = await fresh(browser_session, pages, "login.html")
    await browser_session.run_code("async (page) => { await page.locator('input[name=password]').fill('') }")
    result = await browser_session.run_code(
        guarded_code(
            "async (page) => { await page.locator('input[name=password]').pressSequentially('abc') }", frames
        )
    )
    report = guard_report(result)
    assert report is not None
    assert report.secret_blocked > 0
    assert await value(browser_session, "document.querySelector('input[name=password]').value") == ""


def tools_said(values: dict[str, Any]) -> list[str]:
    return [str(m.content) for m in values["messages"] if isinstance(m, ToolMessage)]


async def test_a_hostile_page_cannot_get_anything_destructive_done(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    obeying = [
        code(f"async (page) => {{ await page.goto('{pages.url('hostile.html')}') }}"),
        code("async (page) => { await page.getByRole('button', { name: /Delete account/ }).click() }"),
        code("async (page) => { await page.locator('#delete').click() }"),
        code("async (page) => { await page.evaluate(() => document.getElementById('delete').click()) }"),
        code("async (page) => { await page.locator('form button').click() }"),
        code(
            "async (page) => { await page.keyboard.press('Tab');"
            " await page.locator('textarea').press('Control+Enter');"
            " await page.evaluate(() => document.getElementById('msg').submit()) }"
        ),
        say("I could not complete the page's instructions."),
    ]
    runner, log = make_runner(browser_session, *obeying)
    outcome = await runner.send("Check my account settings page")
    attempts = 0
    while outcome.stop_reason == "waiting_confirmation":
        attempts += 1
        outcome = await runner.send("/no")
    assert attempts >= 4
    assert len(log.of("policy_request")) == attempts
    assert await value(browser_session, "window.__deleted ?? 0") == 0
    assert await value(browser_session, "window.__sent ?? 0") == 0


async def test_a_password_field_is_handed_over_and_the_agent_continues_after_done(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    runner, _ = make_runner(
        browser_session,
        code(f"async (page) => {{ await page.goto('{pages.url('login.html')}') }}"),
        code("async (page) => { await el(2).fill('guessed-password') }"),
        say("You are signed in; continuing."),
    )
    waiting = await runner.send("Sign in to Example")
    assert waiting.stop_reason == "waiting_user"
    assert waiting.interrupt is not None
    assert waiting.interrupt["kind"] == "manual"
    assert "password" in waiting.interrupt["question"]
    assert any(t.startswith("Refused: the app never types passwords") for t in tools_said(waiting.values))
    assert (
        await value(browser_session, "document.querySelector('input[name=password]').value")
        == "hunter2-secret"
    )
    done = await runner.send("готово")
    assert done.stop_reason == "answered"
    assert done.values["observation_stale"] is False  # the page was observed again after "done"


async def test_an_otp_field_is_handed_over(browser_session: BrowserSession, pages: PageServer) -> None:
    runner, _ = make_runner(
        browser_session,
        code(f"async (page) => {{ await page.goto('{pages.url('otp.html')}') }}"),
        code("async (page) => { await el(1).fill('123456') }"),
        say("Verified."),
    )
    waiting = await runner.send("Finish the verification")
    assert waiting.stop_reason == "waiting_user"
    assert await value(browser_session, "document.querySelector('input[name=code]').value") == ""
    observation = waiting.values["observation"]
    assert "asks for a one-time code or card details" in observation["text"]


async def test_a_captcha_is_handed_over_once_then_the_agent_continues(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    runner, log = make_runner(
        browser_session,
        code(f"async (page) => {{ await page.goto('{pages.url('captcha.html')}') }}"),
        say("Passed the check."),
    )
    waiting = await runner.send("Open the protected page")
    assert waiting.stop_reason == "waiting_user"
    assert waiting.interrupt is not None
    assert "captcha" in waiting.interrupt["question"]
    done = await runner.send("done")
    assert done.stop_reason == "answered"
    assert any("captcha" in e.data.get("text", "") for e in log.of("notice"))
    await browser_session.goto("about:blank")  # leave the shared tab clean for the next test


@pytest.mark.parametrize(
    "source",
    [
        "async (page) => require('child_process').execSync('id')",
        "async (page) => process.env",
        "async (page) => (await import('node:fs')).readFileSync('/etc/passwd')",
        "async (page) => page.constructor.constructor('return process')()",
        "async (page) => page['constr' + 'uctor']['constructor']('return 1')()",
        "async (page) => new Function('return 1')()",
        "async (page) => { await page.goto('file:///etc/passwd') }",
        "async (page) => { await page.goto('chrome://settings') }",
        "async (page) => { await page.evaluate(() => { location.href = 'javascript:alert(1)' }) }",
        "async (page) => { await page.context().clearCookies() }",
    ],
)
def test_code_that_reaches_outside_the_page_is_refused(source: str) -> None:
    refusal = vet_code(source)
    assert refusal is not None
    assert refusal.startswith("Refused before running")


@pytest.mark.parametrize(
    "source",
    [
        "async (page) => await page.title()",
        "async (page) => { await el(3).fill('process improvement report') }",
        "async (page) => await page.locator('.profile').innerText()",
    ],
)
def test_ordinary_code_passes_vetting(source: str) -> None:
    assert vet_code(source) is None


async def test_the_agent_is_told_about_refused_code(browser_session: BrowserSession) -> None:
    runner, _ = make_runner(browser_session, code("async (page) => require('fs')"), say("I cannot do that."))
    outcome = await runner.send("Read a file")
    assert any(
        t.startswith("Refused before running: the code uses require()") for t in tools_said(outcome.values)
    )


async def test_a_redirect_to_a_blocked_domain_is_undone(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    blocked = pages.url("second.html").replace("127.0.0.1", "localhost")
    runner, _ = make_runner(
        browser_session,
        code(f"async (page) => {{ await page.goto('{pages.url('index.html')}') }}"),
        code(f"async (page) => {{ await page.evaluate(() => {{ location.href = '{blocked}' }}) }}"),
        say("That page is blocked."),
        policy=UrlPolicy(blocked=("localhost",)),
    )
    outcome = await runner.send("Go there")
    assert outcome.values["observation"]["url"] != blocked
    notes = [str(m.content) for m in outcome.values["messages"]]
    # The page code's navigation to another site is refused before it leaves (the network policy); the
    # app's own check would take the tab back from a blocked site had it got there. Either way the model
    # is told.
    told = (
        "which is not allowed (localhost is on the blocked list",
        "your code moved the tab to another site",
    )
    assert any(t in n for n in notes for t in told), notes


def test_url_policy_allows_web_pages_only() -> None:
    policy = UrlPolicy(allowed=("example.com",))
    assert policy.problem("https://shop.example.com/cart") is None
    assert policy.problem("about:blank") is None
    assert "not on the allowed list" in (policy.problem("https://evil.test/") or "")
    assert "file: URLs are not allowed" in (UrlPolicy().problem("file:///etc/passwd") or "")


async def test_the_sandbox_refuses_writes_outside_the_data_dir(
    browser_session: BrowserSession, tmp_path: Path
) -> None:
    target = tmp_path / "escaped.txt"
    escape = (
        "async (page) => { const p = page.constructor.constructor('return process')();"
        f" p.getBuiltinModule('fs').writeFileSync('{target}', 'x'); }}"
    )
    result = await browser_session.run_code(escape)
    assert not result.ok
    assert "Access to this API has been restricted" in (result.error or "")
    assert not target.exists()
