"""The job-queue tests' parts (tests/workers/): a local site that records every request, a scripted model
that answers each job's conversation from its own script, real `main.py worker` processes on one Chromium,
and what the queue recorded."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import psycopg
import pytest

from browser_copilot.browser.launcher import LaunchedBrowser
from browser_copilot.jobs.queue import Job, open_queue
from tests.conftest import start_browser
from tests.support.app import App, app_env, run_app
from tests.support.openai_server import Reply, ScriptedOpenAI, call, text
from tests.support.sites import Request, Site
from tests.support.waiting import wait_until

STALLED_AFTER = "5"
JOB = re.compile(r"\[(job-[a-z0-9-]+)\]")
DELETE_PAGE = """<!doctype html><title>Account</title><h1>Your account</h1>
<form method="post" action="/delete"><button type="submit">Delete account</button></form>"""


class JobSite(Site):
    """`/job/N` a page per job; `/account` a form whose POST `/delete` the site records, then holds
    until `release` is set (so a test can kill the worker while the action is under way)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        super().__init__(self._page)

    def _page(self, request: Request, port: int) -> str:
        if request.path == "/delete":
            self.release.wait(60)
            return "<!doctype html><title>Deleted</title><p>Your account was deleted."
        if request.path == "/account":
            return DELETE_PAGE
        return f"<!doctype html><title>{request.path}</title><h1>Page {request.path}</h1>"


def job_of(request: dict[str, Any]) -> str | None:
    for message in request.get("messages", []):
        if message.get("role") == "user":
            found = JOB.search(json.dumps(message.get("content")))
            if found:
                return found.group(1)
    return None


def steps_of(request: dict[str, Any]) -> int:
    """The model's earlier replies with tool calls in this conversation."""
    return sum(1 for m in request.get("messages", []) if m.get("role") == "assistant" and m.get("tool_calls"))


class JobModel(ScriptedOpenAI):
    """Answers each job's conversation (its `[job-…]` tag in the user's message) from its own script."""

    def __init__(self) -> None:
        self.scripts: dict[str, list[Reply]] = {}
        self.asked: dict[str, list[dict[str, Any]]] = {}
        self.spread = 0
        """Last replies wait until this many conversations have been asked (0: they do not wait)."""
        self.spread_out = threading.Event()
        self.holds: dict[str, threading.Event] = {}
        """A job's last reply waits for its event (the run held at the model)."""
        self.holding = threading.Event()
        super().__init__(api_key="sk-test-123", router=self._route)

    def _route(self, request: dict[str, Any]) -> Reply | None:
        job = job_of(request)
        if job is None or job not in self.scripts:
            return text("(no script for this conversation)")
        with self._lock:
            self.asked.setdefault(job, []).append(request)
            if len(self.asked) >= self.spread:
                self.spread_out.set()
        script = self.scripts[job]
        step = min(steps_of(request), len(script) - 1)
        if step == len(script) - 1 and self.spread:
            self.spread_out.wait(120)
        if step == len(script) - 1 and job in self.holds:
            self.holding.set()
            self.holds[job].wait(120)
        return script[step]


@pytest.fixture(scope="module")
def external_browser(
    chromium_executable: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LaunchedBrowser]:
    """A browser of this module's own: its workers are killed mid-action and leave their sessions' tabs
    open for the next worker to adopt; the other modules' browser stays as they expect it."""
    browser = start_browser(chromium_executable, tmp_path_factory.mktemp("workers-browser"))
    yield browser
    browser.close()


@pytest.fixture
def model() -> Iterator[JobModel]:
    with JobModel() as server:
        yield server


@pytest.fixture
def site() -> Iterator[JobSite]:
    with JobSite() as server:
        try:
            yield server
        finally:
            server.release.set()


def job_env(tmp_path: Path, name: str, browser: LaunchedBrowser, model: JobModel, db: str) -> dict[str, str]:
    return app_env(
        tmp_path / name,
        CDP_ENDPOINT=browser.endpoint.url,
        LLM_BASE_URL=model.base_url,
        LLM_API_KEY="sk-test-123",
        LLM_MODEL="scripted-model",
        DATABASE_URL=db,
        JOB_QUEUE="on",
        JOB_STALLED_AFTER=STALLED_AFTER,
        START_IN_CURRENT_TAB="false",
        PACING="off",
        MAX_PARALLEL_RUNS="1",  # one MCP server per worker (no spare started ahead) unless a test says
    )


def outcomes_of(db: str) -> dict[str, dict[str, Any]]:
    """Each session's last `outcome` record (how its last job ended)."""
    with psycopg.connect(db) as conn:
        rows = conn.execute(
            "SELECT session_id, data FROM browser_copilot_job_events WHERE kind = 'outcome' ORDER BY id"
        ).fetchall()
    return {str(session): dict(data) for session, data in rows}


def wait_for_outcomes(db: str, count: int, workers: list[App], timeout: float = 240) -> None:
    """Wait for `count` sessions' outcomes; a time-out says what the queue recorded and what the workers
    printed (a CI log is all there is to go on)."""
    try:
        wait_until(lambda: len(outcomes_of(db)) == count, timeout=timeout, what=f"{count} outcomes")
    except AssertionError as exc:
        with psycopg.connect(db) as conn:
            rows = conn.execute(
                "SELECT session_id, kind, data FROM browser_copilot_job_events "
                "WHERE kind IN ('job', 'job_error', 'outcome', 'error', 'notice') ORDER BY id"
            ).fetchall()
        for worker in workers:  # where each waits (`main.py` prints its tasks on SIGUSR1)
            if worker.process.poll() is None:
                worker.process.send_signal(signal.SIGUSR1)
                with contextlib.suppress(AssertionError):
                    worker.wait_for(" tasks of process ", timeout=10)
        printed = "\n".join(f"--- worker {w.pid} ---\n{w.output[-8000:]}" for w in workers)
        records = "\n".join(map(str, rows))
        raise AssertionError(f"{exc}\n--- the queue's records ---\n{records}\n{printed}") from None


def records_of(db: str, session: str, kind: str) -> list[dict[str, Any]]:
    with psycopg.connect(db) as conn:
        rows = conn.execute(
            "SELECT data FROM browser_copilot_job_events WHERE session_id = %s AND kind = %s ORDER BY id",
            (session, kind),
        ).fetchall()
    return [dict(r[0]) for r in rows]


def detach(env: dict[str, str], task: str, *extra: str) -> str:
    done = run_app("run", "--detach", task, *extra, env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Queued as job" in done.stderr
    return done.stdout.strip().splitlines()[-1]


async def submit_jobs(db: str, sessions: dict[str, str], numbers: range) -> None:
    """Jobs put into the queue in this process (as the server does), faster than a `run --detach` each."""
    async with open_queue(db, pool_size=1) as queue:
        for n in numbers:
            session = f"six-{n}"
            await queue.submit(Job(session, "start", f"Open page {n} and say done [job-{n}]"))
            sessions[session] = f"job-{n}"


async def submit_job(db: str, session: str, task: str) -> None:
    async with open_queue(db, pool_size=1) as queue:
        await queue.submit(Job(session, "start", task))


def start_workers(env: dict[str, str], tmp_path: Path, count: int) -> list[App]:
    workers = []
    for n in range(count):
        worker = App("worker", env={**env, "DATA_DIR": str(tmp_path / f"worker-{n}")})
        workers.append(worker)
    for worker in workers:
        worker.wait_for("is taking jobs from the queue", timeout=120)
    return workers


def delete_account(site: JobSite, answer: str) -> list[Reply]:
    """The model opens the account page, clicks "Delete account" (a card), then answers."""
    click = (
        "async (page) => { await page.getByRole('button', { name: 'Delete account' }).click(); "
        "await page.waitForURL('**/delete') }"
    )
    return [
        call("browser_run_code", code=f"async (page) => {{ await page.goto('{site.url('/account')}') }}"),
        call("browser_run_code", code=click),
        text(answer),
    ]


def ws_url(server: App, session: str, client: str) -> str:
    end = server.wait_for("/?token=", timeout=120)
    line = server.output[: end + 60].splitlines()[-1]
    base, token = line.split("/?token=")
    base = base[base.index("http://") :].replace("http://", "ws://")
    return f"{base}/ws/{session}?token={token.split()[0]}&client={client}"


async def until(ws: aiohttp.ClientWebSocketResponse, kind: str, timeout: float = 120) -> dict[str, Any]:
    async with asyncio.timeout(timeout):
        while True:
            message = await ws.receive_json()
            if message.get("kind") == kind:
                return dict(message)
