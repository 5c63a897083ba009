"""Server mode for tests: the real `Server` on a free port of 127.0.0.1, over the suite's shared browser
session, with the real `ChatOpenAI` against a scripted OpenAI-compatible server."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from browser_copilot.agent.storage import open_checkpointer
from browser_copilot.browser.session import BrowserSession
from browser_copilot.llm.provider import build_chat_model, resolve_llm
from browser_copilot.server.serve import Server
from browser_copilot.server.sessions import SessionManager
from tests.conftest import make_settings
from tests.support.openai_server import ScriptedOpenAI


@contextlib.asynccontextmanager
async def serving_over(
    browser: BrowserSession, llm: ScriptedOpenAI, data: Path, **server_options: Any
) -> AsyncIterator[tuple[Server, SessionManager, str]]:
    """The started server, its session manager and the URL it printed (with the token); stopped after."""
    settings = make_settings(
        data, llm_base_url=llm.base_url, llm_api_key="sk-test-123", llm_model="scripted-model"
    )
    endpoint = resolve_llm(settings)
    assert endpoint is not None
    async with open_checkpointer(settings) as saver:
        manager = SessionManager(
            settings, browser=browser, llm=build_chat_model(settings, endpoint), checkpointer=saver
        )
        server = Server(manager, **server_options)
        printed = await server.start("127.0.0.1", 0)
        try:
            yield server, manager, printed
        finally:
            await server.stop()
