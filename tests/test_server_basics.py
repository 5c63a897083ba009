"""Server mode's basics through real sockets: web sessions start on the user's page like the terminal and
close only the tabs the app opened for them; the session list says the state each session is really in;
the web chat's own commands; the token and the sign-ins outlive a restart."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import threading
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from browser_copilot.agent.storage import (
    forget_session,
    last_session,
    list_sessions,
    open_checkpointer,
    remember_session,
)
from browser_copilot.browser.launcher import LaunchedBrowser
from browser_copilot.browser.session import BrowserSession
from browser_copilot.llm.provider import build_chat_model, resolve_llm
from browser_copilot.server.serve import AUTH_FILE, Server
from browser_copilot.server.sessions import SessionManager
from tests.conftest import ROOT, make_settings
from tests.support.openai_server import ScriptedOpenAI, call, streamed, text
from tests.support.pages import PageServer
from tests.support.server import serving_over
from tests.test_browser_session import close_user_tab, open_user_tab
from tests.test_server import receive, say


def page_tabs(browser: LaunchedBrowser) -> dict[str, str]:
    """The browser's tabs (id -> URL), from its DevTools HTTP endpoint."""
    with urllib.request.urlopen(f"{browser.endpoint.url}/json/list", timeout=10) as answer:
        return {t["id"]: t["url"] for t in json.load(answer) if t["type"] == "page"}


@asynccontextmanager
async def serving_on(
    browser: LaunchedBrowser, llm: ScriptedOpenAI, data: Path, **settings: Any
) -> AsyncIterator[tuple[Server, SessionManager]]:
    """The server over a browser session of its own on `browser` (which the user has open)."""
    values = make_settings(
        data,
        cdp_endpoint=browser.endpoint.url,
        llm_base_url=llm.base_url,
        llm_api_key="sk-test-123",
        llm_model="scripted-model",
        **settings,
    )
    endpoint = resolve_llm(values)
    assert endpoint is not None
    async with BrowserSession(values, root=ROOT) as session, open_checkpointer(values) as saver:
        manager = SessionManager(
            values, browser=session, llm=build_chat_model(values, endpoint), checkpointer=saver
        )
        server = Server(manager)
        await server.start("127.0.0.1", 0)
        try:
            yield server, manager
        finally:
            await server.stop()


def ws_url(server: Server, session: str, client: str = "the-users-tab-000001") -> str:
    return f"ws://127.0.0.1:{server.port}/ws/{session}?token={server.token}&client={client}"


async def test_a_web_session_starts_on_the_users_page_and_only_tabs_the_app_opened_are_closed(
    external_browser: LaunchedBrowser, llm: ScriptedOpenAI, pages: PageServer, tmp_path: Path
) -> None:
    users_tab = await asyncio.to_thread(open_user_tab, external_browser, pages.url("form.html"))
    try:
        llm.script(
            call("browser_run_code", code="async (page) => page.url()"),
            text("You are on the form."),
            call(
                "browser_run_code", code=f"async (page) => {{ await page.goto('{pages.url('popup.html')}') }}"
            ),
            call(
                "browser_run_code",
                code="async (page) => { await Promise.all([page.context().waitForEvent('page'),"
                " page.getByRole('link', { name: 'Open second page in a new tab' }).click()]) }",
            ),
            text("Opened the second page in a new tab."),
            call(
                "browser_run_code",
                code=f"async (page) => {{ await page.goto('{pages.url('search.html')}') }}",
            ),
            text("Searching."),
        )
        async with (
            serving_on(external_browser, llm, tmp_path / "data", start_in_current_tab=True) as (
                server,
                manager,
            ),
            aiohttp.ClientSession(headers={"Authorization": f"Bearer {server.token}"}) as http,
        ):
            async with http.ws_connect(ws_url(server, "mine")) as ws:
                await receive(ws, "status")
                await say(ws, "Where am I?")
                assert (await receive(ws, "agent_message"))["text"] == "You are on the form."
            mine = manager.sessions["mine"]
            # The first session worked in the user's own tab, said so in the chat, and does not own it.
            assert mine.target == users_tab and users_tab not in mine.opened
            notices = [json.loads(b)["data"] for _, k, b in mine.hub.after(0) if k == "notice"]
            assert any(n["text"].startswith("Working in your tab: ") and n.get("to_user") for n in notices)
            async with http.ws_connect(ws_url(server, "other")) as ws:
                await receive(ws, "status")
                await say(ws, "Open the second page in a new tab")
                assert (await receive(ws, "agent_message"))["stop_reason"] == "answered"
            other = manager.sessions["other"]
            # A session of its own: a tab the app opened, and the tab that tab opened.
            assert other.target != users_tab and len(other.opened) == 2
            assert other.opened <= set(await asyncio.to_thread(page_tabs, external_browser))
            async with http.ws_connect(ws_url(server, "third")) as ws:
                await receive(ws, "status")
                await say(ws, "Search")
                await receive(ws, "agent_message")
            third = set(manager.sessions["third"].opened)
            assert len(third) == 1

            async with http.delete(f"{server.base_url}/api/sessions/other") as response:
                assert (await response.json()) == {"v": 1, "deleted": True}
            open_now = await asyncio.to_thread(page_tabs, external_browser)
            assert not other.opened & set(open_now)  # the app's tabs for it are closed
            assert users_tab in open_now and third <= set(open_now)  # nobody else's
            async with http.get(f"{server.base_url}/api/sessions/other") as response:
                assert response.status == 404  # its checkpoint is gone
            async with http.get(f"{server.base_url}/api/sessions") as response:
                assert "other" not in {s["id"] for s in (await response.json())["sessions"]}
            async with http.delete(f"{server.base_url}/api/sessions/mine") as response:
                assert response.status == 200
            assert users_tab in await asyncio.to_thread(
                page_tabs, external_browser
            )  # the user's own tab stays
        # The server stopped: the tab it opened for "third" is closed too; the user's tab is still there.
        open_now = await asyncio.to_thread(page_tabs, external_browser)
        assert not third & set(open_now)
        assert users_tab in open_now
    finally:
        await asyncio.to_thread(close_user_tab, external_browser, users_tab)


async def test_with_server_keep_tabs_the_tabs_a_session_opened_stay(
    external_browser: LaunchedBrowser, llm: ScriptedOpenAI, pages: PageServer, tmp_path: Path
) -> None:
    search = call(
        "browser_run_code", code=f"async (page) => {{ await page.goto('{pages.url('search.html')}') }}"
    )
    llm.script(search, text("Open."), search, text("Open."))
    async with (
        serving_on(external_browser, llm, tmp_path / "data", server_keep_tabs=True) as (server, manager),
        aiohttp.ClientSession(headers={"Authorization": f"Bearer {server.token}"}) as http,
    ):
        for session in ("first", "kept"):  # the first works in the tab the browser session started in
            async with http.ws_connect(ws_url(server, session)) as ws:
                await receive(ws, "status")
                await say(ws, "Open search")
                await receive(ws, "agent_message")
        opened = set(manager.sessions["kept"].opened)
        assert len(opened) == 1
        async with http.delete(f"{server.base_url}/api/sessions/kept") as response:
            assert response.status == 200
    left = set(await asyncio.to_thread(page_tabs, external_browser))
    assert opened <= left
    for target in opened:  # the test's own cleanup
        await asyncio.to_thread(close_user_tab, external_browser, target)


async def test_the_web_commands_answer_at_once_also_while_a_run_is_active(
    browser_session: BrowserSession, llm: ScriptedOpenAI, pages: PageServer, tmp_path: Path
) -> None:
    gate = threading.Event()
    llm.script(
        call(
            "update_working_state",
            current_goal="Find the flight",
            plan=["Open the search", "Read the results"],
            progress={"current": 2, "done": [1]},
        ),
        call("browser_run_code", code=f"async (page) => {{ await page.goto('{pages.url('search.html')}') }}"),
        text("Found it."),
        streamed("It costs ", "€45.", gate=gate),
    )
    async with (
        serving_over(browser_session, llm, tmp_path) as (server, _, _printed),
        aiohttp.ClientSession(headers={"Authorization": f"Bearer {server.token}"}) as http,
        http.ws_connect(ws_url(server, "cmds")) as ws,
    ):
        await receive(ws, "status")
        await say(ws, "Find the flight")
        await receive(ws, "agent_message", stop_reason="answered")
        replies: dict[str, str] = {}
        for command in ("/status", "/plan", "/tabs", "/help", "/tools"):
            await say(ws, command)
            reply = await receive(ws, "agent_message", command=command)
            assert reply["stop_reason"] == "answered" and "verified" not in reply
            replies[command] = reply["text"]
        assert "`cmds`" in replies["/status"] and "idle" in replies["/status"]
        assert "300 prompt + 30 completion (330 in all" in replies["/status"]  # three model calls
        assert "scripted-model" in replies["/status"] and "no window" in replies["/status"]
        assert "**Goal** Find the flight" in replies["/plan"]
        assert "1. Open the search — ✓ done" in replies["/plan"]  # answered: every step done
        assert "2. Read the results — ✓ done" in replies["/plan"]
        assert "Flight search" in replies["/tabs"] or "search.html" in replies["/tabs"]
        assert "this session's tab" in replies["/tabs"]
        assert "/status" in replies["/help"] and "Browser" in replies["/help"]
        # While a run is active (the model held mid-answer), the commands still answer at once.
        await say(ws, "And the price?")
        await receive(ws, "status", state="running")
        try:
            await say(ws, "/status")
            assert "— running" in (await receive(ws, "agent_message", command="/status"))["text"]
        finally:
            gate.set()
        await receive(ws, "agent_message", stop_reason="answered")
        await say(ws, "/nonsense")
        error = await receive(ws, "error")
        assert error["code"] == "unknown_command" and "/status" in error["message"]
        async with http.get(f"{server.base_url}/api/status") as response:
            status = await response.json()
        assert status["browser"]["headless"] is True and status["model"].startswith("scripted-model")
        assert status["mcp"]["version"]


async def test_a_session_waiting_in_its_checkpoint_is_listed_as_waiting_after_a_restart(
    browser_session: BrowserSession, llm: ScriptedOpenAI, pages: PageServer, tmp_path: Path
) -> None:
    llm.script(
        call(
            "browser_run_code", code=f"async (page) => {{ await page.goto('{pages.url('captcha.html')}') }}"
        ),
    )
    async with (
        serving_over(browser_session, llm, tmp_path) as (server, _, _printed),
        aiohttp.ClientSession(headers={"Authorization": f"Bearer {server.token}"}) as http,
        http.ws_connect(ws_url(server, "held")) as ws,
    ):
        await receive(ws, "status")
        await say(ws, "Open the protected page")
        await receive(ws, "agent_question", pending_kind="manual")
    # The same data dir, a new server process: the session's question is still pending in its checkpoint.
    async with (
        serving_over(browser_session, llm, tmp_path) as (server, manager, _printed),
        aiohttp.ClientSession(headers={"Authorization": f"Bearer {server.token}"}) as http,
    ):
        assert "held" not in manager.sessions
        async with http.get(f"{server.base_url}/api/sessions") as response:
            listed = {s["id"]: s["state"] for s in (await response.json())["sessions"]}
        assert listed == {"held": "waiting_user"}
        async with http.ws_connect(ws_url(server, "held")) as ws:  # a reloaded page gets the hand-over again
            assert (await receive(ws, "status"))["state"] == "waiting_user"
            assert (await receive(ws, "agent_question"))["pending_kind"] == "manual"


async def test_the_token_and_the_sign_ins_outlive_a_restart_until_a_new_token_is_asked_for(
    browser_session: BrowserSession, llm: ScriptedOpenAI, tmp_path: Path
) -> None:
    store = tmp_path / "data" / AUTH_FILE
    jar = aiohttp.CookieJar(unsafe=True)

    @asynccontextmanager
    async def server(fresh: bool = False) -> AsyncIterator[Server]:
        async with serving_over(browser_session, llm, tmp_path, store=store, fresh_token=fresh) as (s, _, _p):
            yield s

    async with server() as first, aiohttp.ClientSession(cookie_jar=jar) as browser:
        token = first.token
        async with browser.get(f"{first.base_url}/?token={token}") as response:
            assert response.status == 200
        cookie = next(c.value for c in jar if c.key.startswith("bc_session_"))
    assert stat.S_IMODE(os.stat(store).st_mode) == 0o600  # readable by the user only
    assert cookie not in store.read_text()  # only a hash of it is kept
    async with server() as second, aiohttp.ClientSession(cookie_jar=jar) as browser:
        assert second.token == token  # scripts keep their key
        # A bookmark of the page (its cookie has the old port's name: the same cookie on the new port).
        async with browser.get(
            f"{second.base_url}/", cookies={f"bc_session_{second.port}": cookie}
        ) as response:
            assert response.status == 200 and "live-screen" in await response.text()
    async with server(fresh=True) as third, aiohttp.ClientSession() as browser:
        assert third.token != token
        async with browser.get(
            f"{third.base_url}/", cookies={f"bc_session_{third.port}": cookie}
        ) as response:
            page = await response.text()
            assert response.status == 401 and "not signed in" in page  # everyone signed out, told how
        async with browser.get(
            f"{third.base_url}/api/sessions", headers={"Authorization": f"Bearer {token}"}
        ) as r:
            assert r.status == 401


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_deleted_session_leaves_the_session_list_on_either_backend(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    database = request.getfixturevalue("postgres_url") if backend == "postgres" else None
    settings = make_settings(tmp_path / "data", database_url=database)
    for session in ("kept", "gone"):
        await remember_session(settings, session, goal=f"the {session} one")
    await forget_session(settings, "gone")
    assert [s.session_id for s in await list_sessions(settings)] == ["kept"]
    assert await last_session(settings) != "gone"
