"""The chat's start in the background (issue 18): the prompt first, the heavy rest on a thread of its own.

What the prompt needs (settings, the console, the session's name, the line reader) is cheap to import.
The rest — the MCP client and the network guard behind the browser session, then LangChain, LangGraph
and the OpenAI client behind the agent — takes seconds of CPU to import. `load_in_background` imports it
group by group on one daemon thread, so the event loop stays free to attach the browser and read lines
meanwhile, and the process can leave at once if the user quits before it is done.

`HEAVY` lists the top-level packages that must stay off the start path; `tests/test_startup.py` checks
that importing the chat loads none of them."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import threading
from collections.abc import Sequence

HEAVY = (
    "aiohttp",
    "anyio",
    "httpx",
    "langchain",
    "langchain_core",
    "langchain_mcp_adapters",
    "langchain_openai",
    "langgraph",
    "langmem",
    "mcp",
    "openai",
    "psycopg",
    "psycopg_pool",
    "tiktoken",
)
"""Packages the chat's prompt never waits for."""

BROWSER_MODULES = (
    "browser_copilot.browser.session",  # the MCP client, the network guard's DevTools connection
    "browser_copilot.extras.servers",
    "anyio._backends._asyncio",  # what the MCP client loads on its first use
)
"""What attaching the browser and starting the extra MCP servers need."""

AGENT_MODULES = (
    "browser_copilot.agent.runner",  # LangGraph, the graph and its nodes
    "langgraph.checkpoint.sqlite.aio",  # the sessions' checkpointer (`agent.storage`)
    "browser_copilot.agent.context",
    "browser_copilot.agent.memory",
    "browser_copilot.agent.locks",
    "browser_copilot.extras.budget",
    "browser_copilot.ui.memory",
    "browser_copilot.ui.tools_view",
    "langchain_openai",  # the chat model (`llm.provider.build_chat_model`)
)
"""What the agent (and the commands that show its tools and memory) need."""


def load_in_background(
    loop: asyncio.AbstractEventLoop, groups: Sequence[Sequence[str]]
) -> list[asyncio.Future[None]]:
    """Import `groups` in order on a daemon thread; one future per group, done when the group is loaded
    (or failing with the import's error, as do the groups after it)."""
    futures: list[asyncio.Future[None]] = [loop.create_future() for _ in groups]

    def settle(future: asyncio.Future[None], error: BaseException | None) -> None:
        if future.done():  # cancelled: nobody waits any more
            return
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)

    def tell(future: asyncio.Future[None], error: BaseException | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed: the app is leaving
            loop.call_soon_threadsafe(settle, future, error)

    def work() -> None:
        loaded = 0
        try:
            for names in groups:
                for name in names:
                    importlib.import_module(name)
                tell(futures[loaded], None)
                loaded += 1
        except ImportError as exc:  # a missing dependency: raised again where the group is awaited
            for future in futures[loaded:]:
                tell(future, exc)
        finally:  # any other error is a bug, its traceback printed by the thread: nobody is left waiting
            for future in futures[loaded:]:
                tell(future, RuntimeError("loading the app's modules failed (see the traceback above)"))

    threading.Thread(target=work, name="imports", daemon=True).start()
    return futures
