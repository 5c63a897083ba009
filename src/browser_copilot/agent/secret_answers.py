"""Whether what the user types next answers a request for a secret (F43, F47), and withholding it.

A bare "482977" says nothing about itself; the context does. When the agent's own last words to the user
(a pending question or hand-over, or its last message) ask for a password, PIN or one-time code, or the
page in front has a field for one (what the observation lists: a `password` field, a field marked
`secret`), the answer is taken for that secret and withheld like one said with its word: the model and
the checkpoint get `[one-time code withheld]`, the hand-over goes on as for any answer, and the user is
told to type it into the page themselves. Detection: `safety.redaction.asked_for` / `find_secrets`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, cast

from browser_copilot.events import Event, EventSink
from browser_copilot.safety.redaction import Asked, asked_for, mask_secrets

if TYPE_CHECKING:
    from browser_copilot.agent.state import AgentState


def withhold_secrets(text: str, events: EventSink) -> str:
    """The user's message with its secrets withheld: the model, the checkpoint and the memory never get
    them (F47); the user is told."""
    masked, kinds = mask_secrets(text)
    if kinds:
        what = " and ".join(kinds)
        events(
            Event(
                "notice",
                {
                    "text": f"Withheld from the agent: the {what} in your message. Secrets are never sent "
                    "to the model, kept or remembered; type them into the page yourself when it asks.",
                    "to_user": True,
                },
            )
        )
    return masked


def secret_asked(values: dict[str, Any], pending: dict[str, Any] | None) -> Asked | None:
    """What the session's state says the user's next message answers, when that is a secret. `values`:
    the checkpoint's state; `pending`: the question the run waits on (`AgentRunner.pending`)."""
    if pending is not None and pending.get("kind") == "confirm":
        return None  # the answer is /yes or /no
    if pending is not None:
        question = str(pending.get("question") or "")
    else:
        from browser_copilot.agent.conversation import last_ai  # LangChain: not for `run --detach`

        said = last_ai(cast("AgentState", values))
        question = str(said.content) if said is not None and not said.tool_calls else ""
    return asked_for(question, _page_asks(values.get("observation")))


def _page_asks(observation: Any) -> Literal["password", "one-time code"] | None:
    """The secret the page in front has a field for, by what its fields are (the extractor's `password`
    role and `secret` state: type=password, autocomplete one-time-code, a lone numeric code field...)."""
    elements = (observation or {}).get("elements") or []
    if any(e.get("role") == "password" for e in elements):
        return "password"
    if any("secret" in str(e.get("state", "")).split() for e in elements):
        return "one-time code"
    return None


def withhold_answer(text: str, asked: Asked | None, events: EventSink) -> str:
    """The user's message with its secrets withheld (`withhold_secrets`), the answer to `asked` included;
    the user is told."""
    if asked is None:
        return withhold_secrets(text, events)
    masked, kinds = mask_secrets(text, asked)
    if kinds:
        what = " and ".join(kinds)
        source = "the agent asked for" if asked.by == "question" else "the page asks for"
        events(
            Event(
                "notice",
                {
                    "text": f"Withheld from the agent: the {what} in your message ({source} a {asked.kind}). "
                    "Secrets are never sent to the model, kept or remembered; type it into the page "
                    'yourself, then say done. If it was not a secret, say what it is ("the order number '
                    'is …").',
                    "to_user": True,
                },
            )
        )
    return masked
