"""Workers on the Postgres job queue (issue 19 §2, §3): real PostgreSQL, real `main.py worker` processes
attached to one Chromium, a scripted OpenAI-compatible model that answers each job's conversation, and a
local site that records every request it receives."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
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
from tests.support.processes import alive, pids_mentioning
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


def _job_of(request: dict[str, Any]) -> str | None:
    for message in request.get("messages", []):
        if message.get("role") == "user":
            found = JOB.search(json.dumps(message.get("content")))
            if found:
                return found.group(1)
    return None


def _steps(request: dict[str, Any]) -> int:
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
        job = _job_of(request)
        if job is None or job not in self.scripts:
            return text("(no script for this conversation)")
        with self._lock:
            self.asked.setdefault(job, []).append(request)
            if len(self.asked) >= self.spread:
                self.spread_out.set()
        script = self.scripts[job]
        step = min(_steps(request), len(script) - 1)
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


def _env(tmp_path: Path, name: str, browser: LaunchedBrowser, model: JobModel, db: str) -> dict[str, str]:
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


def _outcomes(db: str) -> dict[str, dict[str, Any]]:
    """Each session's last `outcome` record (how its last job ended)."""
    with psycopg.connect(db) as conn:
        rows = conn.execute(
            "SELECT session_id, data FROM browser_copilot_job_events WHERE kind = 'outcome' ORDER BY id"
        ).fetchall()
    return {str(session): dict(data) for session, data in rows}


def _wait_for_outcomes(db: str, count: int, workers: list[App], timeout: float = 240) -> None:
    """Wait for `count` sessions' outcomes; a time-out says what the queue recorded and what the workers
    printed (a CI log is all there is to go on)."""
    try:
        wait_until(lambda: len(_outcomes(db)) == count, timeout=timeout, what=f"{count} outcomes")
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
        printed = "\n".join(f"--- worker {w.process.pid} ---\n{w.output[-8000:]}" for w in workers)
        records = "\n".join(map(str, rows))
        raise AssertionError(f"{exc}\n--- the queue's records ---\n{records}\n{printed}") from None


def _records(db: str, session: str, kind: str) -> list[dict[str, Any]]:
    with psycopg.connect(db) as conn:
        rows = conn.execute(
            "SELECT data FROM browser_copilot_job_events WHERE session_id = %s AND kind = %s ORDER BY id",
            (session, kind),
        ).fetchall()
    return [dict(r[0]) for r in rows]


def _detach(env: dict[str, str], task: str, *extra: str) -> str:
    done = run_app("run", "--detach", task, *extra, env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Queued as job" in done.stderr
    return done.stdout.strip().splitlines()[-1]


async def _submit(db: str, sessions: dict[str, str], numbers: range) -> None:
    """Jobs put into the queue in this process (as the server does), faster than a `run --detach` each."""
    async with open_queue(db, pool_size=1) as queue:
        for n in numbers:
            session = f"six-{n}"
            await queue.submit(Job(session, "start", f"Open page {n} and say done [job-{n}]"))
            sessions[session] = f"job-{n}"


def _stop(workers: list[App]) -> None:
    for worker in workers:
        if worker.process.poll() is None:
            worker.process.terminate()
    for worker in workers:
        try:
            worker.wait(60)
        finally:
            worker.kill()


def _workers(env: dict[str, str], tmp_path: Path, count: int) -> list[App]:
    workers = []
    for n in range(count):
        worker = App("worker", env={**env, "DATA_DIR": str(tmp_path / f"worker-{n}")})
        workers.append(worker)
    for worker in workers:
        worker.wait_for("is taking jobs from the queue", timeout=120)
    return workers


def test_two_workers_finish_six_jobs_and_stop_cleanly(
    tmp_path: Path, external_browser: LaunchedBrowser, model: JobModel, site: JobSite, postgres_url: str
) -> None:
    env = {**_env(tmp_path, "submit", external_browser, model, postgres_url), "MAX_PARALLEL_RUNS": "2"}
    workers = _workers(env, tmp_path, 2)
    try:
        for n in range(6):
            model.scripts[f"job-{n}"] = [
                call(
                    "browser_run_code",
                    code=f"async (page) => {{ await page.goto('{site.url(f'/job/{n}')}') }}",
                ),
                text(f"Done with job-{n}."),
            ]
        # No job ends before three are under way: a worker runs two at a time (MAX_PARALLEL_RUNS=2), so
        # both take some.
        model.spread = 3
        sessions = {_detach(env, "Open page 0 and say done [job-0]"): "job-0"}
        asyncio.run(_submit(postgres_url, sessions, range(1, 6)))
        _wait_for_outcomes(postgres_url, 6, workers)
        outcomes = _outcomes(postgres_url)
        for session, job in sessions.items():
            assert outcomes[session]["stop_reason"] == "answered", outcomes[session]
            assert outcomes[session]["text"] == f"Done with {job}."
            assert site.received("GET", f"/job/{job[4:]}") == 1
        takers = {r["worker"] for s in sessions for r in _records(postgres_url, s, "job")}
        assert len(takers) == 2, takers  # both workers took jobs
        pids = [w.process.pid for w in workers]
        _stop(workers)
        assert [w.process.returncode for w in workers] == [143, 143]
        assert not [p for p in pids if alive(p)]
    finally:
        _stop(workers)
    assert not pids_mentioning(str(tmp_path))


def _delete_account(site: JobSite, answer: str) -> list[Reply]:
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


def test_an_allowed_card_is_done_by_another_worker_in_the_tab_it_was_held_in(
    tmp_path: Path, external_browser: LaunchedBrowser, model: JobModel, site: JobSite, postgres_url: str
) -> None:
    """The worker that made the card stops; the /yes is taken by another worker (another MCP process),
    which adopts the tab the card waits in and does the held click there, once."""
    env = _env(tmp_path, "submit", external_browser, model, postgres_url)
    job = "job-handed"
    model.scripts[job] = _delete_account(site, "The account is deleted.")
    (first,) = _workers(env, tmp_path, 1)
    workers = [first]
    try:
        session = _detach(env, f"Delete my account [{job}]")
        wait_until(lambda: session in _outcomes(postgres_url), timeout=120, what="the card")
        assert _outcomes(postgres_url)[session]["interrupt"]["kind"] == "confirm"
        _stop([first])
        (second,) = _workers({**env, "DATA_DIR": str(tmp_path / "second")}, tmp_path / "second", 1)
        workers.append(second)
        site.release.set()
        _detach(env, "/yes", "--session", session)
        wait_until(lambda: site.received("POST", "/delete") == 1, timeout=120, what="the allowed POST")
        wait_until(
            lambda: _outcomes(postgres_url)[session].get("interrupt") is None, timeout=120, what="the end"
        )
        assert site.received("POST", "/delete") == 1
    finally:
        _stop(workers)
    assert not pids_mentioning(str(tmp_path))


def test_a_worker_killed_during_an_allowed_action_leaves_it_done_once_and_another_worker_finishes(
    tmp_path: Path, external_browser: LaunchedBrowser, model: JobModel, site: JobSite, postgres_url: str
) -> None:
    env = _env(tmp_path, "submit", external_browser, model, postgres_url)
    job = "job-kill"
    model.scripts[job] = _delete_account(site, "I checked the page: the account is deleted.")
    workers = _workers(env, tmp_path, 2)
    try:
        session = _detach(env, f"Delete my account [{job}]")
        wait_until(lambda: session in _outcomes(postgres_url), timeout=120, what="the card")
        card = _outcomes(postgres_url)[session]
        assert card["interrupt"]["kind"] == "confirm", card
        assert site.received("POST", "/delete") == 0
        _detach(env, "/yes", "--session", session)
        wait_until(lambda: site.received("POST", "/delete") == 1, timeout=120, what="the allowed POST")
        taker = _records(postgres_url, session, "job")[-1]["worker"]
        (victim,) = [w for w in workers if taker.endswith(f"-{w.process.pid}")]
        os.kill(victim.process.pid, signal.SIGKILL)
        victim.wait(30)
        site.release.set()  # the site answers now; the worker that sent it is gone
        wait_until(
            lambda: _outcomes(postgres_url)[session].get("interrupt") is None, timeout=120, what="the end"
        )
        outcome = _outcomes(postgres_url)[session]
        assert outcome["stop_reason"] == "answered", outcome
        assert outcome["text"] == "I checked the page: the account is deleted."
        takes = _records(postgres_url, session, "job")
        assert takes[-1]["worker"] != taker and takes[-1]["takes"] == 2, takes
        told = json.dumps(model.asked[job][-1]["messages"])
        assert "it may already have happened" in told  # the model is told to check, not to redo
        assert site.received("POST", "/delete") == 1  # once, across the crash
    finally:
        _stop(workers)
    assert not pids_mentioning(str(tmp_path))


def test_a_stopped_worker_gives_its_running_job_back_and_another_worker_continues_it(
    tmp_path: Path, external_browser: LaunchedBrowser, model: JobModel, site: JobSite, postgres_url: str
) -> None:
    # The run is held at the model, so the worker waits out its grace before it gives the job back.
    env = {**_env(tmp_path, "submit", external_browser, model, postgres_url), "JOB_SHUTDOWN_GRACE": "1"}
    job = "job-stop"
    model.scripts[job] = [
        call("browser_run_code", code=f"async (page) => {{ await page.goto('{site.url('/job/stop')}') }}"),
        text("Done after a restart."),
    ]
    model.holds[job] = threading.Event()
    (first,) = _workers(env, tmp_path, 1)
    workers = [first]
    try:
        session = _detach(env, f"Open the page [{job}]")
        wait_until(model.holding.is_set, timeout=120, what="the run held at the model")
        # The worker that continues it starts while the first one runs it (a job taken is not taken twice).
        (second,) = _workers({**env, "DATA_DIR": str(tmp_path / "second")}, tmp_path / "second", 1)
        workers.append(second)
        first.process.terminate()
        assert first.wait(60) == 143, first.output  # no new job; the running one given back
        released = _records(postgres_url, session, "job")[1]
        assert released == {"state": "released", "worker": f"{socket.gethostname()}-{first.process.pid}"}
        model.holds[job].set()
        wait_until(lambda: session in _outcomes(postgres_url), timeout=120, what="the end")
        assert _outcomes(postgres_url)[session]["text"] == "Done after a restart."
        records = _records(postgres_url, session, "job")
        assert [r["state"] for r in records] == ["taken", "released", "taken"], records
        assert [r["takes"] for r in records if r["state"] == "taken"] == [1, 2]
        assert records[2]["worker"] == f"{socket.gethostname()}-{second.process.pid}"
        # Continued from its checkpoint, not run anew: the task was said once, the page opened by one call.
        last = model.asked[job][-1]["messages"]
        assert sum(1 for m in last if m["role"] == "user" and m["content"] == f"Open the page [{job}]") == 1
        assert _steps(model.asked[job][-1]) == 1
    finally:
        model.holds[job].set()
        _stop(workers)
    assert not pids_mentioning(str(tmp_path))


LOSSES = {
    # A worker too slow to send its heartbeat can have its row removed by a worker that starts.
    "row removed": "DELETE FROM procrastinate_workers RETURNING id",
    # The database restarted, a proxy dropped idle connections: the worker's listening one among them.
    "connections cut": "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
    "WHERE datname = current_database() AND pid <> pg_backend_pid()",
}


@pytest.mark.parametrize("loss", LOSSES)
def test_a_worker_that_lost_its_place_in_the_queue_takes_jobs_again_and_its_running_job_goes_on(
    tmp_path: Path,
    external_browser: LaunchedBrowser,
    model: JobModel,
    site: JobSite,
    postgres_url: str,
    loss: str,
) -> None:
    """The worker's next look for a job fails in the database: it says so in one line, gives its running
    job back and registers again, instead of ending with a traceback."""
    env = {
        **_env(tmp_path, "submit", external_browser, model, postgres_url),
        "MAX_PARALLEL_RUNS": "2",
        "JOB_SHUTDOWN_GRACE": "1",
    }
    held, other = "job-held", "job-other"
    for job in (held, other):
        page = site.url(f"/job/{job}")
        model.scripts[job] = [
            call("browser_run_code", code=f"async (page) => {{ await page.goto('{page}') }}"),
            text(f"Done with {job}."),
        ]
    model.holds[held] = threading.Event()
    (worker,) = _workers(env, tmp_path, 1)
    try:
        first = _detach(env, f"Open the page [{held}]")
        wait_until(model.holding.is_set, timeout=120, what="the run held at the model")
        with psycopg.connect(postgres_url) as conn:
            assert conn.execute(LOSSES[loss]).fetchall()
        sessions = {first: held}
        asyncio.run(_submit_one(postgres_url, "lost-1", f"Open the page [{other}]"))
        sessions["lost-1"] = other
        if loss == "row removed":
            worker.wait_for("lost the job queue", timeout=60)
        model.holds[held].set()
        _wait_for_outcomes(postgres_url, 2, [worker], timeout=60)
        outcomes = _outcomes(postgres_url)
        for session, job in sessions.items():
            assert outcomes[session]["text"] == f"Done with {job}.", outcomes[session]
            assert site.received("GET", f"/job/{job}") == 1
        assert "Traceback" not in worker.output, worker.output
        worker.process.terminate()
        assert worker.wait(60) == 143, worker.output
    finally:
        model.holds[held].set()
        _stop([worker])
    assert not pids_mentioning(str(tmp_path))


async def _submit_one(db: str, session: str, task: str) -> None:
    async with open_queue(db, pool_size=1) as queue:
        await queue.submit(Job(session, "start", task))


async def test_stop_in_the_page_drops_a_job_no_worker_has_taken(
    tmp_path: Path, external_browser: LaunchedBrowser, model: JobModel, postgres_url: str
) -> None:
    env = _env(tmp_path, "serve", external_browser, model, postgres_url)
    server = App("serve", "--port", "0", env=env)
    try:
        url = _ws_url(server, "stop-session", "tab-0123456789abcdef")
        base, token = url.replace("ws://", "http://").split("/ws/")[0], url.split("token=")[1].split("&")[0]
        async with (
            aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as http,
            http.ws_connect(url) as ws,
        ):
            await ws.send_json({"kind": "user_message", "text": "Wait for a worker [job-none]"})
            queued = await _until(ws, "status")
            while queued.get("state") != "running":
                queued = await _until(ws, "status")
            async with http.post(f"{base}/api/sessions/stop-session/cancel") as response:
                assert (await response.json())["cancelled"] is True
            answered = await _until(ws, "agent_message")
        assert answered["stop_reason"] == "cancelled", answered
        with psycopg.connect(postgres_url) as conn:
            (status,) = conn.execute("SELECT status FROM procrastinate_jobs").fetchone() or ("none",)
        assert status == "cancelled"
        assert model.requests == []  # no worker, no run
    finally:
        server.process.terminate()
        try:
            server.wait(60)
        finally:
            server.kill()
    assert not pids_mentioning(str(tmp_path))


def test_run_detach_without_a_database_is_a_configuration_error(tmp_path: Path) -> None:
    done = run_app("run", "--detach", "Say hello", env=app_env(tmp_path / "data"), timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "DATABASE_URL: run --detach needs the job queue" in done.stderr
    assert "Fix: set DATABASE_URL=postgresql://" in done.stderr


def _ws_url(server: App, session: str, client: str) -> str:
    end = server.wait_for("/?token=", timeout=120)
    line = server.output[: end + 60].splitlines()[-1]
    base, token = line.split("/?token=")
    base = base[base.index("http://") :].replace("http://", "ws://")
    return f"{base}/ws/{session}?token={token.split()[0]}&client={client}"


async def _until(ws: aiohttp.ClientWebSocketResponse, kind: str, timeout: float = 120) -> dict[str, Any]:
    async with asyncio.timeout(timeout):
        while True:
            message = await ws.receive_json()
            if message.get("kind") == kind:
                return dict(message)


async def test_a_card_of_a_job_is_allowed_through_another_server_process_and_the_action_runs_once(
    tmp_path: Path, external_browser: LaunchedBrowser, model: JobModel, site: JobSite, postgres_url: str
) -> None:
    site.release.set()
    env = _env(tmp_path, "serve", external_browser, model, postgres_url)
    job = "job-card"
    model.scripts[job] = _delete_account(site, "The account is deleted.")
    workers = _workers(env, tmp_path, 1)
    servers = [App("serve", "--port", "0", env={**env, "DATA_DIR": str(tmp_path / n)}) for n in ("a", "b")]
    client, session = "tab-0123456789abcdef", "card-session"
    try:
        first, second = (_ws_url(server, session, client) for server in servers)
        async with aiohttp.ClientSession() as http:
            async with http.ws_connect(first) as ws:
                await ws.send_json({"kind": "user_message", "text": f"Delete my account [{job}]"})
                asked = await _until(ws, "agent_question")
            assert asked["pending_kind"] == "confirm" and asked.get("nonce"), asked
            assert site.received("POST", "/delete") == 0
            async with http.ws_connect(second) as ws:  # the same tab, now reaching the other server
                shown = await _until(ws, "agent_question")
                assert shown["pending_kind"] == "confirm" and shown.get("nonce"), shown
                await ws.send_json({"kind": "user_message", "text": "/yes", "nonce": shown["nonce"]})
                answered = await _until(ws, "agent_message")
        assert answered["text"] == "The account is deleted.", answered
        assert site.received("POST", "/delete") == 1, json.dumps(model.asked[job][-1]["messages"][-3:])[
            -3000:
        ]
        told = model.asked[job][-1]["messages"][-2]
        assert "allowed" in told["content"] and "(once)" in told["content"], told
    finally:
        for server in servers:
            server.process.terminate()
        for server in servers:
            try:
                server.wait(60)
            finally:
                server.kill()
        _stop(workers)
    assert not pids_mentioning(str(tmp_path))
