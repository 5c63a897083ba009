"""Secrets sent over the web front end's WebSocket (`main.py serve` as a real process, the real `ChatOpenAI`
against the scripted OpenAI-compatible server, a real Chromium and MCP server): a bare code typed while
the page in front asks for one never reaches the model or any file of the data dir."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp

from browser_copilot.browser.launcher import LaunchedBrowser
from tests.support.app import App, app_env, files_holding, stop_apps
from tests.support.openai_server import ScriptedOpenAI, call, text
from tests.support.pages import PageServer
from tests.support.processes import pids_mentioning
from tests.support.sse import sse_frames
from tests.support.waiting import async_wait_until

CODE = "482977"
ORDER = "730154"
"""A bare number that says what it is ("order 730154"): it must reach the model."""
LIMIT = 60.0


async def answer(ws: aiohttp.ClientWebSocketResponse) -> dict[str, Any]:
    """The next `agent_message` (the run's answer); fails after LIMIT seconds."""
    async with asyncio.timeout(LIMIT):
        while True:
            message = await ws.receive_json()
            if message.get("kind") == "agent_message":
                return dict(message)


async def first_notice(stream: aiohttp.ClientResponse) -> str:
    """The text of the first `notice` to the user on an SSE stream (replayed from the start); fails after
    LIMIT."""
    async with asyncio.timeout(LIMIT):
        async for frame in sse_frames(stream):
            data = json.loads(frame["data"])["data"] if frame.get("event") == "notice" else {}
            if data.get("to_user"):
                return str(data["text"])
    raise AssertionError("the stream ended without a notice")


async def test_a_bare_code_sent_while_the_page_asks_for_one_never_leaves_the_server(
    tmp_path: Path, external_browser: LaunchedBrowser, llm: ScriptedOpenAI, pages: PageServer
) -> None:
    llm.script(
        call("browser_run_code", code=f"async (page) => {{ await page.goto('{pages.url('otp.html')}') }}"),
        text("The page is open. What next?"),
        text("Thanks."),
        text("Noted the order."),
    )
    data = tmp_path / "data"
    env = app_env(
        data,
        CDP_ENDPOINT=external_browser.endpoint.url,
        LLM_BASE_URL=llm.base_url,
        LLM_API_KEY="sk-test-123",
        LLM_MODEL="scripted-model",
    )
    server = App("serve", "--port", "0", env=env)
    try:
        end = server.wait_for("/?token=", timeout=90)
        base, token = server.output[: end + 60].splitlines()[-1].split("/?token=")
        ws_base = base[base.index("http://") :].replace("http://", "ws://")
        url = f"{ws_base}/ws/otp-session?token={token.split()[0]}"
        async with aiohttp.ClientSession() as http, http.ws_connect(url) as ws:
            await ws.send_json({"kind": "user_message", "text": "Open the verification page"})
            assert (await answer(ws))["text"] == "The page is open. What next?"
            await ws.send_json({"kind": "user_message", "text": CODE})  # the page's code, sent to the chat
            assert (await answer(ws))["text"] == "Thanks."
            await ws.send_json({"kind": "user_message", "text": f"order {ORDER}"})
            assert (await answer(ws))["text"] == "Noted the order."
            # The person watching the page is told, on the SSE stream the page shows.
            http_base = base[base.index("http://") :]
            events = f"{http_base}/sessions/otp-session/events?token={token.split()[0]}&last_event_id=0"
            async with http.get(events) as stream:
                notice = await first_notice(stream)
            assert notice.startswith("Withheld from the agent: the one-time code"), notice
            assert CODE not in notice
    finally:
        stop_apps([server], timeout=30)
    await async_wait_until(lambda: not pids_mentioning(str(data)), timeout=30, what="the MCP server to exit")

    sent = json.dumps(llm.requests, ensure_ascii=False)
    assert CODE not in sent
    assert files_holding(data, CODE) == []
    assert CODE not in server.output
    # The model saw the page with its code field (what told the app) and the answer as withheld.
    assert "Verification code" in sent and "[one-time code withheld]" in sent
    assert f"order {ORDER}" in sent
    assert files_holding(data, ORDER)  # the checkpoint holds it: the search above reads the right files
    assert (data / "logs").is_dir()
