"""A session's event hub: the agent's events, numbered, redacted, kept in a ring buffer for SSE resume
(`Last-Event-ID`), and the live WebSocket clients of the session.

Every outgoing payload goes through `safety.redaction.redact` (the logs' redaction); the envelope
(`v`, `kind`, `session`, `id`, `at`, `state`, `queued`, ...) is left as it is. A confirmation card's
`nonce` goes only to the connections of the browser tab that asked (`send_question`), never into the
SSE buffer, the agent's events or the logs. That tab sees the card as its owner (`for_owner`): the user's
own details on their own screen (names, e-mail addresses, phone numbers, street addresses) as they are,
so two rows that differ only there can be told apart; secrets (passwords, one-time codes, card numbers,
IBANs, keys and tokens) masked as everywhere."""

from __future__ import annotations

import asyncio
import json
import re
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from browser_copilot.events import Event
from browser_copilot.safety.redaction import mask_for_model, mask_secrets, redact
from browser_copilot.server.history import History

VERSION = 1
SSE_KINDS = frozenset(
    {
        "observation",
        "tool_call",
        "tool_result",
        "policy_request",
        "policy_result",
        "error",
        "final",
        "answer_stream",
        "status",
        "notice",
        "plan",
        "usage",
    }
)
"""The seed's watching kinds (plus `status`, the streaming answer, F62, the app's notices to the user: a
secret withheld from the agent, a tab taken back..., the working state as it changes and the tokens each
model call used); other agent events stay in the terminal and the logs."""
_ENVELOPE = frozenset(
    {"v", "kind", "session", "id", "at", "state", "queued", "mode", "pending_kind", "nonce"}
)


def outgoing(message: dict[str, Any]) -> dict[str, Any]:
    """`message` with every string outside the envelope redacted."""
    return {k: v if k in _ENVELOPE else _each(v, redact) for k, v in message.items()}


def for_owner(message: dict[str, Any]) -> dict[str, Any]:
    """`message` as the tab that asked sees it: secrets masked, the user's own details kept."""
    return {k: v if k in _ENVELOPE else _each(v, _secrets_masked) for k, v in message.items()}


def _secrets_masked(text: str) -> str:
    return mask_secrets(mask_for_model(text))[0]


_NAME_KEYS = frozenset({"id", "session"})
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""The app's own names inside a payload (a session's id in the Sessions list): one word, never text that
could carry the user's details, so only secrets are masked in them (a session id of twelve digits is not a
phone number; a card number is a card number wherever it is)."""


def _each(value: Any, leaf: Callable[[str], Any]) -> Any:
    if isinstance(value, str):
        return leaf(value)
    if isinstance(value, dict):
        return {
            k: _secrets_masked(v)
            if k in _NAME_KEYS and isinstance(v, str) and _NAME.fullmatch(v)
            else _each(v, leaf)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_each(v, leaf) for v in value]
    return value


def dumps(message: dict[str, Any]) -> str:
    return json.dumps(message, ensure_ascii=False, default=str, separators=(",", ":"))


class Hub:
    """Numbered events of one session (ids start at 1, increase by one) and its WebSocket queues."""

    def __init__(self, session: str, *, size: int = 5000, history: History | None = None) -> None:
        self.session = session
        self.history = history if history is not None else History(None)
        """What the chat showed (`server.history`): its questions and answers, and the user's messages."""
        self.buffer: deque[tuple[int, str, str]] = deque(maxlen=size)
        """(id, kind, serialised data) of the last `size` events."""
        self.last_id = 0
        self.clients: dict[asyncio.Queue[str | None], str] = {}
        """Each WebSocket connection's queue, with the browser tab (client id) it belongs to."""
        self._changed = asyncio.Event()
        self.closed = False

    # ----- SSE ----------------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        """The event sink given to the session's runs."""
        if event.kind in SSE_KINDS:
            self.publish(event.kind, event.data, at=event.at)
        if event.kind == "status":
            self.send({"kind": "status", "state": str(event.data.get("state", "idle"))})

    def publish(self, kind: str, data: dict[str, Any], *, at: float) -> int:
        self.last_id += 1
        body = {"v": VERSION, "kind": kind, "session": self.session, "id": self.last_id, "at": at}
        body["data"] = _each(data, redact)
        self.buffer.append((self.last_id, kind, dumps(body)))
        self._changed.set()
        self._changed = asyncio.Event()
        return self.last_id

    def after(self, last_id: int) -> Iterator[tuple[int, str, str]]:
        """Buffered events with an id above `last_id`, in order."""
        if not self.buffer:
            return iter(())
        first = self.buffer[0][0]
        start = max(0, last_id - first + 1)
        return (self.buffer[i] for i in range(start, len(self.buffer)))

    async def wait(self, last_id: int, timeout: float) -> None:
        """Until an event newer than `last_id` exists, the hub closes, or `timeout` passes."""
        if self.last_id > last_id or self.closed:
            return
        changed = self._changed
        try:
            async with asyncio.timeout(timeout):
                await changed.wait()
        except TimeoutError:
            return

    def close(self) -> None:
        self.closed = True
        self._changed.set()
        for queue in self.clients:
            queue.put_nowait(None)

    # ----- WebSocket ----------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        """To every WebSocket client of the session (each has an ordered queue)."""
        shown = outgoing({"v": VERSION, **message})
        self.history.add(shown)
        text = dumps(shown)
        for queue in self.clients:
            queue.put_nowait(text)

    def send_question(self, message: dict[str, Any], *, nonce: str | None, client: str | None) -> None:
        """A question to every client; to the connections of tab `client` (the one that asked) as its
        owner sees it (`for_owner`), with `nonce` when there is one."""
        shown = outgoing({"v": VERSION, **message})
        self.history.add(shown)
        text = dumps(shown)
        keyed = dumps(for_owner({"v": VERSION, **message, **({"nonce": nonce} if nonce else {})}))
        for queue, owner in self.clients.items():
            queue.put_nowait(keyed if client is not None and owner == client else text)
