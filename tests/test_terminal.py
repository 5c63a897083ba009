"""The chat in a real pseudo-terminal (pexpect), against a scripted OpenAI-compatible server, a real
Chromium and the real MCP server: modes, live progress, a confirmation, Ctrl+C, resuming a session."""

from __future__ import annotations

from pathlib import Path

import pexpect

from browser_copilot.browser.launcher import LaunchedBrowser
from tests.support.app import spawn_chat
from tests.support.openai_server import ScriptedOpenAI, call, text
from tests.support.pages import PageServer
from tests.support.processes import alive, pids_mentioning
from tests.support.waiting import wait_until


def spawn(data_dir: Path, browser: LaunchedBrowser, llm: ScriptedOpenAI) -> pexpect.spawn:
    return spawn_chat(data_dir, browser.endpoint.url, llm.base_url)


def quit_app(child: pexpect.spawn) -> None:
    child.sendline("/quit")
    child.expect("Bye.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_a_chat_task_with_a_confirmation_from_start_to_quit(
    tmp_path: Path, external_browser: LaunchedBrowser, llm: ScriptedOpenAI, pages: PageServer
) -> None:
    llm.script(
        call(
            "update_working_state",
            current_goal="Email Alice about lunch",
            plan=["Open the mail", "Write the message", "Answer the user"],
        ),
        call("browser_run_code", code=f"async (page) => {{ await page.goto('{pages.url('mail.html')}') }}"),
        call(
            "browser_run_code",
            code="async (page) => { await page.getByLabel('To').fill('alice@example.test') }",
        ),
        call(
            "browser_run_code",
            code="async (page) => { await page.getByRole('button', { name: 'Send' }).click() }",
        ),
        call("update_working_state", progress={"current": 3, "done": [1, 2]}),
        text("Sent the message to Alice."),
    )
    child = spawn(tmp_path / "data", external_browser, llm)
    assert "Model" in child.before
    child.sendline("/chat")
    child.expect("Chat mode")
    child.sendline("Email Alice about lunch")
    # Live progress in plain words (styles may sit around the marks).
    child.expect(r"1 \S*✓\S* Opened 127\.0\.0\.1:\d+/mail\.html")
    child.expect(r"2 \S*✓\S* Typed “<email>” into “To”")  # what was typed, redacted like every stream
    child.expect("Stopped before the button “Send”: it needs your confirmation")
    child.expect("Confirm: send")
    child.expect('button "Send"')
    child.expect("/yes")
    child.expect("› ")
    child.sendline("/yes")
    child.expect("Sent the message to Alice.")
    child.expect("chat › ")
    child.sendline("/exit")
    child.expect("Left chat mode.")
    child.sendline("/plan")
    child.expect("Email Alice about lunch")
    child.sendline("/status")
    child.expect("success rate")
    child.expect("100%")
    child.expect(r"confinement os \(bubblewrap \+ Node permission model on\)")
    child.expect("not confined")
    quit_app(child)
    assert alive(external_browser.pid)
    wait_until(lambda: not pids_mentioning(str(tmp_path / "data")), what="the MCP server to exit")


def test_ctrl_c_cancels_a_run_and_the_session_continues_after_a_restart(
    tmp_path: Path, external_browser: LaunchedBrowser, llm: ScriptedOpenAI, pages: PageServer
) -> None:
    llm.script(
        call(
            "update_working_state",
            current_goal="Wait for the slow page",
            plan=["Wait", "Look", "Answer the user"],
        ),
        call("browser_run_code", code="async (page) => { await page.waitForTimeout(4000) }"),
        text("Done waiting now."),
    )
    child = spawn(tmp_path / "data", external_browser, llm)
    child.sendline("/ask Wait for the slow page")
    child.expect("waiting 4 s · step 1/10")  # the status line says what happens, in words
    child.sendintr()
    child.expect(r"1 \S*✗\S* Cancelled while waiting 4 s")
    child.expect("Cancelled.")
    child.expect("› ")
    child.sendline("/status")
    child.expect("Wait for the slow page")
    quit_app(child)
    assert alive(external_browser.pid)

    again = spawn(tmp_path / "data", external_browser, llm)
    assert "resuming" in again.before
    assert "Wait for the slow page" in again.before
    again.sendline("/ask go on")
    again.expect("Done waiting now.")
    again.sendline("/plan")
    again.expect("Goal.*Wait for the slow page")  # the cancelled request's goal continued
    quit_app(again)


def test_history_persists_and_ctrl_c_at_the_prompt_leaves(
    tmp_path: Path, external_browser: LaunchedBrowser, llm: ScriptedOpenAI
) -> None:
    child = spawn(tmp_path / "data", external_browser, llm)
    child.sendline("/tabs")
    child.expect("› ")
    quit_app(child)
    again = spawn(tmp_path / "data", external_browser, llm)
    again.send("\x1b[A")  # arrow up: the previous run's last command
    again.expect("/quit")
    again.send("\x1b[A")
    again.expect("tabs")  # readline redraws only what differs from "/quit"
    again.sendintr()
    again.expect(pexpect.EOF)
    again.close()
    assert again.exitstatus == 130
    assert alive(external_browser.pid)
    wait_until(lambda: not pids_mentioning(str(tmp_path / "data")), what="the MCP server to exit")


def test_ctrl_d_at_the_prompt_leaves(
    tmp_path: Path, external_browser: LaunchedBrowser, llm: ScriptedOpenAI
) -> None:
    child = spawn(tmp_path / "data", external_browser, llm)
    child.sendline("/nonsense")
    child.expect("Unknown command /nonsense")
    child.expect("› ")  # the prompt is back: ^D now reaches the line editor, not the tty's cooked mode
    child.sendeof()
    child.expect("Bye.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_multi_line_messages_arrive_as_one(
    tmp_path: Path, external_browser: LaunchedBrowser, llm: ScriptedOpenAI
) -> None:
    llm.script(text("Got both lines."), text("Got the paste."))
    child = spawn(tmp_path / "data", external_browser, llm)
    child.sendline("/chat")
    child.expect("Chat mode")
    child.sendline("first line \\")
    child.sendline("second line")
    child.expect("Got both lines.")
    child.send("\x1b[200~pasted one\npasted two\x1b[201~\r")  # a bracketed paste, as terminals send it
    child.expect("Got the paste.")
    quit_app(child)
    users = [m["content"] for r in llm.requests for m in r["messages"] if m["role"] == "user"]
    assert any("first line \nsecond line" in u or "first line\nsecond line" in u for u in users)
    assert any("pasted one\npasted two" in u for u in users)


def test_a_sentence_typed_in_command_mode_is_offered_to_the_agent_and_sent_with_one_key(
    tmp_path: Path, external_browser: LaunchedBrowser, llm: ScriptedOpenAI
) -> None:
    llm.script(text("Hello there."), text("Still here, in chat mode."))
    child = spawn(tmp_path / "data", external_browser, llm)
    child.sendline("Say hello to me")
    child.expect(r"Send this to the agent\?\S* \S*Enter\S* sends it")
    child.send("\r")  # one key: no second line to type
    child.expect("Hello there.")
    child.expect("› ")
    child.sendline("Never mind this one")
    child.expect("Send this to the agent\\?")
    child.send("\x1b")  # Esc: kept here
    child.expect("Not sent.")
    child.expect("› ")
    assert [m["content"] for r in llm.requests for m in r["messages"] if m["role"] == "user"].count(
        "Never mind this one"
    ) == 0
    # A command in chat mode leaves it, says so and how to go back; a sentence is then offered again,
    # and "c" sends it and goes back to chat mode.
    child.sendline("/chat")
    child.expect("Chat mode")
    child.expect("chat › ")
    child.sendline("/tabs")
    child.expect("Left chat mode")
    child.expect("/chat goes back")
    child.expect("› ")
    child.sendline("Are you still there?")
    child.expect("Send this to the agent\\?")
    child.send("c")
    child.expect("Chat mode")
    child.expect("Still here, in chat mode.")
    child.expect("chat › ")
    quit_app(child)
    users = [m["content"] for r in llm.requests for m in r["messages"] if m["role"] == "user"]
    assert any("Say hello to me" in u for u in users) and any("Are you still there?" in u for u in users)
    assert not any("Never mind this one" in u for u in users)


def test_tab_completes_slash_commands(
    tmp_path: Path, external_browser: LaunchedBrowser, llm: ScriptedOpenAI
) -> None:
    child = spawn(tmp_path / "data", external_browser, llm)
    child.send("/sta\t")
    child.expect("/status")  # completed in the line being edited
    child.send("\r")
    child.expect("success rate")
    child.expect("› ")
    child.send("/he\t\r")
    child.expect("Commands")
    child.expect("Tab completes a command")
    child.expect("› ")
    quit_app(child)
