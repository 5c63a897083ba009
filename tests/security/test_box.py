"""The model's code stays in its box (F45): it holds only the façade's objects (sandbox/facade.js), no
chain of property reads from anything it can reach leads to a `Function` of Node's realm (hence
`process`), its globals are the few the box gives, and nothing it is handed outlives its call.

The code runs as the agent runs it (`guarded_code`, the real MCP server, real Chromium). An escape
search walks property chains (`constructor`, `__proto__`, `prototype`, own keys, descriptors' getters
and values, `caller`, `__lookupGetter__`) from each root and calls every constructor it finds with
`'return process'`; a positive control runs the same search outside the box and finds `process`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from browser_copilot.browser.guarded import guard_report, guarded_code
from browser_copilot.browser.results import CodeResult
from browser_copilot.browser.session import BrowserSession
from tests.support.agent import fresh, value
from tests.support.pages import PageServer
from tests.support.waiting import eventually

ESCAPE_SEARCH = (Path(__file__).parent / "escape_search.js").read_text("utf-8")

ROOTS: dict[str, str] = {
    "page": "page",
    "the context": "page.context()",
    "the tab list": "page.context().pages()",
    "a locator": "page.locator('input').first()",
    "a list of locators": "await page.locator('input').all()",
    "a frame locator": "page.frameLocator('iframe')",
    "el(N)": "el(1)",
    "el itself": "el",
    "the keyboard": "page.keyboard",
    "the mouse": "page.mouse",
    "a promise of the API": "page.title()",
    "a navigation's answer": "await page.goto(page.url())",
    "a box": "await page.locator('input').first().boundingBox()",
    "an error from Playwright": "await page.locator('#no-such-thing').click({ timeout: 50 }).catch((e) => e)",
    "an error of the API's checks": "await page.locator(1).click().catch((e) => e)",
    "an error of a missing method": "await Promise.resolve().then(() => page.evaluate()).catch((e) => e)",
    "a timer handle": "[setTimeout(() => 0, 1), setInterval(() => 0, 1000)]",
    "the console": "console",
    "a screenshot's answer": "await page.screenshot()",
}


async def in_box(session: BrowserSession, code: str) -> CodeResult:
    return await session.run_code(guarded_code(code))


async def search_from(session: BrowserSession, root: str, limit: int = 400) -> Any:
    code = f"async (page) => {{ const root = {root}; return await ({ESCAPE_SEARCH})(root, {limit}); }}"
    result = await in_box(session, code)
    assert result.ok, result.error
    return result.value


async def test_the_escape_search_finds_process_outside_the_box(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    # Positive control: the same search on the code tool's raw context and page finds the way out.
    await fresh(browser_session, pages, "form.html")
    for root in ("Buffer", "setTimeout", "page"):
        code = f"async (page) => await ({ESCAPE_SEARCH})({root}, 400)"
        result = await browser_session.run_code(code, idempotent=True)
        assert result.ok, result.error
        assert result.value["escaped"], (root, result.value)


@pytest.mark.parametrize("root", list(ROOTS))
async def test_no_chain_from_what_the_code_can_reach_leads_to_node(
    browser_session: BrowserSession, pages: PageServer, root: str
) -> None:
    await fresh(browser_session, pages, "form.html")
    found = await search_from(browser_session, ROOTS[root])
    assert found["escaped"] is None, found
    assert found["visited"] >= 1


async def test_the_box_has_only_the_globals_it_gives(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    """An allowlist: the compartment's own names beyond JavaScript's standard ones are exactly these."""
    await fresh(browser_session, pages, "form.html")
    result = await in_box(
        browser_session,
        "async (page) => { const standard = new Set(['globalThis', 'Infinity', 'NaN', 'undefined', 'eval',"
        " 'isFinite', 'isNaN', 'parseFloat', 'parseInt', 'decodeURI', 'decodeURIComponent', 'encodeURI',"
        " 'encodeURIComponent', 'escape', 'unescape', 'Compartment', 'harden', 'lockdown', 'assert']);"
        " const readable = (k) => { try { return globalThis[k] !== undefined } catch (e) { return false } };"
        " return Object.getOwnPropertyNames(globalThis).filter((k) => !standard.has(k)"
        " && !/^[A-Z]/.test(k) && readable(k)).sort() }",
    )
    assert result.ok, result.error
    assert result.value == [
        "clearInterval",
        "clearTimeout",
        "console",
        "el",
        "page",
        "setInterval",
        "setTimeout",
    ]
    nodes = await in_box(
        browser_session,
        "async (page) => [typeof __end__, typeof __fn__, typeof process, typeof require, typeof module,"
        " typeof Buffer, typeof fetch, typeof URL, typeof structuredClone, typeof queueMicrotask,"
        " Object.isFrozen(Object.prototype), Object.isFrozen(Promise.prototype), Object.isFrozen(page)]",
    )
    assert nodes.ok, nodes.error
    assert nodes.value == ["undefined"] * 10 + [True, True, True]


@pytest.mark.parametrize(
    "attempt",
    [
        "page.getByRole = () => page.locator('h1')",
        "Object.defineProperty(page, 'locator', { value: () => null })",
        "Object.setPrototypeOf(page, null)",
        "page.keyboard.press = async () => null",
        "Promise.prototype.then = function () { return 0 }",
        "Array.prototype.map = function () { return [] }",
        "JSON.stringify = () => '{}'",
    ],
)
async def test_the_code_cannot_change_what_it_was_handed_or_the_intrinsics(
    browser_session: BrowserSession, pages: PageServer, attempt: str
) -> None:
    frames = await fresh(browser_session, pages, "checkout.html")
    code = (
        f"async (page) => {{ 'use strict'; try {{ {attempt} }} catch (e) {{ /* refused */ }}"
        " await page.getByRole('button', { name: 'Place order' }).click() }"
    )
    result = await browser_session.run_code(guarded_code(code, frames))
    report = guard_report(result)
    assert report is not None and report.held, result  # the guard still held the order
    assert await value(browser_session, "window.__ordered ?? 0") == 0


async def test_a_stack_trace_hook_of_the_code_never_sees_call_sites(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await fresh(browser_session, pages, "form.html")
    result = await in_box(
        browser_session,
        "async (page) => { const seen = [];"
        " try { Error.prepareStackTrace = (e, sites) => { seen.push(sites); return 'x' } }"
        " catch (e) { /* refused */ }"
        " String(new Error('a').stack);"
        " await page.locator('#nope').click({ timeout: 50 }).catch((e) => String(e.stack));"
        " return seen.length }",
    )
    assert result.ok, result.error
    assert result.value == 0


@pytest.mark.parametrize(
    "source",
    [
        "async (page) => { const m = await import('node:fs'); return typeof m.readFileSync }",
        "async (page) => typeof eval('typeof process === \"object\" ? process : undefined').pid",
        "async (page) => { const f = (0, eval)('(function () { return this })');"
        " return typeof f().process.pid }",
        "async (page) => typeof new Function('return process')().pid",
        "async (page) => typeof (async () => 0).constructor('return process')",
    ],
)
async def test_evaluators_inside_the_box_reach_only_the_box(
    browser_session: BrowserSession, pages: PageServer, source: str
) -> None:
    await fresh(browser_session, pages, "form.html")
    result = await in_box(browser_session, source)
    assert not (result.ok and result.value in ("function", "number")), result


async def test_timers_and_waits_of_the_code_do_not_outlive_its_call(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    frames = await fresh(browser_session, pages, "side-doors.html")
    result = await browser_session.run_code(
        guarded_code(
            "async (page) => { setTimeout(() => page.locator('#count').click(), 300);"
            " setInterval(() => page.locator('#count').click(), 100);"
            " page.waitForTimeout(200).then(() => page.locator('#count').click());"
            " page.locator('#never').waitFor({ timeout: 5000 }).catch(() => 0)"
            ".then(() => page.locator('#count').click());"
            " return 'returned' }",
            frames,
        )
    )
    assert result.ok and result.value == "returned", result
    # A page timer of 600 ms fires after every one of the code's would have: none clicked.
    await browser_session.run_code(
        "async (page) => page.evaluate(() => setTimeout(() => { window.__late = 1 }, 600))", idempotent=True
    )
    assert (
        await eventually(lambda: value(browser_session, "window.__late ?? 0"), what="the page's timer") == 1
    )
    assert await value(browser_session, "window.__clicks ?? 0") == 0


async def test_ordinary_code_still_works_in_the_box(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await fresh(browser_session, pages, "form.html")
    result = await in_box(
        browser_session,
        "async (page) => { const t0 = Date.now(); await new Promise((r) => setTimeout(r, 5));"
        " const titles = await Promise.all(page.context().pages().map((p) => p.title()));"
        " const n = await page.locator('input').count();"
        " const inputs = await page.locator('input').all();"
        " const labels = await Promise.all(inputs.map((l) => l.getAttribute('name')));"
        " return { host: page.url().split('/')[2].split(':')[0], waited: Date.now() - t0 >= 0,"
        " tabs: titles.length > 0, n, named: labels.length === n, random: typeof Math.random(),"
        " json: JSON.parse(JSON.stringify({ a: [1] })).a[0], re: /b+/.test('abbc') } }",
    )
    assert result.ok, result.error
    assert result.value == {
        "host": "127.0.0.1",
        "waited": True,
        "tabs": True,
        "n": result.value["n"],
        "named": True,
        "random": "number",
        "json": 1,
        "re": True,
    }
    assert result.value["n"] > 0


async def test_large_values_cross_without_exhausting_the_server(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await fresh(browser_session, pages, "form.html")
    result = await in_box(
        browser_session,
        "async (page) => { const a = { n: 1 }; a.self = a;"
        " try { JSON.stringify(a) } catch (e) { /* cyclic */ }"
        " const big = 'x'.repeat(200000);"
        " return [big.length, (await page.locator('*').allTextContents()).length > 0] }",
    )
    assert result.ok, result.error
    assert result.value == [200000, True]
    assert (await browser_session.run_code("async () => 1", idempotent=True)).ok  # the server is alive
