"""The working state the model keeps: plan shape, progress bounds, facts that are generalisations."""

from __future__ import annotations

import pytest

from browser_copilot.agent.state import FINAL_PLAN_ITEM, new_request
from browser_copilot.agent.tools import (
    FactItem,
    PlanProgress,
    ToolArgsError,
    apply_working_state,
    check_fact,
    check_plan,
    parse_args,
    update_working_state,
)


def test_a_plan_always_ends_with_answering_the_user() -> None:
    assert check_plan(["Open the shop", "Find the mug"]) == ["Open the shop", "Find the mug", FINAL_PLAN_ITEM]
    assert check_plan(["Open", "Search", "Compare", "Answer the user"])[-1] == "Answer the user"


@pytest.mark.parametrize(
    "last",
    [
        "Report the findings to the user",
        "Give the user the cheapest price",
        "Summarise the results",
        "Explain the options",
        "Ответить пользователю",
        "Dem Nutzer antworten",
        "Répondre à l'utilisateur",
        "Kullanıcıya yanıt ver",
        "向用户汇报结果",
    ],
)
def test_a_last_item_that_answers_in_other_words_or_languages_gets_no_second_answer(last: str) -> None:
    assert check_plan(["Open the shop", "Compare prices", last]) == ["Open the shop", "Compare prices", last]


@pytest.mark.parametrize(
    "last",
    ["Place the order", "Collect the shipping information", "Resume the download", "Check related items"],
)
def test_a_last_item_that_acts_is_followed_by_answering_the_user(last: str) -> None:
    assert check_plan(["Open the shop", "Compare prices", last])[-2:] == [last, FINAL_PLAN_ITEM]


@pytest.mark.parametrize("plan", [["Only one"], [f"step {i}" for i in range(7)]])
def test_plans_outside_three_to_six_items_are_refused(plan: list[str]) -> None:
    with pytest.raises(ToolArgsError, match="3-6 items"):
        check_plan(plan)


@pytest.mark.parametrize(
    ("fact", "why"),
    [
        ("<div class='price'>€45</div>", "HTML"),
        ("The cheapest one is element [12]", "element number"),
        ("Click el(3) to buy", "element number"),
        ("x" * 300, "longer than 240"),
    ],
)
def test_facts_that_are_dom_numbers_or_raw_text_are_refused(fact: str, why: str) -> None:
    with pytest.raises(ToolArgsError, match=why):
        check_fact(FactItem(fact=fact, source="https://x.test/"))


def test_a_fact_needs_a_web_source() -> None:
    with pytest.raises(ToolArgsError, match="not an http"):
        check_fact(FactItem(fact="Ryanair is cheapest", source="the page"))


def test_replanning_keeps_facts_and_progress_stays_inside_the_plan() -> None:
    state = {"plan": [], "facts": [{"fact": "Ryanair is cheapest at €45", "source": "https://f.test/"}]}
    update = apply_working_state(update_working_state(plan=["Search", "Compare", "Answer"]), state)
    assert update["plan"] == ["Search", "Compare", "Answer"]
    assert "facts" not in update
    with pytest.raises(ToolArgsError, match="outside the plan"):
        apply_working_state(update_working_state(progress=PlanProgress(current=5)), {**state, **update})


def test_duplicate_facts_are_kept_once() -> None:
    args = update_working_state(add_facts=[FactItem(fact="A is cheap", source="https://a.test/")] * 2)
    assert apply_working_state(args, {})["facts"] == [{"fact": "A is cheap", "source": "https://a.test/"}]


def test_bad_tool_arguments_become_a_message_for_the_model() -> None:
    with pytest.raises(ToolArgsError, match="invalid arguments for browser_run_code: code: Field required"):
        parse_args("browser_run_code", {})
    with pytest.raises(ToolArgsError, match="unknown tool 'click'"):
        parse_args("click", {})


def test_a_new_request_keeps_the_goal_only_when_continuing() -> None:
    stopped = {"stop_reason": "step_limit", "current_goal": "Find flights"}
    assert "current_goal" not in new_request("go on", stopped)
    answered = {"stop_reason": "answered", "current_goal": "Find flights"}
    assert new_request("Now hotels", answered)["current_goal"] == "Now hotels"
    assert new_request("go on", stopped)["tool_steps"] == 0
