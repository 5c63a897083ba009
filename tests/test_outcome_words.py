"""The app's own checks of an answer read its words in many languages (agent/outcome_words.json): a
plan step that commits and was not done, a success claimed after a failed action, a failure admitted."""

from __future__ import annotations

from typing import Any

import pytest

from browser_copilot.agent.nodes.goal_validator import admits_failure, objections, uncommitted
from browser_copilot.agent.nodes.progress_reporter import ran


def state(plan: list[str], *actions: tuple[str, bool]) -> dict[str, Any]:
    return {
        "plan": plan,
        "progress": {"current": 1, "done": [], "blocked": []},
        "actions": [
            {"tool": "browser_run_code", "target": t, "acting": True, "ok": ok, "error_kind": "none"}
            for t, ok in actions
        ],
        "messages": [],
    }


@pytest.mark.parametrize(
    ("plan", "done_target"),
    [
        (["Bestellung aufgeben", "Dem Nutzer antworten"], 'button "Bestellung aufgeben"'),
        (["Passer la commande", "Répondre"], 'button "Commander"'),
        (["Złóż zamówienie", "Odpowiedz"], 'button "Złóż zamówienie"'),
        (["注文を確定する", "回答する"], 'button "注文を確定する"'),
        (["Siparişi ver ve öde", "Yanıtla"], 'button "Öde"'),
    ],
)
def test_a_committing_plan_step_left_undone_is_doubted_in_other_languages(
    plan: list[str], done_target: str
) -> None:
    assert uncommitted(state(plan)) == [plan[0]]  # nothing ran: the step that commits is open
    assert uncommitted(state(plan, (done_target, True))) == []  # its action ran


@pytest.mark.parametrize(
    "answer",
    [
        "Die Bestellung ist aufgegeben und bezahlt.",
        "Zamówienie zostało złożone.",
        "注文しました。",
        "Sipariş verildi.",
    ],
)
def test_success_claimed_after_a_failed_action_is_doubted(answer: str) -> None:
    found = objections(state([], ('button "Pay"', False)), answer)
    assert any("the last action failed" in o.to_user for o in found)


@pytest.mark.parametrize(
    "answer",
    [
        "Ich konnte die Bestellung nicht abschließen.",
        "Nie udało się złożyć zamówienia.",
        "注文できませんでした。",
    ],
)
def test_an_admitted_failure_is_not_doubted(answer: str) -> None:
    assert admits_failure(answer)
    assert objections(state([], ('button "Pay"', False)), answer) == []


def test_steps_are_counted_as_submitted_or_added_in_other_languages() -> None:
    records = [
        {
            "tool": "browser_run_code",
            "target": f'button "{name}"',
            "acting": True,
            "ok": True,
            "error_kind": "none",
        }
        for name in ("Weiter", "In den Warenkorb", "Dalej", "カートに入れる")
    ]
    said = " ".join(ran(records, set()))  # type: ignore[arg-type]
    assert "submitted" in said and "added" in said, said
