"""The graph's state: typed, serialisable, persisted per `thread_id = session_id` (F23, F51).

Working state (seed 004): `current_goal`, `plan` (3-6 items, the last is answering the user),
`progress`, `facts` (generalisations with a source URL; no DOM, no element numbers, no raw page text).
Only the *current* observation is kept; element numbers never enter the working state.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from langchain_core.messages import AnyMessage, ToolCall
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

StopReason = Literal[
    "answered",
    "step_limit",
    "loop_detected",
    "waiting_confirmation",
    "waiting_user",
    "blocked",
    "error",
    "cancelled",
]
PendingKind = Literal["none", "confirm", "manual"]
Mode = Literal["command", "chat"]
ErrorKind = Literal["none", "stale", "covered", "timeout", "navigation", "dialog", "policy", "other"]

FINAL_PLAN_ITEM = "Answer the user"


class Progress(TypedDict):
    current: int
    """1-based index of the plan item being worked on."""
    done: list[int]
    blocked: list[int]


class Fact(TypedDict):
    fact: str
    source: str


class ActionRecord(TypedDict):
    tool: str
    target: str
    """What the action aimed at, by role and name (never an element number)."""
    acting: bool
    """True for clicks, typing, navigation; False for reads."""
    ok: bool
    error_kind: ErrorKind
    made: NotRequired[bool]
    """`target` names the inputs the call really made (the guard saw them), also when it failed later."""


class Committed(TypedDict):
    """An action the user allowed that ran (F24, F28): the record "done" and the answer check read."""

    what: str
    """The card's words for it ("places the order ($500.00)")."""
    category: str
    sent: list[str]
    """The writing or committing requests it let leave ("POST shop.test/checkout"); empty: none seen."""
    step: int


class ObservedElement(TypedDict):
    n: int
    role: str
    name: str
    state: str
    covered: NotRequired[str]
    """What lies over it (a dialog, a banner), when something does."""


class ObservationState(TypedDict):
    """The current observation, as the model saw it (only one is kept)."""

    url: str
    title: str
    text: str
    fingerprint: str
    elements: list[ObservedElement]
    frames: dict[str, list[int]]
    tabs: list[list[Any]]
    dialog: dict[str, str] | None
    screenshot: str | None
    full: bool
    modal: NotRequired[str | None]
    """The heading of an open modal dialog or blocking overlay, if any."""
    errors: NotRequired[list[str]]
    """Error texts shown next to form fields."""


class MemoryNote(TypedDict):
    """A long-term memory shown to the model for this request (see `agent.memory`)."""

    n: int
    """Its number in `/memory`'s list."""
    key: str
    fact: str
    saved: str
    """The day it was said or confirmed (ISO date)."""
    how: NotRequired[Literal["said", "confirmed"]]
    """Absent: unverified (kept before quotes were checked), never shown to the model."""
    quote: NotRequired[str]
    """What the user said (or the note they confirmed): all the model is shown of it."""


class PendingAction(TypedDict, total=False):
    id: str
    """The tool call id this is about."""
    type: Literal["destructive", "held", "question", "manual"]
    """destructive: caught before running; held: caught by the in-page guard while running."""
    allow: dict[str, Any]
    """What the guard may let through once if the user says /yes (numbers, names, held ids)."""
    held: dict[str, Any]
    """The held event (id, kind) to replay once on /yes."""
    tool: str
    args: dict[str, Any]
    question: str
    options: list[str]
    card: dict[str, Any]
    """DOM facts for the confirmation card: element, site, values typed, amount, reason, category."""
    tab: str
    """The browser tab (CDP target id) it waits in: a held input is done again there, a hand-over done
    there; a worker that takes the next turn adopts it."""


def confirmation(
    call: ToolCall, question: str, card: dict[str, Any], allow: dict[str, Any] | None = None
) -> PendingAction:
    """A tool call caught before it runs, waiting for the user's /yes (`allow`: what the guard may then
    let through once)."""
    return {
        "id": str(call.get("id")),
        "type": "destructive",
        "tool": call["name"],
        "args": call["args"],
        "question": question,
        "card": card,
        "allow": allow or {},
    }


def waiting_in(pending: PendingAction, tab: str | None) -> PendingAction:
    """`pending` with the tab it waits in (see `PendingAction.tab`)."""
    return {**pending, "tab": tab} if tab else pending


class AgentState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    prompt_kind: Literal["full", "simple", "minimal"]
    """The system prompt's version for the current request (fixed while it runs: a cacheable prefix)."""
    # Working state (seed 004).
    current_goal: str
    plan: list[str]
    progress: Progress
    facts: list[Fact]
    # Session state (seed 002 §4).
    mode: Mode
    pending_action: PendingAction | None
    pending_kind: PendingKind
    approved_call: str | None
    approved_allow: dict[str, Any] | None
    """The guard's one-time permission for the approved call."""
    replay: dict[str, Any] | None
    """A held action the user approved, to perform exactly once."""
    code_shots: list[str] | None
    """Screenshots the model's code took in the last tool pass (base64 JPEG), shown to a model with
    vision once, with the next observation."""
    last_approval: dict[str, Any] | None
    """Category and step of the action the user approved last: the site's own confirm() dialog for
    that same action does not need a second /yes."""
    handed_over: list[str]
    """URLs where the user was already asked to take over (captcha), so it is asked once."""
    # Per-request counters (reset by each new user message).
    tool_steps: int
    llm_calls: int
    invalid_actions: int
    error_count: int
    stuck_counter: int
    loop_triggers: int
    corrections: int
    checks: dict[str, int]
    progress_mark: list[int]
    """[tool_steps, done count] at the last progress analysis."""
    actions: list[ActionRecord]
    committed: list[Committed]
    """The actions the user allowed that ran, for the whole goal (a "continue" keeps them)."""
    unchanged: int
    """Acting steps in a row after which the page fingerprint did not change."""
    last_error: dict[str, str] | None
    # Session-wide.
    total_steps: int
    observation: ObservationState | None
    observation_stale: bool
    summary: str
    """Running summary of messages memory_manager removed."""
    memory_mark: int
    """Message count when memory was last managed (no re-summarising the same history)."""
    seen_numbers: list[str]
    """Figures seen in this request's observations (evidence for quality_evaluator)."""
    session_figures: list[list[str]]
    """Figures of the session's evidence, one list per source (a page, a tool result, a user message),
    as `figures.Figure.key`s; the newest 40 sources, 100 figures each, never reset by a request. An
    answer may rest on a figure seen in an earlier request, after its page or messages are gone."""
    stop_reason: StopReason | None
    verified: bool
    """Set when a run ends: True when it ended in an answer the app's checks found nothing against;
    False for an answer they still doubt (`doubts` says why) and for every other stop reason."""
    doubts: list[str]
    """Why the answer is unverified, in plain words for the user: figures found nowhere, the last action
    failed, a dialog of the site still open, a committing plan step not done. Empty otherwise."""
    memories: list[MemoryNote] | None
    """Long-term memories found when the request started, for its system prompt (None: memory is off)."""
    memories_total: int
    """How many are kept in all (more than `memories` when only the best matches are shown)."""


MINIMAL_PROMPT_AFTER = 25
"""Session steps after which requests use the minimal system prompt (seed 001)."""


def new_request(text: str, previous: dict[str, Any] | None) -> dict[str, Any]:
    """The update that starts a user request: counters reset, goal kept when continuing.

    A request continues the previous goal when the previous run did not end in an answer (step limit,
    loop, error, cancel): the user's next message then means "go on" or adds a detail.
    """
    from langchain_core.messages import HumanMessage

    previous = previous or {}
    continuing = previous.get("stop_reason") not in (None, "answered") and bool(previous.get("current_goal"))
    update: dict[str, Any] = {
        "messages": [HumanMessage(text)],
        "tool_steps": 0,
        "llm_calls": 0,
        "invalid_actions": 0,
        "error_count": 0,
        "stuck_counter": 0,
        "loop_triggers": 0,
        "corrections": 0,
        "checks": {},
        "progress_mark": [0, 0],
        "actions": [],
        "unchanged": 0,
        "last_error": None,
        "seen_numbers": [],
        "stop_reason": None,
        "pending_action": None,
        "pending_kind": "none",
        "approved_call": None,
        "approved_allow": None,
        "replay": None,
        "code_shots": None,
        "observation_stale": True,
        "prompt_kind": "minimal" if previous.get("total_steps", 0) > MINIMAL_PROMPT_AFTER else "full",
    }
    if not continuing:
        update.update(
            current_goal=text.strip()[:500],
            plan=[],
            progress={"current": 1, "done": [], "blocked": []},
            committed=[],
        )
    return update
