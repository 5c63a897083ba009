"""Cards of jobs on the Postgres job queue (issue 19 §2, §3): a card allowed through another worker or
another server process, a worker killed during an allowed action; the action runs once
(tests/support/jobs.py)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import aiohttp

from browser_copilot.browser.launcher import LaunchedBrowser
from tests.support.app import App, stop_apps
from tests.support.jobs import (
    JobModel,
    JobSite,
    delete_account,
    detach,
    job_env,
    outcomes_of,
    records_of,
    start_workers,
    until,
    ws_url,
)
from tests.support.processes import pids_mentioning
from tests.support.waiting import wait_until


def test_an_allowed_card_is_done_by_another_worker_in_the_tab_it_was_held_in(
    tmp_path: Path, external_browser: LaunchedBrowser, model: JobModel, site: JobSite, postgres_url: str
) -> None:
    """The worker that made the card stops; the /yes is taken by another worker (another MCP process),
    which adopts the tab the card waits in and does the held click there, once."""
    env = job_env(tmp_path, "submit", external_browser, model, postgres_url)
    job = "job-handed"
    model.scripts[job] = delete_account(site, "The account is deleted.")
    (first,) = start_workers(env, tmp_path, 1)
    workers = [first]
    try:
        session = detach(env, f"Delete my account [{job}]")
        wait_until(lambda: session in outcomes_of(postgres_url), timeout=120, what="the card")
        assert outcomes_of(postgres_url)[session]["interrupt"]["kind"] == "confirm"
        stop_apps([first])
        (second,) = start_workers({**env, "DATA_DIR": str(tmp_path / "second")}, tmp_path / "second", 1)
        workers.append(second)
        site.release.set()
        detach(env, "/yes", "--session", session)
        wait_until(lambda: site.received("POST", "/delete") == 1, timeout=120, what="the allowed POST")
        wait_until(
            lambda: outcomes_of(postgres_url)[session].get("interrupt") is None, timeout=120, what="the end"
        )
        assert site.received("POST", "/delete") == 1
    finally:
        stop_apps(workers)
    assert not pids_mentioning(str(tmp_path))


def test_a_worker_killed_during_an_allowed_action_leaves_it_done_once_and_another_worker_finishes(
    tmp_path: Path, external_browser: LaunchedBrowser, model: JobModel, site: JobSite, postgres_url: str
) -> None:
    env = job_env(tmp_path, "submit", external_browser, model, postgres_url)
    job = "job-kill"
    model.scripts[job] = delete_account(site, "I checked the page: the account is deleted.")
    workers = start_workers(env, tmp_path, 2)
    try:
        session = detach(env, f"Delete my account [{job}]")
        wait_until(lambda: session in outcomes_of(postgres_url), timeout=120, what="the card")
        card = outcomes_of(postgres_url)[session]
        assert card["interrupt"]["kind"] == "confirm", card
        assert site.received("POST", "/delete") == 0
        detach(env, "/yes", "--session", session)
        wait_until(lambda: site.received("POST", "/delete") == 1, timeout=120, what="the allowed POST")
        taker = records_of(postgres_url, session, "job")[-1]["worker"]
        (victim,) = [w for w in workers if taker.endswith(f"-{w.pid}")]
        os.kill(victim.process.pid, signal.SIGKILL)
        victim.wait(30)
        site.release.set()  # the site answers now; the worker that sent it is gone
        wait_until(
            lambda: outcomes_of(postgres_url)[session].get("interrupt") is None, timeout=120, what="the end"
        )
        outcome = outcomes_of(postgres_url)[session]
        assert outcome["stop_reason"] == "answered", outcome
        assert outcome["text"] == "I checked the page: the account is deleted."
        takes = records_of(postgres_url, session, "job")
        assert takes[-1]["worker"] != taker and takes[-1]["takes"] == 2, takes
        told = json.dumps(model.asked[job][-1]["messages"])
        assert "it may already have happened" in told  # the model is told to check, not to redo
        assert site.received("POST", "/delete") == 1  # once, across the crash
    finally:
        stop_apps(workers)
    assert not pids_mentioning(str(tmp_path))


async def test_a_card_of_a_job_is_allowed_through_another_server_process_and_the_action_runs_once(
    tmp_path: Path, external_browser: LaunchedBrowser, model: JobModel, site: JobSite, postgres_url: str
) -> None:
    site.release.set()
    env = job_env(tmp_path, "serve", external_browser, model, postgres_url)
    job = "job-card"
    model.scripts[job] = delete_account(site, "The account is deleted.")
    workers = start_workers(env, tmp_path, 1)
    servers = [App("serve", "--port", "0", env={**env, "DATA_DIR": str(tmp_path / n)}) for n in ("a", "b")]
    client, session = "tab-0123456789abcdef", "card-session"
    try:
        first, second = (ws_url(server, session, client) for server in servers)
        async with aiohttp.ClientSession() as http:
            async with http.ws_connect(first) as ws:
                await ws.send_json({"kind": "user_message", "text": f"Delete my account [{job}]"})
                asked = await until(ws, "agent_question")
            assert asked["pending_kind"] == "confirm" and asked.get("nonce"), asked
            assert site.received("POST", "/delete") == 0
            async with http.ws_connect(second) as ws:  # the same tab, now reaching the other server
                shown = await until(ws, "agent_question")
                assert shown["pending_kind"] == "confirm" and shown.get("nonce"), shown
                await ws.send_json({"kind": "user_message", "text": "/yes", "nonce": shown["nonce"]})
                answered = await until(ws, "agent_message")
        assert answered["text"] == "The account is deleted.", answered
        assert site.received("POST", "/delete") == 1, json.dumps(model.asked[job][-1]["messages"][-3:])[
            -3000:
        ]
        told = model.asked[job][-1]["messages"][-2]
        assert "allowed" in told["content"] and "(once)" in told["content"], told
    finally:
        stop_apps(servers)
        stop_apps(workers)
    assert not pids_mentioning(str(tmp_path))
