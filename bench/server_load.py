"""Server mode under load (a script, not a test): S sessions chatting and W SSE watchers for T seconds.

`main.py serve` runs as a child process (its own MCP server, a headless Chromium of the bench's, the
scripted OpenAI-compatible model, PACING=off). Each session sends a task over its WebSocket (the model
opens a local page and reads it, then answers), waits for the answer, and sends the next one; runs
share the one browser, so they queue. W watchers follow the sessions' SSE streams (W/S per session).
At the end every session's stream is read once more from id 0 to count what was produced.

Reported: events delivered / expected (each watcher should get every event of its session: 100%),
duplicates, p50/p99 latency from the agent emitting an event to a watcher reading it, answers, and
the server's RSS (peak of samples). Usage:
  uv run python bench/server_load.py [--seconds 20] [--sessions 20] [--watchers 100]
The last line: key=value summary.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

import aiohttp

from common import bench_browser

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.openai_server import ScriptedOpenAI, call, text  # noqa: E402
from tests.support.pages import PageServer  # noqa: E402
from tests.support.sse import sse_frames  # noqa: E402


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Watcher:
    def __init__(self, session: str) -> None:
        self.session = session
        self.ids: list[int] = []
        self.latencies: list[float] = []

    async def run(self, http: aiohttp.ClientSession, base: str, stop: asyncio.Event) -> None:
        async with http.get(f"{base}/sessions/{self.session}/events") as response:
            async for frame in sse_frames(response):
                if "id" in frame:
                    self.latencies.append(time.time() - json.loads(frame["data"])["at"])
                    self.ids.append(int(frame["id"]))
                elif stop.is_set():
                    return


async def chatter(
    http: aiohttp.ClientSession, ws_url: str, page: str, deadline: float, answers: list[int]
) -> None:
    async with http.ws_connect(ws_url) as ws:
        while time.monotonic() < deadline:
            await ws.send_json({"kind": "user_message", "text": f"Read the page {page}"})
            while True:
                message = await ws.receive_json()
                if message["kind"] == "agent_message":
                    answers.append(1)
                    break
                if message["kind"] == "error":
                    await asyncio.sleep(0.2)
                    break


async def produced(http: aiohttp.ClientSession, base: str, session: str) -> int:
    count = 0
    async with http.get(f"{base}/sessions/{session}/events?last_event_id=0") as response:
        async for frame in sse_frames(response):
            if "id" not in frame:
                return count
            count += 1
    return count


async def main(args: argparse.Namespace) -> None:
    with (
        bench_browser("bc-bench-server-") as (browser, work),
        PageServer() as pages,
        ScriptedOpenAI(api_key="sk-bench") as llm,
    ):
        pair = (
            call(
                "browser_run_code",
                code=f"async (page) => {{ await page.goto('{pages.url('search.html')}');"
                " return await page.title(); }",
            ),
            text("The page is the flight search."),
        )
        llm.script(*(pair * 20_000))
        env = {
            **os.environ,
            "CDP_ENDPOINT": browser.endpoint.url,
            "LLM_BASE_URL": llm.base_url,
            "LLM_API_KEY": "sk-bench",
            "LLM_MODEL": "scripted-model",
            "DATA_DIR": str(work / "data"),
            "BROWSER_AUTO_LAUNCH": "false",
            "START_IN_CURRENT_TAB": "false",
            "PACING": "off",
            "MAX_TOOL_STEPS": "5",
        }
        server = await asyncio.create_subprocess_exec(
            sys.executable,
            str(ROOT / "main.py"),
            "--env-file",
            str(work / "none.env"),
            "serve",
            "--port",
            "0",
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            cwd=ROOT,
        )
        try:
            assert server.stdout is not None
            line = (await asyncio.wait_for(server.stdout.readline(), 120)).decode().strip()
            if not line.startswith("http://"):
                raise SystemExit(f"the server did not start: {line!r}")
            base, _, token = line.partition("/?token=")
            headers = {"Authorization": f"Bearer {token}"}
            timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
            connector = aiohttp.TCPConnector(limit=0)
            async with aiohttp.ClientSession(headers=headers, timeout=timeout, connector=connector) as http:
                sessions = [f"load{i:02d}" for i in range(args.sessions)]
                stop = asyncio.Event()
                watchers = [Watcher(sessions[i % len(sessions)]) for i in range(args.watchers)]
                watching = [asyncio.create_task(w.run(http, base, stop)) for w in watchers]
                await asyncio.sleep(0.5)  # the watchers are connected before anything happens
                answers: list[int] = []
                peak = rss_mb(server.pid)
                deadline = time.monotonic() + args.seconds
                ws_base = base.replace("http://", "ws://")
                chatting = [
                    asyncio.create_task(
                        chatter(http, f"{ws_base}/ws/{s}?token={token}", "search", deadline, answers)
                    )
                    for s in sessions
                ]
                while not all(t.done() for t in chatting):
                    await asyncio.sleep(0.5)
                    peak = max(peak, rss_mb(server.pid))
                await asyncio.gather(*chatting)
                counts = {s: await produced(http, base, s) for s in sessions}
                # Let the watchers catch up (they see a heartbeat once idle), then stop them.
                for _ in range(100):
                    if all(len(w.ids) >= counts[w.session] for w in watchers):
                        break
                    await asyncio.sleep(0.1)
                stop.set()
                for task in watching:
                    task.cancel()
                await asyncio.gather(*watching, return_exceptions=True)
        finally:
            with contextlib.suppress(ProcessLookupError):
                server.terminate()
            await asyncio.wait_for(server.wait(), 30)
    expected = sum(counts[w.session] for w in watchers)
    delivered = sum(len(set(w.ids)) for w in watchers)
    duplicates = sum(len(w.ids) - len(set(w.ids)) for w in watchers)
    latencies = sorted(x * 1000 for w in watchers for x in w.latencies)
    p50 = statistics.median(latencies) if latencies else 0.0
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] if latencies else 0.0
    produced_total = sum(counts.values())
    print(f"sessions {args.sessions}, watchers {args.watchers}, {args.seconds:.0f} s, answers {len(answers)}")
    print(f"events produced {produced_total}; delivered {delivered} of {expected} expected, {duplicates} dup")
    print(f"latency p50 {p50:.1f} ms, p99 {p99:.1f} ms; server RSS peak {peak:.0f} MB")
    share = 100.0 * delivered / expected if expected else 0.0
    print(
        f"sessions={args.sessions} watchers={args.watchers} seconds={args.seconds:g} answers={len(answers)} "
        f"produced={produced_total} delivered={delivered} expected={expected} delivered_pct={share:.2f} "
        f"duplicates={duplicates} p50_ms={p50:.1f} p99_ms={p99:.1f} server_rss_mb={peak:.0f} "
        f"exit={server.returncode}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=20.0, help="load duration (the issue's figure: 60)")
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--watchers", type=int, default=100)
    asyncio.run(main(parser.parse_args()))
