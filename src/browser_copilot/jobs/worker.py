"""`main.py worker`: takes jobs from the queue and runs them in a browser of its own, up to
MAX_PARALLEL_RUNS at a time (each through an MCP server process of the pool, `browser.pool`).

Each job holds the session's lock (`agent.locks`) from before it touches the session's tab to its
end, and runs through the session's `AgentRunner` on the shared checkpoints, in the session's own tab
of this worker's browser (the one `CDP_ENDPOINT` names, or one it launches, headless where there is
no display). Its events go to `events.EventPublisher`; how the turn
ended goes last, as an `outcome` record (or a `job_error`). A turn that waits for the user (a card, a
question, a hand-over) parks on its checkpoint and the job ends; the answer is a new job.

Nothing runs twice:
- a worker sends a heartbeat every third of `JOB_STALLED_AFTER`; every worker looks, twice per that
  period, for jobs whose worker stopped sending it (killed, machine gone) and puts them back in the queue;
- a job taken again continues the run from its last checkpoint (`AgentRunner.continue_run`) when its
  first take had started it (the session's checkpoint moved since), else runs it as it was;
- a worker whose registration was removed (too slow to send its heartbeat) or whose queue connection failed
  gives its running jobs back and registers again, instead of ending;
- an approved action is recorded before it runs (`ledger.PostgresLedger`): taken again, it is not run a
  second time, and the model is told that it may have happened.
SIGTERM or Ctrl+C: no new job is taken; the running one has `JOB_SHUTDOWN_GRACE` seconds to end, then is
given back to the queue where it was (its checkpoint kept), for the next worker to continue."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
from collections.abc import Callable
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import psycopg
from langchain_core.language_models import BaseChatModel
from procrastinate import JobContext, RetryStrategy
from procrastinate.exceptions import ConnectorException
from procrastinate.job_context import AbortReason

from browser_copilot.agent.factory import make_context
from browser_copilot.agent.locks import LocalLocks, PostgresLocks
from browser_copilot.agent.memory import MemoryBook
from browser_copilot.agent.runner import AgentRunner, Graph, TurnOutcome, compile_graph
from browser_copilot.agent.storage import remember_session
from browser_copilot.agent.tools import builtin_specs
from browser_copilot.browser.pool import BrowserPool
from browser_copilot.browser.session import BrowserSession
from browser_copilot.config import Settings
from browser_copilot.errors import (
    BrowserError,
    ConfigError,
    CopilotError,
    McpError,
    SessionBusy,
    StorageError,
)
from browser_copilot.events import Event, fan_out
from browser_copilot.extras.servers import ExtraServers
from browser_copilot.jobs.events import EventPublisher
from browser_copilot.jobs.ledger import PostgresLedger
from browser_copilot.jobs.queue import TAKES_TABLE, TASK, JobQueue, open_queue, queue_url
from browser_copilot.logs import StepEventLog
from browser_copilot.sandbox.urls import site_of

log = logging.getLogger(__name__)
MAX_TAKES = 20
"""A job given back (its worker stopped) more often than this fails instead."""
FORGET_WORKERS_AFTER = 300.0
"""Seconds without a heartbeat after which a starting worker removes a worker's row (at least)."""
RESTART_AFTER = 2.0
"""Seconds a worker whose queue failed under it waits before it takes jobs again."""

_TAKE = f"""INSERT INTO {TAKES_TABLE} (job_id, session_id, checkpoint) VALUES (%s, %s, %s)
ON CONFLICT (job_id) DO UPDATE SET takes = {TAKES_TABLE}.takes + 1 RETURNING takes, checkpoint"""

_CLOSE_SESSION_TAB = """async (page) => {
  const key = %s;
  const tabs = page.context().__bcSessionTabs;
  const tab = tabs && tabs.get(key);
  if (tabs) tabs.delete(key);
  if (tab && !tab.isClosed() && page.context().pages().length > 1) await tab.close();
}"""
"""Close the tab the worker opened for a session whose turn has ended (never one it did not open)."""


class JobReleased(Exception):
    """The worker stops before the job ended: the job goes back to the queue, its checkpoint kept."""


class JobRunner:
    """Runs the jobs of one worker process (procrastinate calls `run` with each job's arguments)."""

    def __init__(
        self,
        settings: Settings,
        url: str,
        *,
        pool: BrowserPool,
        graph: Graph,
        llm: BaseChatModel,
        publisher: EventPublisher,
        memory: MemoryBook | None,
        extras: ExtraServers,
        name: str,
    ) -> None:
        self.settings = settings
        self.url = url
        self.pool = pool
        self.graph = graph
        self.llm = llm
        self.publisher = publisher
        self.memory = memory
        self.extras = extras
        self.name = name
        self.done = 0
        """Jobs this worker finished (any outcome)."""

    async def run(
        self,
        context: JobContext,
        session: str,
        kind: str,
        text: str,
        client: str | None = None,
        mode: str | None = None,
    ) -> None:
        async with self.pool.lease() as browser:
            await self._job(context, browser, session, kind, text, client, mode)

    async def _job(
        self,
        context: JobContext,
        browser: BrowserSession,
        session: str,
        kind: str,
        text: str,
        client: str | None,
        mode: str | None,
    ) -> None:
        job_id = context.job.id
        record = self.publisher.sink(session, job_id)
        events = fan_out(record, StepEventLog(self.settings.logs_dir / "steps.jsonl", session))
        agent = make_context(
            self.settings,
            llm=self.llm,
            browser=browser,
            events=events,
            memory=self.memory,
            extras=self.extras,
        )
        # The job holds the session's lock itself, from before it touches the session's tab to the end.
        runner = AgentRunner(
            self.graph,
            replace(agent, ledger=PostgresLedger(self.url, session)),
            session_id=session,
            locks=LocalLocks(),
        )
        runner.keep_on_cancel = lambda: context.abort_reason() is AbortReason.SHUTDOWN
        try:
            async with PostgresLocks(self.url).hold(session):
                before = await _checkpoint_id(runner)
                takes, first = await self._take(job_id, session, before)
                self.publisher.record(
                    session, job_id, "job", {"state": "taken", "takes": takes, "worker": self.name}
                )
                with contextlib.suppress(CopilotError):
                    await remember_session(self.settings, session)  # in the session list of every server
                outcome = await self._turn(runner, kind, text, mode, again=takes > 1 and first != before)
                await self._leave_tab(browser, session, ended=outcome.interrupt is None)
        except asyncio.CancelledError:
            if context.abort_reason() is AbortReason.SHUTDOWN:
                self.publisher.record(session, job_id, "job", {"state": "released", "worker": self.name})
                await self.publisher.flush()
                raise JobReleased(f"worker {self.name} stopped") from None
            self._error(session, job_id, "cancelled", "Cancelled. The session is intact.", client)
            await self.publisher.flush()
            raise
        except SessionBusy as exc:
            if context.job.attempts:  # put back as stalled while its worker still runs it (a slow heartbeat)
                log.warning("job %s: session %s is still being run by its first worker", job_id, session)
                self.publisher.record(
                    session, job_id, "job", {"state": "running elsewhere", "worker": self.name}
                )
            else:
                self._error(session, job_id, "busy", str(exc), client)
        except (BrowserError, McpError) as exc:
            self._error(session, job_id, "browser", str(exc), client)
        except StorageError as exc:
            self._error(session, job_id, "storage", str(exc), client)
        except _NothingPending as exc:
            self._error(session, job_id, "nothing_pending", str(exc), client)
        except psycopg.OperationalError as exc:
            # The database went away under the run (a restart, a dropped connection): what it saved is
            # kept, and the next take continues from its last checkpoint.
            log.warning("job %s: the database failed under the run (%s); back to the queue", job_id, exc)
            self.publisher.record(
                session, job_id, "job", {"state": "released", "worker": self.name, "why": "database"}
            )
            await self.publisher.flush()
            raise JobReleased(f"the database failed under job {job_id}") from exc
        except Exception as exc:  # the job's top: whatever failed is said to the session, not lost
            log.exception("job %s failed", job_id)
            self._error(session, job_id, "failed", f"The run failed: {type(exc).__name__}: {exc}", client)
        else:
            self.publisher.record(session, job_id, "outcome", _outcome_record(outcome, client))
            with contextlib.suppress(CopilotError):
                await remember_session(
                    self.settings, session, goal=outcome.values.get("current_goal") or None
                )
        finally:
            self.done += 1
        await self.publisher.flush()

    async def _turn(
        self, runner: AgentRunner, kind: str, text: str, mode: str | None, *, again: bool
    ) -> TurnOutcome:
        session = runner.session_id
        await self._enter_tab(runner)
        if again:
            runner.context.events(
                Event(
                    "notice",
                    {
                        "text": "The worker running this task stopped mid-run; this one continues it "
                        "from its last saved step.",
                        "to_user": True,
                    },
                )
            )
            return await runner.continue_run()
        if kind == "resume" and await runner.pending() is None:
            raise _NothingPending(f"session {session} is not waiting for an answer now")
        return await runner.send(text, mode=mode)

    async def _take(self, job_id: int | None, session: str, checkpoint: str) -> tuple[int, str]:
        """Count this take of the job; (takes so far, the session's checkpoint when it was first taken)."""
        try:
            async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
                row = await (await conn.execute(_TAKE, (job_id, session, checkpoint))).fetchone()
        except psycopg.Error as exc:
            raise StorageError(f"cannot record the job in the job queue: {exc}") from exc
        return (int(row[0]), str(row[1] or "")) if row else (1, checkpoint)

    def _error(self, session: str, job_id: int | None, code: str, message: str, client: str | None) -> None:
        self.publisher.record(
            session, job_id, "job_error", {"code": code, "message": message, "client": client}
        )

    async def _enter_tab(self, runner: AgentRunner) -> None:
        """The session's tab in this worker's browser: its own, or a new one back where it worked."""
        browser = runner.context.browser
        values = await runner.values()
        url = str((values.get("observation") or {}).get("url") or "")
        # The session's own task sites (the network policy's rule without lists): the site it worked on
        # is one (a worker has no memory of the session's earlier turns), the rest are learned as before.
        host = urlsplit(url).hostname if url.startswith(("http://", "https://")) else None
        browser.use_sites({site_of(host)} if host else set())
        waited_in = (values.get("pending_action") or {}).get("tab")
        tab = await browser.session_tab(runner.session_id, claim_start=False, target=waited_in)
        if tab.created and url.startswith(("http://", "https://")):
            await browser.goto(url)

    async def _leave_tab(self, browser: BrowserSession, session: str, *, ended: bool) -> None:
        """Keep the session's tab while it waits for the user (a hand-over is done in it, a held input is
        done again in it: the pending action names the tab, so the worker of the next turn adopts it);
        close it when the turn has ended."""
        with contextlib.suppress(BrowserError, McpError):
            if ended:
                await browser.run_code(_CLOSE_SESSION_TAB % json.dumps(session), timeout=30, idempotent=True)
            else:
                await browser.keep_tab(session)


class _NothingPending(CopilotError):
    """A `resume` job for a session that no longer waits (answered elsewhere, or deleted)."""


def _outcome_record(outcome: TurnOutcome, client: str | None) -> dict[str, Any]:
    answered = outcome.stop_reason == "answered"
    return {
        "stop_reason": outcome.stop_reason,
        "text": outcome.text,
        "interrupt": outcome.interrupt,
        "verified": answered and bool(outcome.values.get("verified", True)),
        "doubts": [str(d) for d in outcome.values.get("doubts") or []] if answered else [],
        "client": client,
    }


async def _checkpoint_id(runner: AgentRunner) -> str:
    snapshot = await runner.graph.aget_state(runner.config)
    configurable = (snapshot.config or {}).get("configurable") or {}
    return str(configurable.get("checkpoint_id") or "")


async def recover_stalled(queue: JobQueue, after: float) -> None:
    """Put back in the queue the jobs whose worker stopped sending its heartbeat `after` seconds ago."""
    manager = queue.app.job_manager
    while True:
        await asyncio.sleep(after / 2)
        try:
            stalled = list(await manager.get_stalled_jobs(seconds_since_heartbeat=after))
        except ConnectorException as exc:
            log.warning("stalled jobs: %s", exc)
            continue
        for job in stalled:
            try:
                await manager.retry_job(job)
            except ConnectorException:  # another worker put it back first
                continue
            log.warning("job %s of a stopped worker is back in the queue", job.id)


def _cause(exc: BaseException) -> str:
    """The database's own words for what failed (procrastinate's exception says only "Database error")."""
    cause = exc.__cause__ or exc
    return " ".join(str(cause).split())[:300] or type(cause).__name__


def worker_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


async def run_worker(
    settings: Settings,
    *,
    notice: Callable[[str], None],
    ready: Callable[[str], None],
    llm: Callable[[], BaseChatModel] | None = None,
) -> int:
    """Take and run jobs until cancelled (SIGTERM, Ctrl+C); 0 once stopped cleanly."""
    from browser_copilot.agent.memory import open_memory
    from browser_copilot.agent.storage import open_checkpointer
    from browser_copilot.llm.provider import HOW_TO_CONFIGURE, build_chat_model, resolve_llm

    url = queue_url(settings, what="main.py worker")
    if llm is None:
        endpoint = await asyncio.to_thread(resolve_llm, settings)
        if endpoint is None:
            raise ConfigError([HOW_TO_CONFIGURE])
        chosen = endpoint

        def llm() -> BaseChatModel:
            return build_chat_model(settings, chosen)

    name = worker_name()
    stalled = settings.job_stalled_after
    async with (
        open_queue(url) as queue,
        BrowserSession(settings, notice=notice) as browser,
        open_checkpointer(settings) as saver,
        open_memory(settings) as memory,
        ExtraServers.from_settings(settings, notice=notice, builtin=builtin_specs) as extras,
        EventPublisher(url) as publisher,
    ):
        pool = BrowserPool(settings, browser, warm_ahead=True, notice=notice)
        jobs = JobRunner(
            settings,
            url,
            pool=pool,
            graph=compile_graph(saver),
            llm=llm(),
            publisher=publisher,
            memory=memory,
            extras=extras,
            name=name,
        )
        retry = RetryStrategy(max_attempts=MAX_TAKES, retry_exceptions={JobReleased})
        queue.app.task(name=TASK, pass_context=True, retry=retry)(jobs.run)
        recovery = asyncio.create_task(recover_stalled(queue, stalled), name="stalled-jobs")
        at_once = "one at a time" if pool.limit == 1 else f"up to {pool.limit} at a time"
        ready(f"Worker {name} is taking jobs from the queue ({at_once}).")
        try:
            while True:
                try:
                    await queue.app.run_worker_async(
                        name=name,
                        concurrency=pool.limit,
                        install_signal_handlers=False,
                        shutdown_graceful_timeout=settings.job_shutdown_grace,
                        update_heartbeat_interval=stalled / 3,
                        # Only for forgetting dead workers' rows (jobs are recovered by heartbeat age):
                        # a live worker whose heartbeat lagged must not lose its row.
                        stalled_worker_timeout=max(stalled * 10, FORGET_WORKERS_AFTER),
                        fetch_job_polling_interval=min(5.0, stalled / 3),
                        delete_jobs="successful",
                    )
                    # It returns only when one of its own tasks failed (a heartbeat or the listening
                    # connection): being asked to stop cancels it.
                    why = "its heartbeat or listening connection failed"
                except ConnectorException as exc:
                    # A lost connection, or its row removed while it was too slow to send its heartbeat.
                    why = _cause(exc)
                # Its running jobs went back to the queue; it takes jobs again under a new registration.
                notice(f"Worker {name} lost the job queue ({why}); taking jobs again in {RESTART_AFTER:g} s.")
                await asyncio.sleep(RESTART_AFTER)
        finally:
            recovery.cancel()
            await asyncio.gather(recovery, return_exceptions=True)
            await pool.close()
    return 0
