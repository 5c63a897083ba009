"""Every event, card and outcome rendered into a string console (the UI renders, it decides nothing)."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from browser_copilot.agent.runner import TurnOutcome
from browser_copilot.events import Event, EventLog, fan_out
from browser_copilot.plain_steps import narrate
from browser_copilot.ui.chat import COMMANDS, HELP_NOTES
from browser_copilot.ui.render import EventPrinter, render_help, render_outcome, render_plan
from browser_copilot.ui.theme import make_console


def console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return make_console(out, width=120), out


def test_each_event_kind_renders_as_one_compact_line_in_plain_words() -> None:
    term, out = console()
    printer = EventPrinter(term, limit=10)
    sink = narrate(printer)  # as the agent's context does: the sentences come with the events
    sink(Event("node", {"node": "agent"}))
    sink(
        Event(
            "tool_call",
            {
                "tool": "browser_run_code",
                "step": 3,
                "args": {
                    "code": "async (page) => { await page.getByRole('button', { name: 'Next' }).click() }"
                },
            },
        )
    )
    assert printer.status_text().startswith("[muted]clicking “Next” · step 3/10")
    sink(Event("tool_result", {"tool": "browser_run_code", "ok": False, "result": "Error: Timeout 10000ms"}))
    sink(Event("observation", {"title": "Checkout", "url": "https://x.test", "elements": 7, "ms": 12.5}))
    sink(Event("policy_request", {"card": {"what": 'button "Pay"', "site": "x.test"}, "question": "Allow?"}))
    sink(Event("error", {"kind": "browser", "message": "the browser has gone"}))
    sink(Event("notice", {"text": "self-correction after a stale error"}))
    sink(
        Event(
            "tool_call",
            {"tool": "update_working_state", "step": 3, "counted": False, "args": {"plan": ["A"]}},
        )
    )
    sink(
        Event("tool_result", {"tool": "update_working_state", "ok": True, "result": "Working state updated."})
    )
    sink(Event("tool_call", {"tool": "observe_page", "step": 3, "counted": False, "args": {}}))
    sink(Event("tool_result", {"tool": "observe_page", "ok": True, "result": "..."}))
    sink(Event("progress", {"done": 1, "total": 4, "steps": 3, "limit": 10}))
    sink(Event("usage", {"prompt_tokens": 10, "completion_tokens": 2}))  # not shown
    text = out.getvalue()
    assert "  3 ✗ Could not click “Next”: it took too long" in text
    assert "· Looked at Checkout (x.test)" in text
    assert "⚠ Asked you to confirm the button “Pay” on x.test" in text
    assert "! The browser could not be used: the browser has gone" in text
    assert "i Self-correction after a stale error" in text
    assert "  · ✓ Looked at the page" in text  # not a counted step
    assert "1 of 4 plan steps done, 3 of 10 browser steps used" in text
    assert "update_working_state" not in text and "Working state updated" not in text  # the plan says it
    assert "prompt_tokens" not in text and "browser_run_code" not in text and "getByRole" not in text


def test_the_status_line_says_words_never_a_node_name() -> None:
    term, _ = console()
    printer = EventPrinter(term, limit=10)
    sink = narrate(printer)
    seen = []
    for node in (
        "agent",
        "critical_action_validator",
        "tools",
        "observe",
        "goal_validator",
        "self_corrector",
    ):
        sink(Event("node", {"node": node}))
        seen.append(printer.status_text())
    sink(Event("status", {"state": "waiting_user"}))
    seen.append(printer.status_text())
    for line in seen:
        assert "_" not in line.split("·")[0], line
    assert [line.split(" · ")[0].removeprefix("[muted]") for line in seen] == [
        "checking the next step",
        "acting in the browser",
        "reading the page",
        "thinking",
        "checking the answer",
        "recovering from an error",
        "waiting for you",
    ]


def test_a_step_the_safety_judge_let_through_shows_as_done_not_refused() -> None:
    term, out = console()
    sink = narrate(EventPrinter(term))
    sink(Event("tool_call", {"tool": "browser_run_code", "step": 1, "args": {"code": "await el(4).click()"}}))
    sink(
        Event(
            "policy_result",
            {"judge": "judge", "destructive": False, "reason": "adds to the cart", "what": 'button "Add"'},
        )
    )
    sink(
        Event(
            "tool_result",
            {
                "tool": "browser_run_code",
                "ok": True,
                "result": 'button "Add" was checked by the safety judge (x) and done.',
            },
        )
    )
    text = out.getvalue()
    assert "    ✓ The safety judge let the button “Add” go ahead (adds to the cart)" in text
    assert "  1 ✓ Clicked element 4 (the safety judge checked it first)" in text
    assert "✗" not in text and "Refused" not in text


def test_the_plan_shows_live_progress_and_the_status_line_where_it_stands() -> None:
    term, out = console()
    printer = EventPrinter(term, limit=10)
    plan = ["Open the mail", "Write the message", "Answer the user"]
    printer.start(0.0, {"plan": plan, "progress": {"current": 2, "done": [1], "blocked": []}})
    assert "plan 2/3" in printer.status_text()  # a plan made earlier in the session counts from the start
    sink = narrate(printer)
    sink(
        Event("plan", {"current_goal": "Mail Ann", "plan": plan, "progress": {"current": 3, "done": [1, 2]}})
    )
    assert "plan 3/3" in printer.status_text()
    assert "Plan: 2 of 3 done; now 3. Answer the user" in out.getvalue()
    assert "Goal" not in out.getvalue()  # the same plan: one line, not the whole panel again
    assert "(no plan yet)" not in out.getvalue()


def test_a_long_step_is_cut_between_words_to_the_terminals_width() -> None:
    source = "async (page) => {" + "".join(
        f" await page.getByRole('link', {{ name: 'Section {n} of the annual report' }}).click();"
        for n in range(4)
    )
    for width in (80, 160):
        out = io.StringIO()
        log = EventLog()
        sink = narrate(fan_out(EventPrinter(make_console(out, width=width)), log))
        sink(Event("tool_call", {"tool": "browser_run_code", "step": 1, "args": {"code": source + " }"}}))
        sink(Event("tool_result", {"tool": "browser_run_code", "ok": True, "result": "Done."}))
        whole = log.of("tool_result")[0].data["summary"]
        (line,) = out.getvalue().splitlines()
        assert len(whole) > width and len(line) <= width
        shown = line.removeprefix("  1 ✓ ")
        assert shown.endswith("…")
        kept = shown.removesuffix("…")
        assert whole.startswith(kept) and whole[len(kept)] in " ,", (kept, whole)  # cut between words


def test_code_is_one_command_away() -> None:
    term, out = console()
    printer = EventPrinter(term)
    sink = narrate(printer)
    source = "async (page) => { await el(4).click() }"
    sink(Event("tool_call", {"tool": "browser_run_code", "step": 1, "args": {"code": source}}))
    sink(
        Event(
            "tool_result",
            {"tool": "browser_run_code", "ok": True, "result": "Done (the code returned nothing)."},
        )
    )
    assert "el(4)" not in out.getvalue()
    assert printer.show_step(1)
    assert "el(4).click()" in out.getvalue() and "→ Done (the code returned nothing)." in out.getvalue()
    assert not printer.show_step(7)
    printer.show_code = True
    sink(Event("tool_call", {"tool": "browser_run_code", "step": 2, "args": {"code": "await page.goBack()"}}))
    sink(Event("tool_result", {"tool": "browser_run_code", "ok": True, "result": "Done."}))
    lines = [line.rstrip() for line in out.getvalue().splitlines()]
    assert lines[-3:] == ["  2 ✓ Went back", "        await page.goBack()", "        → Done."]


def test_a_cancelled_step_says_which_step_was_under_way() -> None:
    term, out = console()
    printer = EventPrinter(term)
    sink = narrate(printer)
    sink(
        Event(
            "tool_call",
            {"tool": "browser_run_code", "step": 2, "args": {"code": "await page.waitForTimeout(4000)"}},
        )
    )
    printer.interrupted()
    assert "  2 ✗ Cancelled while waiting 4 s" in out.getvalue()


def test_a_plan_change_renders_as_a_small_panel() -> None:
    term, out = console()
    EventPrinter(term)(
        Event(
            "plan",
            {
                "current_goal": "Find flights",
                "plan": ["Search", "Compare", "Answer"],
                "progress": {"current": 2, "done": [1], "blocked": []},
                "facts": [],
            },
        )
    )
    text = out.getvalue()
    assert "Goal Find flights" in text
    assert "✓ 1. Search" in text
    assert "▸ 2. Compare" in text


def test_the_confirmation_card_shows_dom_facts_and_the_choices() -> None:
    term, out = console()
    payload = {
        "kind": "confirm",
        "question": 'Allow this order action: button "Place order" on shop.test?',
        "card": {
            "what": 'button "Place order"',
            "site": "shop.test",
            "page": "Checkout",
            "amount": "$36.50",
            "reason": '"place order"',
            "category": "order",
            "values": [["Shipping address", "1 Main St"], ["Email", "ann@example.com"]],
        },
    }
    render_outcome(term, TurnOutcome("waiting_confirmation", "", payload, {}))
    text = out.getvalue()
    for expected in (
        "Confirm: order",
        'action button "Place order"',
        "site shop.test",
        "amount $36.50",
        "typed Shipping address: 1 Main St",
        "typed Email: ann@example.com",
        "/yes",
        "/no",
    ):
        assert expected in text


def test_a_hand_over_card_says_what_to_do_and_how_to_continue() -> None:
    term, out = console()
    payload = {"kind": "manual", "question": "Please sign in to Example in the browser tab."}
    render_outcome(term, TurnOutcome("waiting_user", "", payload, {}))
    text = out.getvalue()
    assert "Your turn in the browser" in text
    assert "Please sign in to Example" in text
    assert "done" in text


def test_a_question_lists_its_options_by_number() -> None:
    term, out = console()
    payload = {"kind": "question", "question": "Which tab?", "options": ["Inbox", "Shop"]}
    render_outcome(term, TurnOutcome("waiting_user", "", payload, {}))
    text = out.getvalue()
    assert "1. Inbox" in text
    assert "2. Shop" in text


def test_an_answer_renders_as_markdown_and_a_stop_says_why() -> None:
    term, out = console()
    render_outcome(
        term, TurnOutcome("answered", "The cheapest is **Ryanair**.", None, {"tool_steps": 4}), seconds=3.2
    )
    render_outcome(term, TurnOutcome("step_limit", "I have not finished.", None, {}))
    text = out.getvalue()
    assert "The cheapest is Ryanair." in text
    assert "**" not in text
    assert "4 steps, 3.2s" in text
    assert "(stopped at the step limit)" in text


def test_one_step_is_one_step() -> None:
    term, out = console()
    render_outcome(term, TurnOutcome("answered", "Done.", None, {"tool_steps": 1}), seconds=1.0)
    assert "1 step, 1.0s" in out.getvalue()


def test_the_plan_command_shows_facts() -> None:
    term, out = console()
    render_plan(
        term,
        {
            "current_goal": "Mugs",
            "plan": [],
            "facts": [{"fact": "Blue mug is $12", "source": "https://s.test"}],
        },
    )
    assert "Blue mug is $12" in out.getvalue()


def fits(text: str, width: int, words: list[str]) -> None:
    """Every line within `width`, and each of `words` whole on one line (no word broken across lines)."""
    lines = text.splitlines()
    assert lines
    assert max(len(line) for line in lines) <= width, max(lines, key=len)
    for word in words:
        assert any(word in line for line in lines), f"{word!r} was broken across lines"


@pytest.mark.parametrize("width", [80, 160])
def test_help_fits_the_terminal_without_breaking_a_word(width: int) -> None:
    out = io.StringIO()
    render_help(make_console(out, width=width), COMMANDS, HELP_NOTES)
    words = {w for _, meaning in COMMANDS for w in meaning.split()} | {c for c, _ in COMMANDS}
    words |= {w for note in HELP_NOTES for w in note.split()}
    fits(out.getvalue(), width, sorted(words))
    assert "/code" in out.getvalue() and "Tab completes" in out.getvalue()


CARD = {
    "kind": "confirm",
    "question": 'Allow this order action: button "Place order" on shop.northpeak.example?',
    "card": {
        "what": 'button "Place order"',
        "site": "shop.northpeak.example",
        "page": "Northpeak Store — Checkout, step three of three, review and pay",
        "happens": 'Clicking "Place order" places an order that you may not be able to cancel ($36.50).',
        "amount": "$36.50",
        "reason": "the button commits a payment form with an amount, on the last step of the checkout flow",
        "category": "order",
        "by": "judge",
        "values": [["Shipping address", "1 Main Street, Bath, BA1 1AA, United Kingdom"]],
        "details": [
            ["items", "2 × Trail running shoes (size 42, colour forest green), 1 × Merino socks"],
            ["deliver to", "Ann Lee, 1 Main Street, Bath, BA1 1AA, United Kingdom"],
            ["payment", "cash on delivery"],
            ["to", "ann@example.com"],
        ],
        "code": "async (page) => { await page.getByRole('button', { name: 'Place order' }).click() }",
    },
}


@pytest.mark.parametrize("width", [80, 160])
def test_a_confirmation_card_with_its_details_fits_the_terminal_without_breaking_a_word(width: int) -> None:
    out = io.StringIO()
    render_outcome(make_console(out, width=width), TurnOutcome("waiting_confirmation", "", CARD, {}))
    text = out.getvalue()
    card = CARD["card"]
    assert isinstance(card, dict)
    words = [w for key in ("page", "happens", "reason") for w in str(card[key]).split()]
    words += [w for _, value in card["details"] for w in value.split()]
    fits(text, width, words)
    for label in ("items", "deliver to", "payment", "to"):
        assert re.search(rf"│\s+{label} ", text), label
    assert "cash on delivery" in text and "Trail running shoes" in text
