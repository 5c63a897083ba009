"""Server sessions on one browser: a runner and a hub per session, up to MAX_PARALLEL_RUNS at once.

`SessionManager` keeps the sessions (in memory, and in the checkpointer and the session list across
restarts), tells their state, deletes them and closes them all; their runs (the browser pool, the queue,
each session's tabs, the answers and the approval of a card) are `runs.SessionRuns`.

The live view (`server.live`) shows each session's tab; the user may click and type in it
(`may_drive`) from the tab that gave the session its task, only while its own run does not act (and,
with MAX_PARALLEL_RUNS=1, while nothing acts in the browser) and the session waits for the user in the
browser (a hand-over) or for a new task.

The checkpoint stays the source of truth (pending question, working state, stop reason)."""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver

from browser_copilot.agent.conversation import chat_history
from browser_copilot.agent.factory import make_context
from browser_copilot.agent.memory import MemoryBook
from browser_copilot.agent.metrics import Metrics
from browser_copilot.agent.runner import AgentRunner, Graph, compile_graph
from browser_copilot.agent.storage import forget_session, list_sessions
from browser_copilot.browser.pool import BrowserPool
from browser_copilot.browser.session import BrowserSession
from browser_copilot.config import Settings
from browser_copilot.events import fan_out
from browser_copilot.extras.servers import ExtraServers
from browser_copilot.logs import StepEventLog
from browser_copilot.sandbox.cdp import CdpError
from browser_copilot.server.history import History
from browser_copilot.server.hub import Hub
from browser_copilot.server.live import LiveView
from browser_copilot.server.live_stream import Viewer
from browser_copilot.server.runs import Approval, SessionRuns, question_message

if TYPE_CHECKING:
    from browser_copilot.server.queued import QueuedRuns

SESSION_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
STATES_READ = 50
"""Sessions not used by this process whose state the list reads from their checkpoint (the most recent)."""
STATE_TTL = 30.0
CANCELLED = "Cancelled. The browser and the session are intact; a new message continues the same goal."
NOT_OWNER = "Only the browser tab that gave this session its task can click and type in its page."
AGENT_ACTS = (
    "The agent is working in the browser: you can click and type here when it waits for you or has "
    "finished (or press Stop)."
)
ANSWER_FIRST = "A question is waiting in the chat: answer it first (the page stays as the card shows it)."


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
    answered: bool = False
    """Its run has given its answer (the `final` event, which the page shows at once) and is finishing:
    a message now waits for the end instead of being refused as busy."""
    asker: str | None = None
    """The client id (browser tab or connection) whose message started the last run."""
    approval: Approval | None = None
    """The pending card's proof, if a card of this process is pending."""
    metrics: Metrics = field(default_factory=Metrics)
    """Steps, tokens and errors of this session's runs in this process (`/status`)."""
    target: str | None = None
    """Its tab (CDP target id), once it has worked in this process."""
    opened: set[str] = field(default_factory=set)
    """The tabs the app opened for it (closed when it is deleted or the server stops)."""
    worked: set[str] = field(default_factory=set)
    """The tabs the agent worked in during its runs."""
    sites: set[str] = field(default_factory=set)
    """Its task's sites (the network policy's rule without lists), its own."""
    browser: BrowserSession | None = None
    """The pool's browser session its run holds, while it runs."""

    @property
    def busy(self) -> bool:
        return self.active

    def cancelled(self) -> None:
        """Its run was stopped: idle again, and the chat says so (a stop's answer, unverified)."""
        self.state = "idle"
        self.hub.send({"kind": "status", "state": "idle"})
        self.hub.send(
            {
                "kind": "agent_message",
                "text": CANCELLED,
                "stop_reason": "cancelled",
                "verified": False,
                "doubts": [],
            }
        )


class SessionManager(SessionRuns):
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
        model: str | None = None,
    ) -> None:
        self.settings = settings
        self.model = model or _model_name(llm)
        """The model, as the status line says it."""
        self.extras = extras if extras is not None else ExtraServers()
        self.memory = memory
        settings.logs_dir.mkdir(parents=True, exist_ok=True)
        self.browser = browser
        self.llm = llm
        self.saver = checkpointer
        self.graph: Graph = compile_graph(checkpointer)
        self.buffer = buffer
        self.sessions: dict[str, Session] = {}
        self.pool = BrowserPool(settings, browser)
        self.queue: list[Session] = []
        """Sessions whose run waits for a free place (MAX_PARALLEL_RUNS), first first."""
        self.live = LiveView(lambda: browser.endpoint.url if browser.endpoint else None)
        self._background: set[asyncio.Task[None]] = set()
        self._headless: bool | None = None
        self._stored: dict[str, tuple[float, str]] = {}
        self.queued: QueuedRuns | None = None
        """JOB_QUEUE=on: runs are jobs for the workers, their events relayed (`server.queued`)."""

    # ----- sessions -----------------------------------------------------------------------

    def session(self, session_id: str) -> Session:
        """The session (created in memory when new; its checkpoint, if any, is the state)."""
        if not SESSION_ID.match(session_id):
            raise ValueError(f"bad session id {session_id!r}: letters, digits, - and _ only (max 64)")
        found = self.sessions.get(session_id)
        if found is not None:
            return found
        hub = Hub(session_id, size=self.buffer, history=History.of(self.settings.data_dir, session_id))
        log = StepEventLog(self.settings.logs_dir / "steps.jsonl", session_id)
        metrics = Metrics()
        context = make_context(
            self.settings,
            llm=self.llm,
            browser=self.browser,
            events=fan_out(hub, log, metrics, lambda event: self._follow(session_id, event)),
            memory=self.memory,
            extras=self.extras,
        )
        runner = AgentRunner(self.graph, context, session_id=session_id)
        found = Session(session_id, runner, hub, metrics=metrics)
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
        """The sessions, most recent first, each in the state it is really in: one of this process as it
        runs; one from the checkpoint alone waiting for the user when a question is pending there."""
        rows: dict[str, dict[str, Any]] = {}
        for info in await list_sessions(self.settings, limit=200):
            updated = info.updated.astimezone(UTC).isoformat()
            rows[info.session_id] = {"id": info.session_id, "goal": info.goal or "", "updated": updated}
            rows[info.session_id]["state"] = "idle"
        for sid, s in self.sessions.items():
            row = rows.setdefault(sid, {"id": sid, "goal": "", "updated": _iso(s.updated)})
            row["state"] = "queued" if s in self.queue else s.state
            row["updated"] = max(str(row["updated"]), _iso(s.updated))
        stored = [r for r in rows.values() if r["id"] not in self.sessions][:STATES_READ]
        for row in stored:
            row["state"] = await self._stored_state(row["id"])
        return sorted(rows.values(), key=lambda r: str(r["updated"]), reverse=True)

    async def _stored_state(self, session_id: str) -> str:
        """waiting_user or idle, from the checkpoint of a session this process does not hold (read again
        after `STATE_TTL` seconds: only another process on the same database changes it)."""
        now = time.monotonic()
        known = self._stored.get(session_id)
        if known is not None and now - known[0] < STATE_TTL:
            return known[1]
        snapshot = await self.graph.aget_state({"configurable": {"thread_id": session_id}})
        state = "waiting_user" if snapshot.interrupts else "idle"
        self._stored[session_id] = (now, state)
        return state

    async def detail(self, s: Session, *, history: bool = False) -> dict[str, Any]:
        if self.queued is not None:  # its job events, replayed into the hub before the page reads it
            await self.queued.follow(s)
        last_event = s.hub.last_id  # before the state: every final up to it is in `chat` or still coming
        values = await s.runner.values()
        running = s.busy and s.state == "running"
        pending = None if running else await s.runner.pending()
        state = "running"
        if not running:
            failed = values.get("stop_reason") == "error"
            state = "waiting_user" if pending else ("error" if failed else "idle")
            if not s.busy:
                s.state = state  # a session first held after a restart: as its checkpoint says
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
            # What the session's model calls cost, from the checkpoint (so after a restart too); the page
            # adds the SSE `usage` events after `last_event_id`.
            "usage": usage_of(list(values.get("messages") or [])),
        } | ({"history": list(s.hub.history.entries())} if history else {})

    # ----- the live view --------------------------------------------------------------------

    async def live_target(self, s: Session) -> str | None:
        """The tab the live view shows for `s`: the agent's while it runs, else the session's; a session
        of an earlier process: the tab showing the page it was on, if one does."""
        if s.browser is not None and s.browser.agent_target:
            return s.browser.agent_target
        try:
            tabs = await self.live.targets()
        except CdpError:
            return s.target
        if s.target is not None and any(t.id == s.target for t in tabs):
            return s.target
        url = str(((await s.runner.values()).get("observation") or {}).get("url") or "")
        return next((t.id for t in tabs if url and t.url == url), None)

    async def headless(self) -> bool | None:
        """Whether the browser has no window (a launched headless one, or one whose user agent says so);
        None when unknown."""
        launched = self.browser.launched
        if launched is not None:
            args = launched.process.args
            return isinstance(args, list) and "--headless" in [str(a) for a in args]
        if self._headless is None:
            try:
                cdp = await self.live.connection()
                agent = str((await cdp.send("Browser.getVersion")).get("userAgent") or "")
            except CdpError:
                return None
            self._headless = "Headless" in agent
        return self._headless

    async def watch(self, s: Session, viewer: Viewer) -> None:
        viewer.say(self._control(s, viewer.client))
        await self.live.watch(s.id, viewer, await self.live_target(s))

    async def may_drive(self, s: Session, client: str) -> str | None:
        """Why tab `client` may not click or type in `s`'s tab now, or None."""
        if s.asker is not None and client != s.asker:
            return NOT_OWNER
        if s.busy or (self.pool.limit == 1 and self.pool.running > 0):
            return AGENT_ACTS
        pending = await s.runner.pending()
        if pending is not None and pending.get("kind") != "manual":
            return ANSWER_FIRST
        return None

    def _control(self, s: Session, client: str) -> dict[str, Any]:
        return {"kind": "control", "owner": s.asker is None or s.asker == client, "acting": s.busy}

    def _tell_drivers(self, s: Session) -> None:
        for viewer in list(self.live.viewers.get(s.id, ())):
            viewer.say(self._control(s, viewer.client))

    async def set_mode(self, s: Session, mode: str) -> None:
        s.mode = mode
        if not s.busy and await s.runner.pending() is None and await s.runner.values():
            await s.runner.remember({"mode": mode})

    async def delete(self, s: Session) -> None:
        """Delete a session: its run cancelled, the tabs the app opened for it closed, its checkpoint and
        its line in the session list gone."""
        if s.turn is not None and not s.turn.done():
            s.turn.cancel()
            await asyncio.gather(s.turn, return_exceptions=True)
        await self._close_tabs([s])
        for viewer in list(self.live.viewers.get(s.id, ())):
            await self.live.unwatch(viewer)
        await self.saver.adelete_thread(s.id)
        await forget_session(self.settings, s.id)
        s.hub.history.forget()
        self.sessions.pop(s.id, None)
        self._stored.pop(s.id, None)
        s.hub.close()

    async def close(self) -> None:
        """Cancel every run (each keeps its session, like Ctrl+C), close the tabs the app opened for the
        sessions (unless SERVER_KEEP_TABS), the live view and the hubs."""
        turns = [s.turn for s in self.sessions.values() if s.turn is not None and not s.turn.done()]
        for turn in turns:
            turn.cancel()
        await asyncio.gather(*turns, return_exceptions=True)
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        await self._close_tabs(list(self.sessions.values()))
        await self.pool.close()
        await self.live.close()
        for s in self.sessions.values():
            s.hub.close()


def _iso(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).isoformat()


def _model_name(llm: BaseChatModel) -> str:
    name = str(getattr(llm, "model_name", "") or getattr(llm, "model", "") or "")
    where = str(getattr(llm, "openai_api_base", "") or "")
    return f"{name} at {where}" if name and where else name


def usage_of(messages: list[Any]) -> dict[str, int]:
    """The tokens the model calls of a conversation used (their `usage_metadata`)."""
    prompt = completion = 0
    for message in messages:
        usage = getattr(message, "usage_metadata", None) or {}
        prompt += int(usage.get("input_tokens") or 0)
        completion += int(usage.get("output_tokens") or 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion}
