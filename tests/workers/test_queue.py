"""Workers on the Postgres job queue (issue 19 §2, §3): jobs spread over workers, a stopped worker's job
given back, a worker that lost its place in the queue, jobs stopped from the page (tests/support/jobs.py)."""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path

import aiohttp
import psycopg
import pytest

from browser_copilot.browser.launcher import LaunchedBrowser
from tests.support.app import App, app_env, run_app, stop_apps
from tests.support.jobs import (
    JobModel,
    JobSite,
    detach,
    job_env,
    outcomes_of,
    records_of,
    start_workers,
    steps_of,
    submit_job,
    submit_jobs,
    until,
    wait_for_outcomes,
    ws_url,
)
from tests.support.openai_server import call, text
from tests.support.processes import alive, pids_mentioning
from tests.support.waiting import wait_until


def test_two_workers_finish_six_jobs_and_stop_cleanly(
    tmp_path: Path, external_browser: LaunchedBrowser, model: JobModel, site: JobSite, postgres_url: str
) -> None:
    env = {**job_env(tmp_path, "submit", external_browser, model, postgres_url), "MAX_PARALLEL_RUNS": "2"}
    workers = start_workers(env, tmp_path, 2)
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
        sessions = {detach(env, "Open page 0 and say done [job-0]"): "job-0"}
        asyncio.run(submit_jobs(postgres_url, sessions, range(1, 6)))
        wait_for_outcomes(postgres_url, 6, workers)
        outcomes = outcomes_of(postgres_url)
        for session, job in sessions.items():
            assert outcomes[session]["stop_reason"] == "answered", outcomes[session]
            assert outcomes[session]["text"] == f"Done with {job}."
            # Each job ran once: its model was asked for the code call, then for the answer. (The page's
            # GET is not that count: in one loaded CI run a single `goto` of one run reached the site
            # twice, with no second take or second code call in the worker's logs.)
            assert len(model.asked[job]) == 2, [steps_of(r) for r in model.asked[job]]
            assert site.received("GET", f"/job/{job[4:]}") >= 1
        takers = {r["worker"] for s in sessions for r in records_of(postgres_url, s, "job")}
        assert len(takers) == 2, takers  # both workers took jobs
        pids = [w.process.pid for w in workers]
        stop_apps(workers)
        assert [w.process.returncode for w in workers] == [143, 143]
        assert not [p for p in pids if alive(p)]
    finally:
        stop_apps(workers)
    assert not pids_mentioning(str(tmp_path))


def test_a_stopped_worker_gives_its_running_job_back_and_another_worker_continues_it(
    tmp_path: Path, external_browser: LaunchedBrowser, model: JobModel, site: JobSite, postgres_url: str
) -> None:
    # The run is held at the model, so the worker waits out its grace before it gives the job back.
    env = {**job_env(tmp_path, "submit", external_browser, model, postgres_url), "JOB_SHUTDOWN_GRACE": "1"}
    job = "job-stop"
    model.scripts[job] = [
        call("browser_run_code", code=f"async (page) => {{ await page.goto('{site.url('/job/stop')}') }}"),
        text("Done after a restart."),
    ]
    model.holds[job] = threading.Event()
    (first,) = start_workers(env, tmp_path, 1)
    workers = [first]
    try:
        session = detach(env, f"Open the page [{job}]")
        wait_until(model.holding.is_set, timeout=120, what="the run held at the model")
        # The worker that continues it starts while the first one runs it (a job taken is not taken twice).
        (second,) = start_workers({**env, "DATA_DIR": str(tmp_path / "second")}, tmp_path / "second", 1)
        workers.append(second)
        first.process.terminate()
        assert first.wait(60) == 143, first.output  # no new job; the running one given back
        released = records_of(postgres_url, session, "job")[1]
        assert released == {"state": "released", "worker": f"{socket.gethostname()}-{first.pid}"}
        model.holds[job].set()
        wait_until(lambda: session in outcomes_of(postgres_url), timeout=120, what="the end")
        assert outcomes_of(postgres_url)[session]["text"] == "Done after a restart."
        records = records_of(postgres_url, session, "job")
        assert [r["state"] for r in records] == ["taken", "released", "taken"], records
        assert [r["takes"] for r in records if r["state"] == "taken"] == [1, 2]
        assert records[2]["worker"] == f"{socket.gethostname()}-{second.pid}"
        # Continued from its checkpoint, not run anew: the task was said once, the page opened by one call.
        last = model.asked[job][-1]["messages"]
        assert sum(1 for m in last if m["role"] == "user" and m["content"] == f"Open the page [{job}]") == 1
        assert steps_of(model.asked[job][-1]) == 1
    finally:
        model.holds[job].set()
        stop_apps(workers)
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
        **job_env(tmp_path, "submit", external_browser, model, postgres_url),
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
    (worker,) = start_workers(env, tmp_path, 1)
    try:
        first = detach(env, f"Open the page [{held}]")
        wait_until(model.holding.is_set, timeout=120, what="the run held at the model")
        with psycopg.connect(postgres_url) as conn:
            assert conn.execute(LOSSES[loss]).fetchall()
        sessions = {first: held}
        asyncio.run(submit_job(postgres_url, "lost-1", f"Open the page [{other}]"))
        sessions["lost-1"] = other
        if loss == "row removed":
            worker.wait_for("lost the job queue", timeout=60)
        model.holds[held].set()
        wait_for_outcomes(postgres_url, 2, [worker], timeout=60)
        outcomes = outcomes_of(postgres_url)
        for session, job in sessions.items():
            assert outcomes[session]["text"] == f"Done with {job}.", outcomes[session]
            # The page was opened by one code call. A run given back (its checkpoint's write failed with
            # the connections) goes on in its tab, or where the tab is gone, reopens its page in a new one.
            assert max(steps_of(r) for r in model.asked[job]) == 1
            states = [r["state"] for r in records_of(postgres_url, session, "job")]
            assert 1 <= site.received("GET", f"/job/{job}") <= 1 + states.count("released"), states
        assert "Traceback" not in worker.output, worker.output
        worker.process.terminate()
        assert worker.wait(60) == 143, worker.output
    finally:
        model.holds[held].set()
        stop_apps([worker])
    assert not pids_mentioning(str(tmp_path))


async def test_stop_in_the_page_drops_a_job_no_worker_has_taken(
    tmp_path: Path, external_browser: LaunchedBrowser, model: JobModel, postgres_url: str
) -> None:
    env = job_env(tmp_path, "serve", external_browser, model, postgres_url)
    server = App("serve", "--port", "0", env=env)
    try:
        url = ws_url(server, "stop-session", "tab-0123456789abcdef")
        base, token = url.replace("ws://", "http://").split("/ws/")[0], url.split("token=")[1].split("&")[0]
        async with (
            aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as http,
            http.ws_connect(url) as ws,
        ):
            await ws.send_json({"kind": "user_message", "text": "Wait for a worker [job-none]"})
            queued = await until(ws, "status")
            while queued.get("state") != "running":
                queued = await until(ws, "status")
            async with http.post(f"{base}/api/sessions/stop-session/cancel") as response:
                assert (await response.json())["cancelled"] is True
            answered = await until(ws, "agent_message")
        assert answered["stop_reason"] == "cancelled", answered
        with psycopg.connect(postgres_url) as conn:
            (status,) = conn.execute("SELECT status FROM procrastinate_jobs").fetchone() or ("none",)
        assert status == "cancelled"
        assert model.requests == []  # no worker, no run
    finally:
        stop_apps([server])
    assert not pids_mentioning(str(tmp_path))


def test_run_detach_without_a_database_is_a_configuration_error(tmp_path: Path) -> None:
    done = run_app("run", "--detach", "Say hello", env=app_env(tmp_path / "data"), timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "DATABASE_URL: run --detach needs the job queue" in done.stderr
    assert "Fix: set DATABASE_URL=postgresql://" in done.stderr
