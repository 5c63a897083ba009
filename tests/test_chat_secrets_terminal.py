"""Secrets typed into the terminal chat (a real pseudo-terminal, the real `ChatOpenAI` against the scripted
OpenAI-compatible server, a real Chromium and MCP server): a bare code typed as the answer to the agent's
own hand-over, and credentials in the usual shapes, never reach the model or any file of the data dir."""

from __future__ import annotations

import json
from pathlib import Path

import pexpect

from browser_copilot.browser.launcher import LaunchedBrowser
from tests.support.app import files_holding, spawn_chat
from tests.support.openai_server import ScriptedOpenAI, call, text
from tests.support.processes import pids_mentioning
from tests.support.waiting import wait_until

CODE = "482977"
SHAPED = ["Tr0ub4dor-BRAVO-99", "Tr0ub4dor-ECHO-77"]
ORDER = "730154"
"""The same kind of bare number, answering a question for an order number: it must reach the model."""


def test_a_code_answering_the_agents_hand_over_and_shaped_credentials_never_leave_the_terminal(
    tmp_path: Path, external_browser: LaunchedBrowser, llm: ScriptedOpenAI
) -> None:
    llm.script(
        call("hand_over", what="Your bank sent a code by SMS: type it into the page, then tell me."),
        text("What is the order number of the parcel?"),
        text("Noted the order number."),
        text("Noted your login."),
        text("Noted."),
    )
    data = tmp_path / "data"
    child = spawn_chat(data, external_browser.endpoint.url, llm.base_url)
    child.sendline("/chat")
    child.expect("Chat mode")
    child.sendline("Log in to my bank")
    child.expect("Your turn in the browser")
    child.expect("chat › ")
    child.sendline(CODE)  # typed here instead of into the page
    child.expect("Withheld from the agent: the one-time code")
    child.expect("order number of the parcel")
    child.expect("chat › ")
    child.sendline(ORDER)
    child.expect("Noted the order number.")
    child.expect("chat › ")
    child.sendline(f"my bank login is alice / {SHAPED[0]}")
    child.expect("Withheld from the agent: the password")
    child.expect("Noted your login.")
    child.expect("chat › ")
    child.sendline(f"{SHAPED[1]} is the password")
    child.expect("Noted.")
    child.expect("chat › ")
    child.sendline("/quit")
    child.expect("Bye.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    wait_until(lambda: not pids_mentioning(str(data)), what="the MCP server to exit")

    sent = json.dumps(llm.requests, ensure_ascii=False)
    for secret in (CODE, *SHAPED):
        assert secret not in sent
        assert files_holding(data, secret) == [], secret
    # The hand-over went on with the answer withheld; the ordinary answer and the user name went through.
    assert "The user says: [one-time code withheld]" in sent
    assert "my bank login is alice / [password withheld]" in sent
    assert "[password withheld] is the password" in sent
    assert ORDER in sent
    assert files_holding(data, ORDER)  # the checkpoint holds it: the search above reads the right files
    assert (data / "history").is_file() and (data / "logs").is_dir()
