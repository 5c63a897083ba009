"""The agent graph with a scripted model, a real Chromium and the real MCP server."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from browser_copilot.agent.context import AgentContext, Limits
from browser_copilot.agent.graph import mermaid
from browser_copilot.agent.runner import AgentRunner, compile_graph, new_session_id
from browser_copilot.agent.storage import sqlite_checkpointer
from browser_copilot.browser.session import BrowserSession
from browser_copilot.events import EventLog
from tests.support.pages import PageServer
from tests.support.scripted_model import ScriptedModel, call, code, goto, say

SNAPSHOT = Path(__file__).parent / "snapshots" / "graph.mmd"

MakeRunner = Callable[..., tuple[AgentRunner, ScriptedModel, EventLog]]


@pytest.fixture
def make_runner(browser_session: BrowserSession) -> MakeRunner:
    def make(
        *replies: Any,
        limits: Limits | None = None,
        graph: Any = None,
        summarizer: ScriptedModel | None = None,
        session_id: str | None = None,
    ) -> tuple[AgentRunner, ScriptedModel, EventLog]:
        model = ScriptedModel(replies=list(replies))
        log = EventLog()
        context = AgentContext(
            llm=model, browser=browser_session, limits=limits or Limits(), events=log, summarizer=summarizer
        )
        runner = AgentRunner(
            graph or compile_graph(InMemorySaver()), context, session_id=session_id or new_session_id()
        )
        return runner, model, log

    return make


def nodes(log: EventLog) -> list[str]:
    return [e.data["node"] for e in log.of("node")]


def tool_texts(values: dict[str, Any]) -> list[str]:
    return [str(m.content) for m in values["messages"] if isinstance(m, ToolMessage)]


def feedback_texts(values: dict[str, Any]) -> list[str]:
    return [
        str(m.content)
        for m in values["messages"]
        if isinstance(m, HumanMessage) and str(m.content).startswith("[Browser Copilot]")
    ]


async def page_value(session: BrowserSession, expression: str) -> Any:
    return (
        await session.run_code(f"async (page) => await page.evaluate(() => {expression})", idempotent=True)
    ).value


def test_the_graph_drawing_matches_the_snapshot() -> None:
    drawing = mermaid()
    if not SNAPSHOT.exists():  # first run writes it; review and commit it
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(drawing)
    assert drawing == SNAPSHOT.read_text()
    for node in (
        "agent",
        "tools",
        "critical_action_validator",
        "goal_validator",
        "progress_analyzer",
        "strategy_adapter",
        "quality_evaluator",
        "self_corrector",
        "human_in_loop",
        "progress_reporter",
        "memory_manager",
        "observe",
    ):
        assert f"\t{node}({node})" in drawing
    assert drawing.count("-->") == 1  # only START -> agent is a static edge


async def test_a_task_is_observed_acted_on_and_answered(make_runner: MakeRunner, pages: PageServer) -> None:
    runner, model, log = make_runner(
        call(
            "update_working_state",
            current_goal="Say hello",
            plan=["Open the home page", "Click hello", "Answer"],
        ),
        goto(pages.url("index.html")),
        code("async (page) => { await el(1).click(); return await page.locator('#out').textContent() }"),
        call("update_working_state", progress={"current": 3, "done": [1, 2]}),
        say("The page now says “clicked”."),
    )
    outcome = await runner.send("Click the hello button and tell me what the page says")
    assert outcome.stop_reason == "answered"
    assert outcome.text == "The page now says “clicked”."
    assert "Returned:\n<page_content untrusted>\nclicked\n</page_content>" in tool_texts(outcome.values)
    path = nodes(log)
    assert path[:4] == ["agent", "observe", "agent", "critical_action_validator"]
    assert path[-3:] == ["goal_validator", "quality_evaluator", "progress_reporter"]
    assert outcome.values["progress"]["done"] == [1, 2, 3]
    # The model saw the page as delimited, numbered data after its action.
    last_prompt = model.prompts[-1]
    assert isinstance(last_prompt[0], SystemMessage)
    # The working state changes every step: it comes last, with the page, not in the system prompt.
    assert "Goal: Say hello" not in str(last_prompt[0].content)
    page_view = str(last_prompt[-1].content)
    assert page_view.index("Goal: Say hello") < page_view.index("<page_content untrusted>")
    assert '[1] button "Say hello"' in page_view
    # The prefix (system prompt + history) of one step is the start of the next step's prompt.
    for before, after in itertools.pairwise(model.prompts):
        assert [m.content for m in after[: len(before) - 1]] == [m.content for m in before[:-1]]


async def test_a_destructive_click_waits_for_yes_and_runs_exactly_once(
    make_runner: MakeRunner, pages: PageServer, browser_session: BrowserSession
) -> None:
    runner, _, log = make_runner(
        goto(pages.url("checkout.html")),
        code("async (page) => { await el(2).click() }"),
        say("Your order is placed."),
    )
    outcome = await runner.send("Place my order")
    assert outcome.stop_reason == "waiting_confirmation"
    assert outcome.interrupt is not None
    card = outcome.interrupt["card"]
    assert card["what"] == 'button "Place order"'
    assert card["site"].startswith("127.0.0.1:")
    assert card["category"] == "order"
    assert await page_value(browser_session, "window.__ordered ?? 0") == 0  # nothing ran before /yes
    assert outcome.values["pending_kind"] == "confirm"
    done = await runner.send("/yes")
    assert done.stop_reason == "answered"
    assert await page_value(browser_session, "window.__ordered ?? 0") == 1
    assert [e.data["approved"] for e in log.of("policy_result")] == [True]


async def test_no_drops_the_action_and_the_model_is_told(
    make_runner: MakeRunner, pages: PageServer, browser_session: BrowserSession
) -> None:
    runner, _, _ = make_runner(
        goto(pages.url("checkout.html")),
        code("async (page) => { await page.getByRole('button', { name: 'Place order' }).click() }"),
        say("I did not place the order, as you asked."),
    )
    assert (await runner.send("Place my order")).stop_reason == "waiting_confirmation"
    outcome = await runner.send("/no")
    assert outcome.stop_reason == "answered"
    assert await page_value(browser_session, "window.__ordered ?? 0") == 0
    assert any(
        'The user declined button "Place order"; it did not happen' in t
        for t in feedback_texts(outcome.values)
    )
    assert outcome.values["pending_action"] is None


async def test_a_yes_with_more_words_allows_once_and_the_rest_reaches_the_model(
    make_runner: MakeRunner, pages: PageServer, browser_session: BrowserSession
) -> None:
    runner, model, _ = make_runner(
        goto(pages.url("checkout.html")),
        code("async (page) => { await el(2).click() }"),
        say("Placed; the total was on the card."),
    )
    assert (await runner.send("Place my order")).stop_reason == "waiting_confirmation"
    done = await runner.send("yes, but first tell me the total")
    assert done.stop_reason == "answered"
    assert await page_value(browser_session, "window.__ordered ?? 0") == 1
    assert 'The user also said: "but first tell me the total"' in str(model.prompts[-1])


async def test_a_no_with_more_words_refuses_and_the_rest_reaches_the_model(
    make_runner: MakeRunner, pages: PageServer, browser_session: BrowserSession
) -> None:
    runner, model, _ = make_runner(
        goto(pages.url("checkout.html")),
        code("async (page) => { await page.getByRole('button', { name: 'Place order' }).click() }"),
        say("I did not place it; shall I switch to cash on delivery?"),
    )
    assert (await runner.send("Place my order")).stop_reason == "waiting_confirmation"
    done = await runner.send("no, switch to cash on delivery first")
    assert done.stop_reason == "answered"
    assert await page_value(browser_session, "window.__ordered ?? 0") == 0
    assert 'The user also said: "switch to cash on delivery first"' in str(model.prompts[-1])


async def test_the_step_limit_stops_with_a_summary_and_the_next_message_continues(
    make_runner: MakeRunner, pages: PageServer
) -> None:
    runner, model, _ = make_runner(
        call(
            "update_working_state",
            current_goal="Read both pages",
            plan=["Read home", "Read second", "Answer"],
        ),
        goto(pages.url("index.html")),
        goto(pages.url("second.html")),
        # after "go on":
        code("async (page) => await page.title()"),
        call("update_working_state", progress={"current": 3, "done": [1, 2]}),
        say("Both pages read: “Test bed home” and “Second page”."),
        limits=Limits(max_tool_steps=2),
    )
    stopped = await runner.send("Read the titles of both pages")
    assert stopped.stop_reason == "step_limit"
    # The app wrote the summary, not the model: no model call after the limit, nothing to bounce.
    assert len(model.prompts) == 3
    assert "I have not finished: I used all 2 browser actions" in stopped.text
    assert "Shall I continue?" in stopped.text
    assert "Suggested next step: Read home." in stopped.text
    assert stopped.values["tool_steps"] == 2
    resumed = await runner.send("go on")
    assert resumed.stop_reason == "answered"
    assert resumed.values["current_goal"] == "Read both pages"
    assert resumed.values["tool_steps"] == 1
    # The same tab: the page the run stopped on is where it went on.
    assert "Second page" in str(model.prompts[3][-1].content)


async def test_a_plan_finished_at_the_limit_is_still_answered_by_the_model(
    make_runner: MakeRunner, pages: PageServer
) -> None:
    last_step = goto(pages.url("index.html"))
    marked = call("update_working_state", progress={"current": 3, "done": [1, 2]})
    runner, _, _ = make_runner(
        call(
            "update_working_state", current_goal="Read home", plan=["Open home", "Read its title", "Answer"]
        ),
        # The last allowed action and the plan item it finishes, in one turn.
        AIMessage(content="", tool_calls=[*last_step.tool_calls, *marked.tool_calls]),
        say("The home page is “Test bed home”."),
        limits=Limits(max_tool_steps=1),
    )
    outcome = await runner.send("Read the home page title")
    assert outcome.stop_reason == "answered"
    assert outcome.text == "The home page is “Test bed home”."


async def test_the_same_failure_three_times_changes_strategy_then_stops_honestly(
    make_runner: MakeRunner, pages: PageServer
) -> None:
    failing = code("async (page) => { throw new Error('the Buy button is greyed out') }")
    runner, _, log = make_runner(goto(pages.url("index.html")), *[failing] * 6, say("unused"))
    outcome = await runner.send("Buy it")
    assert outcome.stop_reason == "loop_detected"
    assert nodes(log).count("strategy_adapter") == 2
    assert any("You seem to be stuck" in t for t in feedback_texts(outcome.values))
    assert outcome.text.startswith("I have not finished: I was going in circles")


async def test_different_targets_failing_are_not_a_loop(make_runner: MakeRunner, pages: PageServer) -> None:
    replies = [
        code(f"async (page) => {{ throw new Error('no {name}') }}") for name in ("cart", "menu", "help")
    ]
    runner, _, log = make_runner(goto(pages.url("index.html")), *replies, say("None of them worked."))
    outcome = await runner.send("Try three things")
    assert outcome.stop_reason == "answered"
    assert "strategy_adapter" not in nodes(log)


async def test_a_stale_element_number_goes_to_self_correction(
    make_runner: MakeRunner, pages: PageServer
) -> None:
    runner, _, log = make_runner(
        goto(pages.url("index.html")),
        code("async (page) => { await el(42).click({ timeout: 300 }) }"),
        code("async (page) => { await el(1).click() }"),
        say("Clicked the hello button."),
    )
    outcome = await runner.send("Click hello")
    assert outcome.stop_reason == "answered"
    assert "self_corrector" in nodes(log)
    notes = feedback_texts(outcome.values)
    assert any("I looked again" in n and "Use the numbers of the new observation" in n for n in notes)


async def test_an_unchanged_page_after_actions_counts_as_stuck(
    make_runner: MakeRunner, pages: PageServer
) -> None:
    click_heading = code("async (page) => { await page.locator('h1').click() }")
    runner, _, log = make_runner(
        goto(pages.url("index.html")),
        click_heading,
        click_heading,
        say("Nothing happens."),
        limits=Limits(unchanged_limit=2),
    )
    outcome = await runner.send("Click the heading")
    assert "strategy_adapter" in nodes(log)
    assert any("left the page exactly as it was" in n for n in feedback_texts(outcome.values))


async def test_a_stuck_plan_item_on_an_unchanging_page_gets_a_nudge(
    make_runner: MakeRunner, pages: PageServer
) -> None:
    poke = code("async (page) => { await page.mouse.click(2, 2) }")  # acts, changes nothing
    runner, _, log = make_runner(
        call("update_working_state", plan=["Open", "Read", "Compare", "Answer"]),
        goto(pages.url("index.html")),
        poke,
        poke,
        poke,
        call("update_working_state", progress={"current": 4, "done": [1, 2, 3]}),
        say("Done reading: Test bed home."),
        limits=Limits(progress_every=2, unchanged_limit=9),
    )
    outcome = await runner.send("Read the title")
    assert "progress_analyzer" in nodes(log)
    assert any("since the last plan item was finished" in n for n in feedback_texts(outcome.values))
    assert log.of("progress")


async def test_a_plan_whose_page_keeps_changing_is_not_nudged(
    make_runner: MakeRunner, pages: PageServer
) -> None:
    runner, _, log = make_runner(
        call("update_working_state", plan=["Open", "Read", "Compare", "Answer"]),
        goto(pages.url("index.html")),
        goto(pages.url("second.html")),
        goto(pages.url("results.html")),
        goto(pages.url("search.html")),
        say("Read four pages."),
        limits=Limits(progress_every=2),
    )
    outcome = await runner.send("Read the pages")
    assert "progress_analyzer" in nodes(log)
    assert not any("since the last plan item was finished" in n for n in feedback_texts(outcome.values))


async def test_a_final_answer_closes_the_open_plan_items_without_a_bounce(
    make_runner: MakeRunner, pages: PageServer
) -> None:
    runner, model, _ = make_runner(
        call("update_working_state", plan=["Open the page", "Read the title", "Answer"]),
        goto(pages.url("index.html")),
        say("I opened the page; its title is Test bed home."),
    )
    outcome = await runner.send("Open the home page and read its title")
    assert outcome.stop_reason == "answered"
    assert outcome.text == "I opened the page; its title is Test bed home."
    assert outcome.values["progress"]["done"] == [1, 2, 3]
    assert len(model.prompts) == 3
    assert feedback_texts(outcome.values) == []


async def test_figures_nobody_observed_are_sent_back(make_runner: MakeRunner, pages: PageServer) -> None:
    runner, _, _ = make_runner(
        goto(pages.url("results.html")),
        say("The cheapest flight is Ryanair at €39."),
        say("The cheapest flight is Ryanair at €45."),
    )
    outcome = await runner.send("Which flight is cheapest?")
    assert outcome.stop_reason == "answered"
    assert any(
        "These figures in your answer do not appear" in n and "39" in n
        for n in feedback_texts(outcome.values)
    )
    assert outcome.text == "The cheapest flight is Ryanair at €45."


async def test_a_textual_tool_call_is_executed(make_runner: MakeRunner, pages: PageServer) -> None:
    runner, _, _ = make_runner(
        say('function_call: name=browser_run_code args={"code": "async (page) => 6 * 7"}'),
        say("The answer is 42."),
    )
    outcome = await runner.send("Compute in the page")
    assert "Returned: 42" in tool_texts(outcome.values)
    assert outcome.stop_reason == "answered"


async def test_malformed_calls_are_corrected_and_stop_after_three(make_runner: MakeRunner) -> None:
    broken = say('function_call: name=browser_run_code args={"code": ')
    runner, _, _ = make_runner(broken, broken, broken, say("unused"))
    outcome = await runner.send("Do something")
    assert outcome.stop_reason == "error"
    assert outcome.values["invalid_actions"] == 3
    assert any("could not be used" in n for n in feedback_texts(outcome.values))


async def test_a_question_to_the_user_waits_for_the_answer(make_runner: MakeRunner) -> None:
    runner, _, _ = make_runner(
        call(
            "request_user_confirmation", question="Which tab should I use?", options=["0: Inbox", "1: Shop"]
        ),
        say("Using the shop tab."),
    )
    waiting = await runner.send("Check my cart")
    assert waiting.stop_reason == "waiting_user"
    assert waiting.interrupt is not None
    assert waiting.interrupt["options"] == ["0: Inbox", "1: Shop"]
    answered = await runner.send("the shop one")
    assert "The user answered: the shop one" in tool_texts(answered.values)
    assert answered.stop_reason == "answered"


async def test_a_held_click_and_its_confirm_dialog_need_one_yes(
    make_runner: MakeRunner, pages: PageServer, browser_session: BrowserSession
) -> None:
    runner, _, _ = make_runner(
        goto(pages.url("admin.html")),
        code("async (page) => { await page.locator('#u2 button').click() }"),
        call("handle_dialog", accept=True),
        say("Deleted bob."),
    )
    waiting = await runner.send("Delete the user bob")
    # The click was reached by a CSS selector: the in-page guard held it.
    assert waiting.stop_reason == "waiting_confirmation"
    assert waiting.interrupt is not None
    assert waiting.interrupt["card"]["what"] == 'button "Delete"'
    assert any(t.startswith("Held for the user's confirmation") for t in tool_texts(waiting.values))
    assert await page_value(browser_session, "document.querySelectorAll('#u2').length") == 1
    assert waiting.interrupt["card"]["site"].startswith("127.0.0.1:")
    # /yes replays the click once; the site's own confirm() for that same deletion needs no second /yes.
    done = await runner.send("/yes")
    assert done.stop_reason == "answered", done.interrupt
    assert await page_value(browser_session, "document.querySelectorAll('#u2').length") == 0


async def test_a_new_tab_opened_by_an_action_is_reported(
    make_runner: MakeRunner, pages: PageServer, browser_session: BrowserSession
) -> None:
    runner, model, _ = make_runner(
        goto(pages.url("popup.html")),
        code(
            "async (page) => { await Promise.all([page.context().waitForEvent('page'),"
            " page.getByRole('link', { name: 'Open second page in a new tab' }).click()]) }"
        ),
        say("A new tab opened."),
    )
    outcome = await runner.send("Open the link")
    reported = [*tool_texts(outcome.values), str(model.prompts[-1][-1].content)]
    assert any(
        ("A new tab opened:" in t or "New tab since your last action:" in t) and "second.html" in t
        for t in reported
    )
    await browser_session.run_code(
        "async (page) => { for (const p of page.context().pages())"
        " if (p.url().endsWith('second.html')) await p.close() }"
    )


async def test_summarisation_keeps_the_current_question(make_runner: MakeRunner) -> None:
    summarizer = ScriptedModel(replies=[say("The user asked about blue mugs earlier; they cost $12.")])
    runner, model, _ = make_runner(
        say("Blue mugs cost $12. " + "More detail. " * 150),
        say("Tea costs $24.50."),
        limits=Limits(memory_max_tokens=300),
        summarizer=summarizer,
    )
    await runner.send("How much is a blue mug? " + "Please be thorough. " * 60)
    outcome = await runner.send("And how much is the tea sampler?")
    assert outcome.text == "Tea costs $24.50."
    summarised = " ".join(str(m.content) for m in summarizer.prompts[0])
    assert "How much is a blue mug?" in summarised
    last = model.prompts[-1]
    assert "Summary of the earlier conversation:\nThe user asked about blue mugs" in str(last[0].content)
    questions = [str(m.content) for m in last if isinstance(m, HumanMessage)]
    assert any(q == "And how much is the tea sampler?" for q in questions)
    assert not any(q.startswith("How much is a blue mug?") for q in questions)


async def test_a_restart_with_the_sqlite_checkpointer_keeps_the_working_state(
    make_runner: MakeRunner, tmp_path: Path
) -> None:
    database = tmp_path / "sessions.sqlite"
    session = new_session_id()
    async with sqlite_checkpointer(database) as saver:
        runner, _, _ = make_runner(
            call(
                "update_working_state",
                current_goal="Compare mugs",
                plan=["Find mugs", "Compare", "Answer"],
                add_facts=[{"fact": "Blue mug costs $12", "source": "https://shop.test/"}],
            ),
            say("Noted."),
            graph=compile_graph(saver),
            session_id=session,
        )
        await runner.send("Remember the mug price")
    async with sqlite_checkpointer(database) as saver:
        again, model, _ = make_runner(
            say("The blue mug costs $12."), graph=compile_graph(saver), session_id=session
        )
        values = await again.values()
        assert values["facts"] == [{"fact": "Blue mug costs $12", "source": "https://shop.test/"}]
        assert values["plan"] == ["Find mugs", "Compare", "Answer"]
        await again.send("What did the mug cost?")
        assert "Blue mug costs $12 (https://shop.test/)" in str(model.prompts[-1][-1].content)


async def test_a_file_the_user_named_is_uploaded_and_others_are_refused(
    make_runner: MakeRunner, pages: PageServer, browser_session: BrowserSession, tmp_path: Path
) -> None:
    cv = tmp_path / "cv.pdf"
    cv.write_bytes(b"%PDF-1.4 test cv")
    runner, _, _ = make_runner(
        goto(pages.url("files.html")),
        call("upload_file", element=1, path="/etc/hostname"),
        call("upload_file", element=1, path=str(cv)),
        code("async (page) => await page.locator('#picked').textContent()"),
        say("Uploaded your CV."),
    )
    outcome = await runner.send(f"Upload my CV from {cv} to the form")
    texts = tool_texts(outcome.values)
    assert any(t.startswith("Refused: the user did not name '/etc/hostname'") for t in texts)
    assert "Uploaded cv.pdf into element [1]." in texts
    assert "Returned:\n<page_content untrusted>\nPicked: cv.pdf\n</page_content>" in texts


async def test_a_click_on_a_covered_element_says_what_covers_it(
    make_runner: MakeRunner, pages: PageServer
) -> None:
    runner, model, _ = make_runner(
        goto(pages.url("covered-search.html")),
        code("async (page) => { await el(1).click({ timeout: 1500 }) }"),
        say("A dialog is in the way."),
    )
    outcome = await runner.send("Buy a ticket")
    failed = tool_texts(outcome.values)[-1]
    assert failed.startswith("Error:")
    assert "Element [1] was covered by dialog «Join our reading club»: close or answer that first." in failed
    # Looking again, the app says it was covered, not gone (the locator's wait is in the log either way).
    said = " ".join(str(m.content) for m in outcome.values["messages"])
    assert "something lies on top of it and takes the click" in said
    assert "gone or was re-rendered" not in said
    # The model also read, before acting, that something lies on top of the page.
    assert "Open on top of the page: «Join our reading club»." in str(model.prompts[1][-1].content)


async def test_a_task_compares_two_pages_in_two_tabs(
    make_runner: MakeRunner, pages: PageServer, browser_session: BrowserSession
) -> None:
    def switch_to_second(prompt: list[Any]) -> AIMessage:
        # The observation lists every tab, the agent's marked; the model picks the other one by index.
        tabs = next(line for line in str(prompt[-1].content).splitlines() if line.startswith("Tabs: "))
        index = next(int(part.split()[0]) for part in tabs[6:].split(" · ") if '"Second page"' in part)
        return call("switch_tab", index=index)

    runner, model, _ = make_runner(
        goto(pages.url("index.html")),
        code(
            "async (page) => { const p = await page.context().newPage();"
            f" await p.goto('{pages.url('second.html')}'); return await p.title() }}"
        ),
        switch_to_second,
        say("Your tab shows “Test bed home”; the other tab shows “Second page”."),
    )
    outcome = await runner.send("Compare the home page with the second page, side by side")
    assert outcome.stop_reason == "answered"
    read = "Returned:\n<page_content untrusted>\nSecond page\n</page_content>\nA new tab opened:"
    assert any(t.startswith(read) for t in tool_texts(outcome.values))
    listing = str(model.prompts[2][-1].content)
    assert '"Test bed home" 127.0.0.1' in listing and "(yours)" in listing
    assert '"Second page"' in listing
    assert any(t.startswith("Tab ") and "is now the agent's tab" in t for t in tool_texts(outcome.values))
    assert "Page: Second page" in str(model.prompts[3][-1].content)
    # Leave the shared browser as it was: close the second tab.
    await browser_session.run_code("async (page) => { await page.close() }")


async def test_a_banner_that_comes_up_after_the_load_does_not_take_the_first_click(
    make_runner: MakeRunner, pages: PageServer, browser_session: BrowserSession
) -> None:
    """The page was observed before its consent layer came up (0.5 s after the load); the model's click
    meets the layer: the app closes it first (by structure, never "accept") and the click lands, with
    no time-out. (On a slow machine the layer is up when the call begins, and the app closes it then:
    the code waits for the page's mark that it came up, not for the layer, which may be gone.)"""
    runner, _, _ = make_runner(
        goto(pages.url("late-banner.html")),
        code(
            "async (page) => { await page.locator('body[data-banner=shown]').waitFor({ state: 'attached' });"
            " await page.locator('#search').click({ timeout: 3000 });"
            " return await page.locator('#out').textContent() }"
        ),
        say("Found 3 books."),
    )
    outcome = await runner.send("Search the library")
    assert outcome.stop_reason == "answered"
    assert "Found 3 books" in tool_texts(outcome.values)[-1]
    consent = await browser_session.run_code(
        "async (page) => page.evaluate(() => window.__consent ?? null)", idempotent=True
    )
    assert consent.value == "reject"
