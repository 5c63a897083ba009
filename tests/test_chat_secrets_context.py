"""What the session's state says the user's next message answers (`agent.secret_answers`): the pending
hand-over or question, else the agent's last message, and the fields of the page in front."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from browser_copilot.agent.secret_answers import secret_asked, withhold_answer
from browser_copilot.events import Event
from browser_copilot.safety.redaction import Asked

OTP_FIELD = {"n": 1, "role": "textbox", "name": "Verification code", "state": "secret required"}
PASSWORD_FIELD = {"n": 2, "role": "password", "name": "Password", "state": ""}
SEARCH_FIELD = {"n": 3, "role": "textbox", "name": "Search", "state": 'value="riga"'}


def state(*messages: Any, elements: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"messages": list(messages), "observation": {"elements": elements or []}}


CASES = [
    (
        "a hand-over that names the code",
        state(AIMessage("", tool_calls=[{"name": "hand_over", "args": {}, "id": "c1"}])),
        {"kind": "manual", "question": "Type the SMS code into the page, then tell me."},
        Asked("one-time code", "question"),
    ),
    (
        "a confirmation card: the answer is /yes or /no",
        state(elements=[PASSWORD_FIELD]),
        {"kind": "confirm", "question": "Send the password reset e-mail?"},
        None,
    ),
    (
        "the agent's last message asks",
        state(HumanMessage("log in"), AIMessage("What is your PIN?")),
        None,
        Asked("password", "question"),
    ),
    (
        "the user spoke last: the agent's words are old",
        state(AIMessage("What is your PIN?"), HumanMessage("never mind")),
        None,
        None,
    ),
    (
        "a code field in front",
        state(AIMessage("The page is open."), elements=[OTP_FIELD]),
        None,
        Asked("one-time code", "page"),
    ),
    (
        "a password field in front",
        state(AIMessage("Done."), elements=[SEARCH_FIELD, PASSWORD_FIELD]),
        None,
        Asked("password", "page"),
    ),
    (
        "a code field, but the agent asked for the order number",
        state(AIMessage("What is the order number?"), elements=[OTP_FIELD]),
        None,
        None,
    ),
    ("nothing secret asked or shown", state(AIMessage("Done."), elements=[SEARCH_FIELD]), None, None),
]


@pytest.mark.parametrize(("why", "values", "pending", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_state_says_when_the_next_message_answers_a_request_for_a_secret(
    why: str, values: dict[str, Any], pending: dict[str, Any] | None, expected: Asked | None
) -> None:
    assert secret_asked(values, pending) == expected


def test_a_withheld_answer_tells_the_user_to_type_it_into_the_page() -> None:
    told: list[Event] = []
    masked = withhold_answer("482977", Asked("one-time code", "page"), told.append)
    assert masked == "[one-time code withheld]"
    (notice,) = told
    assert notice.kind == "notice" and "482977" not in notice.data["text"]
    assert "type it into the page yourself" in notice.data["text"]


def test_without_a_request_only_secrets_said_as_such_are_withheld() -> None:
    told: list[Event] = []
    assert withhold_answer("482977", None, told.append) == "482977"
    assert told == []
    assert withhold_answer("the code is 482977", None, told.append) == "the code is [one-time code withheld]"
    assert [e.kind for e in told] == ["notice"]
