"""The code tool's side doors: refused by vetting and, at run time, by the membrane around `page`.

Each refusal is checked through the real code tool, and each shows that nothing happened: no cookie
came back, no request was intercepted, no script or binding reached the page, the profile is unchanged."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from browser_copilot.browser.guarded import guarded_code
from browser_copilot.browser.observation import observe
from browser_copilot.browser.results import CodeResult
from browser_copilot.browser.session import BrowserSession
from browser_copilot.sandbox.vetting import vet_code
from tests.support.pages import PageServer

SECRET = "bc-s3cr3t-cookie"


async def guarded(
    session: BrowserSession, code: str, frames: dict[str, list[int]] | None = None
) -> CodeResult:
    return await session.run_code(guarded_code(code, frames, preflight=False))


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


def refused(result: CodeResult, api: str) -> None:
    assert not result.ok, result
    assert f"Refused by Browser Copilot: {api} is not available to browser code (" in (result.error or "")
    assert SECRET not in (result.error or "")
    assert SECRET not in repr(result.value)


RELOADED_INIT = (
    "async (page) => { await page.reload(); return await page.evaluate(() => window.__bcInit ?? null) }"
)


@dataclass(frozen=True)
class Door:
    code: str
    api: str
    prepare: str = "async (page) => null"
    after: str = "async (page) => null"
    expected_after: Any = None


DOORS: dict[str, Door] = {
    "context().cookies()": Door("async (page) => await page.context().cookies()", "cookies()"),
    "newCDPSession on the context": Door(
        "async (page) => { const s = await page.context().newCDPSession(page);"
        " return await s.send('Network.getAllCookies') }",
        "newCDPSession()",
    ),
    "newCDPSession on a page from pages()": Door(
        "async (page) => { const [p] = page.context().pages(); return await p.context().newCDPSession(p) }",
        "newCDPSession()",
    ),
    "storageState": Door("async (page) => await page.context().storageState()", "storageState()"),
    "page.request (cookie-carrying API client)": Door(
        "async (page) => await page.request.storageState()", "request"
    ),
    "context().addInitScript": Door(
        "async (page) => { await page.context().addInitScript(() => { window.__bcInit = 1 }) }",
        "addInitScript()",
        after=RELOADED_INIT,
    ),
    "page.addInitScript": Door(
        "async (page) => { await page.addInitScript(() => { window.__bcInit = 2 }) }",
        "addInitScript()",
        after=RELOADED_INIT,
    ),
    "exposeFunction": Door(
        "async (page) => { await page.exposeFunction('bcLeak', () => 1) }",
        "exposeFunction()",
        after="async (page) => await page.evaluate(() => typeof window.bcLeak)",
        expected_after="undefined",
    ),
    "exposeBinding on the context": Door(
        "async (page) => { await page.context().exposeBinding('bcBind', () => 1) }",
        "exposeBinding()",
        after="async (page) => await page.evaluate(() => typeof window.bcBind)",
        expected_after="undefined",
    ),
    "page.route": Door(
        "async (page) => { await page.route('**/second.html', (r) => r.fulfill({ body: 'intercepted' })) }",
        "route()",
        after="async (page) => { await page.goto(page.url().replace('side-doors.html', 'second.html'));"
        " return (await page.content()).includes('intercepted') }",
        expected_after=False,
    ),
    "context().route": Door(
        "async (page) => { await page.context().route('**/*', (r) => r.abort()) }",
        "route()",
        after="async (page) => (await page.reload()).status()",
        expected_after=200,
    ),
    "routeFromHAR": Door("async (page) => { await page.routeFromHAR('x.har') }", "routeFromHAR()"),
    "unroute": Door("async (page) => { await page.context().unroute('**/*') }", "unroute()"),
    "setExtraHTTPHeaders": Door(
        "async (page) => { await page.context().setExtraHTTPHeaders({ 'x-bc-test': 'yes' }) }",
        "setExtraHTTPHeaders()",
        after="async (page) => { const r = await page.reload();"
        " return (await r.request().allHeaders())['x-bc-test'] ?? null }",
    ),
    "grantPermissions": Door(
        "async (page) => { await page.context().grantPermissions(['geolocation']) }",
        "grantPermissions()",
        after="async (page) => await page.evaluate(async () =>"
        " (await navigator.permissions.query({ name: 'geolocation' })).state === 'granted')",
        expected_after=False,
    ),
    "clearPermissions": Door(
        "async (page) => { await page.context().clearPermissions() }", "clearPermissions()"
    ),
    "clearCookies": Door(
        "async (page) => { await page.context().clearCookies() }",
        "clearCookies()",
        after="async (page) => await page.evaluate(() => document.cookie.includes('bc_secret'))",
        expected_after=True,
    ),
    "addCookies": Door(
        "async (page) => { await page.context()"
        ".addCookies([{ name: 'bc_added', value: '1', url: page.url() }]) }",
        "addCookies()",
        after="async (page) => await page.evaluate(() => document.cookie.includes('bc_added'))",
        expected_after=False,
    ),
    "browser()": Door("async (page) => page.context().browser().version()", "browser()"),
    "browser().newContext()": Door(
        "async (page) => { await page.context().browser().newContext() }", "browser()"
    ),
    "browser().close()": Door(
        "async (page) => { await page.context().browser().close() }",
        "browser()",
        after="async (page) => page.context().pages().length > 0",
        expected_after=True,
    ),
    "context().close()": Door(
        "async (page) => { await page.context().close() }",
        "closing the browser context",
        after="async (page) => page.url().endsWith('side-doors.html')",
        expected_after=True,
    ),
    "Playwright internals (_channel)": Door(
        "async (page) => await page.context()._channel.cookies({ urls: [] })", "_channel"
    ),
    "the real page through the global": Door(
        "async () => await globalThis.page.context().cookies()", "cookies()"
    ),
    "the real page through a renamed parameter": Door(
        "async (p) => await page.context().cookies()", "cookies()"
    ),
    "el(N) reaching the context": Door("async (page) => await el(1).page().context().cookies()", "cookies()"),
    "a Cookie request header": Door(
        "async (page) => { const r = await page.reload(); return await r.request().headerValue('cookie') }",
        "the cookie header",
    ),
    "setInputFiles with a path of this computer": Door(
        "async (page) => { await page.locator('#note').setInputFiles('/etc/passwd') }",
        "setInputFiles with a path",
    ),
    "addStyleTag reading a file": Door(
        "async (page) => { await page.addStyleTag({ path: '/etc/hostname' }) }",
        "addStyleTag({ path })",
        after="async (page) => await page.evaluate(() => document.querySelectorAll('style').length)",
        expected_after=0,
    ),
}


@pytest.mark.parametrize("door", list(DOORS))
async def test_a_side_door_is_refused_at_run_time_before_anything_happens(
    browser_session: BrowserSession, pages: PageServer, door: str
) -> None:
    spec = DOORS[door]
    frames = await open_test_page(browser_session, pages)
    await in_page(browser_session, f"{{ document.cookie = 'bc_secret={SECRET}; path=/'; }}")
    try:
        result = await guarded(browser_session, spec.code, frames)
        refused(result, spec.api)
        assert await raw(browser_session, spec.after) == spec.expected_after
    finally:
        await raw(browser_session, "async (page) => { await page.context().clearCookies() }")


async def test_response_headers_reach_the_code_without_cookies(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    frames = await open_test_page(browser_session, pages)
    await in_page(browser_session, f"{{ document.cookie = 'bc_secret={SECRET}; path=/'; }}")
    try:
        result = await guarded(
            browser_session,
            "async (page) => { const r = await page.reload(); const q = r.request();"
            " return { all: await q.allHeaders(), list: await q.headersArray(), plain: q.headers() } }",
            frames,
        )
        assert result.ok, result.error
        assert SECRET not in json.dumps(result.value)
        assert "user-agent" in result.value["all"]
    finally:
        await raw(browser_session, "async (page) => { await page.context().clearCookies() }")


# --- What the model still can do through the membrane ---------------------------------------------


async def test_el_n_clicks_through_the_membrane(browser_session: BrowserSession, pages: PageServer) -> None:
    frames = await open_test_page(browser_session, pages)
    result = await guarded(browser_session, "async (page) => { await el(1).click(); return 'ok' }", frames)
    assert result.value == "ok", result.error
    assert await in_page(browser_session, "window.__clicks ?? 0") == 1


async def test_locators_fill_and_combine_through_the_membrane(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    frames = await open_test_page(browser_session, pages)
    result = await guarded(
        browser_session,
        "async (page) => { await page.getByRole('textbox', { name: 'Note' }).fill('hello');"
        " const both = page.mainFrame().locator('button')"
        ".and(page.getByRole('button', { name: 'Show more' }));"
        " const inside = page.locator('body', { has: page.locator('#note') });"
        " return [await both.count(), await inside.count()] }",
        frames,
    )
    assert result.value == [1, 1], result.error
    assert await in_page(browser_session, "document.getElementById('note').value") == "hello"


async def test_handles_pass_back_into_evaluate(browser_session: BrowserSession, pages: PageServer) -> None:
    frames = await open_test_page(browser_session, pages)
    result = await guarded(
        browser_session,
        "async (page) => await page.evaluate((el) => el.tagName, await page.$('body'))",
        frames,
    )
    assert result.value == "BODY", result.error


async def test_tabs_and_popups_are_reachable_and_wrapped(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    frames = await open_test_page(browser_session, pages)
    result = await guarded(
        browser_session,
        "async (page) => { const waiting = page.waitForEvent('popup');"
        " await page.getByRole('link', { name: /second page/ }).click();"
        " const popup = await waiting; await popup.waitForLoadState();"
        " const urls = page.context().pages().map((p) => p.url());"
        " let refusal = null; try { await popup.context().cookies() } catch (e) { refusal = e.message }"
        " const opener = await popup.opener();"
        " await popup.close();"
        " return { popup: popup.url(), urls, refusal, opener: opener.url() } }",
        frames,
    )
    assert result.ok, result.error
    assert result.value["popup"].endswith("/second.html")
    assert any(u.endswith("/side-doors.html") for u in result.value["urls"])
    assert any(u.endswith("/second.html") for u in result.value["urls"])
    assert result.value["refusal"].startswith("Refused by Browser Copilot: cookies()")
    assert result.value["opener"].endswith("/side-doors.html")


async def test_a_new_page_from_the_context_is_wrapped(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    frames = await open_test_page(browser_session, pages)
    result = await guarded(
        browser_session,
        "async (page) => { const p = await page.context().newPage();"
        " let refusal = null; try { await p.route('**', (r) => r.abort()) } catch (e) { refusal = e.message }"
        " await p.close(); return refusal }",
        frames,
    )
    assert (result.value or "").startswith("Refused by Browser Copilot: route()"), result.error


async def test_event_callbacks_get_wrapped_arguments(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    # Dialogs themselves cannot be shown here: @playwright/mcp stops any tool call at a dialog (its
    # "modal state"), with or without the membrane. Console messages go through the same event path.
    frames = await open_test_page(browser_session, pages)
    result = await guarded(
        browser_session,
        "async (page) => { const before = page.listenerCount('console') + page.listenerCount('dialog');"
        " const seen = []; let refusal = null;"
        " const onConsole = (m) => { seen.push(m.text());"
        "   try { m.page().context().cookies() } catch (e) { refusal = e.message } };"
        " const onDialog = (d) => d.dismiss();"
        " page.on('console', onConsole); page.on('dialog', onDialog);"
        " const waiting = page.waitForEvent('console', { predicate: (m) => m.page().url() === page.url() });"
        " await page.evaluate(() => console.log('hello from the page'));"
        " await waiting;"
        " page.off('console', onConsole); page.off('dialog', onDialog);"
        " const added = page.listenerCount('console') + page.listenerCount('dialog') - before;"
        " return { seen, refusal, added } }",
        frames,
    )
    assert result.ok, result.error
    assert result.value["seen"] == ["hello from the page"]
    assert result.value["refusal"].startswith("Refused by Browser Copilot: cookies()")
    assert result.value["added"] == 0  # off() found the wrapped listeners


async def test_after_action_can_halt_the_code(browser_session: BrowserSession, pages: PageServer) -> None:
    await open_test_page(browser_session, pages)
    assert (await guarded(browser_session, "async () => 1")).ok  # the box is installed
    source = (
        "async (page) => { const errors = [];"
        "  try { await page.locator('#count').click() } catch (e) { errors.push(e.message) }"
        "  try { await page.locator('#count').click() } catch (e) { errors.push(e.message) }"
        "  try { page.locator('#count') } catch (e) { errors.push(e.message) }"
        "  return errors }"
    )
    code = (
        "async (page) => {"
        "  let stop = null; const seen = [];"
        "  const options = { halted: () => stop, afterAction: async (name) => { seen.push(name);"
        "    stop = 'Halted: the guard held a click'; throw new Error(stop) }, el: () => null, exposed: {} };"
        f"  const out = await page.context().__bcBox.run(page, {json.dumps(source)}, options);"
        "  return { errors: JSON.parse(out.json), seen } }"
    )
    result = await raw(browser_session, code)
    assert result["seen"] == ["click"]
    assert result["errors"] == ["Halted: the guard held a click"] * 3
    assert await in_page(browser_session, "window.__clicks ?? 0") == 1  # the second click never ran


# --- Static vetting --------------------------------------------------------------------------------

VETTED = {
    "newCDPSession": "async (page) => { const s = await page.context().newCDPSession(page) }",
    "cookies": "async (page) => await page.context().cookies()",
    "storageState": "async (page) => await page.context().storageState()",
    "addInitScript": "async (page) => { await page.context().addInitScript(() => 1) }",
    "exposeBinding": "async (page) => { await page.exposeBinding('x', () => 1) }",
    "exposeFunction": "async (page) => { await page.exposeFunction('x', () => 1) }",
    "route": "async (page) => { await page.route('**', (r) => r.abort()) }",
    "routeFromHAR": "async (page) => { await page.context().routeFromHAR('a.har') }",
    "unroute": "async (page) => { await page.unroute('**') }",
    "setExtraHTTPHeaders": "async (page) => { await page.setExtraHTTPHeaders({}) }",
    "grantPermissions": "async (page) => { await page.context().grantPermissions([]) }",
    "clearPermissions": "async (page) => { await page.context().clearPermissions() }",
    "clearCookies": "async (page) => { await page.context().clearCookies() }",
    "addCookies": "async (page) => { await page.context().addCookies([]) }",
    "browser": "async (page) => page.context().browser()",
    "newContext": "async (page, b) => { await b.newContext() }",
    "contexts": "async (page, b) => b.contexts()",
    "context().close()": "async (page) => { await page.context().close() }",
}


@pytest.mark.parametrize("name", list(VETTED))
def test_vetting_refuses_each_side_door_with_its_reason(name: str) -> None:
    refusal = vet_code(VETTED[name])
    assert refusal is not None
    assert refusal.startswith("Refused before running")
    assert f"`{name}` (" in refusal


def test_vetting_finds_a_side_door_named_in_brackets() -> None:
    refusal = vet_code("async (page) => page.context()['newCDPSession'](page)")
    assert refusal is not None
    assert "`newCDPSession` (raw DevTools protocol" in refusal


@pytest.mark.parametrize(
    "source",
    [
        "async (page) => { await page.getByRole('button', { name: 'Accept cookies' }).click() }",
        "async (page) => { await el(2).fill('route the storageState via newCDPSession to the browser') }",
        "async (page) => { const cookies = page.getByText('cookies'); await cookies.click() }",
        "async (page) => await page.evaluate(() => document.cookie.length)",
        "async (page) => page.context().pages().map((p) => p.url())",
    ],
)
def test_vetting_lets_mentions_of_those_words_pass(source: str) -> None:
    assert vet_code(source) is None
