"""Server sessions whose runs are jobs (`JOB_QUEUE=on`): a message is put into the job queue, a worker
runs it, and its events come back through the relay (`jobs.events.EventRelay`) to the session's hub.

Any server process on the database follows a session once a page shows it (`follow`, from
`SessionManager.detail`): its stored events are replayed into the hub (so SSE and a reloaded page see
them), new ones arrive as the worker publishes them. How a turn ended (`outcome`) is answered to the
page as an in-process run's would be (`SessionManager._answer`): a confirmation card gets this process's
nonce, sent only to the browser tab that sent the message (its client id travels with the job), so the
card may be allowed through any server process that tab reaches (several behind one address)."""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, cast

from browser_copilot.agent.runner import TurnOutcome
from browser_copilot.agent.secret_answers import withhold_answer
from browser_copilot.config import Settings
from browser_copilot.errors import CopilotError
from browser_copilot.events import Event, EventKind
from browser_copilot.jobs.events import EventRelay, StoredEvent
from browser_copilot.jobs.queue import Job, JobKind, JobQueue, open_queue, queue_url

if TYPE_CHECKING:
    from browser_copilot.server.sessions import Session, SessionManager

log = logging.getLogger(__name__)


class QueuedRuns:
    def __init__(self, manager: SessionManager, queue: JobQueue) -> None:
        self.manager = manager
        self.queue = queue
        self.relay = EventRelay(queue.url, self._deliver)
        self.jobs: dict[str, int] = {}
        """The job of each session this process submitted and that has not ended."""
        self._replaying: set[str] = set()

    async def follow(self, s: Session) -> None:
        """Show `s`'s job events from now on, its stored ones first (once per process)."""
        if s.id in self.relay.followed:
            return
        self._replaying.add(s.id)
        try:
            await self.relay.follow(s.id)
        finally:
            self._replaying.discard(s.id)

    async def submit(self, s: Session, text: str) -> None:
        """The turn of `SessionManager.start`: the message becomes a job (an answer to the pending
        question or card: a `resume` job); the answer comes through the relay."""
        s.state = "running"
        try:
            await self.follow(s)
            kind: JobKind = "resume" if await s.runner.pending() is not None else "start"
            # Secrets never reach the job table either (the worker's runner withholds them too).
            text = withhold_answer(text, await s.runner.secret_asked(), s.hub)
            job = Job(s.id, kind, text, client=s.asker, mode=s.mode)
            self.jobs[s.id] = await self.queue.submit(job)
        except CopilotError as exc:
            s.active, s.state = False, "error"
            s.hub.send({"kind": "error", "code": "queue", "message": str(exc)})
            s.hub.send({"kind": "status", "state": "error"})
            return
        s.hub.send({"kind": "status", "state": "running", "queued": 1})

    def cancel(self, s: Session) -> bool:
        """Stop the session's job: dropped when still queued, aborted when a worker runs it."""
        job_id = self.jobs.get(s.id)
        if not s.busy or job_id is None:
            return False
        self.manager._in_background(self._cancel(s, job_id))
        return True

    async def _cancel(self, s: Session, job_id: int) -> None:
        """A job no worker had taken is dropped and answered here; a running one is answered by its
        worker (a `job_error` of code `cancelled`)."""
        try:
            dropped = await self.queue.cancel(job_id)
        except CopilotError as exc:
            s.hub.send({"kind": "error", "code": "queue", "message": str(exc)})
            return
        if dropped and self.jobs.get(s.id) == job_id:
            del self.jobs[s.id]
            s.active = False
            s.cancelled()

    def _deliver(self, stored: StoredEvent) -> None:
        s = self.manager.sessions.get(stored.session)
        if s is None:
            return
        replayed = stored.session in self._replaying
        data = stored.data
        if stored.kind == "outcome":
            self._ended(s, stored)
            outcome = TurnOutcome(
                data.get("stop_reason") or "error",
                str(data.get("text") or ""),
                data.get("interrupt"),
                {"verified": bool(data.get("verified")), "doubts": list(data.get("doubts") or [])},
            )
            if data.get("client"):
                s.asker = str(data["client"])
            if replayed:  # a page that connects later gets the pending card from `detail`, with its nonce
                s.approval = None
                if outcome.interrupt is not None and outcome.interrupt.get("kind") == "confirm" and s.asker:
                    from browser_copilot.server.runs import Approval

                    s.approval = Approval(secrets.token_urlsafe(24), s.asker)
                return
            self.manager._answer(s, outcome)
            self.manager._tell_drivers(s)
        elif stored.kind == "job_error":
            self._ended(s, stored)
            if replayed:
                return
            if data.get("code") == "cancelled":
                s.cancelled()
                return
            s.state = "idle"
            s.hub.send({"kind": "error", "code": str(data.get("code")), "message": str(data.get("message"))})
            s.hub.send({"kind": "status", "state": "idle"})
        elif stored.kind != "job":
            s.hub(Event(cast(EventKind, stored.kind), dict(data), at=stored.at))

    def _ended(self, s: Session, stored: StoredEvent) -> None:
        if self.jobs.get(s.id) == stored.job_id:
            del self.jobs[s.id]
            s.active = False
        elif s.id not in self.jobs:
            s.active = False


@contextlib.asynccontextmanager
async def open_queued(settings: Settings, manager: SessionManager) -> AsyncIterator[QueuedRuns]:
    """The job queue and the event relay of a server with `JOB_QUEUE=on`, open while the block runs."""
    url = queue_url(settings, what="JOB_QUEUE=on")
    async with open_queue(url, pool_size=2) as queue:
        runs = QueuedRuns(manager, queue)
        async with runs.relay:
            yield runs
