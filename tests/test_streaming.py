"""The model's reply streams (F62): the real `ChatOpenAI` streaming from a scripted server whose later
chunks wait for the test, a real Chromium and MCP server; the terminal in a real pseudo-terminal."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from langchain_core.messages import AIMessage, AIMessageChunk, ToolCallChunk
from rich.console import Console

from browser_copilot.agent.factory import make_context
from browser_copilot.agent.runner import (
    AgentRunner,
    TurnOutcome,
    compile_graph,
    new_session_id,
)
from browser_copilot.agent.storage import sessions_db, sqlite_checkpointer
from browser_copilot.agent.streaming import AnswerStream, visible
from browser_copilot.browser.launcher import LaunchedBrowser
from browser_copilot.browser.session import BrowserSession
from browser_copilot.events import Event, EventLog
from browser_copilot.llm.provider import build_chat_model, resolve_llm
from browser_copilot.safety.redaction import redact
from browser_copilot.ui.render import EventPrinter
from tests.conftest import make_settings
from tests.support.app import spawn_chat
from tests.support.openai_server import ScriptedOpenAI, call, streamed, text
from tests.support.pages import PageServer
from tests.test_terminal import quit_app


class OpenGate:
    """An event sink that opens `gate` at the first streamed text, noting how much the model had sent."""

    def __init__(self, llm: ScriptedOpenAI, gate: threading.Event) -> None:
        self.llm = llm
        self.gate = gate
        self.log = EventLog()
        self.sent_when_shown: list[str] | None = None

    def __call__(self, event: Event) -> None:
        self.log(event)
        if event.kind == "answer_stream" and self.sent_when_shown is None:
            self.sent_when_shown = list(self.llm.sent)
            self.gate.set()


async def run(
    llm: ScriptedOpenAI, browser: BrowserSession, tmp_path: Path, sink: OpenGate, task: str
) -> TurnOutcome:
    settings = make_settings(
        tmp_path, llm_base_url=llm.base_url, llm_api_key="sk-test-123", llm_model="scripted-model"
    )
    endpoint = resolve_llm(settings)
    assert endpoint is not None
    async with sqlite_checkpointer(sessions_db(settings)) as saver:
        context = make_context(
            settings, llm=build_chat_model(settings, endpoint), browser=browser, events=sink
        )
        runner = AgentRunner(compile_graph(saver), context, session_id=new_session_id())
        return await runner.send(task)


async def test_the_answer_is_shown_while_the_model_is_still_writing_it(
    llm: ScriptedOpenAI, browser_session: BrowserSession, pages: PageServer, tmp_path: Path
) -> None:
    gate = threading.Event()
    pieces = ["The flight search ", "is open: it asks for ", "a destination, ", "then lists the flights."]
    llm.script(
        call("browser_run_code", code=f"async (page) => {{ await page.goto('{pages.url('search.html')}') }}"),
        streamed(*pieces, gate=gate),
    )
    sink = OpenGate(llm, gate)
    outcome = await run(llm, browser_session, tmp_path, sink, "Find the cheapest flight to Riga")
    assert outcome.stop_reason == "answered" and outcome.text == "".join(pieces)
    # The first words reached the user when the model had sent only its first piece.
    assert sink.sent_when_shown == pieces[:1]
    streams = sink.log.of("answer_stream")
    assert streams[0].data["text"] == "The flight search " and not streams[0].data["done"]
    assert streams[-1].data == {"call": 2, "text": "".join(pieces), "done": True, "tool_calls": False}
    assert sink.log.kinds().index("answer_stream") < sink.log.kinds().index("final")
    # The request asked to stream, with usage at the end (stream_usage), and the tokens were counted.
    assert llm.requests[-1]["stream"] is True
    assert llm.requests[-1]["stream_options"] == {"include_usage": True}
    assert sink.log.of("usage")[-1].data == {"prompt_tokens": 100, "completion_tokens": 10}


async def test_a_tool_call_is_not_shown_until_complete_and_a_note_before_it_is_not_the_answer(
    llm: ScriptedOpenAI, browser_session: BrowserSession, pages: PageServer, tmp_path: Path
) -> None:
    gate = threading.Event()
    source = f"async (page) => {{ await page.goto('{pages.url('search.html')}'); return await page.title() }}"
    llm.script(
        streamed("Let me open ", "the flight search.", gate=gate, then=call("browser_run_code", code=source)),
        text("It is the flight search page."),
    )
    sink = OpenGate(llm, gate)
    outcome = await run(llm, browser_session, tmp_path, sink, "What is on the flight search page?")
    assert outcome.text == "It is the flight search page."
    # The arguments came in three pieces; the tool ran once, with the whole code.
    assert llm.sent[:2] == ["Let me open ", "the flight search."]
    assert json.loads("".join(llm.sent[2:5])) == {"code": source}
    calls = sink.log.of("tool_call")
    assert [c.data["args"]["code"] for c in calls if c.data["tool"] == "browser_run_code"] == [source]
    assert sink.log.of("tool_result")[0].data["ok"]
    streams = sink.log.of("answer_stream")
    assert all("page.goto" not in s.data["text"] for s in streams)  # tool arguments never stream
    note = next(s for s in streams if s.data["done"] and s.data["call"] == 1)
    assert note.data == {
        "call": 1,
        "text": "Let me open the flight search.",
        "done": True,
        "tool_calls": True,
    }
    answer = [s for s in streams if s.data["call"] == 2]
    assert answer[-1].data["done"] and not answer[-1].data["tool_calls"]


def chunks(*texts: str) -> list[AIMessageChunk]:
    return [AIMessageChunk(content=t) for t in texts]


def test_a_number_or_word_being_written_waits_so_that_a_secret_is_never_shown_in_part() -> None:
    log = EventLog()
    stream = AnswerStream(log, call=1, interval=0.0)
    for chunk in chunks(
        "Saved card ", "4111 1111", " 1111 1111", " for Ada; key sk-proj-abc", "defghijklmnopqrstu", " ok."
    ):
        stream.add(chunk)
    shown = [e.data["text"] for e in log.events]
    assert shown[0] == "Saved card "
    # Every text shown, redacted as every consumer does, leaks no digit group of the card or part of the key.
    for text_so_far in shown:
        masked = redact(text_so_far)
        assert "4111" not in masked and "sk-proj" not in masked, text_so_far
    assert visible("Total: 1 200") == "Total: "
    assert visible("done. ") == "done. "


def test_a_tool_call_written_as_text_is_not_streamed() -> None:
    log = EventLog()
    stream = AnswerStream(log, call=1, interval=0.0)
    for chunk in chunks('{"name": "observe_page", ', '"arguments": {}} ', "tail "):
        stream.add(chunk)
    stream.add(
        AIMessageChunk(content="", tool_call_chunks=[ToolCallChunk(name="x", args="{}", id="1", index=0)])
    )
    assert log.events == []


def test_events_are_throttled_and_the_last_carries_the_whole_text() -> None:
    now = [0.0]
    log = EventLog()
    stream = AnswerStream(log, call=3, interval=0.1, clock=lambda: now[0])
    for n in range(10):
        stream.add(AIMessageChunk(content=f"word{n} "))
        now[0] += 0.03
    texts = [e.data["text"] for e in log.events]
    assert 3 <= len(texts) <= 4  # 10 chunks in 0.3 s, one event per 0.1 s
    whole = "".join(f"word{n} " for n in range(10))
    stream.finish(AIMessage(content=whole))
    assert log.events[-1].data == {"call": 3, "text": whole, "done": True, "tool_calls": False}


def test_the_terminal_shows_the_streaming_text_above_the_status_line_and_a_note_as_a_step() -> None:
    console = Console(record=True, width=80, height=20, color_system=None)
    printer = EventPrinter(console)
    printer(Event("answer_stream", {"call": 1, "text": "Riga is **cheapest** on", "done": False}))
    console.print(printer)
    region = console.export_text()
    assert "Riga is cheapest on" in region and "writing · step 0/10" in region
    printer(
        Event("answer_stream", {"call": 2, "text": "Checking the page.", "done": True, "tool_calls": True})
    )
    assert "… Checking the page." in console.export_text()
    assert printer.streamed == ""


def test_ctrl_c_while_the_answer_streams_cancels_keeps_what_was_shown_and_the_session_goes_on(
    tmp_path: Path, external_browser: LaunchedBrowser, llm: ScriptedOpenAI
) -> None:
    gate = threading.Event()  # never opened: the model "hangs" after its first words
    llm.script(
        streamed("Here is what I found so far: ", "the rest never comes.", gate=gate),
        text("Picked up again."),
    )
    child = spawn_chat(tmp_path / "data", external_browser.endpoint.url, llm.base_url)
    child.sendline("/ask Summarise what you know")
    child.expect("Here is what I found so far")  # streamed into the live region
    assert not gate.is_set() and llm.sent == ["Here is what I found so far: "]
    child.sendintr()
    child.expect("Cancelled.")
    assert "Here is what I found so far" in child.before  # the partial answer is kept on screen
    child.expect("› ")
    child.sendline("/ask go on")
    child.expect("Picked up again.")
    quit_app(child)
