"""Parallel runs in one browser (MAX_PARALLEL_RUNS): server sessions run at the same time, each in a
window of its own through an MCP server process of its own (`browser.pool`), against the real Chromium
and real `@playwright/mcp` processes; only the model is scripted, per session (by its task's words)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import threading
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pexpect
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.parallel import ParallelRunners
from browser_copilot.agent.runner import compile_graph
from browser_copilot.agent.storage import open_checkpointer
from browser_copilot.browser.guarded import guarded_code
from browser_copilot.browser.launcher import LaunchedBrowser
from browser_copilot.browser.pacing import Pacing
from browser_copilot.browser.pool import BrowserPool
from browser_copilot.browser.session import BrowserSession
from browser_copilot.server.live_stream import Cdp
from browser_copilot.server.sessions import Session, SessionManager
from tests.conftest import make_settings
from tests.support.app import spawn_chat
from tests.support.openai_server import ScriptedOpenAI, text
from tests.support.openai_server import call as openai_call
from tests.support.pages import PageServer
from tests.support.processes import pids_mentioning
from tests.support.scripted_model import ScriptedModel, code, say
from tests.support.sites import Request, Site
from tests.support.waiting import async_wait_until, wait_until

LIMIT = 60.0
_ids = itertools.count(1)


class PerTask(ScriptedModel):
    """A scripted model answering each session from its own script: the first script whose key is in
    the session's first user message (runs of several sessions interleave their model calls)."""

    scripts: dict[str, list[AIMessage]]
    used: dict[str, int] = Field(default_factory=dict)

    @property
    def _llm_type(self) -> str:
        return "scripted-per-task"

    def _next(self, messages: list[BaseMessage]) -> AIMessage:
        task = next((str(m.content) for m in messages if isinstance(m, HumanMessage)), "")
        key = next((k for k in self.scripts if k in task), None)
        if key is None:
            return AIMessage(content="(no script)")
        at = self.used.get(key, 0)
        self.used[key] = at + 1
        script = self.scripts[key]
        reply = script[at] if at < len(script) else AIMessage(content="(script exhausted)")
        calls = [{**c, "id": f"call_{next(_ids)}"} for c in reply.tool_calls]
        return AIMessage(content=reply.content, tool_calls=calls)


@contextlib.asynccontextmanager
async def manager_over(
    browser: BrowserSession, model: BaseChatModel, data: Path, **settings: Any
) -> AsyncIterator[SessionManager]:
    """A session manager on the shared browser (the SQLite checkpointer, as `serve` opens it)."""
    configured = make_settings(data, **settings)
    async with open_checkpointer(configured) as saver:
        manager = SessionManager(configured, browser=browser, llm=model, checkpointer=saver)
        try:
            yield manager
        finally:
            await manager.close()


def messages(s: Session, kind: str) -> list[dict[str, Any]]:
    """The data of the session's events of `kind` (its SSE buffer)."""
    return [json.loads(body)["data"] for _, k, body in s.hub.after(0) if k == kind]


async def answered(s: Session, count: int = 1) -> dict[str, Any]:
    """The session's `count`th final answer, once it came."""
    try:
        found = await async_wait_until(
            lambda: len(messages(s, "final")) >= count, timeout=LIMIT, what=f"{s.id}'s answer"
        )
    except AssertionError:
        raise AssertionError([body[:300] for _, _, body in s.hub.after(0)]) from None
    assert found
    return messages(s, "final")[count - 1]


class Gate:
    """A page that waits for the test: its script asks `/gate`, whose answer comes when the test opens
    the gate (a run that acts for as long as the test wants); it says when the page asked."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.open = threading.Event()

    def page(self, request: Request, port: int) -> str:
        if request.path.startswith("/gate"):
            self.asked.set()
            self.open.wait(LIMIT)
            return "through"
        if request.path.startswith("/slow"):
            return (
                "<title>Slow</title><p id=gate>waiting</p><script>fetch('/gate').then((r) => r.text())"
                ".then((t) => { document.title = t; document.getElementById('gate').textContent = t; });"
                "</script>"
            )
        return f"<title>Page</title><p>{request.path}</p>"


async def test_two_runs_at_once_each_act_in_a_window_of_their_own_and_both_finish(
    browser_session: BrowserSession, pages: PageServer, tmp_path: Path
) -> None:
    gate = Gate()
    with Site(gate.page) as site:
        model = PerTask(
            scripts={
                "slow": [
                    code(
                        f"async (page) => {{ await page.goto('{site.url('/slow')}');"
                        " await page.getByText('through').waitFor({ timeout: 50000 }) }"
                    ),
                    say("Slow done."),
                ],
                "quick": [
                    code(f"async (page) => {{ await page.goto('{pages.url('shop.html')}') }}"),
                    say("Quick done."),
                ],
            }
        )
        async with manager_over(browser_session, model, tmp_path) as manager:
            slow, quick = manager.session("slow"), manager.session("quick")
            manager.start(slow, "The slow errand")
            await async_wait_until(gate.asked.is_set, timeout=LIMIT, what="the slow run's page")
            manager.start(quick, "The quick errand")
            # The quick run acts and finishes while the slow one still waits for its page.
            assert (await answered(quick))["text"] == "Quick done."
            await async_wait_until(lambda: not quick.busy, timeout=LIMIT, what="the quick turn's end")
            assert not gate.open.is_set() and slow.busy
            listed = {row["id"]: row["state"] for row in await manager.listing()}
            assert listed == {"slow": "running", "quick": "idle"}
            gate.open.set()
            assert (await answered(slow))["text"] == "Slow done."
            assert manager.pool.started >= 1  # the second run had an MCP server process of its own
            assert slow.target and quick.target and slow.target != quick.target
            # Each run's tab is a window of its own, shown (a background tab would draw nothing).
            windows = await windows_of(manager, [slow.target, quick.target])
            assert len(set(windows)) == 2, windows
    assert site.received("GET", "/gate") == 1


async def windows_of(manager: SessionManager, targets: list[str]) -> list[int]:
    cdp = await manager.live.connection()
    found = []
    for target in targets:
        answer = await cdp.send("Browser.getWindowForTarget", {"targetId": target})
        found.append(int(answer["windowId"]))
    return found


async def test_a_held_action_blocks_no_other_run_even_with_one_place(
    browser_session: BrowserSession, pages: PageServer, tmp_path: Path
) -> None:
    model = PerTask(
        scripts={
            "Email": [
                code(f"async (page) => {{ await page.goto('{pages.url('mail.html')}') }}"),
                code(
                    "async (page) => { await page.getByLabel('To').fill('alice@example.test');"
                    " await page.getByRole('button', { name: 'Send' }).click() }"
                ),
                say("Sent it."),
            ],
            "Browse": [
                code(f"async (page) => {{ await page.goto('{pages.url('shop.html')}') }}"),
                say("Browsed."),
            ],
        }
    )
    async with manager_over(browser_session, model, tmp_path, max_parallel_runs=1) as manager:
        mail, shop = manager.session("mail"), manager.session("shop")
        manager.start(mail, "Email Alice", client="tab-1")
        await async_wait_until(lambda: mail.approval is not None, timeout=LIMIT, what="the card")
        assert not mail.busy and manager.pool.running == 0  # waiting for /yes holds no place
        manager.start(shop, "Browse the shop")
        assert (await answered(shop))["text"] == "Browsed."
        assert mail.approval is not None
        assert manager.check_approval(mail, "tab-1", mail.approval.nonce) is None
        manager.start(mail, "/yes", client="tab-1")
        assert (await answered(mail))["text"] == "Sent it."
        assert (await answered(mail))["stop_reason"] == "answered"
        assert mail.target is not None
        cdp = await manager.live.connection()
        sent = await sent_in(cdp, mail.target)
        assert sent == 1


async def sent_in(cdp: Any, target: str) -> Any:
    attached = await cdp.send("Target.attachToTarget", {"targetId": target, "flatten": True})
    session = str(attached["sessionId"])
    try:
        result = await cdp.send("Runtime.evaluate", {"expression": "window.__sent ?? 0"}, session)
        return result["result"]["value"]
    finally:
        await cdp.send("Target.detachFromTarget", {"sessionId": session})


async def test_a_site_of_one_sessions_task_is_not_part_of_anothers(
    browser_session: BrowserSession, tmp_path: Path
) -> None:
    with Site(lambda request, port: f"<title>Site</title><p>{request.path}</p>") as site:
        mine, data = site.url("/start", host="localhost"), site.url("/search?q=mine", host="localhost")
        leak = site.url("/collect?card=1", host="localhost")
        model = PerTask(
            scripts={
                "Own": [
                    code(f"async (page) => {{ await page.goto('{mine}') }}"),
                    code(f"async (page) => {{ await page.goto('{data}') }}"),
                    say("Own done."),
                ],
                "Other": [
                    code(f"async (page) => {{ await page.goto('{leak}') }}"),
                    say("Other done."),
                ],
            }
        )
        async with manager_over(browser_session, model, tmp_path) as manager:
            own, other = manager.session("own"), manager.session("other")
            manager.start(own, "Own shop search")
            await answered(own)
            manager.start(other, "Other errand")
            await answered(other)
            assert "localhost" in own.sites and "localhost" not in other.sites
            refused = [m for m in messages(other, "tool_result") if not m["ok"]]
            assert refused and "ERR_BLOCKED_BY_CLIENT" in refused[0]["result"], refused
            assert "a query string" in refused[0]["result"]
    # The data went to the site of the task that opened it, never from the other session's tab.
    assert site.received("GET", "/search") == 1
    assert site.received("GET", "/collect") == 0


async def test_the_pool_stops_an_idle_mcp_process_and_leaves_none(
    browser_session: BrowserSession, tmp_path: Path
) -> None:
    settings = make_settings(tmp_path, cdp_endpoint=browser_session.settings.cdp_endpoint, mcp_idle_seconds=5)
    pool = BrowserPool(settings, browser_session)
    marker = str((tmp_path / "mcp").resolve()) + "/run-"
    try:
        async with pool.lease() as first, pool.lease() as second:
            assert first is browser_session and second is not browser_session
            assert second.instance == "1"
            # Ready before its first run: the guard runtime is installed in its server process.
            installed = await second.run_code("async (page) => typeof page.context().__bcRuntimeV")
            assert installed.value == "string"
            pids = pids_mentioning(marker)
            assert pids, "a second run has an MCP server process of its own"
        await async_wait_until(
            lambda: not pids_mentioning(marker), timeout=LIMIT, what="idle processes stopped"
        )
        assert pool.sessions == []
        async with pool.lease() as again:  # the app's own session is free again: no process started
            assert again is browser_session
        assert not pids_mentioning(marker)
    finally:
        await pool.close()
    assert not pids_mentioning(marker)


def test_bg_runs_a_job_in_the_background_and_jobs_brings_its_card_to_the_front(
    tmp_path: Path, external_browser: LaunchedBrowser, llm: ScriptedOpenAI, pages: PageServer
) -> None:
    llm.script(
        openai_call(
            "browser_run_code", code=f"async (page) => {{ await page.goto('{pages.url('mail.html')}') }}"
        ),
        openai_call(
            "browser_run_code",
            code="async (page) => { await page.getByLabel('To').fill('alice@example.test');"
            " await page.getByRole('button', { name: 'Send' }).click() }",
        ),
        text("Sent the message to Alice."),
    )
    data = tmp_path / "data"
    endpoint = external_browser.endpoint.url
    before = {t["id"] for t in devtools_json(f"{endpoint}/json/list", "GET")}
    try:
        bg_job_and_its_card(spawn_chat(data, endpoint, llm.base_url), data)
    finally:  # the job's window stays after the app (yours to look at); the shared browser keeps none
        for tab in devtools_json(f"{endpoint}/json/list", "GET"):
            if tab["type"] == "page" and tab["id"] not in before:
                devtools_json(f"{endpoint}/json/close/{tab['id']}", "GET")


def bg_job_and_its_card(child: pexpect.spawn, data: Path) -> None:
    child.sendline("/jobs")
    child.expect("No background jobs")
    child.sendline("/bg Email Alice about lunch")
    child.expect("Job 1 started")
    child.expect("Job 1 is waiting for your answer")
    child.sendline("/jobs")
    child.expect(r"1 of \d+ places in use|0 of \d+ places in use")
    child.expect("Email Alice about lunch")
    child.expect("waiting for your answer: /jobs 1 brings it to the front")
    child.sendline(
        "/yes"
    )  # the terminal's own session has nothing pending: a job's card is not answered here
    child.expect("Nothing is waiting")
    child.sendline("/jobs 1")
    child.expect("Job 1 is in front now")
    child.expect("Confirm: send")
    child.sendline("/yes")
    child.expect("Sent the message to Alice.")
    child.sendline("/jobs")
    child.expect("No background jobs")
    child.sendline("/quit")
    child.expect("Bye.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    wait_until(lambda: not pids_mentioning(str(data)), what="every MCP server process to exit")


async def test_a_spare_process_is_kept_warm_only_once_two_runs_were_asked_for_at_once(
    browser_session: BrowserSession, tmp_path: Path
) -> None:
    """One run at a time never starts a second MCP process (~220 MB); once two runs overlap, one more is
    started ahead for the next."""
    settings = make_settings(tmp_path, cdp_endpoint=browser_session.settings.cdp_endpoint)
    pool = BrowserPool(settings, browser_session)
    marker = str((tmp_path / "mcp").resolve()) + "/run-"
    try:
        for _ in range(3):
            async with pool.lease() as only:
                assert only is browser_session
                await only.run_code("async (page) => 1")
        assert pool.started == 0 and not pids_mentioning(marker)
        async with pool.lease() as first, pool.lease() as second:
            assert first is browser_session and second is not browser_session
            await async_wait_until(lambda: pool.started == 2, timeout=LIMIT, what="a spare started ahead")
        assert len(pool.sessions) == 2  # the second run's process and the spare, both idle now
    finally:
        await pool.close()
    assert not pids_mentioning(marker)


async def test_per_site_pacing_limits_count_the_actions_of_every_run_in_the_browser(
    browser_session: BrowserSession, pages: PageServer, tmp_path: Path
) -> None:
    settings = make_settings(tmp_path, cdp_endpoint=browser_session.settings.cdp_endpoint)
    pool = BrowserPool(settings, browser_session)
    # Two actions per 3 s on a site, for both runs together.
    pacing = Pacing(mode="human", actions_per_minute=2, window_ms=3000, click_pause_ms=(0, 1))
    click = guarded_code("async (page) => { await page.locator('#tap').click() }", {}, pacing=pacing)
    stamps = "async (page) => page.evaluate(() => window.__clicks.map((t) => t + performance.timeOrigin))"
    try:
        async with pool.lease() as first, pool.lease() as second:
            assert second.mcp is not None and first.mcp is not None and second.mcp is not first.mcp
            for browser, key in ((first, "paced-one"), (second, "paced-two")):
                await browser.session_tab(key)
                await browser.goto(pages.url("pacing.html"))
                await browser.run_code("async (page) => { delete page.context().__bcPacing; }")
            browser_session.pacing_ledger.actions.clear()
            for _ in range(2):  # the first run uses up the site's two actions
                assert (await first.run_code(click, timeout=60)).ok
            assert (await second.run_code(click, timeout=60)).ok  # the other run's action waits
            one, two = (await first.run_code(stamps)).value, (await second.run_code(stamps)).value
    finally:
        await pool.close()
    assert len(one) == 2 and len(two) == 1
    assert one[1] - one[0] < 1500, one  # within the limit: at once
    assert two[0] - one[0] >= 2500, (one, two)  # past it: when the window (3 s) has moved on


async def test_parallel_runners_lend_each_session_a_runner_in_its_own_window_at_once(
    browser_session: BrowserSession, pages: PageServer, tmp_path: Path
) -> None:
    settings = make_settings(tmp_path, cdp_endpoint=browser_session.settings.cdp_endpoint)
    model = PerTask(
        scripts={
            key: [code(f"async (page) => {{ await page.goto('{pages.url(page)}') }}"), say(f"{key} done.")]
            for key, page in (("Shop", "shop.html"), ("Search", "search.html"))
        }
    )
    context = AgentContext(llm=model, browser=browser_session, url_policy=browser_session.url_policy)
    runners = ParallelRunners(
        settings, browser=browser_session, graph=compile_graph(InMemorySaver()), context=context
    )

    async def run(session: str, task: str) -> tuple[str, str | None]:
        async with runners.runner(session) as runner:
            assert runners.running >= 1
            outcome = await runner.send(task)
            return outcome.text, runner.context.browser.agent_url

    try:
        results = await asyncio.gather(run("job-shop", "Shop errand"), run("job-search", "Search errand"))
    finally:
        await runners.close()
    assert results == [("Shop done.", pages.url("shop.html")), ("Search done.", pages.url("search.html"))]
    assert runners.tabs["job-shop"] != runners.tabs["job-search"]
    assert runners.pool.started >= 1


async def test_a_run_learns_no_site_from_another_runs_tab_while_its_own_call_is_in_flight(
    browser_session: BrowserSession, tmp_path: Path
) -> None:
    """Run B's call holds the browser-wide interception while run A's tab opens a page: B's network
    policy leaves A's tab to A's (`TabOwners`), so A's site joins A's task, never B's."""
    settings = make_settings(tmp_path, cdp_endpoint=browser_session.settings.cdp_endpoint)
    pool = BrowserPool(settings, browser_session)
    a_sites: set[str] = set()
    b_sites: set[str] = set()
    hold = (
        "async (page) => { await page.waitForFunction(() => window.__release === true, null,"
        " { timeout: 30000 }) }"
    )
    with Site(lambda request, port: "<title>A</title><p>a</p>") as site:
        try:
            async with pool.lease() as a, pool.lease() as b:
                await a.session_tab("owner-a")
                await b.session_tab("owner-b")
                a.use_sites(a_sites)
                b.use_sites(b_sites)
                assert b.network is not None and b.agent_target is not None
                held = asyncio.ensure_future(b.run_code(hold, timeout=40))
                await async_wait_until(
                    lambda: b.network is not None and b.network._calls > 0, what="B's call"
                )
                await a.goto(site.url("/a", host="localhost"))  # A's tab opens a page while B's call runs
                assert "localhost" in a_sites
                cdp = await Cdp.open(browser_session.settings.cdp_endpoint)
                try:
                    attached = await cdp.send(
                        "Target.attachToTarget", {"targetId": b.agent_target, "flatten": True}
                    )
                    await cdp.send(
                        "Runtime.evaluate",
                        {"expression": "window.__release = true"},
                        str(attached["sessionId"]),
                    )
                finally:
                    await cdp.close()
                assert (await held).ok
        finally:
            await pool.close()
    assert "localhost" not in b_sites, b_sites


async def test_a_tab_the_user_opens_while_a_spare_without_a_tab_is_busy_stays_the_users(
    browser_session: BrowserSession, tmp_path: Path
) -> None:
    """A warm spare's call (the app's own code, before any run has its tab) reaches no tab: a tab the user
    opens meanwhile, on an address the agent may never load (the DevTools endpoint), is not taken for the
    agent's — it loads, and stays open. (Taken for the spare's, it was blanked and closed: seen in the
    self-approval test, whose second tab opened while the spare installed its runtime.)"""
    endpoint = browser_session.settings.cdp_endpoint
    settings = make_settings(tmp_path, cdp_endpoint=endpoint)
    pool = BrowserPool(settings, browser_session, share_main=False)
    address = f"{endpoint}/json/version"
    opened: dict[str, Any] = {}
    try:
        async with pool.lease() as spare:
            assert spare.network is not None and spare.agent_target is None
            waits = (  # in flight from before the user's tab opens until it shows its address
                "async (page) => { for (let i = 0; i < 300; i++) {"
                " if (page.context().pages().some((p) => p.url().endsWith('/json/version'))) return 'seen';"
                " await new Promise((resolve) => setTimeout(resolve, 50)); } return 'not seen'; }"
            )
            held = asyncio.ensure_future(spare.run_code(waits, timeout=40))
            guard = spare.network
            await async_wait_until(lambda: guard._calls > 0, what="the spare's call")
            opened = await asyncio.to_thread(devtools_json, f"{endpoint}/json/new?{address}", "PUT")
            result = await held
            assert result.ok and result.value == "seen", result

            def shown() -> bool:
                tabs = devtools_json(f"{endpoint}/json/list", "GET")
                return any(t["id"] == opened["id"] and t["url"] == address for t in tabs)

            await async_wait_until(lambda: shown(), what="the user's tab on its address")
            assert opened["id"] not in guard._agent_tabs
    finally:
        if opened:
            with contextlib.suppress(OSError):
                await asyncio.to_thread(devtools_json, f"{endpoint}/json/close/{opened['id']}", "GET")
        await pool.close()


def devtools_json(url: str, method: str) -> Any:
    with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10) as answer:
        body = answer.read().decode()
    return json.loads(body) if body.startswith(("{", "[")) else body


async def test_a_runs_code_neither_sees_nor_acts_in_another_runs_window(
    browser_session: BrowserSession, tmp_path: Path
) -> None:
    """Two runs at once: run A's code does not find run B's window among the tabs it lists (`browser()`,
    and so every other context, is refused already), so B's page never gets A's click; A's own tab stays
    listed, and B's code still sees its own."""
    settings = make_settings(tmp_path, cdp_endpoint=browser_session.settings.cdp_endpoint)
    pool = BrowserPool(settings, browser_session)

    def page(request: Request, port: int) -> str:
        return (
            "<title>Run B</title><button onclick=\"fetch('/clicked', {method: 'POST'})\">Go</button>"
            if request.path.startswith("/b")
            else "<title>Run A</title><p>a</p>"
        )

    endpoint = browser_session.settings.cdp_endpoint
    b_window: str | None = None
    with Site(page) as site:
        try:
            async with pool.lease() as a, pool.lease() as b:
                await a.session_tab("owner-a")
                await b.session_tab("owner-b")
                b_window = b.agent_target
                await b.goto(site.url("/b-window"))
                await a.goto(site.url("/a-window"))
                listed = await a.run_code(
                    guarded_code("async (page) => page.context().pages().map((p) => p.url())")
                )
                assert listed.ok, listed.error
                assert any("/a-window" in url for url in listed.value), listed.value
                assert not any("/b-window" in url for url in listed.value), listed.value
                # B's own code still sees and works in its window.
                own = await b.run_code(
                    guarded_code("async (page) => page.context().pages().map((p) => p.url())")
                )
                assert own.ok and any("/b-window" in url for url in own.value), own
                # However the code looks for it, B's window is not there to act in.
                clicked = await a.run_code(
                    guarded_code(
                        "async (page) => { for (const p of page.context().pages())"
                        " if (p.url().includes('/b-window')) await p.locator('button').click();"
                        " return 'done' }"
                    )
                )
                assert clicked.ok and clicked.value == "done", clicked
                assert site.received("POST") == 0
        finally:
            await pool.close()
            if b_window:  # the shared browser keeps no window of this test's second run
                with contextlib.suppress(OSError):
                    await asyncio.to_thread(devtools_json, f"{endpoint}/json/close/{b_window}", "GET")


async def test_a_tab_another_app_process_opens_for_its_run_is_never_this_runs(
    browser_session: BrowserSession, tmp_path: Path
) -> None:
    """Two workers on one browser share no `TabOwners`. A run's call in flight here takes a tab that
    opens meanwhile for its code's doing, unless the tab carries another process's mark (a worker
    beside this one opened it for its own run, `run_tab_url`): that tab's requests are left alone and
    its site never joins this run's task. An unmarked tab opened the same way is taken (the control)."""
    endpoint = browser_session.settings.cdp_endpoint
    settings = make_settings(tmp_path, cdp_endpoint=endpoint)
    pool = BrowserPool(settings, browser_session)
    sites: set[str] = set()
    hold = (
        "async (page) => { await page.waitForFunction(() => window.__release === true, null,"
        " { timeout: 30000 }) }"
    )
    elsewhere = "about:blank#bc-run=" + "0" * 16  # not this process's mark
    opened: list[str] = []
    with Site(lambda request, port: "<title>Theirs</title><p>theirs</p>") as site:
        cdp = await Cdp.open(endpoint)
        try:
            async with pool.lease() as _, pool.lease() as b:
                await b.session_tab("this-run")
                b.use_sites(sites)
                guard = b.network
                assert guard is not None and b.agent_target is not None
                held = asyncio.ensure_future(b.run_code(hold, timeout=40))
                await async_wait_until(lambda: guard._calls > 0, what="this run's call")
                for url, host in ((elsewhere, "localhost"), ("about:blank", "127.0.0.1")):
                    made = await cdp.send("Target.createTarget", {"url": url, "newWindow": True})
                    tab = str(made["targetId"])
                    opened.append(tab)
                    await async_wait_until(lambda tab=tab: tab in guard._targets, what="the tab seen")
                    session = str(
                        (await cdp.send("Target.attachToTarget", {"targetId": tab, "flatten": True}))[
                            "sessionId"
                        ]
                    )
                    await cdp.send("Page.navigate", {"url": site.url("/theirs", host=host)}, session)
                    await async_wait_until(
                        lambda tab=tab: guard._targets[tab].url.endswith("/theirs"), what="the page shown"
                    )
                theirs, unmarked = (guard._targets[t] for t in opened)
                assert (theirs.agent, theirs.elsewhere, guard._covered(theirs)) == (False, True, False)
                assert "localhost" not in sites, sites
                assert unmarked.agent and not unmarked.elsewhere  # the control: taken for the call's doing
                released = await cdp.send(
                    "Target.attachToTarget", {"targetId": b.agent_target, "flatten": True}
                )
                await cdp.send(
                    "Runtime.evaluate", {"expression": "window.__release = true"}, str(released["sessionId"])
                )
                assert (await held).ok
        finally:
            for tab in opened:
                with contextlib.suppress(Exception):
                    await cdp.send("Target.closeTarget", {"targetId": tab})
            await cdp.close()
            await pool.close()


async def test_a_warm_spare_without_a_tab_of_its_own_claims_no_tab(
    browser_session: BrowserSession, tmp_path: Path
) -> None:
    """A session of the pool's own has no tab until a run gives it one; its server's current page is
    meanwhile whichever tab came first (another run's). A call of it whose result lists the tabs (one
    opened and closed) must not make that page its own: claimed, the other run's code was refused in
    its own window ("another task's") and its requests judged by the wrong run's rules."""
    settings = make_settings(tmp_path, cdp_endpoint=browser_session.settings.cdp_endpoint)
    pool = BrowserPool(settings, browser_session, warm_ahead=True)
    try:
        async with pool.lease() as first:
            await first.session_tab("first-run")
            async with pool.lease() as spare:
                assert spare is not first and spare.agent_target is None
                listed = await spare.run_code("async (page) => { await page.context().newPage(); return 1 }")
                try:
                    assert listed.ok and listed.tabs is not None, listed  # the result listed the tabs
                    assert spare.agent_target is None
                    owners = browser_session.tab_owners
                    assert first.agent_target not in owners.others_of(first.network)
                    assert not [t for t in owners._owner if owners._owner[t] is spare.network]
                finally:
                    await spare.run_code(
                        "async (page) => { for (const p of page.context().pages())"
                        " if (p.url() === 'about:blank' && p !== page) { await p.close(); break; } }"
                    )
    finally:
        await pool.close()
