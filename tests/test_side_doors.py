"""The code tool's side doors are absent (F45): the façade offers seed 001's API and nothing else, so
every other Playwright door — cookies, raw DevTools, routing, init scripts, bindings, permissions, the
browser object, headers, file paths, internals — is `undefined`. Each is tried through the real code
tool, the model reads one sentence naming what to use instead, and nothing happened: no cookie came
back, no request was intercepted, no script or binding reached the page, the profile is unchanged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from browser_copilot.browser.guarded import guarded_code
from browser_copilot.browser.observing import observe
from browser_copilot.browser.results import CodeResult
from browser_copilot.browser.session import BrowserSession
from tests.support.pages import PageServer

SECRET = "bc-s3cr3t-cookie"


async def guarded(
    session: BrowserSession, code: str, frames: dict[str, list[int]] | None = None
) -> CodeResult:
    return await session.run_code(guarded_code(code, frames))


async def raw(session: BrowserSession, code: str) -> Any:
    """Unguarded code on the real page: the test's own look at the browser."""
    result = await session.run_code(code, idempotent=True)
    assert result.ok, result.error
    return result.value


async def in_page(session: BrowserSession, expression: str) -> Any:
    return await raw(session, f"async (page) => await page.evaluate(() => {expression})")


async def open_test_page(session: BrowserSession, pages: PageServer) -> dict[str, list[int]]:
    await session.goto(pages.url("side-doors.html"))
    observation = await observe(session)
    return {str(k): v for k, v in observation.frames_by_number().items()}


@dataclass(frozen=True)
class Door:
    code: str
    absent: str
    """The name the model is told is not part of the API."""
    after: str = "async (page) => null"
    expected_after: Any = None


DOORS: dict[str, Door] = {
    "context().cookies()": Door("async (page) => await page.context().cookies()", "cookies"),
    "newCDPSession": Door(
        "async (page) => { const s = await page.context().newCDPSession(page);"
        " return await s.send('Network.getAllCookies') }",
        "newCDPSession",
    ),
    "storageState": Door("async (page) => await page.context().storageState()", "storageState"),
    "page.request": Door("async (page) => await page.request.get(page.url())", "get"),
    "context().addInitScript": Door(
        "async (page) => { await page.context().addInitScript(() => { window.__bcInit = 1 }) }",
        "addInitScript",
        after="async (page) => { await page.reload();"
        " return await page.evaluate(() => window.__bcInit ?? null) }",
    ),
    "exposeFunction": Door(
        "async (page) => { await page.exposeFunction('bcLeak', () => 1) }",
        "exposeFunction",
        after="async (page) => await page.evaluate(() => typeof window.bcLeak)",
        expected_after="undefined",
    ),
    "page.route": Door(
        "async (page) => { await page.route('**/second.html', (r) => r.fulfill({ body: 'intercepted' })) }",
        "route",
        after="async (page) => { await page.goto(page.url().replace('side-doors.html', 'second.html'));"
        " return (await page.content()).includes('intercepted') }",
        expected_after=False,
    ),
    "setExtraHTTPHeaders": Door(
        "async (page) => { await page.context().setExtraHTTPHeaders({ 'x-bc-test': 'yes' }) }",
        "setExtraHTTPHeaders",
    ),
    "grantPermissions": Door(
        "async (page) => { await page.context().grantPermissions(['geolocation']) }",
        "grantPermissions",
        after="async (page) => await page.evaluate(async () =>"
        " (await navigator.permissions.query({ name: 'geolocation' })).state === 'granted')",
        expected_after=False,
    ),
    "clearCookies": Door(
        "async (page) => { await page.context().clearCookies() }",
        "clearCookies",
        after="async (page) => await page.evaluate(() => document.cookie.includes('bc_secret'))",
        expected_after=True,
    ),
    "browser()": Door("async (page) => page.context().browser().version()", "browser"),
    "context().close()": Door(
        "async (page) => { await page.context().close() }",
        "close",
        after="async (page) => page.url().endsWith('side-doors.html')",
        expected_after=True,
    ),
    "Playwright internals": Door("async (page) => await page._channel.cookies({ urls: [] })", "cookies"),
    "the real page through a renamed parameter": Door(
        "async (p) => await page.context().cookies()", "cookies"
    ),
    "el(N) reaching its page": Door("async (page) => await el(1).page().context().cookies()", "page"),
    "a response's request headers": Door(
        "async (page) => { const r = await page.reload(); return await r.request().headerValue('cookie') }",
        "request",
    ),
    "addStyleTag reading a file": Door(
        "async (page) => { await page.addStyleTag({ path: '/etc/hostname' }) }",
        "addStyleTag",
        after="async (page) => await page.evaluate(() => document.querySelectorAll('style').length)",
        expected_after=0,
    ),
    "pdf": Door("async (page) => { await page.pdf({ path: '/tmp/bc-leak.pdf' }) }", "pdf"),
    "waitForEvent('filechooser')": Door(
        "async (page) => { const c = await page.waitForEvent('filechooser');"
        " await c.setFiles('/etc/passwd') }",
        "filechooser",
    ),
    "waitForEvent('request') (its body)": Door(
        "async (page) => (await page.waitForEvent('request')).postData()", "request"
    ),
}


@pytest.mark.parametrize("door", list(DOORS))
async def test_a_side_door_is_absent_and_nothing_happens(
    browser_session: BrowserSession, pages: PageServer, door: str
) -> None:
    spec = DOORS[door]
    frames = await open_test_page(browser_session, pages)
    await in_page(browser_session, f"{{ document.cookie = 'bc_secret={SECRET}; path=/'; }}")
    try:
        result = await guarded(browser_session, spec.code, frames)
        assert not result.ok, result
        error = result.error or ""
        assert spec.absent in error, error
        assert "not part of the browser API here" in error or "is not available" in error, error
        assert SECRET not in error and SECRET not in repr(result.value)
        assert await raw(browser_session, spec.after) == spec.expected_after
    finally:
        await raw(browser_session, "async (page) => { await page.context().clearCookies() }")


async def test_setting_files_from_this_computer_is_refused(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    frames = await open_test_page(browser_session, pages)
    for path in ("/etc/passwd", "../../mcp/tmp/uploads/../../../etc/passwd"):
        result = await guarded(
            browser_session,
            f"async (page) => {{ await page.locator('#note').setInputFiles('{path}') }}",
            frames,
        )
        assert not result.ok
        assert "Only files the user named can be uploaded" in (result.error or "")


# --- What the model still can do -----------------------------------------------------------------


async def test_el_n_clicks(browser_session: BrowserSession, pages: PageServer) -> None:
    frames = await open_test_page(browser_session, pages)
    result = await guarded(browser_session, "async (page) => { await el(1).click(); return 'ok' }", frames)
    assert result.value == "ok", result.error
    assert await in_page(browser_session, "window.__clicks ?? 0") == 1


async def test_locators_fill_and_combine(browser_session: BrowserSession, pages: PageServer) -> None:
    frames = await open_test_page(browser_session, pages)
    result = await guarded(
        browser_session,
        "async (page) => { await page.getByRole('textbox', { name: 'Note' }).fill('hello');"
        " const both = page.locator('button').and(page.getByRole('button', { name: 'Show more' }));"
        " const inside = page.locator('body', { has: page.locator('#note') });"
        " const filtered = page.locator('button').filter({ hasText: /show/i });"
        " return [await both.count(), await inside.count(), await filtered.count(),"
        " await page.getByLabel('Note').inputValue()] }",
        frames,
    )
    assert result.value == [1, 1, 1, "hello"], result.error
    assert await in_page(browser_session, "document.getElementById('note').value") == "hello"


async def test_page_shortcuts_act_on_the_first_match(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    frames = await open_test_page(browser_session, pages)
    result = await guarded(
        browser_session,
        "async (page) => { await page.fill('#note', 'x'); await page.click('#count');"
        " return [await page.inputValue('#note'), await page.textContent('h1')] }",
        frames,
    )
    assert result.value == ["x", "Side doors"], result.error
