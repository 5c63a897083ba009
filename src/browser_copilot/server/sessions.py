"""Server sessions on one browser: a runner and a hub per session, one run acting at a time.

Runs of different sessions never interleave: a run holds `SessionManager.turn_lock` for its whole turn
(the browser is shared) and the others wait in a FIFO queue, told their place as `status` with `queued`.
A message to a session whose run is active (running or queued) is refused with `busy`: wait for the
answer or cancel. Each session works in a tab of its own (`BrowserSession.session_tab`).

The checkpoint stays the source of truth (pending question, working state, stop reason).

Approvals come from the user's tab, not from any page that can reach the server: each confirmation card
gets a fresh random nonce (`Approval`), sent only to the browser tab whose message started the run (its
client id, `Session.asker`), kept only in memory here. An approval must carry it (`check_approval`); it
is used up by the run it starts. A card without one (pending from before a restart) can only be
declined."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import re
import secrets
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver

from browser_copilot.agent.conversation import chat_history
from browser_copilot.agent.factory import make_context
from browser_copilot.agent.memory import MemoryBook
from browser_copilot.agent.runner import AgentRunner, Graph, TurnOutcome, compile_graph
from browser_copilot.agent.storage import list_sessions, remember_session
from browser_copilot.browser.session import BrowserSession
from browser_copilot.config import Settings
from browser_copilot.errors import BrowserError, CopilotError, McpError, SessionBusy
from browser_copilot.events import fan_out
from browser_copilot.extras.servers import ExtraServers
from browser_copilot.logs import StepEventLog
from browser_copilot.server.hub import Hub

SESSION_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
CANCELLED = "Cancelled. The browser and the session are intact; a new message continues the same goal."


def question_message(pending: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "agent_question",
        "question": str(pending.get("question", "")),
        "pending_kind": str(pending.get("kind", "question")),
        "card": pending.get("card") or {},
        "options": list(pending.get("options") or []),
    }


@dataclass(frozen=True)
class Approval:
    """The proof an approval of the pending card must carry: its nonce, and the tab it was shown in."""

    nonce: str
    client: str


NO_PROOF = (
    "this confirmation was asked before the server started: it can only be refused here; "
    "refuse it and ask again, and the new card can be allowed"
)
NOT_SHOWN = (
    "an approval must answer the card shown in the tab that asked (its nonce): this one does not, "
    "so nothing was approved and the card still waits; allow it in that tab, or refuse it"
)


@dataclass
class Session:
    id: str
    runner: AgentRunner
    hub: Hub
    mode: str = "chat"
    state: str = "idle"
    updated: float = field(default_factory=time.time)
    turn: asyncio.Task[None] | None = None
    active: bool = False
    """From the message to the answer (queued or running); cleared in the same step the answer is sent."""
    asker: str | None = None
    """The client id (browser tab or connection) whose message started the last run."""
    approval: Approval | None = None
    """The pending card's proof, if a card of this process is pending."""

    @property
    def busy(self) -> bool:
        return self.active


class SessionManager:
    def __init__(
        self,
        settings: Settings,
        *,
        browser: BrowserSession,
        llm: BaseChatModel,
        checkpointer: BaseCheckpointSaver[Any],
        buffer: int = 5000,
        memory: MemoryBook | None = None,
        extras: ExtraServers | None = None,
    ) -> None:
        self.settings = settings
        self.extras = extras if extras is not None else ExtraServers()
        self.memory = memory
        settings.logs_dir.mkdir(parents=True, exist_ok=True)
        self.browser = browser
        self.llm = llm
        self.saver = checkpointer
        self.graph: Graph = compile_graph(checkpointer)
        self.buffer = buffer
        self.sessions: dict[str, Session] = {}
        self.turn_lock = asyncio.Lock()
        self.queue: list[Session] = []

    # ----- sessions -----------------------------------------------------------------------

    def session(self, session_id: str) -> Session:
        """The session (created in memory when new; its checkpoint, if any, is the state)."""
        if not SESSION_ID.match(session_id):
            raise ValueError(f"bad session id {session_id!r}: letters, digits, - and _ only (max 64)")
        found = self.sessions.get(session_id)
        if found is not None:
            return found
        hub = Hub(session_id, size=self.buffer)
        log = StepEventLog(self.settings.logs_dir / "steps.jsonl", session_id)
        context = make_context(
            self.settings,
            llm=self.llm,
            browser=self.browser,
            events=fan_out(hub, log),
            memory=self.memory,
            extras=self.extras,
        )
        found = Session(session_id, AgentRunner(self.graph, context, session_id=session_id), hub)
        self.sessions[session_id] = found
        return found

    async def known(self, session_id: str) -> Session | None:
        """An existing session (in memory or in the checkpointer), without creating one."""
        if session_id in self.sessions:
            return self.sessions[session_id]
        if not SESSION_ID.match(session_id):
            return None
        snapshot = await self.graph.aget_state({"configurable": {"thread_id": session_id}})
        return self.session(session_id) if snapshot.values else None

    async def listing(self) -> list[dict[str, Any]]:
        rows: dict[str, dict[str, Any]] = {}
        for info in await list_sessions(self.settings, limit=200):
            updated = info.updated.astimezone(UTC).isoformat()
            rows[info.session_id] = {"id": info.session_id, "goal": info.goal or "", "updated": updated}
            rows[info.session_id]["state"] = "idle"
        for sid, s in self.sessions.items():
            row = rows.setdefault(sid, {"id": sid, "goal": "", "updated": _iso(s.updated)})
            row["state"] = s.state
            row["updated"] = max(str(row["updated"]), _iso(s.updated))
        return sorted(rows.values(), key=lambda r: str(r["updated"]), reverse=True)

    async def detail(self, s: Session) -> dict[str, Any]:
        last_event = s.hub.last_id  # before the state: every final up to it is in `chat` or still coming
        values = await s.runner.values()
        running = s.busy and s.state == "running"
        pending = None if running else await s.runner.pending()
        state = "running"
        if not running:
            failed = values.get("stop_reason") == "error"
            state = "waiting_user" if pending else ("error" if failed else "idle")
        return {
            "id": s.id,
            "state": state,
            "mode": values.get("mode") or s.mode,
            "goal": values.get("current_goal") or "",
            "plan": values.get("plan") or [],
            "progress": values.get("progress") or {},
            "facts": values.get("facts") or [],
            "pending": question_message(pending) if pending else None,
            # What a reloaded page shows in its chat: the checkpoint's conversation (the page then skips
            # the SSE replay of a `final` up to `last_event_id` whose text it already shows).
            "chat": chat_history(list(values.get("messages") or [])),
            "last_event_id": last_event,
            # How the last run ended (from the checkpoint, so it outlives the server's event buffer): a
            # reloaded page marks its answer unverified when the checks doubted it.
            "outcome": {
                "stop_reason": values.get("stop_reason"),
                "verified": bool(values.get("verified")),
                "doubts": [str(d) for d in values.get("doubts") or []],
            },
        }

    # ----- turns --------------------------------------------------------------------------

    def start(self, s: Session, text: str, *, client: str | None = None) -> None:
        """Run one user message from tab `client` (caller checked `busy`); any card's nonce is used up."""
        s.asker = client
        s.approval = None
        s.active = True
        s.turn = asyncio.create_task(self._turn(s, text), name=f"turn-{s.id}")

    def cancel(self, s: Session) -> bool:
        if not s.busy:
            return False
        assert s.turn is not None
        s.turn.cancel()
        return True

    def _announce_queue(self) -> None:
        for place, waiting in enumerate(self.queue, start=1):
            waiting.hub.send({"kind": "status", "state": "running", "queued": place})

    async def _turn(self, s: Session, text: str) -> None:
        s.state = "running"
        s.updated = time.time()
        self.queue.append(s)
        self._announce_queue()
        try:
            async with self.turn_lock:
                self.queue.remove(s)
                self._announce_queue()
                await remember_session(self.settings, s.id)
                outcome = await self._act(s, text)
        except asyncio.CancelledError:
            if s in self.queue:
                self.queue.remove(s)
                self._announce_queue()
            s.state = "idle"
            s.hub.send({"kind": "status", "state": "idle"})
            s.hub.send(
                {
                    "kind": "agent_message",
                    "text": CANCELLED,
                    "stop_reason": "cancelled",
                    "verified": False,
                    "doubts": [],
                }
            )
            raise
        except SessionBusy as exc:  # another server process on the same database runs it now
            s.state = "idle"
            s.hub.send({"kind": "error", "code": "busy", "message": str(exc)})
            s.hub.send({"kind": "status", "state": "idle"})
            return
        except (BrowserError, McpError) as exc:
            s.state = "error"
            s.hub.send({"kind": "error", "code": "browser", "message": str(exc)})
            s.hub.send({"kind": "status", "state": "error"})
            return
        finally:
            s.active = False  # no await between here and the answer: a client's next message is accepted
            s.updated = time.time()
        self._answer(s, outcome)
        with contextlib.suppress(CopilotError):
            await remember_session(self.settings, s.id, goal=outcome.values.get("current_goal") or None)

    async def _act(self, s: Session, text: str) -> TurnOutcome:
        values = await s.runner.values()
        created = await self.browser.session_tab(s.id)
        url = str((values.get("observation") or {}).get("url") or "")
        if created and url.startswith(("http://", "https://")):
            await self.browser.goto(url)  # a session from an earlier process: back where it worked
        try:
            return await s.runner.send(text, mode=s.mode)
        finally:
            with contextlib.suppress(BrowserError, McpError):
                await asyncio.shield(self.browser.keep_tab(s.id))

    def _answer(self, s: Session, outcome: TurnOutcome) -> None:
        if outcome.interrupt is not None:
            s.state = "waiting_user"
            confirm = outcome.interrupt.get("kind") == "confirm"
            s.approval = Approval(secrets.token_urlsafe(24), s.asker) if confirm and s.asker else None
            nonce, client = (s.approval.nonce, s.approval.client) if s.approval else (None, None)
            s.hub.send_question(question_message(outcome.interrupt), nonce=nonce, client=client)
            return
        s.state = "error" if outcome.stop_reason == "error" else "idle"
        answered = outcome.stop_reason == "answered"
        s.hub.send(
            {
                "kind": "agent_message",
                "text": outcome.text,
                "stop_reason": outcome.stop_reason,
                # As in the `final` event: an answer the app's checks doubt is unverified, with the reasons.
                "verified": answered and bool(outcome.values.get("verified", True)),
                "doubts": [str(d) for d in outcome.values.get("doubts") or []] if answered else [],
            }
        )

    @staticmethod
    def check_approval(s: Session, client: str, nonce: object) -> str | None:
        """Why an approval from tab `client` carrying `nonce` does not answer the pending card, or None."""
        if s.approval is None:
            return NO_PROOF
        if not isinstance(nonce, str) or not nonce:
            return NOT_SHOWN
        same_card = hmac.compare_digest(nonce.encode(), s.approval.nonce.encode())
        same_tab = hmac.compare_digest(client.encode(), s.approval.client.encode())
        return None if same_card and same_tab else NOT_SHOWN

    @staticmethod
    def card_for(s: Session, client: str, question: dict[str, Any]) -> dict[str, Any]:
        """The pending question as tab `client` gets it on connect: with the nonce for the tab that asked."""
        confirm = question.get("pending_kind") == "confirm"
        if s.approval is not None and confirm and s.approval.client == client:
            return {**question, "nonce": s.approval.nonce}
        return question

    async def set_mode(self, s: Session, mode: str) -> None:
        s.mode = mode
        if not s.busy and await s.runner.pending() is None and await s.runner.values():
            await s.runner.remember({"mode": mode})

    async def close(self) -> None:
        """Cancel every run (each keeps its session, like Ctrl+C) and close the hubs."""
        turns = [s.turn for s in self.sessions.values() if s.turn is not None and not s.turn.done()]
        for turn in turns:
            turn.cancel()
        await asyncio.gather(*turns, return_exceptions=True)
        for s in self.sessions.values():
            s.hub.close()


def _iso(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).isoformat()
