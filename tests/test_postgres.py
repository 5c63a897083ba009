"""Scale-out: the same runner behaviour on PostgreSQL (`DATABASE_URL`) as on the embedded SQLite file,
the session list shared through the database, and one run per session at a time across processes.

PostgreSQL is real: `tests/support/postgres.py` starts one for the test run (missing binaries fail)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import psycopg
import pytest

from browser_copilot.agent import storage
from browser_copilot.agent.context import AgentContext, Limits
from browser_copilot.agent.locks import locks_for
from browser_copilot.agent.runner import AgentRunner, compile_graph, new_session_id
from browser_copilot.agent.storage import last_session, list_sessions, open_checkpointer, remember_session
from browser_copilot.browser.launcher import LaunchedBrowser
from browser_copilot.browser.session import BrowserSession
from browser_copilot.config import Settings
from browser_copilot.errors import ConfigError, SessionBusy
from browser_copilot.events import EventLog
from tests.conftest import make_settings
from tests.support.app import ROOT, App, app_env, run_app, stop_apps
from tests.support.openai_server import ScriptedOpenAI, text
from tests.support.pages import PageServer
from tests.support.processes import pids_mentioning
from tests.support.scripted_model import ScriptedModel, call, code, goto, say
from tests.support.waiting import wait_until

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    """Settings on one backend: the SQLite file in the data dir, or a fresh PostgreSQL database."""
    if request.param == "postgres":
        return make_settings(tmp_path / "data", database_url=request.getfixturevalue("postgres_url"))
    return make_settings(tmp_path / "data")


@asynccontextmanager
async def runner_on(
    settings: Settings, browser: BrowserSession, session_id: str, *replies: Any, limits: Limits | None = None
) -> AsyncIterator[tuple[AgentRunner, ScriptedModel]]:
    """A runner as the app assembles it (`open_checkpointer`), with a scripted model."""
    model = ScriptedModel(replies=list(replies))
    context = AgentContext(llm=model, browser=browser, limits=limits or Limits(), events=EventLog())
    async with open_checkpointer(settings) as saver:
        yield AgentRunner(compile_graph(saver), context, session_id=session_id), model


async def page_value(session: BrowserSession, expression: str) -> Any:
    return (
        await session.run_code(f"async (page) => await page.evaluate(() => {expression})", idempotent=True)
    ).value


# ----- the same runner behaviour on both backends -----------------------------------------


async def test_a_task_is_answered_and_its_state_outlives_the_checkpointer(
    settings: Settings, browser_session: BrowserSession, pages: PageServer
) -> None:
    session = new_session_id()
    async with runner_on(
        settings,
        browser_session,
        session,
        call("update_working_state", current_goal="Say hello", plan=["Open home", "Click hello", "Answer"]),
        goto(pages.url("index.html")),
        code("async (page) => { await el(1).click(); return await page.locator('#out').textContent() }"),
        call("update_working_state", progress={"current": 3, "done": [1, 2]}),
        say("The page now says “clicked”."),
    ) as (runner, _):
        outcome = await runner.send("Click the hello button and tell me what the page says")
    assert outcome.stop_reason == "answered"
    assert outcome.text == "The page now says “clicked”."
    async with runner_on(settings, browser_session, session) as (again, _):
        values = await again.values()
        assert values["current_goal"] == "Say hello"
        assert values["progress"]["done"] == [1, 2, 3]
        assert (await again.outcome()).text == "The page now says “clicked”."


async def test_a_confirmation_is_resumed_with_yes_after_reopening_the_checkpointer_and_runs_once(
    settings: Settings, browser_session: BrowserSession, pages: PageServer
) -> None:
    session = new_session_id()
    async with runner_on(
        settings,
        browser_session,
        session,
        goto(pages.url("checkout.html")),
        code("async (page) => { await el(2).click() }"),
    ) as (runner, _):
        waiting = await runner.send("Place my order")
    assert waiting.stop_reason == "waiting_confirmation"
    assert waiting.interrupt is not None and waiting.interrupt["card"]["category"] == "order"
    assert await page_value(browser_session, "window.__ordered ?? 0") == 0
    # A new process (a new checkpointer) finds the question pending and resumes it.
    async with runner_on(settings, browser_session, session, say("Your order is placed.")) as (again, _):
        assert (await again.pending() or {}).get("kind") == "confirm"
        done = await again.send("/yes")
    assert done.stop_reason == "answered"
    assert done.text == "Your order is placed."
    assert await page_value(browser_session, "window.__ordered ?? 0") == 1


async def test_the_step_limit_stops_and_go_on_continues_from_a_reopened_checkpointer(
    settings: Settings, browser_session: BrowserSession, pages: PageServer
) -> None:
    session = new_session_id()
    async with runner_on(
        settings,
        browser_session,
        session,
        call(
            "update_working_state",
            current_goal="Read both pages",
            plan=["Read home", "Read second", "Answer"],
        ),
        goto(pages.url("index.html")),
        goto(pages.url("second.html")),
        limits=Limits(max_tool_steps=2),
    ) as (runner, model):
        stopped = await runner.send("Read the titles of both pages")
    assert stopped.stop_reason == "step_limit"
    assert "Shall I continue?" in stopped.text
    assert len(model.prompts) == 3
    async with runner_on(
        settings,
        browser_session,
        session,
        code("async (page) => await page.title()"),
        call("update_working_state", progress={"current": 3, "done": [1, 2]}),
        say("Both pages read: “Test bed home” and “Second page”."),
        limits=Limits(max_tool_steps=2),
    ) as (again, model):
        resumed = await again.send("go on")
    assert resumed.stop_reason == "answered"
    assert resumed.values["current_goal"] == "Read both pages"
    assert resumed.values["tool_steps"] == 1
    assert "Second page" in str(model.prompts[0][-1].content)


# ----- the session list -------------------------------------------------------------------


async def test_the_session_list_keeps_goals_and_puts_the_latest_first(settings: Settings) -> None:
    assert await list_sessions(settings) == []
    assert await last_session(settings) is None
    await remember_session(settings, "first", goal="Find mugs")
    await remember_session(settings, "second")
    await remember_session(settings, "first")  # used again; the goal stays
    found = await list_sessions(settings)
    assert [(s.session_id, s.goal) for s in found] == [("first", "Find mugs"), ("second", None)]
    assert found[0].updated >= found[1].updated
    assert await last_session(settings) == "first"


async def test_while_the_checkpointer_is_open_the_session_list_uses_its_pool(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = make_settings(tmp_path, database_url=postgres_url)
    async with open_checkpointer(settings):

        async def no_new_connection(*_: object, **__: object) -> None:
            raise AssertionError("a connection of its own was opened")

        monkeypatch.setattr(storage, "_connect", no_new_connection)
        await remember_session(settings, "pooled", goal="Borrow a connection")
        assert [s.session_id for s in await list_sessions(settings)][:1] == ["pooled"]
    monkeypatch.undo()
    assert (await list_sessions(settings))[0].goal == "Borrow a connection"  # closed: one of its own


async def test_two_machines_on_one_database_share_the_sessions(
    postgres_url: str, tmp_path: Path, browser_session: BrowserSession
) -> None:
    # Two processes with nothing on disk in common: only the database joins them.
    one = make_settings(tmp_path / "one", database_url=postgres_url)
    two = make_settings(tmp_path / "two", database_url=postgres_url)
    async with runner_on(
        one,
        browser_session,
        "shared-1",
        call("update_working_state", current_goal="Plan a trip"),
        say("Noted."),
    ) as (runner, _):
        await runner.send("Plan a trip")
    await remember_session(one, "shared-1", goal="Plan a trip")
    assert await last_session(two) == "shared-1"
    assert [(s.session_id, s.goal) for s in await list_sessions(two)] == [("shared-1", "Plan a trip")]
    async with runner_on(two, browser_session, "shared-1") as (other, _):
        assert (await other.values())["current_goal"] == "Plan a trip"
    assert not (tmp_path / "two" / "sessions.sqlite").exists()


# ----- one run per session ----------------------------------------------------------------


async def test_a_session_locked_elsewhere_is_refused_and_nothing_runs(
    settings: Settings, browser_session: BrowserSession
) -> None:
    session = new_session_id()
    # The other holder: its own checkpointer, so its own connection (Postgres) or file handle (SQLite).
    async with (
        open_checkpointer(settings) as other_saver,
        runner_on(settings, browser_session, session, say("Ran once.")) as (runner, model),
    ):
        async with locks_for(other_saver).hold(session):
            with pytest.raises(SessionBusy) as refused:
                await runner.send("Say something")
            assert str(refused.value).startswith(f"Session {session} is busy: another process is running it")
            assert model.prompts == []
            assert (await runner.values()) == {}
        # Released: the session runs, once.
        assert (await runner.send("Say something")).text == "Ran once."
        assert len(model.prompts) == 1


async def test_the_postgres_lock_is_an_advisory_lock_on_the_session_id(
    postgres_url: str, tmp_path: Path
) -> None:
    settings = make_settings(tmp_path, database_url=postgres_url)
    async with open_checkpointer(settings) as saver, locks_for(saver).hold("visible-session"):
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                " AND (classid::bigint << 32) | objid::bigint = hashtextextended('visible-session', 0)"
            ).fetchone()
            taken = conn.execute(
                "SELECT pg_try_advisory_lock(hashtextextended('visible-session', 0))"
            ).fetchone()
    assert row == (1,)
    assert taken == (False,)


class GatedOpenAI(ScriptedOpenAI):
    """The first chat completion waits until the test opens the gate: a run held in the middle."""

    def __init__(self) -> None:
        super().__init__(models=["scripted-model"], api_key="sk-test-123")
        self.entered = threading.Event()
        self.gate = threading.Event()
        self._first = True

    def _next(self) -> dict[str, Any]:
        if self._first:
            self._first = False
            self.entered.set()
            self.gate.wait(120)
        return super()._next()

    def completions(self) -> int:
        return sum(1 for r in self.requests if "messages" in r)


@pytest.fixture
def gated_llm() -> Iterator[GatedOpenAI]:
    server = GatedOpenAI()
    with server:
        try:
            yield server
        finally:
            server.gate.set()


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_processes_never_run_one_session_at_once(
    backend: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    external_browser: LaunchedBrowser,
    gated_llm: GatedOpenAI,
) -> None:
    shared = {
        "CDP_ENDPOINT": external_browser.endpoint.url,
        "LLM_BASE_URL": gated_llm.base_url,
        "LLM_API_KEY": "sk-test-123",
        "LLM_MODEL": "scripted-model",
    }
    first_dir = tmp_path / "first"
    # SQLite: one machine, one data dir. Postgres: two machines, nothing on disk in common.
    second_dir = tmp_path / "second" if backend == "postgres" else first_dir
    if backend == "postgres":
        shared["DATABASE_URL"] = request.getfixturevalue("postgres_url")
    gated_llm.script(text("Done once."))
    first = App("run", "Say hello", "--session", "busy-one", env=app_env(first_dir, **shared))
    try:
        wait_until(gated_llm.entered.is_set, timeout=90, what="the first run to reach the model")
        second = run_app("run", "Say hello", "--session", "busy-one", env=app_env(second_dir, **shared))
        said = second.stdout + second.stderr
        assert second.returncode == 10, said  # run's exit code for a busy session
        assert "Session busy-one is busy: another process is running it" in " ".join(said.split())
        assert gated_llm.completions() == 1  # the second process never reached the model
        gated_llm.gate.set()
        assert first.wait(90) == 0, first.output
    finally:
        gated_llm.gate.set()
        first.kill()
    assert "Done once." in first.output
    assert "Done once." not in said
    assert gated_llm.completions() == 1
    for folder in (first_dir, second_dir):
        wait_until(lambda f=folder: not pids_mentioning(str(f)), timeout=15, what=f"processes of {folder}")


def test_the_sqlite_lock_is_held_by_the_os_across_processes(tmp_path: Path) -> None:
    """A process holding the file lock (here: a helper that holds it until told) keeps others out; its
    death frees the session."""
    settings = make_settings(tmp_path / "data")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(settings.data_dir / "locks"), "held-session"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        with pytest.raises(SessionBusy):
            _try_lock(settings, "held-session")
        _try_lock(settings, "another-session")  # other sessions are free
    finally:
        holder.kill()
        holder.wait(10)
    _try_lock(settings, "held-session")  # the OS released it with the process


HOLD_LOCK = """
import asyncio, sys
from pathlib import Path
from browser_copilot.agent.locks import FileLocks

async def main():
    async with FileLocks(Path(sys.argv[1])).hold(sys.argv[2]):
        print("holding", flush=True)
        await asyncio.to_thread(sys.stdin.read)

asyncio.run(main())
"""


def _try_lock(settings: Settings, session: str) -> None:
    import asyncio

    from browser_copilot.agent.locks import FileLocks

    async def take() -> None:
        async with FileLocks(settings.data_dir / "locks").hold(session):
            pass

    asyncio.run(take())


# ----- the setting ------------------------------------------------------------------------


def test_database_url_must_be_a_postgresql_url_and_empty_means_sqlite(tmp_path: Path) -> None:
    assert make_settings(tmp_path).database is None
    assert make_settings(tmp_path, database_url="").database is None
    url = "postgresql://app:secret@db.internal:5432/copilot"
    settings = make_settings(tmp_path, database_url=url)
    assert settings.database == url
    assert "secret" not in repr(settings)
    with pytest.raises(ConfigError) as refused:
        make_settings(tmp_path, database_url="mysql://app:secret@db/copilot")
    (problem,) = refused.value.problems
    assert problem.startswith(
        "DATABASE_URL: is a mysql:// URL, not a postgresql:// URL. Fix: set DATABASE_URL"
    )
    assert "secret" not in problem


async def _ws_say(url: str, text_: str) -> tuple[aiohttp.ClientSession, aiohttp.ClientWebSocketResponse]:
    http = aiohttp.ClientSession()
    ws = await http.ws_connect(url)
    await ws.send_json({"kind": "user_message", "text": text_})
    return http, ws


async def _until(ws: aiohttp.ClientWebSocketResponse, kind: str, timeout: float = 90) -> dict[str, Any]:
    async with asyncio.timeout(timeout):
        while True:
            message = await ws.receive_json()
            if message.get("kind") == kind:
                return dict(message)


async def test_two_server_processes_on_one_database_never_run_one_session_at_once(
    tmp_path: Path, external_browser: LaunchedBrowser, gated_llm: GatedOpenAI, postgres_url: str
) -> None:
    shared = {
        "CDP_ENDPOINT": external_browser.endpoint.url,
        "LLM_BASE_URL": gated_llm.base_url,
        "LLM_API_KEY": "sk-test-123",
        "LLM_MODEL": "scripted-model",
        "DATABASE_URL": postgres_url,
    }
    gated_llm.script(text("Done once."))
    servers = [App("serve", "--port", "0", env=app_env(tmp_path / name, **shared)) for name in ("a", "b")]
    opened: list[aiohttp.ClientSession] = []
    try:
        urls = []
        for server in servers:
            end = server.wait_for("/?token=", timeout=90)
            line = server.output[: end + 40].splitlines()[-1]
            base, token = line.split("/?token=")
            base = base[base.index("http://") :]
            urls.append(f"{base.replace('http://', 'ws://')}/ws/shared-session?token={token.split()[0]}")
        http, first = await _ws_say(urls[0], "Say hello")
        opened.append(http)
        await asyncio.to_thread(wait_until, gated_llm.entered.is_set, timeout=90, what="the first run")
        http, second = await _ws_say(urls[1], "Say hello")
        opened.append(http)
        refused = await _until(second, "error")
        assert refused["code"] == "busy", refused
        assert "another process is running it" in refused["message"]
        gated_llm.gate.set()
        answered = await _until(first, "agent_message")
        assert answered["text"] == "Done once."
        assert gated_llm.completions() == 1  # the second server never reached the model
    finally:
        gated_llm.gate.set()
        for http in opened:
            await http.close()
        stop_apps(servers, timeout=30)
