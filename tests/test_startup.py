"""Start to prompt (issue 18): the chat's prompt never waits for the heavy modules or a network probe.

Guarded without timing: the real `main.py` path runs in a subprocess up to its first prompt with the
background loading turned off, and what is loaded by then (and what was probed) is read there. A heavy
import put back on the start path, or a probe of a local model server before the prompt, fails here."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from browser_copilot.ui.startup import HEAVY, load_in_background
from tests.support.app import ROOT, app_env

AT_THE_FIRST_PROMPT = """
import json, sys
sys.path.insert(0, {src!r})
from browser_copilot import cli
from browser_copilot.llm import provider
from browser_copilot.ui import chat, startup

seen = {{}}
probes = []

def nothing_in_the_background(loop, groups):  # so what is loaded at the prompt was loaded before it
    return [loop.create_future() for _ in groups]

def probe(base_url, *args, **kwargs):
    probes.append(base_url)
    raise provider.LlmUnavailable("no server in this test")

async def first_prompt(self, reader):
    seen["heavy"] = sorted({{name.split(".")[0] for name in sys.modules}} & set(startup.HEAVY))
    seen["probed"] = list(probes)
    return None  # end of input: the app leaves

chat.load_in_background = nothing_in_the_background
provider.list_models = probe
chat.ChatApp.read_line = first_prompt
seen["code"] = cli.main(["--env-file", "/nonexistent/.env"])
print(json.dumps(seen))
"""


def at_the_first_prompt(data_dir: Path, **settings: str) -> dict[str, Any]:
    """Run the chat through `cli.main` to its first prompt; what was loaded and probed by then."""
    done = subprocess.run(
        [sys.executable, "-c", AT_THE_FIRST_PROMPT.format(src=str(ROOT / "src"))],
        cwd=ROOT,
        env=app_env(data_dir, CDP_ENDPOINT="http://127.0.0.1:9", **settings),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Browser Copilot" in done.stdout  # the banner was shown
    seen: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["code"] == 0
    return seen


def test_the_heavy_list_names_what_the_prompt_must_never_wait_for() -> None:
    assert {"langchain_core", "langgraph", "langchain_openai", "openai", "mcp", "aiohttp", "psycopg"} <= set(
        HEAVY
    )


@pytest.mark.parametrize("model", ["configured", "none"])
def test_the_chat_reaches_its_prompt_without_langchain_langgraph_openai_or_the_mcp_client(
    tmp_path: Path, model: str
) -> None:
    settings = (
        {"LLM_BASE_URL": "http://127.0.0.1:9/v1", "LLM_API_KEY": "sk-test-123", "LLM_MODEL": "m"}
        if model == "configured"
        else {}
    )
    seen = at_the_first_prompt(tmp_path / "data", **settings)
    assert seen["heavy"] == []


def test_a_resumed_session_reaches_its_prompt_without_them_too(tmp_path: Path) -> None:
    data = tmp_path / "data"
    at_the_first_prompt(data)  # names a session and writes the session list
    assert (data / "last_session").is_file() and (data / "sessions.sqlite").is_file()
    assert at_the_first_prompt(data)["heavy"] == []


def test_no_local_model_server_is_probed_before_the_prompt(tmp_path: Path) -> None:
    assert at_the_first_prompt(tmp_path / "data")["probed"] == []


async def test_modules_load_group_by_group_and_a_missing_one_fails_its_group_and_the_later_ones() -> None:
    first, second, third = load_in_background(
        asyncio.get_running_loop(), (("json",), ("no_such_module_for_this_test", "csv"), ("wave",))
    )
    await first
    with pytest.raises(ImportError, match="no_such_module_for_this_test"):
        await second
    with pytest.raises(ImportError, match="no_such_module_for_this_test"):
        await third
