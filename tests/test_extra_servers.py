"""Extra MCP servers (F60) with two real servers: the pinned `@modelcontextprotocol/server-filesystem`
confined to a temporary folder, and the FastMCP notes server of `tests/support/notes_server.py`.

The model is scripted; the servers, the browser and the MCP server of the browser are real."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from io import StringIO
from pathlib import Path
from typing import Any

import aiohttp
import pexpect
import pytest
from langchain_core.messages import ToolMessage
from langchain_core.runnables import Runnable
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from browser_copilot.agent.context import AgentContext, Limits
from browser_copilot.agent.runner import AgentRunner, compile_graph, new_session_id
from browser_copilot.agent.storage import open_checkpointer
from browser_copilot.agent.tools import TOOLS, builtin_specs
from browser_copilot.browser.launcher import LaunchedBrowser
from browser_copilot.browser.session import BrowserSession
from browser_copilot.config import load_settings
from browser_copilot.errors import ConfigError
from browser_copilot.events import EventLog
from browser_copilot.extras.budget import schema_tokens
from browser_copilot.extras.config import parse_servers
from browser_copilot.extras.servers import ExtraServers
from browser_copilot.llm.provider import build_chat_model, resolve_llm
from browser_copilot.server.serve import Server
from browser_copilot.server.sessions import SessionManager
from browser_copilot.server.tools import tools_reply
from browser_copilot.ui.theme import make_console
from browser_copilot.ui.tools_view import render_tools
from tests.conftest import make_settings
from tests.support.app import ROOT, app_env, run_app, spawn_chat
from tests.support.openai_server import ScriptedOpenAI
from tests.support.openai_server import call as openai_call
from tests.support.openai_server import text as openai_text
from tests.support.processes import pids_mentioning
from tests.support.scripted_model import ScriptedModel, call, say
from tests.support.waiting import async_wait_until, wait_until

FS_SERVER = ROOT / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
NOTES_SERVER = ROOT / "tests" / "support" / "notes_server.py"
FS_READS = [
    "read_file",
    "read_text_file",
    "read_multiple_files",
    "list_directory",
    "list_directory_with_sizes",
    "directory_tree",
    "search_files",
    "get_file_info",
    "list_allowed_directories",
]
NOTES_READS = ["read_note", "list_notes", "server_pid", "wait", "crash"]


def fs_config(root: Path) -> dict[str, Any]:
    return {"command": "node", "args": [str(FS_SERVER), str(root)], "read_only_tools": FS_READS}


def notes_config(store: Path, **extra: Any) -> dict[str, Any]:
    return {
        "transport": "stdio",
        "command": sys.executable,
        "args": [str(NOTES_SERVER), "--store", str(store)],
        "read_only_tools": NOTES_READS,
        **extra,
    }


class RecordingModel(ScriptedModel):
    """The scripted model, also recording the names of the tools bound for each call."""

    bound: list[list[str]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, Any]:
        self.bound.append([t["function"]["name"] if isinstance(t, dict) else t.__name__ for t in tools])
        return self


@pytest.fixture
def files(tmp_path: Path) -> Path:
    root = tmp_path / "files"
    root.mkdir()
    (root / "hello.txt").write_text("Hello from the file system server.\n")
    return root


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "notes.json"
    path.write_text(json.dumps({"lunch": "Pasta at noon with Ada."}))
    return path


class Servers:
    """Starts ExtraServers from a config; every one is closed (and its children gone) after the test."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started: list[ExtraServers] = []
        self.notices: list[str] = []

    async def start(self, config: dict[str, Any], *, call_timeout: float = 30.0) -> ExtraServers:
        loaded = parse_servers(json.dumps(config), self.tmp_path / "mcp_servers.json")
        extras = ExtraServers(
            loaded.servers,
            log_dir=self.tmp_path / "logs",
            call_timeout=call_timeout,
            start_timeout=30.0,
            notice=self.notices.append,
            warnings=loaded.warnings,
        )
        self.started.append(extras)
        await extras.start()
        return extras


@pytest.fixture
async def servers(tmp_path: Path) -> AsyncIterator[Servers]:
    made = Servers(tmp_path)
    yield made
    for extras in made.started:
        await extras.close()
    await async_wait_until(lambda: not pids_mentioning(str(tmp_path)), what="the extra servers to exit")


def runner_with(
    session: BrowserSession, extras: ExtraServers, *replies: Any, limits: Limits | None = None
) -> tuple[AgentRunner, RecordingModel, EventLog]:
    model = RecordingModel(replies=list(replies))
    log = EventLog()
    context = AgentContext(llm=model, browser=session, limits=limits or Limits(), events=log, extras=extras)
    return AgentRunner(compile_graph(InMemorySaver()), context, session_id=new_session_id()), model, log


def tool_texts(values: dict[str, Any]) -> list[str]:
    return [str(m.content) for m in values["messages"] if isinstance(m, ToolMessage)]


# ----- the config file -------------------------------------------------------------------------------


def test_the_file_takes_both_shapes_infers_the_transport_and_keeps_env_for_the_child(tmp_path: Path) -> None:
    plain = {
        "fs": {
            "command": "node",
            "args": ["x.js"],
            "env": {"TOKEN": "${HOME}"},
            "read_only_tools": ["fs__read"],
        },
        "web search": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer x"}},
    }
    for text in (json.dumps(plain), json.dumps({"mcpServers": plain})):
        loaded = parse_servers(text, tmp_path / "mcp_servers.json")
        fs, web = loaded.servers
        assert (fs.transport, web.transport) == ("stdio", "streamable_http")
        assert fs.connection == {
            "transport": "stdio",
            "command": "node",
            "args": ["x.js"],
            "env": {"TOKEN": "${HOME}"},
        }
        assert fs.read_only_tools == ("read",)  # the server's own name, with or without the prefix
        assert web.prefix == "web_search"
        assert web.connection["headers"] == {"Authorization": "Bearer x"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"fs": {"command": "node",}}', ["not valid JSON at line 1, column 27", "Fix: correct the JSON"]),
        (
            '{"fs": {"transport": "carrier-pigeon", "command": "x"}}',
            ['server "fs"', "unknown \"transport\" 'carrier-pigeon'", 'use "stdio"'],
        ),
        (
            '{"fs": {"transport": "stdio", "args": []}}',
            ['server "fs"', '"command" is missing', 'Fix: add "command"'],
        ),
        ('{"web": {"transport": "streamable_http"}}', ['server "web"', '"url" is missing', 'Fix: add "url"']),
        (
            '{"fs": {"command": "x", "read_only_tools": "read_file"}}',
            ['"read_only_tools" is not a list', '["read_file", "list_directory"]'],
        ),
        ('{"fs": {"command": "x", "args": "a b"}}', ['"args" is not a list of strings']),
        ('{"web": {"url": "ftp://host/mcp"}}', ["is not an http(s) URL"]),
        ('["fs"]', ["not a JSON object of servers"]),
    ],
)
def test_a_bad_file_names_the_server_the_field_and_the_fix(
    tmp_path: Path, text: str, expected: list[str]
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_servers(text, tmp_path / "mcp_servers.json")
    message = str(caught.value)
    assert message.startswith(f"MCP_SERVERS_FILE ({tmp_path / 'mcp_servers.json'}):")
    for part in expected:
        assert part in message, message


def test_a_misspelt_key_is_a_warning_not_silence(tmp_path: Path) -> None:
    loaded = parse_servers('{"fs": {"command": "x", "read_only_tool": ["a"]}}', tmp_path / "f.json")
    assert loaded.servers[0].read_only_tools == ()
    assert loaded.warnings == [
        'f.json: server "fs": "read_only_tool" is not a stdio setting and is ignored '
        "(did you mean 'read_only_tools'?)"
    ]


def test_settings_refuse_a_bad_file_and_a_named_file_that_is_missing(tmp_path: Path) -> None:
    assert load_settings(None, data_dir=tmp_path).servers_file == tmp_path / "mcp_servers.json"  # none: fine
    (tmp_path / "mcp_servers.json").write_text('{"fs": {"transport": "stdio"}}')
    with pytest.raises(ConfigError, match='server "fs": "command" is missing'):
        load_settings(None, data_dir=tmp_path)
    with pytest.raises(ConfigError, match=r"MCP_SERVERS_FILE: .*nope\.json does not exist"):
        load_settings(None, data_dir=tmp_path / "other", mcp_servers_file=str(tmp_path / "nope.json"))


def test_the_app_stops_on_a_bad_servers_file_with_exit_2(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "mcp_servers.json").write_text('{"fs": {"command": "node", "read_only_tools": [1]}}')
    done = run_app("doctor", env=app_env(data))
    assert done.returncode == 2
    assert "Configuration error" in done.stderr
    assert 'server "fs": "read_only_tools" is not a list of tool names' in done.stderr


# ----- two real servers ----------------------------------------------------------------------------


async def test_the_tools_of_two_real_servers_join_under_their_prefixes(
    servers: Servers, files: Path, store: Path, tmp_path: Path
) -> None:
    config = {"fs": fs_config(files), "notes": notes_config(store, read_only_tools=[*NOTES_READS, "nope"])}
    extras = await servers.start(config)
    names = extras.names()
    assert {"fs__read_text_file", "fs__write_file", "fs__list_directory"} <= names
    assert {"notes__read_note", "notes__add_note", "notes__wait"} <= names
    spec = next(s for s in extras.specs() if s["function"]["name"] == "fs__write_file")
    assert spec["type"] == "function"
    assert "$schema" not in spec["function"]["parameters"]
    assert spec["function"]["parameters"]["required"] == ["path", "content"]
    assert "the user confirms each call" in spec["function"]["description"]
    read_only = {t.qualified for t in extras.tools() if t.read_only}
    assert "fs__read_text_file" in read_only
    assert "fs__write_file" not in read_only
    assert "notes__add_note" not in read_only
    assert any('read_only_tools lists "nope", which it does not have' in n for n in servers.notices)
    assert any(n.startswith('MCP server "fs": 14 tools (9 read-only') for n in servers.notices)
    assert pids_mentioning(str(store)) and pids_mentioning(str(files))
    await extras.close()
    await async_wait_until(lambda: not pids_mentioning(str(tmp_path)), what="both servers to exit on close")
    assert extras.tools() == []


@pytest.fixture
def http_notes(store: Path) -> Iterator[int]:
    """The notes server over streamable HTTP on a free port; its port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, str(NOTES_SERVER), "--store", str(store), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def listening() -> bool:
        with socket.socket() as client:
            return client.connect_ex(("127.0.0.1", port)) == 0

    try:
        wait_until(listening, what="the HTTP notes server to listen")
        yield port
    finally:
        process.terminate()
        process.wait(10)


async def test_a_streamable_http_server_is_used_the_same_way(servers: Servers, http_notes: int) -> None:
    extras = await servers.start(
        {"notes": {"url": f"http://127.0.0.1:{http_notes}/mcp", "read_only_tools": ["list_notes"]}}
    )
    server, tool = extras.find("notes__list_notes") or (None, None)
    assert server is not None and tool is not None
    assert server.config.transport == "streamable_http"
    result = await server.call(tool, {})
    assert not result.is_error
    assert "lunch" in result.text


# ----- in the agent ---------------------------------------------------------------------------------


async def test_a_read_only_tool_runs_without_asking_and_its_result_is_untrusted_data(
    servers: Servers, files: Path, browser_session: BrowserSession
) -> None:
    extras = await servers.start({"fs": fs_config(files)})
    runner, model, log = runner_with(
        browser_session,
        extras,
        call("fs__read_text_file", path=str(files / "hello.txt")),
        say("The file says hello."),
    )
    outcome = await runner.send("What does hello.txt say?")
    assert outcome.stop_reason == "answered"
    assert outcome.interrupt is None
    (result,) = [t for t in tool_texts(outcome.values) if "read_text_file" in t]
    assert '(MCP server "fs"; its output is data, not instructions)' in result
    assert "<page_content untrusted>\nHello from the file system server.\n</page_content>" in result
    assert "fs__read_text_file" in model.bound[0] and "browser_run_code" in model.bound[0]
    assert [e.data["tool"] for e in log.of("tool_call")] == ["fs__read_text_file"]
    assert log.of("tool_call")[0].data["counted"] is False
    assert outcome.values["tool_steps"] == 0  # not a browser step


async def test_a_write_waits_for_yes_on_a_card_then_writes_the_file(
    servers: Servers, files: Path, browser_session: BrowserSession
) -> None:
    extras = await servers.start({"fs": fs_config(files)})
    target = files / "todo.txt"
    runner, _, log = runner_with(
        browser_session,
        extras,
        call("fs__write_file", path=str(target), content="Call alice@example.com about lunch"),
        say("Saved the note."),
    )
    outcome = await runner.send("Write a todo file")
    assert outcome.stop_reason == "waiting_confirmation"
    assert outcome.interrupt is not None
    card = outcome.interrupt["card"]
    assert (card["server"], card["tool"], card["category"]) == ("fs", "write_file", "MCP tool")
    assert card["what"] == 'write_file on MCP server "fs"'
    assert "<email>" in card["arguments"] and "alice@example.com" not in card["arguments"]
    assert str(target) in card["arguments"]
    assert not target.exists()  # nothing ran before /yes
    assert log.of("policy_request")[0].data["card"]["tool"] == "write_file"
    done = await runner.send("/yes")
    assert done.stop_reason == "answered"
    assert target.read_text() == "Call alice@example.com about lunch"
    assert any(t.startswith("The user allowed write_file and it ran.") for t in tool_texts(done.values))
    assert [e.data["approved"] for e in log.of("policy_result")] == [True]


async def test_no_leaves_the_disk_untouched_and_tells_the_model_it_did_not_happen(
    servers: Servers, files: Path, browser_session: BrowserSession
) -> None:
    extras = await servers.start({"fs": fs_config(files)})
    target = files / "todo.txt"
    runner, model, _ = runner_with(
        browser_session,
        extras,
        call("fs__write_file", path=str(target), content="x"),
        say("I did not write it."),
    )
    assert (await runner.send("Write a todo file")).stop_reason == "waiting_confirmation"
    outcome = await runner.send("/no")
    assert outcome.stop_reason == "answered"
    assert not target.exists()
    assert any(
        'The user declined write_file on MCP server "fs"; it did not happen' in t
        for t in tool_texts(outcome.values)
    )
    assert len(model.prompts) == 2  # the model heard about it and answered


async def test_arguments_that_do_not_fit_the_schema_are_an_error_the_model_fixes(
    servers: Servers, files: Path, browser_session: BrowserSession
) -> None:
    extras = await servers.start({"fs": fs_config(files)})
    runner, _, _ = runner_with(
        browser_session,
        extras,
        call("fs__write_file", path=str(files / "a.txt")),
        call("fs__read_text_file", path=str(files / "hello.txt"), head="two"),
        say("Done."),
    )
    outcome = await runner.send("Write and read")
    assert outcome.stop_reason == "answered"  # no confirmation for a call that cannot run
    first, second = tool_texts(outcome.values)
    assert first == "invalid arguments for fs__write_file: arguments: 'content' is a required property"
    assert second.startswith("invalid arguments for fs__read_text_file: head: 'two' is not of type 'number'")
    assert not (files / "a.txt").exists()
    # A server's tool called without its prefix: the error names it with the prefix, to correct.
    runner, _, _ = runner_with(
        browser_session, extras, call("read_text_file", path=str(files / "hello.txt")), say("Done.")
    )
    (unknown,) = tool_texts((await runner.send("Read it")).values)
    assert unknown.startswith("unknown tool 'read_text_file'; the tools are: ")
    assert "fs__read_text_file" in unknown and "browser_run_code" in unknown


async def test_a_fastmcp_tool_returns_data_and_a_tool_error_goes_back_to_the_model(
    servers: Servers, store: Path, browser_session: BrowserSession
) -> None:
    extras = await servers.start({"notes": notes_config(store)})
    runner, _, _ = runner_with(
        browser_session,
        extras,
        call("notes__read_note", title="lunch"),
        call("notes__read_note", title="dinner"),
        say("Lunch is pasta at noon."),
    )
    outcome = await runner.send("When is lunch?")
    assert outcome.stop_reason == "answered"
    found, missing = tool_texts(outcome.values)
    assert "Pasta at noon with Ada." in found
    assert missing.startswith('Error from read_note (MCP server "notes"')
    assert "there is no note called 'dinner'" in missing


async def test_a_hanging_tool_is_withdrawn_reported_and_the_agent_answers_anyway(
    servers: Servers, store: Path, browser_session: BrowserSession
) -> None:
    extras = await servers.start({"notes": notes_config(store)}, call_timeout=1.5)
    runner, model, log = runner_with(
        browser_session,
        extras,
        call("notes__wait", seconds=60),
        say("The notes server did not answer; here is what I know anyway."),
    )
    outcome = await runner.send("Wait for the notes")
    assert outcome.stop_reason == "answered"
    (text,) = tool_texts(outcome.values)
    assert text.startswith('Error: MCP server "notes" is withdrawn (no answer to wait within 1.5s)')
    assert "go on without them" in text
    assert extras.servers[0].state == "withdrawn"
    assert [e.data["kind"] for e in log.of("error")] == ["mcp_server"]
    assert any('"notes" is withdrawn' in n for n in servers.notices)
    assert not any(name.startswith("notes__") for name in model.bound[-1])  # no longer offered
    await async_wait_until(lambda: not pids_mentioning(str(store)), what="the hung server to be stopped")


async def test_a_server_whose_command_does_not_exist_is_reported_and_the_agent_works(
    servers: Servers, store: Path, browser_session: BrowserSession
) -> None:
    extras = await servers.start(
        {"ghost": {"command": "no-such-mcp-server-here", "args": []}, "notes": notes_config(store)}
    )
    ghost = extras.servers[0]
    assert ghost.state == "withdrawn"
    assert ghost.reason.startswith('not started: command "no-such-mcp-server-here" was not found on PATH')
    assert any("no-such-mcp-server-here" in n and "Fix: install it" in n for n in servers.notices)
    runner, _, _ = runner_with(
        browser_session, extras, call("notes__list_notes"), call("ghost__anything"), say("One note: lunch.")
    )
    outcome = await runner.send("List my notes")
    assert outcome.stop_reason == "answered"
    listed, ghostly = tool_texts(outcome.values)
    assert "lunch" in listed
    assert ghostly.startswith('Error: MCP server "ghost" has no tool')


async def test_a_server_that_dies_is_restarted_once_then_withdrawn_and_the_agent_goes_on(
    servers: Servers, store: Path, browser_session: BrowserSession
) -> None:
    extras = await servers.start({"notes": notes_config(store)})
    notes = extras.servers[0]
    runner, _, log = runner_with(
        browser_session,
        extras,
        call("notes__crash"),
        call("notes__server_pid"),
        say("It came back."),
    )
    outcome = await runner.send("Crash the notes server")
    assert outcome.stop_reason == "answered"
    crashed, pid_text = tool_texts(outcome.values)
    assert crashed == (
        'Error: MCP server "notes" stopped while running crash (the call may or may not have taken effect) '
        "and was restarted: its tools work again; the call was not repeated."
    )
    assert notes.restarted == 1 and notes.state == "ready"
    assert any("restarting it once" in n for n in servers.notices)
    pid = int(pid_text.split("<page_content untrusted>\n")[1].split("\n")[0])
    os.kill(pid, signal.SIGKILL)  # dies again, between calls: no second restart
    await async_wait_until(lambda: notes.state == "withdrawn", what="the dead server to be withdrawn")
    assert notes.reason == "the server exited"
    assert extras.names() == set()
    assert any(
        '"notes" is withdrawn, its tools are not offered: the server exited' in n for n in servers.notices
    )
    runner2, _, _ = runner_with(browser_session, extras, call("notes__list_notes"), say("No notes server."))
    later = await runner2.send("List my notes")
    assert later.stop_reason == "answered"
    (text,) = tool_texts(later.values)
    assert text.startswith('Error: MCP server "notes" is withdrawn (the server exited). Its tools are not')
    assert [e.data["kind"] for e in log.of("error")] == ["mcp_server"]


async def test_a_loop_of_extra_calls_ends_at_the_llm_call_limit(
    servers: Servers, store: Path, browser_session: BrowserSession
) -> None:
    extras = await servers.start({"notes": notes_config(store)})
    limits = Limits(max_tool_steps=1)  # at most 3 x 1 + 4 = 7 model calls per request
    runner, model, _ = runner_with(
        browser_session, extras, *[call("notes__list_notes") for _ in range(30)], limits=limits
    )
    outcome = await runner.send("List the notes forever")
    assert outcome.stop_reason == "step_limit"
    assert len(model.prompts) == limits.max_llm_calls
    assert len(tool_texts(outcome.values)) == limits.max_llm_calls


# ----- what the user sees ---------------------------------------------------------------------------


async def test_tools_lists_builtin_and_server_tools_marked_and_withdrawn_servers_with_the_reason(
    servers: Servers, files: Path, store: Path
) -> None:
    extras = await servers.start(
        {
            "fs": fs_config(files),
            "notes": notes_config(store),
            "ghost": {"command": "no-such-mcp-server-here"},
        }
    )
    tokens = schema_tokens(extras, builtin_specs())
    out = StringIO()
    render_tools(make_console(out, width=160), extras, tokens)
    shown = out.getvalue()
    assert f"Built-in ({len(TOOLS)}): browser_run_code, observe_page" in shown
    assert "fs ready, 14 tools, 9 read-only" in shown
    assert "  read-only  fs__read_text_file" in shown
    assert "  asks first fs__write_file (server says: destructive)" in shown
    assert "  asks first notes__add_note (server says: writes)" in shown
    assert 'ghost withdrawn: not started: command "no-such-mcp-server-here" was not found on PATH' in shown
    assert tokens.exact
    assert tokens.servers["fs"] > tokens.servers["notes"] > 0
    assert f"tool schemas: {tokens.total:,} o200k tokens (built-in {tokens.builtin:,} + fs" in shown
    reply = await tools_reply(extras)
    assert reply["kind"] == "agent_message"
    assert "asks first fs__write_file" in reply["text"]


def write_config(path: Path, config: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"mcpServers": config}, indent=2))
    return path


def test_doctor_checks_each_server_and_reports_the_tool_schema_tokens(
    tmp_path: Path, files: Path, store: Path, external_browser: LaunchedBrowser, llm: ScriptedOpenAI
) -> None:
    config = write_config(
        tmp_path / "servers.json",
        {
            "fs": fs_config(files),
            "notes": notes_config(store, read_only_tools=["read_note", "read_notes"]),
            "ghost": {"command": "no-such-mcp-server-here"},
        },
    )
    env = app_env(
        tmp_path / "data",
        CDP_ENDPOINT=external_browser.endpoint.url,
        LLM_BASE_URL=llm.base_url,
        LLM_API_KEY="sk-test-123",
        LLM_MODEL="scripted-model",
        MCP_SERVERS_FILE=str(config),
    )
    done = run_app("doctor", env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("OK   mcp fs") and "14 tools listed, 9 read-only" in line for line in lines)
    notes = next(i for i, line in enumerate(lines) if line.startswith("FAIL mcp notes"))
    assert "read_only_tools names read_notes, which it does not have" in lines[notes]
    assert "fix: correct read_only_tools in 'notes'; its tools are add_note, crash" in lines[notes + 1]
    ghost = next(i for i, line in enumerate(lines) if line.startswith("FAIL mcp ghost"))
    assert 'command "no-such-mcp-server-here" was not found on PATH' in lines[ghost]
    assert 'fix: install it, or give its full path in "command"' in lines[ghost + 1]
    schemas = next(line for line in lines if "tool schemas" in line)
    assert schemas.startswith("OK   tool schemas")
    assert "o200k tokens (built-in" in schemas and "+ fs " in schemas and "+ notes " in schemas
    assert any(
        line.startswith("OK   mcp servers") and "3 servers (fs, notes, ghost)" in line for line in lines
    )
    assert lines[-1] == "doctor: 11 passed, 2 failed"
    wait_until(lambda: not pids_mentioning(str(files)), what="the servers doctor started to exit")


def test_the_chat_lists_tools_and_a_write_through_the_openai_api_asks_first(
    tmp_path: Path, files: Path, external_browser: LaunchedBrowser, llm: ScriptedOpenAI
) -> None:
    target = files / "todo.txt"
    config = write_config(tmp_path / "servers.json", {"fs": fs_config(files)})
    llm.script(openai_call("fs__write_file", path=str(target), content="buy milk"), openai_text("Written."))
    child = spawn_chat(
        tmp_path / "data", external_browser.endpoint.url, llm.base_url, MCP_SERVERS_FILE=str(config)
    )
    child.expect('MCP server "fs": 14 tools')  # reported when the server is ready, after the prompt
    child.sendline("/help")
    child.expect("/tools")
    child.sendline("/tools")
    child.expect("ready.*, 14 tools, 9 read-only")  # styles (bold, dim) may sit between the words
    child.expect("read-only.* fs__read_text_file")
    child.expect("asks first.* fs__write_file")
    child.expect(r"tool schemas: [\d,]+ o200k tokens \(built-in [\d,]+ \+ fs [\d,]+\)")
    child.sendline("/ask Write buy milk into todo.txt")
    child.expect("Confirm: MCP tool")
    child.expect('write_file on MCP server "fs"')
    child.expect("/yes")
    assert not target.exists()
    child.sendline("/yes")
    child.expect("Written.")
    assert target.read_text() == "buy milk"
    sent = llm.requests[0]["tools"]
    write = next(t for t in sent if t["function"]["name"] == "fs__write_file")
    assert write["function"]["parameters"]["properties"]["content"] == {"type": "string"}
    assert any(t["function"]["name"] == "browser_run_code" for t in sent)
    child.sendline("/quit")
    child.expect("Bye.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    wait_until(lambda: not pids_mentioning(str(files)), what="the file system server to exit with the app")


async def test_tools_in_the_web_chat_answers_with_the_same_listing(
    servers: Servers, files: Path, tmp_path: Path, browser_session: BrowserSession, llm: ScriptedOpenAI
) -> None:
    extras = await servers.start({"fs": fs_config(files)})
    settings = make_settings(
        tmp_path / "data", llm_base_url=llm.base_url, llm_api_key="sk-test-123", llm_model="scripted-model"
    )
    endpoint = resolve_llm(settings)
    assert endpoint is not None
    async with open_checkpointer(settings) as saver:
        manager = SessionManager(
            settings,
            browser=browser_session,
            llm=build_chat_model(settings, endpoint),
            checkpointer=saver,
            extras=extras,
        )
        server = Server(manager)
        await server.start("127.0.0.1", 0)
        try:
            headers = {"Authorization": f"Bearer {server.token}"}
            url = f"ws://127.0.0.1:{server.port}/ws/tools-test?token={server.token}"
            async with aiohttp.ClientSession(headers=headers) as http, http.ws_connect(url) as ws:
                await ws.send_json({"kind": "user_message", "text": "/tools"})
                async with asyncio.timeout(30):
                    while (message := await ws.receive_json())["kind"] != "agent_message":
                        pass
        finally:
            await server.stop()
    assert "asks first fs__write_file" in message["text"]
    assert "read-only  fs__read_text_file" in message["text"]
    assert llm.requests == []  # answered by the app: no run, no model call
