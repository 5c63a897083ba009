"""The terminal's background jobs (`/bg TASK`, `/jobs`, `/jobs N`): tasks that run while you type.

Each job is a session of its own, run through the browser pool (`browser.pool`, MAX_PARALLEL_RUNS):
a window of its own in the same browser, an MCP server process of its own, the sites of its own task.
The terminal's own task keeps the app's first browser session, so the jobs get at most
MAX_PARALLEL_RUNS - 1 places at once (at least one); the others wait their turn. A job that asks for a
confirmation or a hand-over stops there, holding nothing: `/jobs N` brings it to the front (it becomes
the terminal's session, in its own window), where `/yes` or `/no` answers it as usual. The UI renders:
the agent decides, the checkpoint keeps each job's state.

What a job shows is what a run in front shows (issue 27): its end goes through `render_outcome`, with
the Unverified mark and its reasons, the stop reason and the run's counts; `/jobs N` replays the job's
events (narrated at the source) through an `EventPrinter`, so its steps read as they would have live.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Literal

from rich.console import Console
from rich.markup import escape

from browser_copilot.agent.context import AgentContext
from browser_copilot.agent.metrics import Metrics
from browser_copilot.agent.runner import AgentRunner, Graph
from browser_copilot.agent.storage import remember_session
from browser_copilot.agent.turns import TurnOutcome, new_session_id
from browser_copilot.browser.pool import BrowserPool
from browser_copilot.browser.session import BrowserSession
from browser_copilot.config import Settings
from browser_copilot.errors import BrowserError, CopilotError, McpError, SessionBusy
from browser_copilot.events import Event, EventSink, fan_out
from browser_copilot.logs import StepEventLog
from browser_copilot.ui.render import EventPrinter, doubts, render_outcome

JobState = Literal["waiting", "running", "waiting_user", "done", "failed", "cancelled"]
_FOLLOWED = ("tool_call", "tool_result", "observation", "node", "policy_request")
KEPT_EVENTS = 2000
"""The newest events a job keeps for `/jobs N` (its steps); the log keeps them all."""


@dataclass
class Job:
    number: int
    task: str
    runner: AgentRunner
    state: JobState = "waiting"
    doing: str = ""
    """What it does now, in plain words (the last step's summary)."""
    answer: str = ""
    target: str | None = None
    """Its tab (CDP target id), once it has one."""
    sites: set[str] = field(default_factory=set)
    run: asyncio.Task[None] | None = None
    outcome: TurnOutcome | None = None
    seconds: float | None = None
    """How long its run took, from the moment it had a place."""
    metrics: Metrics = field(default_factory=Metrics)
    events: deque[Event] = field(default_factory=lambda: deque(maxlen=KEPT_EVENTS))
    """What it did, narrated (`summary`, `outcome`), for `/jobs N`: the stream's text is left out."""

    @property
    def session_id(self) -> str:
        return self.runner.session_id

    def describe(self) -> str:
        """Its status in plain words."""
        if self.state == "waiting":
            return "waiting for a free place (MAX_PARALLEL_RUNS)"
        if self.state == "running":
            return f"running — {self.doing}" if self.doing else "running"
        if self.state == "waiting_user":
            return f"waiting for your answer: /jobs {self.number} brings it to the front"
        if self.state == "done":
            unverified = self.outcome is not None and doubts(self.outcome) is not None
            return f"done{', unverified' if unverified else ''} — {_first_line(self.answer)}"
        if self.state == "failed":
            return f"failed — {_first_line(self.answer)}"
        return "cancelled"


class Jobs:
    """The background jobs of one terminal; `close()` cancels those still running (each keeps its
    session) and stops the pool's processes."""

    def __init__(
        self,
        settings: Settings,
        *,
        browser: BrowserSession,
        graph: Graph,
        context: AgentContext,
        console: Console,
        above: Callable[[], AbstractContextManager[None]],
    ) -> None:
        """`above`: prints of a job's news go in it (above the prompt the user may be typing on)."""
        self.settings = settings
        self.console = console
        self._above = above
        self.pool = BrowserPool(
            settings,
            browser,
            share_main=False,
            limit=max(1, settings.max_parallel_runs - 1),
            notice=self._tell,
        )
        self._graph = graph
        self._context = context
        self.jobs: dict[int, Job] = {}
        self._numbers = 0

    def start(self, task: str) -> Job:
        self._numbers += 1
        session = new_session_id()
        job = Job(self._numbers, task, AgentRunner(self._graph, self._context, session_id=session))
        log = StepEventLog(self.settings.logs_dir / "steps.jsonl", session)
        job.runner.context = self._context.with_events(fan_out(log, lambda event: _follow(job, event)))
        job.run = asyncio.create_task(self._run(job, task), name=f"job-{job.number}")
        self.jobs[job.number] = job
        self.console.print(
            f"[notice]Job {job.number} started[/notice] in the background (session {job.session_id}). "
            "[muted]/jobs says what it does.[/muted]"
        )
        return job

    def _tell(self, text: str) -> None:
        with self._above():
            self.console.print(f"[notice]{escape(text)}[/notice]")

    async def _run(self, job: Job, text: str) -> None:
        try:
            async with self.pool.lease() as browser:
                job.state = "running"
                started = time.monotonic()
                await remember_session(self.settings, job.session_id, goal=text[:200])
                await browser.session_tab(job.session_id, target=job.target)
                browser.use_sites(job.sites)
                job.runner.context = replace(job.runner.context, browser=browser)
                try:
                    outcome = await job.runner.send(text)
                finally:
                    job.target = browser.agent_target or job.target
        except asyncio.CancelledError:
            job.state = "cancelled"
            raise
        except (BrowserError, McpError, SessionBusy) as exc:
            job.state, job.answer = "failed", str(exc)
            self._tell(f"Job {job.number} failed: {_first_line(str(exc))}")
            return
        job.answer, job.outcome, job.seconds = outcome.text, outcome, time.monotonic() - started
        if outcome.interrupt is not None:
            job.state = "waiting_user"
            self._tell(
                f"Job {job.number} is waiting for your answer: /jobs {job.number} brings it to the "
                "front, then /yes or /no."
            )
        else:
            job.state = "failed" if outcome.stop_reason == "error" else "done"
            with self._above():
                self.console.print(
                    f"[notice]Job {job.number} {job.state}[/notice] ({escape(_short(job.task, 60))}) "
                    f"[muted]/jobs {job.number} shows its steps[/muted]"
                )
                render_outcome(self.console, outcome, seconds=job.seconds, counts=job.metrics.run)
        with contextlib.suppress(CopilotError):
            goal = outcome.values.get("current_goal") or text[:200]
            await remember_session(self.settings, job.session_id, goal=goal)

    def command(self, arg: str) -> Job | None:
        """`/jobs` (the list) and `/jobs N` (`take`)."""
        if not arg:
            self.render(self.console)
        elif not arg.isdigit():
            self.console.print("[muted]/jobs N brings job N to the front (N as /jobs lists it).[/muted]")
        else:
            return self.take(int(arg))
        return None

    async def to_front(
        self, job: Job, browser: BrowserSession, events: EventSink, *, previous: str
    ) -> AgentRunner:
        """Job `job` becomes the terminal's session, in its own window of `browser` (the terminal's
        session), its events now going to `events`; then its card, or how it ended. Its runner."""
        await browser.session_tab(job.session_id, target=job.target)
        browser.use_sites(job.sites)
        runner = job.runner
        runner.context = replace(runner.context, browser=browser).with_events(events)
        await remember_session(self.settings, job.session_id)
        self.console.print(
            f"[notice]Job {job.number} is in front now[/notice] (session {job.session_id}, its own window). "
            f"[muted]The session you were in, {previous}, is kept: main.py chat --session {previous}.[/muted]"
        )
        if await runner.pending() is not None:
            render_outcome(self.console, await runner.outcome())
        elif job.outcome is not None:  # how it ended, as when it ended
            render_outcome(self.console, job.outcome, seconds=job.seconds, counts=job.metrics.run)
        return runner

    def take(self, number: int) -> Job | None:
        """`/jobs N`: job `number`'s steps so far; then the job, taken out of the list to come to the
        front, or None (and why not, said) while it still runs."""
        job = self.jobs.get(number)
        if job is None:
            known = ", ".join(str(n) for n in self.jobs) or "none"
            self.console.print(f"[muted]There is no job {number} (jobs: {known}).[/muted]")
            return None
        self.console.print(
            f"[bold]Job {number}[/bold] {escape(_short(job.task, 60))} "
            f"[muted]({escape(job.describe())})[/muted]"
        )
        printer = EventPrinter(self.console, limit=self.settings.max_tool_steps)
        for event in list(job.events):
            printer(event)
        if not any(event.kind == "tool_call" for event in job.events):
            self.console.print("[muted]    No steps yet.[/muted]")
        if job.state in ("waiting", "running"):
            self.console.print(
                f"[muted]/jobs {number} again brings it to the front once it waits for you or ends.[/muted]"
            )
            return None
        del self.jobs[number]
        return job

    def render(self, console: Console) -> None:
        if not self.jobs:
            console.print("[muted]No background jobs. /bg TASK starts one.[/muted]")
            return
        running, limit = self.pool.running, self.pool.limit
        console.print(f"[bold]Background jobs[/bold] [muted]({running} of {limit} places in use)[/muted]")
        for job in self.jobs.values():
            console.print(
                f"  {job.number}  {escape(_short(job.task, 40))}  [muted]{escape(job.describe())}[/muted]"
            )

    async def close(self) -> None:
        runs = [j.run for j in self.jobs.values() if j.run is not None and not j.run.done()]
        for run in runs:
            run.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
        await self.pool.close()


def _follow(job: Job, event: Event) -> None:
    job.metrics(event)
    data = event.data
    summary = data.get("summary")
    if event.kind in _FOLLOWED and isinstance(summary, str) and summary:
        job.doing = summary
    if event.kind != "usage" and (
        event.kind != "answer_stream" or (data.get("done") and data.get("tool_calls"))
    ):
        job.events.append(event)  # a reply's text streams in many events: only a note before a call stays


def _first_line(text: str) -> str:
    return _short(text.strip().splitlines()[0] if text.strip() else "(no answer)", 70)


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
