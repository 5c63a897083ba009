"""Running the graph for one user message: new request, or the answer to a pending question.

The checkpoint is the source of truth: whether a question is pending, the working state and the stop
reason are read from it (thread_id = session_id), so a restarted app resumes where it was.
`TurnOutcome` and `new_session_id` live in the light `agent.turns` and are re-exported here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.graph import build_graph
from browser_copilot.agent.locks import SessionLocks, locks_for
from browser_copilot.agent.memory import request_memories
from browser_copilot.agent.secret_answers import secret_asked, withhold_answer
from browser_copilot.agent.state import AgentState, StopReason, new_request
from browser_copilot.agent.turns import TurnOutcome as TurnOutcome
from browser_copilot.agent.turns import new_session_id as new_session_id
from browser_copilot.errors import BrowserError, McpError
from browser_copilot.events import Event
from browser_copilot.safety.redaction import Asked

Graph = CompiledStateGraph[AgentState, AgentContext, AgentState, AgentState]


def compile_graph(checkpointer: BaseCheckpointSaver[Any]) -> Graph:
    return build_graph().compile(checkpointer=checkpointer)


class AgentRunner:
    """Runs one session. `send` holds the session's lock for the whole run (`agent.locks`): the one that
    `storage.open_checkpointer` registered for the graph's checkpointer unless `locks` is given; a second
    run of the same session, here or in another process, raises `SessionBusy`."""

    def __init__(
        self, graph: Graph, context: AgentContext, *, session_id: str, locks: SessionLocks | None = None
    ) -> None:
        self.graph = graph
        self.context = context
        self.session_id = session_id
        self.locks = locks if locks is not None else locks_for(graph.checkpointer)
        self._tab_checked = False
        self.keep_on_cancel: Callable[[], bool] = lambda: False
        """Asked when a run is cancelled: True leaves the checkpoint where the run was (a worker that
        stops releases its job, which another worker continues), else the run is marked cancelled."""

    @property
    def config(self) -> RunnableConfig:
        return {"configurable": {"thread_id": self.session_id}, "recursion_limit": 400}

    async def values(self) -> dict[str, Any]:
        snapshot = await self.graph.aget_state(self.config)
        return dict(snapshot.values)

    async def pending(self) -> dict[str, Any] | None:
        """The question the run is waiting on, if any."""
        snapshot = await self.graph.aget_state(self.config)
        for interrupt in snapshot.interrupts:
            value = interrupt.value
            return value if isinstance(value, dict) else {"kind": "question", "question": str(value)}
        return None

    async def send(self, text: str, *, mode: str | None = None) -> TurnOutcome:
        """A user message: resumes a pending question, or starts (or continues) a request.

        Raises `SessionBusy` (and runs nothing) while another run of this session holds its lock."""
        async with self.locks.hold(self.session_id):
            return await self._send(text, mode)

    async def continue_run(self) -> TurnOutcome:
        """A run whose process died mid-way (a worker killed): on from its last checkpoint, under the
        session's lock; where it already ended or waits for the user, where it stands."""
        async with self.locks.hold(self.session_id):
            snapshot = await self.graph.aget_state(self.config)
            if not snapshot.next or snapshot.interrupts:
                return await self.outcome()
            return await self._run(None, resumed=True)

    async def secret_asked(self) -> Asked | None:
        """Whether the next message answers a request for a password, PIN or code (`secret_answers`)."""
        return secret_asked(await self.values(), await self.pending())

    async def _send(self, text: str, mode: str | None) -> TurnOutcome:
        pending, previous = await self.pending(), await self.values()
        text = withhold_answer(text, secret_asked(previous, pending), self.context.events)
        if pending is not None:
            return await self._run(Command(resume=text), resumed=True)
        await self._return_to_tab(previous)
        update = new_request(text, previous)
        update |= await request_memories(self.context.memory, text, self.context.events)
        if mode is not None:
            update["mode"] = mode
        return await self._run(update)

    async def _return_to_tab(self, values: dict[str, Any]) -> None:
        """A session resumed by this process goes back to the tab it worked in (F66), found by its URL
        or reopened there; once per runner."""
        if self._tab_checked:
            return
        self._tab_checked = True
        observation = values.get("observation") or {}
        url = str(observation.get("url") or "")
        browser = self.context.browser
        if not url.startswith(("http://", "https://")) or url == browser.agent_url:
            return
        try:
            await browser.return_to(url)
        except (BrowserError, McpError, ValueError) as exc:
            self.context.events(
                Event("error", {"kind": "browser", "message": f"could not return to {url}: {exc}"})
            )
            return
        self.context.events(Event("notice", {"text": f"Back in the tab this session was working in: {url}"}))

    async def remember(self, values: dict[str, Any]) -> None:
        """Write session state (e.g. the chat mode) into the checkpoint while the agent is idle."""
        await self.graph.aupdate_state(self.config, values, as_node="progress_reporter")

    async def _run(self, graph_input: Any, *, resumed: bool = False) -> TurnOutcome:
        events = self.context.events
        events(Event("status", {"state": "running", "resumed": resumed}))
        try:
            async for chunk in self.graph.astream(
                graph_input,
                self.config,
                context=self.context,
                stream_mode="updates",
            ):
                for node in chunk:
                    if not node.startswith("__"):
                        events(Event("node", {"node": node}))
        except asyncio.CancelledError:
            if self.keep_on_cancel():
                raise
            await asyncio.shield(self._mark_cancelled())
            events(Event("status", {"state": "idle"}))
            raise
        return await self.outcome()

    async def _mark_cancelled(self) -> None:
        await self.graph.aupdate_state(
            self.config,
            {"stop_reason": "cancelled"},
            as_node="progress_reporter",
        )

    async def outcome(self) -> TurnOutcome:
        """Where the session stands now (after a run, or when resuming a session)."""
        events = self.context.events
        pending = await self.pending()
        values = await self.values()
        if pending is not None:
            reason: StopReason = (
                "waiting_confirmation" if pending.get("kind") == "confirm" else "waiting_user"
            )
            events(Event("status", {"state": "waiting_user"}))
            return TurnOutcome(reason, str(pending.get("question", "")), pending, values)
        reason = values.get("stop_reason") or "error"
        text = next(
            (
                str(m.content)
                for m in reversed(values.get("messages", []))
                if isinstance(m, AIMessage) and m.content
            ),
            "",
        )
        events(Event("status", {"state": "error" if reason == "error" else "idle"}))
        return TurnOutcome(reason, text, None, values)
