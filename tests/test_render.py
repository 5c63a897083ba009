"""Every event, card and outcome rendered into a string console (the UI renders, it decides nothing)."""

from __future__ import annotations

import io

from rich.console import Console

from browser_copilot.agent.runner import TurnOutcome
from browser_copilot.events import Event
from browser_copilot.ui.render import EventPrinter, render_outcome, render_plan
from browser_copilot.ui.theme import make_console


def console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return make_console(out, width=120), out


def test_each_event_kind_renders_as_one_compact_line() -> None:
    term, out = console()
    printer = EventPrinter(term, limit=10)
    printer(Event("node", {"node": "agent"}))
    printer(
        Event(
            "tool_call",
            {
                "tool": "browser_run_code",
                "step": 3,
                "args": {"code": "async (page) => { await el(4).click() }"},
            },
        )
    )
    printer(
        Event("tool_result", {"tool": "browser_run_code", "ok": False, "summary": "Error: Timeout 10000ms"})
    )
    printer(Event("observation", {"title": "Checkout", "url": "https://x.test", "elements": 7, "ms": 12.5}))
    printer(Event("policy_request", {"card": {}, "question": "Allow?"}))
    printer(Event("error", {"kind": "browser", "message": "the browser has gone"}))
    printer(Event("notice", {"text": "self-correction after a stale error"}))
    printer(
        Event(
            "tool_call",
            {
                "tool": "update_working_state",
                "step": 3,
                "counted": False,
                "args": {"plan": ["Search", "Answer"]},
            },
        )
    )
    printer(Event("progress", {"done": 1, "total": 4, "steps": 3, "limit": 10}))
    printer(Event("usage", {"prompt_tokens": 10, "completion_tokens": 2}))  # not shown
    text = out.getvalue()
    assert "  3 → browser_run_code await el(4).click()" in text
    assert "  · → update_working_state plan=['Search', 'Answer']" in text  # not a counted step
    assert "✗ Error: Timeout 10000ms" in text
    assert "· Checkout (7 elements, 12.5 ms)" in text
    assert "needs your confirmation" in text
    assert "! the browser has gone" in text
    assert "self-correction after a stale error" in text
    assert "progress: 1/4 plan items, 3/10 steps" in text
    assert "prompt_tokens" not in text
    assert printer.status_text().startswith("[muted]agent · step 3/10")


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
