"""Parallel runs in one browser (a script, not a test): tasks per minute and memory per run with 1, 2
and 4 runs at once (MAX_PARALLEL_RUNS), each in a window of its own through its own MCP server process.

In process: the server's `SessionManager` over a headless Chromium of the bench's, the SQLite
checkpointer, PACING=off, and a scripted model that, for every task, opens a local page, reads its
heading, then answers (three model calls, two browser calls). N workers each run a session's tasks one
after another; a first round warms up (the MCP processes start), then each worker runs `--tasks` more.

Reported per N: tasks per minute, the RSS of the MCP server processes (bubblewrap + Node) and of the
browser's renderer processes, summed, and that sum per run. Usage:
  uv run python bench/parallel.py [--tasks 4] [--runs 1,2,4]
The last line: key=value summary.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import tempfile
import time
from pathlib import Path

from common import bench_browser, rss_mb

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage  # noqa: E402
from tests.support.pages import PageServer  # noqa: E402
from tests.support.scripted_model import ScriptedModel  # noqa: E402

from browser_copilot.agent.storage import open_checkpointer  # noqa: E402
from browser_copilot.browser.session import BrowserSession  # noqa: E402
from browser_copilot.config import load_settings  # noqa: E402
from browser_copilot.server.sessions import SessionManager  # noqa: E402

_ids = itertools.count(1)


class Errands(ScriptedModel):
    """Each task: open the page, read its heading, answer. Decided from the conversation so far, so
    that runs of several sessions can call it in any order."""

    page: str

    @property
    def _llm_type(self) -> str:
        return "bench-errands"

    def _next(self, messages: list[BaseMessage]) -> AIMessage:
        last_user = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
        done = sum(1 for m in messages[last_user:] if isinstance(m, ToolMessage))
        steps = [
            f"async (page) => {{ await page.goto('{self.page}') }}",
            "async (page) => await page.locator('h1').first().textContent()",
        ]
        if done < len(steps):
            call = {"name": "browser_run_code", "args": {"code": steps[done]}, "id": f"c{next(_ids)}"}
            return AIMessage(content="", tool_calls=[{**call, "type": "tool_call"}])
        return AIMessage(content="Read the page's heading.")


def children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            tree.setdefault(parent, []).append(int(entry.name))
    return tree


def tree_mb(pid: int, tree: dict[int, list[int]]) -> float:
    return rss_mb(pid) + sum(tree_mb(child, tree) for child in tree.get(pid, []))


def renderers_mb(browser_pid: int, tree: dict[int, list[int]]) -> float:
    total, todo = 0.0, [browser_pid]
    while todo:
        pid = todo.pop()
        todo += tree.get(pid, [])
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"--type=renderer" in cmdline:
            total += rss_mb(pid)
    return total


async def measure(runs: int, tasks: int, browser_url: str, browser_pid: int, page: str) -> dict[str, float]:
    data = Path(tempfile.mkdtemp(prefix=f"bench-parallel-{runs}-"))
    settings = load_settings(
        None,
        data_dir=data,
        cdp_endpoint=browser_url,
        browser_auto_launch=False,
        start_in_current_tab=False,
        pacing="off",
        max_parallel_runs=runs,
    )
    async with (
        BrowserSession(settings, root=ROOT) as browser,
        open_checkpointer(settings) as saver,
    ):
        manager = SessionManager(settings, browser=browser, llm=Errands(page=page), checkpointer=saver)
        try:

            async def worker(n: int, count: int) -> None:
                s = manager.session(f"w{runs}-{n}")
                for i in range(count):
                    finals = sum(1 for _, k, _ in s.hub.after(0) if k == "final")
                    manager.start(s, f"Errand {i}: read the page's heading")
                    while sum(1 for _, k, _ in s.hub.after(0) if k == "final") <= finals:
                        await asyncio.sleep(0.02)
                        if s.turn is not None and s.turn.done() and s.state == "error":
                            raise RuntimeError(f"run failed: {[b[:200] for _, _, b in s.hub.after(0)]}")

            await asyncio.gather(*(worker(n, 1) for n in range(runs)))  # warm-up: processes start
            started = time.perf_counter()
            await asyncio.gather(*(worker(n, tasks) for n in range(runs)))
            elapsed = time.perf_counter() - started
            tree = children()
            pids = [
                p
                for p in [browser.mcp.server_pid() if browser.mcp else None, *manager.pool.server_pids()]
                if p
            ]
            mcp = sum(tree_mb(pid, tree) for pid in pids)
            renderers = renderers_mb(browser_pid, tree)
        finally:
            await manager.close()
    return {
        "runs": runs,
        "tasks": runs * tasks,
        "seconds": elapsed,
        "tasks_per_min": runs * tasks / elapsed * 60,
        "mcp_processes": len(pids),
        "mcp_mb": mcp,
        "renderers_mb": renderers,
        "mb_per_run": (mcp + renderers) / runs,
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=4, help="tasks per run after the warm-up")
    parser.add_argument("--runs", default="1,2,4")
    args = parser.parse_args()
    rows = []
    with bench_browser("bench-parallel-") as (browser, _), PageServer() as pages:
        for runs in [int(n) for n in args.runs.split(",")]:
            rows.append(
                await measure(runs, args.tasks, browser.endpoint.url, browser.pid, pages.url("shop.html"))
            )
    heads = ("runs", "tasks", "seconds", "tasks/min", "MCP procs", "MCP MB", "render MB", "MB/run")
    print(" ".join(f"{h:>{w}}" for h, w in zip(heads, (4, 5, 8, 9, 9, 7, 9, 7), strict=True)))
    for r in rows:
        print(
            f"{r['runs']:>4} {r['tasks']:>5} {r['seconds']:>8.1f} {r['tasks_per_min']:>9.1f} "
            f"{r['mcp_processes']:>9} {r['mcp_mb']:>7.0f} {r['renderers_mb']:>9.0f} {r['mb_per_run']:>7.0f}"
        )
    # What one more run costs: the growth of MCP + renderer RSS from the fewest runs to the most.
    low, high = rows[0], rows[-1]
    total = [r["mcp_mb"] + r["renderers_mb"] for r in (low, high)]
    added = (total[1] - total[0]) / (high["runs"] - low["runs"]) if high["runs"] > low["runs"] else total[0]
    print(f"memory per added run: {added:.0f} MB (RSS sums; pages shared between processes count in each)")
    summary = " ".join(f"tasks_per_min_{r['runs']}={r['tasks_per_min']:.1f}" for r in rows)
    print(f"{summary} mb_per_run={added:.0f}")


if __name__ == "__main__":
    asyncio.run(main())
