"""Long-term memory (F63): a fact the user gives in one session reaches the model in the next; secrets
are never kept (nor, typed into the chat, shown to the model); `/memory` lists, `/forget N` removes.
(What counts as the user's own words, and the "Remember that …?" card: `test_memory_quotes.py`.)

Real stores (SQLite in a temporary data dir; PostgreSQL from `tests/support/postgres.py`), the real
Chromium and MCP server; only the model is scripted."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pexpect
import pytest
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from rich.console import Console

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.memory import (
    MAX_SHOWN,
    NAMESPACE,
    MemoryBook,
    MemoryRefused,
    open_memory,
    prompt_block,
)
from browser_copilot.agent.runner import AgentRunner, compile_graph, new_session_id
from browser_copilot.agent.storage import open_checkpointer
from browser_copilot.browser.launcher import LaunchedBrowser
from browser_copilot.browser.session import BrowserSession
from browser_copilot.config import Settings
from browser_copilot.events import EventLog
from browser_copilot.safety.redaction import find_secrets, mask_secrets
from browser_copilot.safety.seen_secrets import SeenSecrets, digest
from browser_copilot.server.memory import memory_reply
from browser_copilot.ui.chat import ChatApp
from tests.conftest import make_settings
from tests.support.app import files_holding, spawn_chat
from tests.support.openai_server import ScriptedOpenAI
from tests.support.openai_server import call as api_call
from tests.support.openai_server import text as api_text
from tests.support.pages import PageServer
from tests.support.scripted_model import ScriptedModel, call, say

ADA = "The name on bookings is Ada Lovelace."
ADA_SAID = "my name on bookings is Ada Lovelace"


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    """Settings on one backend: SQLite files in the data dir, or a fresh PostgreSQL database."""
    if request.param == "postgres":
        return make_settings(tmp_path / "data", database_url=request.getfixturevalue("postgres_url"))
    return make_settings(tmp_path / "data")


@pytest.fixture
def sqlite_settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path / "data")


@asynccontextmanager
async def app_runner(
    settings: Settings, browser: BrowserSession, *replies: Any
) -> AsyncIterator[tuple[AgentRunner, ScriptedModel, EventLog, MemoryBook | None]]:
    """A runner as the app assembles it (checkpointer and memory opened from settings), a new session;
    leaving closes both, as quitting the app does."""
    model = ScriptedModel(replies=list(replies))
    log = EventLog()
    async with open_checkpointer(settings) as saver, open_memory(settings) as book:
        context = AgentContext(llm=model, browser=browser, events=log, memory=book)
        yield AgentRunner(compile_graph(saver), context, session_id=new_session_id()), model, log, book


def system_text(prompt: list[BaseMessage]) -> str:
    assert isinstance(prompt[0], SystemMessage)
    return str(prompt[0].content)


def tool_texts(values: dict[str, Any]) -> list[str]:
    return [str(m.content) for m in values["messages"] if isinstance(m, ToolMessage)]


# ----- the secret filter ------------------------------------------------------------------------

SECRETS = {
    "my password is hunter2, remember it": "password",
    "My password for example.com is 'correct horse battery'": "password",
    "пароль: qwerty123": "password",
    "Your verification code is 482913": "one-time code",
    "the code is 482913": "one-time code",
    "Pay with 4242 4242 4242 4242": "card number",
    "CVV 123": "CVV",
    "IBAN DE89 3704 0044 0532 0130 00": "IBAN",
    "key=sk-proj-a1b2c3d4e5f6g7h8i9j0": "API key or token",
    "my wifi is admin:S3cret!x": "password",
    "my pin is four two nine one": "password",
    "the code is 482 977": "one-time code",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----": "private key",
}
ORDINARY = [
    ADA,
    "Never use the saved card.",
    "Deliver to 221B Baker Street, London NW1 6XE.",
    "My zip code is 10115.",
    "Call me at +44 20 7946 0958 or write to ann.lee@example.com.",
    "I use a password manager; go to the password reset page.",
    "My card ends in 4242.",
    "Order 1234 5678 9012 3456 costs 1299.00 EUR on 2026-11-26.",
    "Booking reference ABC123, item code 12345.",
    "My profile is https://ada@example.com/ and my order was 482 977.",
    "The score was 4 2 9 1; the PIN pad is on the left.",
]


@pytest.mark.parametrize(("text", "kind"), list(SECRETS.items()))
def test_secrets_are_found_and_withheld_by_kind(text: str, kind: str) -> None:
    masked, kinds = mask_secrets(text)
    assert kinds == [kind]
    assert f"[{kind} withheld]" in masked
    value = text[find_secrets(text)[0].start : find_secrets(text)[0].end]
    assert value not in masked


@pytest.mark.parametrize("text", ORDINARY)
def test_the_users_ordinary_details_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == []
    assert mask_secrets(text) == (text, [])


# ----- the store ------------------------------------------------------------------------------


async def test_facts_are_kept_numbered_by_date_and_forgotten_across_reopening(settings: Settings) -> None:
    async with open_memory(settings) as book:
        assert book is not None
        await book.save(ADA, how="said", quote=ADA_SAID, session="s1")
        await book.save("Never use the saved card.", how="confirmed", session="s1")
        twin = await book.save("the name on bookings is  Ada Lovelace.", how="confirmed")
        assert twin == (await book.all())[0]  # no twin
    async with open_memory(settings) as book:  # another process, the same data dir or database
        assert book is not None
        facts = await book.all()
        assert [(m.n, m.fact, m.session, m.how, m.said) for m in facts] == [
            (1, ADA, "s1", "said", ADA_SAID),
            (2, "Never use the saved card.", "s1", "confirmed", "Never use the saved card."),
        ]
        await book.forget(facts[0])
        assert [(m.n, m.fact) for m in await book.all()] == [(1, "Never use the saved card.")]
        stored = await book.store.asearch(NAMESPACE)
        assert stored[0].value["content"]["text"] == "Never use the saved card."  # langmem's item shape
        assert stored[0].value["content"]["how"] == "confirmed"


@pytest.mark.parametrize(
    "fact",
    [
        "The card to use is 4242 4242 4242 4242.",
        "The login code is 482913.",
        "The user's password is hunter2.",
        "The user said: my password is [password withheld].",
    ],
)
async def test_a_secret_is_refused_and_never_stored(sqlite_settings: Settings, fact: str) -> None:
    async with open_memory(sqlite_settings) as book:
        assert book is not None
        with pytest.raises(MemoryRefused, match="never remembered") as refused:
            await book.save(fact, how="confirmed")
        assert await book.all() == []
    for value in ("4242 4242 4242 4242", "482913", "hunter2"):
        assert value not in str(refused.value)
        assert files_holding(sqlite_settings.data_dir, value) == []


async def test_with_many_facts_the_request_sees_the_best_matches_in_list_order(
    sqlite_settings: Settings,
) -> None:
    async with open_memory(sqlite_settings) as book:
        assert book is not None
        for n in range(MAX_SHOWN + 9):
            await book.save(f"Preference number {n} is about topic{n}.", how="confirmed")
        paris = await book.save(
            "Hotels in Paris: the user wants a quiet room.", how="said", quote="in Paris I want a quiet room"
        )
        shown, total = await book.recall("Find a hotel in Paris for next week")
    assert total == MAX_SHOWN + 10
    assert len(shown) == MAX_SHOWN
    assert paris in shown
    assert [m.n for m in shown] == sorted(m.n for m in shown)
    block = prompt_block([m.note() for m in shown], total)
    day = paris.updated.date().isoformat()
    assert f'{paris.n}. On {day} the user said: "in Paris I want a quiet room"' in block
    assert f"({MAX_SHOWN} of {MAX_SHOWN + 10} shown" in block


async def test_memory_off_opens_no_store(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data", memory=False)
    async with open_memory(settings) as book:
        assert book is None
    assert not (tmp_path / "data" / "memory.sqlite").exists()


# ----- the agent --------------------------------------------------------------------------------


async def test_a_preference_given_in_one_session_is_shown_to_the_model_in_a_new_session(
    settings: Settings, browser_session: BrowserSession, pages: PageServer
) -> None:
    await browser_session.goto(pages.url("index.html"))
    remember = call("remember_about_user", fact=ADA, user_words=ADA_SAID)
    async with app_runner(settings, browser_session, remember, say("Noted: Ada Lovelace.")) as first:
        runner, model, _, _ = first
        outcome = await runner.send("From now on, my name on bookings is Ada Lovelace.")
        assert outcome.stop_reason == "answered"
        assert any(t.startswith("Remembered for later sessions") for t in tool_texts(outcome.values))
        assert "(nothing yet)" in system_text(model.prompts[0])
    async with app_runner(settings, browser_session, say("Booked for Ada Lovelace.")) as second:
        runner, model, _, _ = second
        outcome = await runner.send("Book a table for two tonight")
    assert outcome.text == "Booked for Ada Lovelace."
    system = system_text(model.prompts[0])
    day = outcome.values["memories"][0]["saved"]
    assert f'1. On {day} the user said: "{ADA_SAID}"' in system
    assert outcome.values["memories"][0]["fact"] == ADA


async def test_a_password_typed_into_the_chat_is_withheld_refused_and_not_stored(
    sqlite_settings: Settings, browser_session: BrowserSession, pages: PageServer
) -> None:
    await browser_session.goto(pages.url("index.html"))

    def naive(prompt: list[BaseMessage]) -> AIMessage:
        """A model that remembers whatever the user says, word for word."""
        said = str(prompt[1].content)
        return call("remember_about_user", fact=f"The user said: {said}", user_words=said)

    async with app_runner(sqlite_settings, browser_session, naive, say("I cannot keep that.")) as parts:
        runner, model, log, book = parts
        outcome = await runner.send("my password is hunter2, remember it")
        assert book is not None
        assert await book.all() == []
        values = await runner.values()
    assert outcome.text == "I cannot keep that."
    assert any(t.startswith("Refused, nothing was saved") for t in tool_texts(values))
    assert str(model.prompts[0][1].content) == "my password is [password withheld], remember it"
    assert all("hunter2" not in str(m.content) for prompt in model.prompts for m in prompt)
    assert "hunter2" not in str(values)
    assert "hunter2" not in str([e.data for e in log.events])
    assert any("Withheld from the agent: the password" in e.data["text"] for e in log.of("notice"))
    assert files_holding(sqlite_settings.data_dir, "hunter2") == []


async def test_a_value_a_secret_field_of_the_session_held_is_never_remembered(
    sqlite_settings: Settings, browser_session: BrowserSession, pages: PageServer
) -> None:
    """However the model came by it (a transformed read, a guess), a value the session saw in a password
    field is withheld from a memory call before the call is kept, and the call is refused."""
    await browser_session.goto(pages.url("index.html"))
    kept = browser_session.seen_secrets
    browser_session.seen_secrets = seen = SeenSecrets()
    seen.learn([digest(seen.salt, "plainwordsecret")])
    remember = call(
        "remember_about_user",
        fact="The user's favourite word is plainwordsecret.",
        user_words="my favourite word is plainwordsecret",
    )
    try:
        async with app_runner(sqlite_settings, browser_session, remember, say("Not kept.")) as parts:
            runner, _, log, book = parts
            await runner.send("remember my favourite word")
            assert book is not None
            assert await book.all() == []
            values = await runner.values()
    finally:
        browser_session.seen_secrets = kept
    refused = "Refused, nothing was saved: it holds a secret (password)"
    assert any(t.startswith(refused) for t in tool_texts(values))
    assert "plainwordsecret" not in str(values)
    assert "plainwordsecret" not in str([e.data for e in log.events])
    assert files_holding(sqlite_settings.data_dir, "plainwordsecret") == []


@pytest.mark.parametrize(
    ("fact", "value", "kind"),
    [
        ("The card to use is 4242 4242 4242 4242.", "4242 4242 4242 4242", "card number"),
        ("The login code is 482913.", "482913", "one-time code"),
    ],
)
async def test_a_card_number_or_code_the_model_tries_to_save_is_refused(
    sqlite_settings: Settings, browser_session: BrowserSession, fact: str, value: str, kind: str
) -> None:
    remember = call("remember_about_user", fact=fact, user_words="remember my details")
    async with app_runner(sqlite_settings, browser_session, remember, say("Not kept.")) as parts:
        runner, _, log, book = parts
        await runner.send("Please remember my details")
        assert book is not None
        assert await book.all() == []
        values = await runner.values()
        history = [str(snapshot.values) async for snapshot in runner.graph.aget_state_history(runner.config)]
    refusal = next(t for t in tool_texts(values) if t.startswith("Refused"))
    assert len(history) > 3 and not any(value in h for h in history)  # in no checkpoint, ever
    assert kind in refusal
    assert value not in refusal
    assert value not in str(values["messages"])  # the model's own call is put back without it
    assert value not in str([e.data for e in log.events])


async def test_a_yes_to_the_agents_own_question_is_not_a_statement_the_card_asks_and_yes_keeps_it(
    sqlite_settings: Settings, browser_session: BrowserSession
) -> None:
    ask = call(
        "request_user_confirmation",
        question="Shall I remember 5 New Road, Bath as your delivery address?",
        options=["yes", "no"],
    )
    remember = call("remember_about_user", fact="The delivery address is 5 New Road, Bath.", user_words="yes")
    async with app_runner(sqlite_settings, browser_session, ask, remember, say("Kept.")) as parts:
        runner, _, _, book = parts
        waiting = await runner.send("Send the parcel to 5 New Road, Bath")
        assert waiting.stop_reason == "waiting_user"
        card = await runner.send("yes")  # "yes" states nothing: the words were the agent's
        assert card.stop_reason == "waiting_confirmation"
        assert card.text == "Remember that the delivery address is 5 New Road, Bath?"
        assert book is not None
        assert await book.all() == []
        outcome = await runner.send("/yes")
        assert outcome.text == "Kept."
        assert [(m.fact, m.how) for m in await book.all()] == [
            ("The delivery address is 5 New Road, Bath.", "confirmed")
        ]


async def test_a_corrected_fact_replaces_the_old_one_and_the_model_can_forget_on_request(
    sqlite_settings: Settings, browser_session: BrowserSession
) -> None:
    async with open_memory(sqlite_settings) as book:
        assert book is not None
        await book.save("The delivery address is 1 Old Road, Bath.", how="confirmed")
        await book.save(ADA, how="said", quote=ADA_SAID)
    replace = call(
        "remember_about_user",
        fact="The delivery address is 5 New Road, Bath.",
        user_words="my address is now 5 New Road, Bath",
        replaces=1,
    )
    forget = call("forget_about_user", number=2, user_words="forget the booking name")
    async with app_runner(sqlite_settings, browser_session, replace, say("Updated.")) as parts:
        runner, model, _, book = parts
        await runner.send("I moved: my address is now 5 New Road, Bath")
        assert 'the user confirmed this note: "The delivery address is 1 Old Road, Bath."' in system_text(
            model.prompts[0]
        )
        model.replies.extend([forget, say("Forgotten.")])
        await runner.send("Please forget the booking name")
        assert book is not None
        assert [(m.n, m.fact, m.how, m.said) for m in await book.all()] == [
            (1, "The delivery address is 5 New Road, Bath.", "said", "my address is now 5 New Road, Bath")
        ]


async def test_with_memory_off_the_model_sees_no_memory_and_the_tool_keeps_nothing(
    browser_session: BrowserSession,
) -> None:
    model = ScriptedModel(replies=[call("remember_about_user", fact=ADA, user_words="Ada"), say("Ok.")])
    context = AgentContext(llm=model, browser=browser_session, events=EventLog())
    runner = AgentRunner(compile_graph(InMemorySaver()), context, session_id=new_session_id())
    outcome = await runner.send("I am Ada")
    assert "What you remember" not in system_text(model.prompts[0])
    assert any("Long-term memory is off" in t for t in tool_texts(outcome.values))


# ----- /memory and /forget --------------------------------------------------------------------


async def test_memory_lists_facts_and_forget_removes_one_in_the_chat(
    sqlite_settings: Settings, browser_session: BrowserSession
) -> None:
    out = io.StringIO()
    app = ChatApp(sqlite_settings, Console(file=out, width=120, color_system=None))
    async with open_memory(sqlite_settings) as book:
        assert book is not None
        await book.save(ADA, how="said", quote=ADA_SAID)
        await book.save("Never use the saved card.", how="confirmed")
        context = AgentContext(llm=ScriptedModel(replies=[]), browser=browser_session, memory=book)
        app.runner = AgentRunner(compile_graph(InMemorySaver()), context, session_id="chat")

        async def shown(command: str) -> str:
            out.seek(0)
            out.truncate()
            assert await app.handle(command) is True
            return out.getvalue()

        listing = await shown("/memory")
        day = (await book.all())[0].updated.date().isoformat()
        assert f'1. {day}, you said: "{ADA_SAID}"' in listing
        assert f'2. {day}, you confirmed: "Never use the saved card."' in listing
        assert await shown("/forget 1") == f'Forgot 1: "{ADA_SAID}"\n'
        assert [m.fact for m in await book.all()] == ["Never use the saved card."]
        assert f'1. {day}, you confirmed: "Never use the saved card."' in await shown("/memory")
        assert "There is no fact 7 (1-1)" in await shown("/forget 7")
        assert "/forget N (the number /memory shows)" in await shown("/forget")
        assert await shown("/forget all") == "Forgot all 1 remembered facts.\n"
        assert "Nothing remembered yet." in await shown("/memory")
        assert "/memory" in await shown("/help")
    app.runner = None
    assert "Long-term memory is off" in await shown("/memory")


async def test_memory_and_forget_answer_in_the_web_chat(sqlite_settings: Settings) -> None:
    async with open_memory(sqlite_settings) as book:
        assert book is not None
        kept = await book.save(ADA, how="said", quote=ADA_SAID)
        listed = await memory_reply(book, "/memory", "/memory")
        assert listed["kind"] == "agent_message"
        assert f'1. {kept.updated.date().isoformat()}, you said: "{ADA_SAID}"' in listed["text"]
        forgot = await memory_reply(book, "/forget", "/forget 1")
        assert forgot["text"] == f'Forgot 1: "{ADA_SAID}"'
        assert await book.all() == []
    assert "off" in (await memory_reply(None, "/memory", "/memory"))["text"]


# ----- end to end: the terminal chat ------------------------------------------------------------


def test_the_chat_keeps_a_preference_for_a_new_session_and_never_a_password(
    tmp_path: Path, external_browser: LaunchedBrowser
) -> None:
    data = tmp_path / "data"
    with ScriptedOpenAI(models=["scripted-model"], api_key="sk-test-123") as llm:
        llm.script(
            api_call("remember_about_user", fact=ADA, user_words=ADA_SAID),
            api_text("Noted, Ada."),
            api_text("A table for Ada Lovelace."),
            api_text("I never keep passwords."),
        )
        child = spawn_chat(data, external_browser.endpoint.url, llm.base_url)
        child.sendline("/ask please remember: my name on bookings is Ada Lovelace")
        child.expect("Noted, Ada.")
        child.sendline("/memory")
        child.expect(r'1\. [0-9-]+, you said: "my name on bookings is Ada Lovelace"')
        child.sendline("/new")
        child.expect("New session")
        child.sendline("/ask book a table for two")
        child.expect("A table for Ada Lovelace.")
        child.sendline("/ask my password is hunter2, remember it")
        child.expect("Withheld from the agent")
        child.expect("I never keep passwords.")
        child.sendline("/forget 1")
        child.expect('Forgot 1: "my name on bookings is Ada Lovelace"')
        child.sendline("/quit")
        child.expect("Bye.")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0
        requests = llm.requests
    tools = {tool["function"]["name"] for tool in requests[0]["tools"]}
    assert {"remember_about_user", "forget_about_user"} <= tools
    system = requests[2]["messages"][0]
    assert system["role"] == "system"
    assert f'the user said: "{ADA_SAID}"' in system["content"]
    assert "hunter2" not in str(requests)
    assert files_holding(data, "hunter2") == []  # history file, checkpoints, memory, logs
    assert (data / "history").is_file()
