"""Server mode through real sockets: an aiohttp client against the server on a free port, the shared
Chromium and MCP session, and the real `ChatOpenAI` against the scripted OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from browser_copilot import cli
from browser_copilot.agent.conversation import chat_history, feedback
from browser_copilot.browser.pool import BrowserPool
from browser_copilot.browser.session import BrowserSession
from browser_copilot.server.hub import SSE_KINDS
from browser_copilot.server.serve import Server
from browser_copilot.server.sessions import SessionManager
from tests.support.openai_server import ScriptedOpenAI, call, streamed, text
from tests.support.pages import PageServer
from tests.support.server import serving_over
from tests.support.sse import sse_frames as sse
from tests.support.waiting import async_wait_until

LIMIT = 30.0  # seconds any one exchange may take before the test fails


@dataclass
class Served:
    server: Server
    manager: SessionManager
    http: aiohttp.ClientSession

    @property
    def url(self) -> str:
        return self.server.base_url

    @property
    def token(self) -> str:
        return self.server.token

    def ws_url(self, session: str, token: str | None = None, client: str | None = None) -> str:
        tab = f"&client={client}" if client else ""
        return f"ws://127.0.0.1:{self.server.port}/ws/{session}?token={token or self.token}{tab}"


@pytest_asyncio.fixture
async def served(
    llm: ScriptedOpenAI, browser_session: BrowserSession, tmp_path: Path
) -> AsyncIterator[Served]:
    async with serving_over(browser_session, llm, tmp_path, heartbeat=0.5) as (server, manager, printed):
        assert printed == f"http://127.0.0.1:{server.port}/?token={server.token}"
        headers = {"Authorization": f"Bearer {server.token}"}
        async with aiohttp.ClientSession(headers=headers) as http:
            yield Served(server, manager, http)


async def receive(ws: aiohttp.ClientWebSocketResponse, kind: str, **match: Any) -> dict[str, Any]:
    """The next message of `kind` (with the given fields); fails after LIMIT seconds."""
    async with asyncio.timeout(LIMIT):
        while True:
            message = await ws.receive_json()
            assert message["v"] == 1
            if message["kind"] == kind and all(message.get(k) == v for k, v in match.items()):
                return dict(message)


async def say(ws: aiohttp.ClientWebSocketResponse, words: str) -> None:
    await ws.send_json({"kind": "user_message", "text": words})


async def started(served: Served, session: str) -> None:
    """Until the session's run has made its first tool call."""
    hub = served.manager.sessions[session].hub
    await async_wait_until(
        lambda: any(k == "tool_call" for _, k, _ in hub.after(0)), timeout=LIMIT, what=f"{session}'s run"
    )


def go(url: str) -> dict[str, Any]:
    return call("browser_run_code", code=f"async (page) => {{ await page.goto('{url}') }}")


async def test_a_websocket_chat_reaches_the_final_answer_with_secrets_masked(
    served: Served, llm: ScriptedOpenAI, pages: PageServer
) -> None:
    llm.script(
        go(pages.url("search.html")),
        text("Found it. Mail bob@example.com with key sk-proj-abcdefghijklmnopqrstuvwx."),
    )
    async with served.http.ws_connect(served.ws_url("chat1")) as ws:
        assert await receive(ws, "status") == {"v": 1, "kind": "status", "state": "idle"}
        await say(ws, "Open the flight search")
        await receive(ws, "status", state="running")
        answer = await receive(ws, "agent_message")
    assert answer["stop_reason"] == "answered"
    assert answer["text"] == "Found it. Mail <email> with key <api-key>."
    async with served.http.get(f"{served.url}/api/sessions/chat1") as response:
        detail = await response.json()
    assert detail["v"] == 1 and detail["id"] == "chat1" and detail["state"] == "idle"
    assert detail["pending"] is None and detail["mode"] == "chat"
    # The conversation as the user saw it (for a reloaded page), masked like every outgoing message.
    assert detail["chat"] == [
        {"who": "user", "text": "Open the flight search"},
        {"who": "agent", "text": "Found it. Mail <email> with key <api-key>."},
    ]
    assert detail["last_event_id"] == served.manager.sessions["chat1"].hub.last_id
    async with served.http.get(f"{served.url}/api/sessions") as response:
        listed = await response.json()
    assert [s["id"] for s in listed["sessions"]] == ["chat1"]
    assert set(listed["sessions"][0]) == {"id", "goal", "state", "updated"}
    final = json.loads(next(b for _, k, b in served.manager.sessions["chat1"].hub.after(0) if k == "final"))
    assert "<api-key>" in final["data"]["text"] and "sk-proj" not in final["data"]["text"]


async def test_sse_resumes_with_last_event_id_without_losing_or_repeating_events(
    served: Served, llm: ScriptedOpenAI, pages: PageServer
) -> None:
    llm.script(
        go(pages.url("search.html")),
        call("browser_run_code", code="async (page) => await page.title()"),
        go(pages.url("long.html")),
        text("Done."),
    )
    events_url = f"{served.url}/sessions/watched/events"
    seen: list[dict[str, str]] = []
    async with served.http.ws_connect(served.ws_url("watched")) as ws:
        await receive(ws, "status")
        async with served.http.get(events_url) as first:
            assert first.headers["Content-Type"].startswith("text/event-stream")
            await say(ws, "Look at two pages")
            async for frame in sse(first):
                if "id" in frame:
                    seen.append(frame)
                if len(seen) == 4:
                    break  # the watcher goes away in the middle of the run
        await receive(ws, "agent_message", stop_reason="answered")
    hub = served.manager.sessions["watched"].hub
    produced = hub.last_id
    assert produced > 8
    headers = {"Last-Event-ID": seen[-1]["id"]}
    async with served.http.get(events_url, headers=headers) as second:
        async for frame in sse(second):
            if "id" in frame:
                seen.append(frame)
            elif seen[-1]["id"] == str(produced):
                assert frame == {"comment": "keep-alive"}  # caught up: heartbeats while idle
                break
    ids = [int(f["id"]) for f in seen]
    assert ids == list(range(1, produced + 1))  # every event once, in order
    kinds = {f["event"] for f in seen}
    assert {"status", "observation", "tool_call", "tool_result", "final"} <= kinds
    for frame in seen:
        data = json.loads(frame["data"])
        assert data["v"] == 1 and data["kind"] == frame["event"] and data["session"] == "watched"
        assert isinstance(data["at"], float) and isinstance(data["data"], dict)
    async with served.http.get(f"{events_url}?last_event_id={produced - 2}") as third:
        tail = []
        async for frame in sse(third):
            if "id" not in frame:
                break
            tail.append(int(frame["id"]))
    assert tail == [produced - 1, produced]


async def test_a_confirmation_is_allowed_only_with_its_nonce_by_the_tab_that_asked_and_acts_once(
    served: Served, llm: ScriptedOpenAI, pages: PageServer, browser_session: BrowserSession
) -> None:
    llm.script(
        go(pages.url("mail.html")),
        call(
            "browser_run_code",
            code="async (page) => { await page.getByLabel('To').fill('alice@example.test');"
            " await page.getByLabel('Subject').fill('Lunch'); }",
        ),
        call(
            "browser_run_code",
            code="async (page) => { await page.getByRole('button', { name: 'Send' }).click() }",
        ),
        text("Sent the message to Alice."),
    )
    tab, other_tab = "tab-of-the-user-0001", "another-tab-0000002"
    async with served.http.ws_connect(served.ws_url("mail", client=tab)) as ws:
        await receive(ws, "status")
        await say(ws, "/yes")
        assert (await receive(ws, "error"))["code"] == "nothing_pending"
        await say(ws, "Email Alice about lunch")
        await receive(ws, "status", state="waiting_user")
        question = await receive(ws, "agent_question")
        assert question["pending_kind"] == "confirm"
        assert question["card"]["category"] == "send"
        # The tab that asked sees what it commits to as typed: the user's own address, on their screen.
        assert ["To", "alice@example.test"] in question["card"]["values"]
        nonce = question["nonce"]
        assert isinstance(nonce, str) and len(nonce) >= 32
    # Another tab (or a page the agent opened) sees the card, without the nonce, and cannot allow it:
    # not with /yes, not with a word the agent reads as yes, not with a guessed nonce.
    async with served.http.ws_connect(served.ws_url("mail", client=other_tab)) as other:
        assert (await receive(other, "status"))["state"] == "waiting_user"
        shown = await receive(other, "agent_question")
        assert shown["card"]["category"] == "send" and "nonce" not in shown
        assert ["To", "<email>"] in shown["card"]["values"]  # any other tab: masked like the logs
        for attempt in [
            {"text": "/yes"},
            {"text": "ok"},
            {"text": "/yes", "nonce": "x" * len(nonce)},
            {"text": "/yes", "nonce": nonce},  # the right nonce, from a tab that was not shown it
        ]:
            await other.send_json({"kind": "user_message", **attempt})
            refused = await receive(other, "error")
            assert refused["code"] == "not_approved", attempt
            assert "nothing was approved" in refused["message"]
    async with served.http.get(f"{served.url}/api/sessions/mail") as response:
        detail = await response.json()
    assert detail["pending"]["pending_kind"] == "confirm" and "nonce" not in detail["pending"]
    assert not served.manager.sessions["mail"].busy
    # The tab that asked, reconnecting (a reloaded page), is shown the card with the same nonce.
    async with served.http.ws_connect(served.ws_url("mail", client=tab)) as ws:
        assert (await receive(ws, "status"))["state"] == "waiting_user"
        again = await receive(ws, "agent_question")
        assert again["card"]["category"] == "send" and again["nonce"] == nonce
        await ws.send_json({"kind": "user_message", "text": "/yes", "nonce": nonce})
        answer = await receive(ws, "agent_message")
        assert answer["stop_reason"] == "answered"
        await ws.send_json({"kind": "user_message", "text": "/yes", "nonce": nonce})  # used up
        assert (await receive(ws, "error"))["code"] == "nothing_pending"
    count = await browser_session.run_code("async (page) => await page.evaluate(() => window.__sent ?? 0)")
    assert count.value == 1
    hub = served.manager.sessions["mail"].hub
    kinds = [k for _, k, _ in hub.after(0)]
    assert "policy_request" in kinds and "policy_result" in kinds
    # The nonce never went into the SSE buffer, the step log, the checkpoint or any file of the data dir.
    assert not any(nonce in body for _, _, body in hub.after(0))
    data_dir = served.manager.settings.data_dir
    for path in data_dir.rglob("*"):
        if path.is_file():
            assert nonce.encode() not in path.read_bytes(), path


async def test_declining_a_confirmation_needs_no_nonce(
    served: Served, llm: ScriptedOpenAI, pages: PageServer, browser_session: BrowserSession
) -> None:
    llm.script(
        go(pages.url("mail.html")),
        call(
            "browser_run_code",
            code="async (page) => { await page.getByLabel('To').fill('alice@example.test');"
            " await page.getByRole('button', { name: 'Send' }).click() }",
        ),
        text("I did not send it."),
    )
    async with served.http.ws_connect(served.ws_url("declined")) as ws:
        await receive(ws, "status")
        await say(ws, "Email Alice")
        assert (await receive(ws, "agent_question"))["pending_kind"] == "confirm"
    async with served.http.ws_connect(served.ws_url("declined")) as other:  # a connection of its own
        shown = await receive(other, "agent_question")
        assert "nonce" not in shown
        await say(other, "/no")
        assert (await receive(other, "agent_message"))["text"] == "I did not send it."
    count = await browser_session.run_code("async (page) => await page.evaluate(() => window.__sent ?? 0)")
    assert count.value == 0


async def test_the_answer_streams_on_sse_while_the_model_writes_with_secrets_masked(
    served: Served, llm: ScriptedOpenAI
) -> None:
    gate = threading.Event()
    llm.script(streamed("Write to ", "bob@exam", "ple.com about the ", "booking.", gate=gate))
    async with served.http.ws_connect(served.ws_url("streamed")) as ws:
        await receive(ws, "status")
        async with served.http.get(f"{served.url}/sessions/streamed/events") as events:
            await say(ws, "Whom should I write to?")
            seen: list[dict[str, Any]] = []
            async for frame in sse(events):
                if frame.get("event") == "answer_stream":
                    seen.append(json.loads(frame["data"])["data"])
                    gate.set()  # the first words arrived while the model was held after its first piece
                if frame.get("event") == "final":
                    break
        assert seen[0] == {"call": 1, "text": "Write to ", "done": False}
        assert seen[-1]["done"] and seen[-1]["text"] == "Write to <email> about the booking."
        assert all("bob@" not in s["text"] and "exam" not in s["text"] for s in seen)
        answer = await receive(ws, "agent_message")
        assert answer["text"] == "Write to <email> about the booking."


async def test_cancel_stops_the_running_run_and_a_message_meanwhile_is_refused_as_busy(
    served: Served, llm: ScriptedOpenAI
) -> None:
    llm.script(
        call("browser_run_code", code="async (page) => { await page.waitForTimeout(3000); }"),
        text("never reached"),
    )
    async with served.http.ws_connect(served.ws_url("slow")) as ws:
        await receive(ws, "status")
        await say(ws, "Wait a while")
        await started(served, "slow")
        hub = served.manager.sessions["slow"].hub
        await say(ws, "and another thing")
        busy = await receive(ws, "error")
        assert busy["code"] == "busy"
        await say(ws, "/tools")  # read-only commands are answered during a run
        listing = await receive(ws, "agent_message", stop_reason="answered")
        assert "browser_run_code" in listing["text"]
        async with served.http.post(f"{served.url}/api/sessions/slow/cancel") as response:
            assert await response.json() == {"v": 1, "cancelled": True}
        answer = await receive(ws, "agent_message")
        assert answer["stop_reason"] == "cancelled"
        async with served.http.post(f"{served.url}/api/sessions/slow/cancel") as response:
            assert await response.json() == {"v": 1, "cancelled": False}
    async with served.http.get(f"{served.url}/api/sessions/slow") as response:
        assert (await response.json())["state"] == "idle"
    assert not any(k == "final" for _, k, _ in hub.after(0))


async def test_requests_without_or_with_a_wrong_token_get_401_and_nothing_else(served: Served) -> None:
    base = served.url
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as anonymous:
        for method, path in [
            ("GET", "/static/app.js"),
            ("GET", "/api/sessions"),
            ("POST", "/api/sessions"),
            ("GET", "/api/sessions/x"),
            ("POST", "/api/sessions/x/cancel"),
            ("GET", "/sessions/x/events"),
            ("GET", f"/api/sessions?token={served.token}"),  # the query token is for WS and SSE only
            ("GET", "/sessions/x/events?token=wrong"),
            ("GET", "/live/x?token=wrong"),
            ("DELETE", "/api/sessions/x"),
            ("GET", "/api/status"),
        ]:
            for headers in ({}, {"Authorization": "Bearer wrong"}):
                async with anonymous.request(method, base + path, headers=headers) as response:
                    assert (response.status, await response.text()) == (401, "unauthorized"), path
                    assert not any(h.lower().startswith("access-control") for h in response.headers)
        # A person at the page without a sign-in (a bookmark after the token was renewed, another browser,
        # a wrong link): still 401, with what to do instead of a bare word.
        for path in ("/", "/?token=wrong"):
            for headers in ({}, {"Authorization": "Bearer wrong"}):
                async with anonymous.get(base + path, headers=headers) as response:
                    page = await response.text()
                    assert response.status == 401, path
                    assert "not signed in" in page and "main.py serve" in page, path
                    assert served.token not in page
                    assert not any(h.lower().startswith("access-control") for h in response.headers)
        for token in ("wrong", ""):
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await anonymous.ws_connect(served.ws_url("x", token=token or "%20"))
            assert refused.value.status == 401
        assert "x" not in served.manager.sessions
        async with anonymous.get(f"{base}/sessions/x/events?token={served.token}") as response:
            assert response.status == 200
        # The printed URL: the token becomes an HttpOnly, SameSite=Strict cookie, then the page.
        async with anonymous.get(f"{base}/?token={served.token}", allow_redirects=False) as response:
            assert response.status == 302 and response.headers["Location"] == "/"
            cookie = response.headers["Set-Cookie"]
            assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        async with anonymous.get(f"{base}/api/sessions") as response:
            assert response.status == 200


async def test_a_foreign_origin_is_refused_for_websocket_and_post(served: Served) -> None:
    evil = {"Origin": "http://127.0.0.1:1"}
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await served.http.ws_connect(served.ws_url("o1"), headers=evil)
    assert refused.value.status == 403
    for path in ("/api/sessions", "/api/sessions/o1/cancel"):
        async with served.http.post(served.url + path, headers=evil) as response:
            assert response.status == 403
            assert not any(h.lower().startswith("access-control") for h in response.headers)
    assert served.manager.sessions == {}
    own = {"Origin": f"http://localhost:{served.server.port}"}
    async with served.http.post(f"{served.url}/api/sessions", headers=own) as response:
        created = (await response.json())["id"]
    async with served.http.ws_connect(served.ws_url(created), headers={"Origin": served.url}) as ws:
        assert (await receive(ws, "status"))["state"] == "idle"


async def test_a_real_page_on_another_origin_cannot_drive_the_server(
    served: Served, pages: PageServer, browser_session: BrowserSession
) -> None:
    """The browser holds the server's cookie (the user opened the printed URL); a page on another port of
    127.0.0.1 (same site, so the cookie goes along) tries the WebSocket and a POST."""
    # 127.0.0.1 is a site of the task first (a page without data), so that the token link may open there
    # in the agent's tab whatever ran before.
    await browser_session.goto(pages.url("index.html"))
    opened = await browser_session.run_code(
        f"async (page) => {{ await page.goto('{served.url}/?token={served.token}');"
        " return (await page.context().cookies()).map((c) => c.name); }"
    )
    assert opened.ok, opened.error
    assert f"bc_session_{served.server.port}" in opened.value
    # The web page makes its own first session when it finds none: wait for it before leaving the page, or
    # its POST lands after `before` is read (seen in CI) and looks like the attack's.
    await async_wait_until(lambda: served.manager.sessions, what="the web page's own first session")
    await browser_session.goto(pages.url("index.html"))
    before = set(served.manager.sessions)
    attack = """async (page) => await page.evaluate(async ([ws, post]) => {
      const socket = await new Promise((resolve) => {
        const s = new WebSocket(ws);
        s.onopen = () => resolve('open'); s.onerror = () => resolve('error');
        setTimeout(() => resolve('timeout'), 10000);
      });
      const simple = await fetch(post, { method: 'POST', credentials: 'include', mode: 'no-cors' })
        .then((r) => r.type, (e) => 'failed: ' + e);
      const json = await fetch(post, { method: 'POST', credentials: 'include',
        headers: { 'Content-Type': 'application/json' }, body: '{}' })
        .then((r) => 'read ' + r.status, (e) => 'failed: ' + e);
      return { socket, simple, json };
    }, [%s, %s])"""
    ws_url = f"ws://127.0.0.1:{served.server.port}/ws/hostile?token={served.token}"
    result = await browser_session.run_code(
        attack % (json.dumps(ws_url), json.dumps(f"{served.url}/api/sessions"))
    )
    assert result.ok, result.error
    assert result.value["socket"] == "error"
    assert result.value["json"].startswith("failed")  # no CORS: the page cannot read an answer
    assert set(served.manager.sessions) == before  # and the server did nothing
    assert "hostile" not in served.manager.sessions


async def test_malformed_unknown_and_oversize_messages_get_errors_and_the_connection_stays_open(
    served: Served, llm: ScriptedOpenAI
) -> None:
    llm.script(text("Still here."))
    async with served.http.ws_connect(served.ws_url("bad")) as ws:
        await receive(ws, "status")
        for sent, code in [
            ("{not json", "bad_json"),
            ("[1, 2]", "bad_json"),
            (json.dumps({"kind": "shout", "text": "hi"}), "unknown_kind"),
            (json.dumps({"kind": "user_message", "text": "x" * 70_000}), "too_large"),
            (json.dumps({"kind": "user_message", "text": "/frobnicate"}), "unknown_command"),
            (json.dumps({"kind": "user_message", "text": "/no"}), "nothing_pending"),
        ]:
            await ws.send_str(sent)
            error = await receive(ws, "error")
            assert error["code"] == code and error["message"]
        await say(ws, "/exit")
        assert (await receive(ws, "status"))["mode"] == "command"
        await say(ws, "/chat")
        assert (await receive(ws, "status"))["mode"] == "chat"
        await say(ws, "Are you there?")
        assert (await receive(ws, "agent_message"))["text"] == "Still here."
        assert not ws.closed


async def test_with_one_parallel_run_two_sessions_take_turns_each_in_its_own_tab(
    served: Served, llm: ScriptedOpenAI, pages: PageServer, browser_session: BrowserSession
) -> None:
    # MAX_PARALLEL_RUNS=1: a run past the limit waits its turn (tests/test_parallel.py runs them at once).
    limited = served.manager.settings.model_copy(update={"max_parallel_runs": 1})
    served.manager.pool = BrowserPool(limited, browser_session)
    first_page, second_page = pages.url("search.html"), pages.url("shop.html")
    llm.script(
        call(
            "browser_run_code",
            code=f"async (page) => {{ await page.goto('{first_page}'); await page.waitForTimeout(1500); }}",
        ),
        text("First done."),
        go(second_page),
        text("Second done."),
    )
    async with (
        served.http.ws_connect(served.ws_url("first")) as one,
        served.http.ws_connect(served.ws_url("second")) as two,
    ):
        await receive(one, "status")
        await receive(two, "status")
        await say(one, "Search")
        await started(served, "first")
        await say(two, "Shop")
        assert (await receive(two, "status", queued=1))["state"] == "running"
        assert (await receive(one, "agent_message"))["text"] == "First done."
        assert (await receive(two, "agent_message"))["text"] == "Second done."
    first = [json.loads(b) for _, _, b in served.manager.sessions["first"].hub.after(0)]
    second = [json.loads(b) for _, _, b in served.manager.sessions["second"].hub.after(0)]
    first_end = next(e["at"] for e in first if e["kind"] == "final")
    second_start = next(e["at"] for e in second if e["kind"] == "status")
    assert first_end <= second_start  # the second run began after the first had finished
    urls = await browser_session.run_code(
        "async (page) => { const t = page.context().__bcSessionTabs;"
        " return [t.get('first').url(), t.get('second').url(), t.get('first') !== t.get('second')]; }"
    )
    assert urls.value == [first_page, second_page, True]


def test_the_schema_names_every_kind_the_server_sends() -> None:
    schema = json.loads(
        (
            Path(__file__).resolve().parent.parent / "src/browser_copilot/server/schema/events.v1.json"
        ).read_text()
    )
    defs = schema["$defs"]
    assert set(defs["sse_event"]["properties"]["kind"]["enum"]) == set(SSE_KINDS)
    sent = {d["$ref"].rsplit("/", 1)[1] for d in defs["server_message"]["oneOf"]}
    assert sent == {"status", "agent_message", "agent_question", "error"}
    assert defs["client_message"]["properties"]["kind"] == {"const": "user_message"}
    # The live view's socket: what the server sends, and the input it takes.
    assert set(defs["live_message"]["properties"]["kind"]["enum"]) == {
        "live",
        "control",
        "frame",
        "highlight",
        "page",
        "error",
    }
    assert set(defs["live_input"]["properties"]["kind"]["enum"]) == {"click", "wheel", "key", "text"}
    answered_at_once = set(defs["agent_message"]["properties"]["command"]["enum"])
    assert answered_at_once == {"/status", "/plan", "/tabs", "/help", "/tools", "/memory", "/forget"}


def test_serve_refuses_a_non_loopback_host_without_allow_remote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = tmp_path / ".env"
    env.write_text(f"DATA_DIR={tmp_path}\n")
    assert cli.main(["--env-file", str(env), "serve", "--host", "0.0.0.0"]) == 2
    assert "--allow-remote" in capsys.readouterr().err


def test_the_chat_history_keeps_what_the_user_saw_and_drops_tool_traffic_and_bounced_answers() -> None:
    messages = [
        HumanMessage("Find a flight", id="1"),
        AIMessage("Let me look.", tool_calls=[{"name": "observe_page", "args": {}, "id": "c1"}], id="2"),
        ToolMessage("(the page)", tool_call_id="c1", id="3"),
        AIMessage("Ryanair at €45.", id="4"),  # bounced: the app's feedback follows
        feedback("These figures in your answer do not appear in anything observed"),
        AIMessage("Ryanair, the cheapest.", id="6"),
        HumanMessage("thanks", id="7"),
    ]
    assert chat_history(messages) == [
        {"who": "user", "text": "Find a flight"},
        {"who": "agent", "text": "Ryanair, the cheapest."},
        {"who": "user", "text": "thanks"},
    ]
    assert chat_history(messages, limit=1) == [{"who": "user", "text": "thanks"}]


async def test_a_message_sent_once_the_answer_is_shown_waits_for_the_run_to_tidy_up_instead_of_busy(
    served: Served, llm: ScriptedOpenAI, pages: PageServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page shows an answer from the run's `final` event, while the run still keeps its tab and
    counts the tabs it opened (seconds on a loaded machine): a message then is not refused as busy."""
    llm.script(go(pages.url("search.html")), text("Opened."), text("And again."))
    tidy = asyncio.Event()
    counting = served.manager._count_new_tabs

    async def slow_count(s: Any, before: set[str] | None) -> None:
        await tidy.wait()
        await counting(s, before)

    monkeypatch.setattr(served.manager, "_count_new_tabs", slow_count)
    waiting = asyncio.Event()
    finishing = served.manager.finishing

    async def seen_waiting(s: Any) -> None:
        if s.busy:
            waiting.set()
        await finishing(s)

    monkeypatch.setattr(served.manager, "finishing", seen_waiting)
    async with served.http.ws_connect(served.ws_url("tidy")) as ws:
        await receive(ws, "status")
        await say(ws, "Open the flight search")
        hub = served.manager.sessions["tidy"].hub
        await async_wait_until(
            lambda: any(k == "final" for _, k, _ in hub.after(0)), timeout=LIMIT, what="final"
        )
        assert served.manager.sessions["tidy"].busy  # answered, still tidying up
        await say(ws, "Say it again")
        await asyncio.wait_for(waiting.wait(), LIMIT)  # the message came while the run tidied up
        tidy.set()
        first = await receive(ws, "agent_message")
        assert first["text"] == "Opened."
        second = await receive(ws, "agent_message")
        assert second["text"] == "And again.", second
