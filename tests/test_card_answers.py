"""How an answer to a confirmation card is read: a yes or no word alone, or with words for the model."""

from __future__ import annotations

import pytest

from browser_copilot.agent.nodes.human_in_loop import is_yes, reading


@pytest.mark.parametrize(
    ("answer", "allowed", "rest"),
    [
        ("/yes", True, ""),
        ("yes", True, ""),
        ("OK!", True, ""),
        ("да", True, ""),
        ("/no", False, ""),
        ("нет", False, ""),
        ("Yes, but first tell me the total", True, "but first tell me the total"),
        ("ok go", True, "go"),
        ("да, но сначала скажи сумму", True, "но сначала скажи сумму"),
        ("是，先告诉我总额", True, "先告诉我总额"),
        ("/yes — and then log out", True, "and then log out"),
        ("ja, bitte", True, "bitte"),
        ("no, use cash on delivery", False, "use cash on delivery"),
        ("non merci", False, "merci"),
        ("/no use the other card", False, "use the other card"),
        # Not an answer word at the start: refused, and all of it is for the model.
        ("yesterday's order instead", False, "yesterday's order instead"),
        ("maybe", False, "maybe"),
        # "si" (if) and "y" (and) answer only with a comma or dash after them.
        ("si tu veux", False, "si tu veux"),
        ("y luego paga", False, "y luego paga"),
        ("Si, claro", True, "claro"),
    ],
)
def test_an_answer_is_read_as_allowed_or_not_and_the_rest_is_kept(
    answer: str, allowed: bool, rest: str
) -> None:
    assert reading(answer) == (allowed, rest)
    assert is_yes(answer) is allowed


def test_only_text_can_allow() -> None:
    assert reading(None) == (False, "")
    assert reading({"approved": True}) == (False, "")
