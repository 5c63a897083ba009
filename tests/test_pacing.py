"""Pacing (PACING=human): the model's own calls, through the membrane, get per-key typing, a pause
before clicks, a per-site action limit and a gap between navigations to the same site; off adds nothing.

Timings are read from the page's own event timestamps (keydown, click, navigation start)."""

from __future__ import annotations

import itertools
import statistics
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from browser_copilot.agent.factory import make_context
from browser_copilot.agent.runner import AgentRunner, compile_graph, new_session_id
from browser_copilot.browser.guarded import guard_report, guarded_code
from browser_copilot.browser.pacing import Pacing
from browser_copilot.browser.session import BrowserSession
from browser_copilot.config import Settings
from tests.conftest import make_settings
from tests.support.agent import fresh, value
from tests.support.pages import PageServer
from tests.support.scripted_model import ScriptedModel, code, say

HUMAN = Pacing(mode="human")
TEXT = "Ada Lovelace, London"  # 20 characters


async def run(session: BrowserSession, source: str, pacing: Pacing | None, frames: Any = None) -> Any:
    result = await session.run_code(guarded_code(source, frames or {}, pacing=pacing), timeout=60)
    assert result.ok, result.error
    return result.value


async def start(session: BrowserSession, pages: PageServer, page: str = "pacing.html") -> None:
    """A fresh page, and the pacing's per-site memory (kept on the browser context) forgotten."""
    await session.run_code("async (page) => { delete page.context().__bcPacing; }")
    await fresh(session, pages, page)


def gaps(stamps: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(stamps)]


async def test_human_typing_sends_each_key_with_a_varying_human_gap(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await start(browser_session, pages)
    await run(browser_session, "async (page) => { await page.locator('#name').fill('old text') }", None)
    await value(browser_session, "(window.__keys = [], 0)")
    await run(browser_session, f"async (page) => {{ await page.locator('#name').fill({TEXT!r}) }}", HUMAN)
    assert await value(browser_session, "document.getElementById('name').value") == TEXT
    keys = await value(browser_session, "window.__keys")
    assert len(keys) == len(TEXT)
    between = gaps(keys)
    assert min(between) >= 25, between  # the clamp is 35 ms; a plain fill sends no keys at all
    assert statistics.median(between) >= 50, between
    assert statistics.pstdev(between) > 5, between  # drawn, not a fixed delay


async def test_human_pacing_also_spaces_the_models_press_sequentially_and_keyboard_typing(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await start(browser_session, pages)
    source = (
        "async (page) => { await page.locator('#note').pressSequentially('abcdef');"
        " await page.locator('#note').press('End'); await page.keyboard.type('ghij') }"
    )
    await run(browser_session, source, HUMAN)
    assert await value(browser_session, "document.getElementById('note').value") == "abcdefghij"
    keys = await value(browser_session, "window.__keys")
    assert len(keys) == 10
    assert min(gaps(keys)) >= 25, gaps(keys)


async def test_a_click_is_preceded_by_a_pause_in_human_mode_and_not_when_off(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await start(browser_session, pages)
    source = "async (page) => { const t = Date.now(); await page.locator('#tap').click(); return t }"
    marks: dict[str, list[float]] = {"off": [], "human": []}
    for _ in range(3):
        for mode in ("off", "human"):
            marked = await run(browser_session, source, Pacing(mode=mode))  # type: ignore[arg-type]
            clicks = await value(browser_session, "window.__clickTimes")
            marks[mode].append(clicks[-1] - marked)
    # From the mark to the click event: Playwright's own work (actionability, events) in both modes,
    # plus the 150-600 ms pause in human mode; the fastest of each mode are compared (a loaded
    # machine slows single clicks).
    assert min(marks["human"]) >= 150, marks
    assert min(marks["human"]) - min(marks["off"]) >= 100, marks


async def test_the_per_site_limit_delays_the_action_past_it(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await start(browser_session, pages)
    pacing = Pacing(mode="human", actions_per_minute=3, window_ms=2000, click_pause_ms=(0, 1))
    source = "async (page) => { for (let i = 0; i < 4; i += 1) await page.locator('#tap').click() }"
    await run(browser_session, source, pacing)
    clicks = await value(browser_session, "window.__clicks")
    assert len(clicks) == 4
    assert clicks[2] - clicks[0] < 1000, clicks  # three within the limit go at once
    assert clicks[3] - clicks[0] >= 1700, clicks  # the fourth waits for the window (2 s) to move on


async def test_navigations_to_the_same_site_keep_the_minimum_gap(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await start(browser_session, pages)
    first, second = pages.url("index.html"), pages.url("second.html")
    # The gap is from one navigation's start to the next one's: measured from before the first (after it
    # ended, a slow first load under load ate into the gap and the test failed in CI).
    source = (
        f"async (page) => {{ const start = Date.now(); await page.goto({first!r}); const a = Date.now();"
        f" await page.goto({second!r}); return [Date.now() - start, Date.now() - a] }}"
    )
    off = await run(browser_session, source, None)
    human = await run(browser_session, source, Pacing(mode="human", same_site_gap_ms=1200))
    assert human[0] >= 1200 - 50, human  # two clocks (Node, the page): a few ms apart
    assert off[1] < 1000, off


async def test_off_adds_nothing_between_keys(browser_session: BrowserSession, pages: PageServer) -> None:
    await start(browser_session, pages)
    code_off = guarded_code("async (page) => { await el(1).fill('x') }", {}, pacing=Pacing(mode="off"))
    # Off adds nothing by construction: the code is the unpaced code, byte for byte. (The gaps between keys
    # are not compared with a bound: on a loaded machine an unpaced key took 48 ms in CI.)
    assert "__bcPacing" not in code_off
    assert code_off == guarded_code("async (page) => { await el(1).fill('x') }", {})
    typing = "async (page) => { await page.locator('#note').pressSequentially('abcdefgh') }"
    await run(browser_session, typing, Pacing(mode="off"))
    assert len(await value(browser_session, "window.__keys")) == 8
    assert await value(browser_session, "document.getElementById('note').value") == "abcdefgh"


async def test_typing_into_a_secret_field_is_not_paced_but_refused_at_once(
    browser_session: BrowserSession, pages: PageServer
) -> None:
    await start(browser_session, pages, "login.html")
    await browser_session.run_code("async (page) => { await page.locator('input[name=password]').fill('') }")
    source = "async (page) => { await page.locator('input[name=password]').fill('hunter22') }"
    result = await browser_session.run_code(guarded_code(source, {}, pacing=HUMAN))
    report = guard_report(result)
    assert report is not None, result
    assert report.secret_blocked == 1  # one refused fill, not a refusal per typed key
    assert await value(browser_session, "document.querySelector('input[name=password]').value") == ""


async def test_the_agents_code_is_paced_in_the_users_own_browser_by_default(
    browser_session: BrowserSession, pages: PageServer, tmp_path: Path
) -> None:
    await start(browser_session, pages)
    assert Settings.model_fields["pacing"].default == "auto"
    settings = make_settings(tmp_path, pacing="auto")
    model = ScriptedModel(
        replies=[code(f"async (page) => {{ await page.locator('#name').fill({TEXT!r}) }}"), say("Done.")]
    )
    context = make_context(settings, llm=model, browser=browser_session)
    assert browser_session.launched is None  # the tests' browser is "the user's"
    runner = AgentRunner(compile_graph(InMemorySaver()), context, session_id=new_session_id())
    outcome = await runner.send("Type my name")
    assert outcome.stop_reason == "answered", outcome.text
    assert await value(browser_session, "document.getElementById('name').value") == TEXT
    assert len(await value(browser_session, "window.__keys")) == len(TEXT)


def test_auto_is_off_in_a_browser_the_app_launched_and_off_stays_off(tmp_path: Path) -> None:
    assert Pacing(mode="auto").for_browser(launched=True).mode == "off"
    assert Pacing(mode="auto").for_browser(launched=False).mode == "human"
    assert Pacing(mode="off").for_browser(launched=False).mode == "off"
    settings = make_settings(tmp_path, pacing="OFF", pacing_actions_per_minute=12, pacing_same_site_gap_ms=0)
    assert settings.pacing == "off"
    assert (settings.pacing_actions_per_minute, settings.pacing_same_site_gap_ms) == (12, 0)
