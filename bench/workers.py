"""Workers on the job queue (a script, not a test): W `main.py worker` processes take T tasks.

A PostgreSQL of the bench's own (Debian's binaries, as the tests start it), a headless Chromium the
workers attach to, the scripted OpenAI-compatible model (each task: open a local page, then answer),
PACING=off. The tasks are put into the queue at once; the clock runs from the first submit to the last
outcome stored by a worker.

Reported: tasks per minute, seconds per task, how the tasks were shared among the workers, and memory
per worker (peak RSS of the worker's Python process, and with its MCP server processes). Usage:
  uv run python bench/workers.py [--workers 2] [--tasks 12] [--parallel 1]
The last line: key=value summary.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common import bench_browser, rss_mb

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
from tests.support.openai_server import Reply, ScriptedOpenAI, call, text  # noqa: E402
from tests.support.pages import PageServer  # noqa: E402
from tests.support.postgres import LocalPostgres, find_bin_dir  # noqa: E402

from browser_copilot.jobs.queue import Job, open_queue  # noqa: E402


def descendants(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return found
    for task in tasks:
        try:
            children = [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
        for child in children:
            found += [child, *descendants(child)]
    return found


def router(pages: PageServer) -> Any:
    def route(request: dict[str, Any]) -> Reply | None:
        messages = request.get("messages", [])
        task = next((str(m.get("content")) for m in messages if m.get("role") == "user"), "")
        tag = task.rsplit("#", 1)[-1].strip(" ]")
        steps = sum(1 for m in messages if m.get("role") == "assistant" and m.get("tool_calls"))
        if steps == 0:
            url = pages.url("index.html")
            return call("browser_run_code", code=f"async (page) => {{ await page.goto('{url}') }}")
        return text(f"Done with task {tag}.")

    return route


def outcomes(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM browser_copilot_job_events WHERE kind = 'outcome'"
        ).fetchone()
    return int(row[0]) if row else 0


def takers(url: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT data->>'worker', count(*) FROM browser_copilot_job_events WHERE kind = 'job' GROUP BY 1"
        ).fetchall()
    return {str(r[0]): int(r[1]) for r in rows}


async def submit(url: str, count: int) -> None:
    async with open_queue(url, pool_size=1) as queue:
        for n in range(count):
            await queue.submit(Job(f"bench-{n}", "start", f"Read the home page [task #{n}]"))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=12)
    parser.add_argument(
        "--parallel", type=int, default=1, help="MAX_PARALLEL_RUNS of each worker (default 1)"
    )
    args = parser.parse_args()
    bin_dir = find_bin_dir()
    if bin_dir is None:
        sys.exit("PostgreSQL is not installed: apt-get install -y postgresql (or set PG_BIN)")
    postgres = LocalPostgres(bin_dir)
    postgres.start()
    workers: list[subprocess.Popen[bytes]] = []
    try:
        db = postgres.create_database()
        with bench_browser("bc-bench-workers-") as (browser, work), PageServer() as pages:
            model = ScriptedOpenAI(api_key="sk-test-123", router=router(pages))
            with model:
                env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "BROWSER_", "CDP_"))}
                env.update(
                    CDP_ENDPOINT=browser.endpoint.url,
                    BROWSER_AUTO_LAUNCH="false",
                    LLM_BASE_URL=model.base_url,
                    LLM_API_KEY="sk-test-123",
                    LLM_MODEL="scripted-model",
                    DATABASE_URL=db,
                    JOB_QUEUE="on",
                    START_IN_CURRENT_TAB="false",
                    PACING="off",
                    MEMORY="off",
                    MAX_PARALLEL_RUNS=str(args.parallel),
                )
                logs = []
                for n in range(args.workers):
                    log = (work / f"worker-{n}.log").open("wb")
                    logs.append(work / f"worker-{n}.log")
                    workers.append(
                        subprocess.Popen(
                            [
                                sys.executable,
                                str(ROOT / "main.py"),
                                "--env-file",
                                "/nonexistent/.env",
                                "worker",
                            ],
                            cwd=ROOT,
                            env={**env, "DATA_DIR": str(work / f"data-{n}")},
                            stdout=log,
                            stderr=subprocess.STDOUT,
                        )
                    )
                started = time.monotonic()
                while not all("is taking jobs" in p.read_text(errors="replace") for p in logs):
                    if time.monotonic() - started > 180 or any(w.poll() is not None for w in workers):
                        sys.exit("a worker did not start: " + " / ".join(p.read_text()[-800:] for p in logs))
                    time.sleep(0.2)
                ready = time.monotonic() - started
                peak = {w.pid: (0.0, 0.0) for w in workers}
                t0 = time.monotonic()
                asyncio.run(submit(db, args.tasks))
                while (done := outcomes(db)) < args.tasks:
                    for w in workers:
                        own = rss_mb(w.pid)
                        total = own + sum(rss_mb(c) for c in descendants(w.pid))
                        peak[w.pid] = (max(peak[w.pid][0], own), max(peak[w.pid][1], total))
                    if time.monotonic() - t0 > 600:
                        sys.exit(f"only {done} of {args.tasks} tasks ended in 600 s")
                    time.sleep(0.2)
                seconds = time.monotonic() - t0
                shares = takers(db)
                for w in workers:
                    w.send_signal(signal.SIGTERM)
                stop0 = time.monotonic()
                codes = [w.wait(60) for w in workers]
                stopped = time.monotonic() - stop0
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
        postgres.stop()
    per_minute = args.tasks / seconds * 60
    python_mb = max(p[0] for p in peak.values())
    total_mb = max(p[1] for p in peak.values())
    print(f"workers ready in {ready:.1f} s; {args.tasks} tasks in {seconds:.1f} s")
    print(f"tasks per minute: {per_minute:.1f} ({seconds / args.tasks:.2f} s per task)")
    print(f"shared: {sorted(shares.values())}")
    print(f"memory per worker (peak RSS): {python_mb:.0f} MB Python, {total_mb:.0f} MB with its MCP server")
    print(f"stopped on SIGTERM in {stopped:.1f} s, exit codes {codes}")
    print(
        f"workers={args.workers} parallel={args.parallel} tasks={args.tasks} seconds={seconds:.1f} "
        f"tasks_per_minute={per_minute:.1f} rss_python_mb={python_mb:.0f} rss_with_mcp_mb={total_mb:.0f} "
        f"ready_s={ready:.1f}"
    )


if __name__ == "__main__":
    main()
