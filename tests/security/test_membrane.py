"""The model's code stays in its box: no chain of property reads from anything it can touch reaches a
`Function` of Node's main realm (hence `process`), nothing outlives its call, and it cannot change
what the app's own code around it relies on.

The code runs as the agent runs it (`guarded_code`, real MCP server, real Chromium) but without the
static vetting, which is only a first filter: these tests attack the membrane itself. An escape
search walks property chains (`constructor`, `__proto__`, `prototype`, own keys, descriptors'
getters and values, `caller`, `__lookupGetter__`) from each root and calls every constructor it finds
with `'return process'`; a positive control runs the same search outside the box and finds `process`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from browser_copilot.browser.guarded import guard_report, guarded_code
from browser_copilot.browser.results import CodeResult
from browser_copilot.browser.session import BrowserSession
from browser_copilot.sandbox.box import exposed_globals_js, globals_policy, known_globals
from tests.support.agent import fresh, value
from tests.support.pages import PageServer
from tests.support.waiting import eventually

ESCAPE_SEARCH = (Path(__file__).parent / "escape_search.js").read_text("utf-8")

ROOTS: dict[str, str] = {
    "page": "page",
    "the context": "page.context()",
    "a frame": "page.mainFrame()",
    "a locator": "page.locator('input').first()",
    "el(N)": "el(1)",
    "the keyboard": "page.keyboard",
    "a promise from Playwright": "page.title()",
    "a navigation response": "await page.goto(page.url())",
    "a request": "(await page.goto(page.url())).request()",
    "an error from Playwright": "await page.locator('#no-such-thing').click({ timeout: 50 }).catch((e) => e)",
    "an error thrown by page code": "await page.evaluate(() => { throw new Error('x') }).catch((e) => e)",
    "an element handle": "await page.$('input')",
    "a JS handle": "await page.evaluateHandle(() => ({ a: 1 }))",
    "a console message (callback argument)": (
        "await new Promise((resolve) => { page.once('console', resolve);"
        " page.evaluate(() => console.log('hi')) })"
    ),
    "an event from waitForEvent": (
        "await Promise.all([page.waitForEvent('console'), page.evaluate(() => console.log('x'))])"
    ),
    "a URL instance": "new URL('http://example.test/a?b=c')",
    "a Buffer": "Buffer.from('abc')",
    "crypto.subtle": "crypto.subtle",
    "an encoded array": "new TextEncoder().encode('x')",
    "a structured clone": "structuredClone({ a: [1] })",
    "an abort signal": "new AbortController().signal",
    "a timer handle (a number here)": "[setTimeout(() => 0, 1), setInterval(() => 0, 1000)]",
    "a refused API client": "page.request",
}


async def in_box(session: BrowserSession, code: str) -> CodeResult:
    """The model's code as the agent runs it, without the static vetting."""
    return await session.run_code(guarded_code(code, None, preflight=False))


async def search_from(session: BrowserSession, root: str, limit: int = 400) -> Any:
    code = f"async (page) => {{ const root = {root}; return await ({ESCAPE_SEARCH})(root, {limit}); }}"
    result = await in_box(session, code)
    assert result.ok, result.error
    return result.value


async def exposed_names(session: BrowserSession) -> list[str]:
    """The globals @playwright/mcp's code tool context gets from Node's main realm, enumerated now."""
    result = await session.run_code(f"async (page) => Object.keys({exposed_globals_js()})", idempotent=True)
    assert result.ok, result.error
    return sorted(result.value)


async def test_the_escape_search_finds_process_outside_the_box(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    # Positive control: the same search, run on the raw context's globals and page, finds the way out.
    await fresh(browser_session, pages, "form.html")
    for root in ("Buffer", "setTimeout", "page"):
        code = f"async (page) => await ({ESCAPE_SEARCH})({root}, 400)"
        result = await browser_session.run_code(code, idempotent=True)
        assert result.ok, result.error
        assert result.value["escaped"], (root, result.value)


async def test_every_global_of_the_code_tool_is_known_and_none_leads_out(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await fresh(browser_session, pages, "form.html")
    names = await exposed_names(browser_session)
    assert "setTimeout" in names and "Buffer" in names  # the enumeration sees them
    unknown = set(names) - known_globals()
    assert not unknown, f"a new global of the code tool: decide in sandbox/globals.json: {unknown}"
    policy = globals_policy()
    for name in names:
        if name in policy["internal"]:
            continue
        found = await search_from(browser_session, f"globalThis[{json.dumps(name)}]")
        assert found["escaped"] is None, (name, found)


@pytest.mark.parametrize("root", list(ROOTS))
async def test_no_chain_from_what_the_code_can_reach_leads_to_node(
    browser_session: BrowserSession, pages: PageServer, root: str
) -> None:
    await fresh(browser_session, pages, "form.html")
    found = await search_from(browser_session, ROOTS[root])
    assert found["escaped"] is None, found
    assert found["visited"] >= 1


async def test_the_box_has_no_completion_object_nor_node_globals(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await fresh(browser_session, pages, "form.html")
    result = await in_box(
        browser_session,
        "async (page) => [typeof __end__, typeof globalThis.__end__, typeof __fn__, typeof process,"
        " typeof require, typeof module, Object.isFrozen(Object.prototype),"
        " Object.isFrozen(Promise.prototype)]",
    )
    assert result.ok, result.error
    assert result.value == ["undefined"] * 6 + [True, True]


@pytest.mark.parametrize(
    "attempt",
    [
        "Promise.prototype.then = function (ok, bad) { return 0 }",
        "Array.prototype.map = function () { return [] }",
        "Object.defineProperty(Object.prototype, 'then', { get() { return 1 } })",
        "JSON.stringify = () => '{}'",
        "Reflect.apply = () => 1",
    ],
)
async def test_the_code_cannot_change_the_intrinsics_the_membrane_uses(
    browser_session: BrowserSession, pages: PageServer, attempt: str
) -> None:
    await fresh(browser_session, pages, "form.html")
    result = await in_box(browser_session, f"async (page) => {{ 'use strict'; {attempt}; return 'changed' }}")
    assert not result.ok, result
    assert "changed" not in repr(result.value)


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
        " await page.evaluate(() => { throw new Error('b') }).catch((e) => String(e.stack));"
        " return seen.length }",
    )
    assert result.ok, result.error
    assert result.value == 0


@pytest.mark.parametrize(
    "attempt",
    [
        "page.evaluate = async () => ({ held: [] })",
        "Object.defineProperty(page, 'evaluate', { value: async () => null })",
        "page.constructor.prototype.evaluate = async () => null",
        "Object.setPrototypeOf(page, null)",
        "page.__defineGetter__('evaluate', () => async () => null)",
        "page.context().constructor.prototype.pages = () => []",
        "delete page.evaluate",
    ],
)
async def test_the_code_cannot_change_playwright_objects_the_guard_relies_on(
    browser_session: BrowserSession, pages: PageServer, attempt: str
) -> None:
    frames = await fresh(browser_session, pages, "checkout.html")
    code = (
        f"async (page) => {{ try {{ {attempt} }} catch (e) {{ /* refused */ }}"
        " await page.getByRole('button', { name: 'Place order' }).click() }"
    )
    result = await browser_session.run_code(guarded_code(code, frames, preflight=False))
    report = guard_report(result)
    assert report is not None and report.held, result  # the guard still held the order
    assert await value(browser_session, "window.__ordered ?? 0") == 0


async def test_timers_and_listeners_of_the_code_do_not_outlive_its_call(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    frames = await fresh(browser_session, pages, "side-doors.html")
    count = "async (page) => page.listenerCount('console')"
    before = (await browser_session.run_code(count, idempotent=True)).value
    result = await browser_session.run_code(
        guarded_code(
            "async (page) => { setTimeout(() => page.locator('#count').click(), 300);"
            " setInterval(() => page.locator('#count').click(), 100);"
            " page.on('console', () => page.locator('#count').click());"
            " await page.evaluate(() => setTimeout(() => { window.__late = 1; console.log('late') }, 600));"
            " return 'returned' }",
            frames,
            preflight=False,
        )
    )
    assert result.ok and result.value == "returned", result
    # The page's own timer (600 ms) fired after every timer of the code would have: none clicked.
    late = await eventually(lambda: value(browser_session, "window.__late ?? 0"), what="the page's timer")
    assert late == 1
    assert await value(browser_session, "window.__clicks ?? 0") == 0
    assert (await browser_session.run_code(count, idempotent=True)).value == before


async def test_evaluate_cannot_expose_functions_to_the_page(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await fresh(browser_session, pages, "form.html")
    result = await in_box(
        browser_session,
        "async (page) => await page.evaluate((f) => f(), () => 1, { exposeFunctions: true })",
    )
    assert not result.ok
    assert "Refused by Browser Copilot" in (result.error or "")
    nested = await in_box(browser_session, "async (page) => await page.evaluate((a) => 1, { f: () => 1 })")
    assert not nested.ok
    assert "Refused by Browser Copilot: a function inside evaluate()" in (nested.error or "")


async def test_nodes_own_fetch_is_refused_before_any_request(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await fresh(browser_session, pages, "form.html")
    for code in (
        "async (page) => { await fetch('http://127.0.0.1:9/x') }",
        "async (page) => { new Request('http://127.0.0.1:9/x') }",
    ):
        result = await in_box(browser_session, code)
        assert not result.ok
        assert "Refused by Browser Copilot" in (result.error or ""), result.error


async def test_ordinary_code_still_works_in_the_box(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await fresh(browser_session, pages, "form.html")
    result = await in_box(
        browser_session,
        "async (page) => { const u = new URL(page.url()); const t0 = Date.now();"
        " await new Promise((r) => setTimeout(r, 5));"
        " const titles = await Promise.all(page.context().pages().map((p) => p.title()));"
        " const n = await page.locator('input').count();"
        " const got = await page.evaluate(([a, b]) => a + b, [2, 3]);"
        " return { host: u.hostname, waited: Date.now() - t0 >= 0, tabs: titles.length > 0, n, got,"
        " text: btoa('hi'), random: typeof Math.random() } }",
    )
    assert result.ok, result.error
    assert result.value == {
        "host": "127.0.0.1",
        "waited": True,
        "tabs": True,
        "n": result.value["n"],
        "got": 5,
        "text": "aGk=",
        "random": "number",
    }
    assert result.value["n"] > 0


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


async def test_cyclic_and_large_values_cross_once_without_exhausting_the_server(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await fresh(browser_session, pages, "form.html")
    result = await in_box(
        browser_session,
        "async (page) => { const a = await page.evaluate(() => {"
        " const a = { n: 1 }; a.self = a; a.list = [a, a]; return a });"
        " const w = await page.evaluate(() => window);"
        " return [a.self === a, a.list[1] === a, typeof w] }",
    )
    assert result.ok, result.error
    assert result.value[:2] == [True, True]
    assert (await browser_session.run_code("async () => 1", idempotent=True)).ok  # the server is alive
