"""Start-up and per-call cost of the browser layer, against @playwright/mcp's default settings.

Measures, with a headless Chromium this script starts and the pinned MCP server (sandboxed, as the app
runs it), the medians of:
  mcp_start      spawn the server, initialise the session, list tools (confined as MCP_SANDBOX=auto does:
                 bubblewrap + Node's permission model where bubblewrap works)
  mcp_start_node the same with Node's permission model only (MCP_SANDBOX=node), for the box's cost
  first_call     the first code call (connects to the browser over CDP, picks the agent tab)
  trivial_call   `async () => 1` in a warm session (ours: --timeout-settle 0)
  peer_trivial   the same call with the server's default --timeout-settle (500 ms), the peer
  app_ready      `main.py` start -> chat prompt accepting input (browser attached, MCP up)
  app_rss        resident memory of the app (Python) and of the MCP server (bwrap + Node) at the prompt

Usage: uv run python bench/startup.py [--rounds N]
The last line is the summary others script against:
startup: mcp_start_ms=... first_call_ms=... trivial_call_ms=... peer_trivial_ms=... settle_ratio=...
app_ready_ms=... app_rss_mb=... mcp_rss_mb=... mcp_start_node_ms=... confinement=...
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from browser_copilot.browser.launcher import LaunchedBrowser  # noqa: E402
from browser_copilot.browser.mcp_server import (  # noqa: E402
    McpConnection,
    ServerSpec,
    build_server_spec,
    find_child_pid,
)
from common import bench_browser  # noqa: E402


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def tree_rss_mb(pid: int) -> float:
    """Resident memory of `pid` and its descendants (the server is Node inside bwrap's box)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            total += rss_mb(current)
        except OSError:
            continue
        todo += children.get(current, [])
    return total


def with_settle(spec: ServerSpec, settle_ms: int) -> ServerSpec:
    args = list(spec.args)
    args[args.index("--timeout-settle") + 1] = str(settle_ms)
    return dataclasses.replace(spec, args=args)


async def time_session(spec: ServerSpec, calls: int) -> tuple[float, float, list[float]]:
    """(start ms, first call ms, warm trivial call ms list) for one fresh server."""
    connection = McpConnection(spec)
    started = time.perf_counter()
    await connection.start()
    start_ms = (time.perf_counter() - started) * 1000
    try:
        started = time.perf_counter()
        await connection.call(connection.code_tool_name, {"code": "async (page) => page.url()"})
        first_ms = (time.perf_counter() - started) * 1000
        trivial: list[float] = []
        for _ in range(calls):
            started = time.perf_counter()
            await connection.call(connection.code_tool_name, {"code": "async () => 1"})
            trivial.append((time.perf_counter() - started) * 1000)
        return start_ms, first_ms, trivial
    finally:
        await connection.close()


def time_app_ready(browser: LaunchedBrowser, data_dir: Path) -> tuple[float, float, float]:
    """(ms to the prompt, app RSS MB, MCP server RSS MB) of `main.py` attached to `browser`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "OPENAI_"))}
    env.update(
        {"DATA_DIR": str(data_dir), "CDP_ENDPOINT": browser.endpoint.url, "BROWSER_AUTO_LAUNCH": "false"}
    )
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "main.py"), "--env-file", "/nonexistent"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert process.stdout is not None and process.stdin is not None
    seen = b""
    deadline = time.monotonic() + 60
    while "› ".encode() not in seen:
        chunk = process.stdout.read1(4096)
        if not chunk or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"the app did not reach its prompt:\n{seen.decode(errors='replace')}")
        seen += chunk
    ready_ms = (time.perf_counter() - started) * 1000
    app_rss = rss_mb(process.pid)
    mcp_pid = find_child_pid(process.pid, str(data_dir))
    mcp_rss = tree_rss_mb(mcp_pid) if mcp_pid else float("nan")
    process.stdin.write(b"/quit\n")
    process.stdin.flush()
    process.wait(30)
    return ready_ms, app_rss, mcp_rss


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    with bench_browser("bc-bench-") as (browser, work):
        url, data_dir = browser.endpoint.url, work / "data"
        spec = build_server_spec(cdp_endpoint=url, data_dir=data_dir)
        node_only = build_server_spec(cdp_endpoint=url, data_dir=data_dir, sandbox="node")
        starts, starts_node, firsts, trivial, peer = [], [], [], [], []
        for _ in range(args.rounds):
            start_ms, first_ms, calls = await time_session(spec, args.calls)
            starts.append(start_ms)
            firsts.append(first_ms)
            trivial += calls
            starts_node.append((await time_session(node_only, 1))[0])
        for _ in range(max(1, args.rounds // 2)):
            *_, calls = await time_session(with_settle(spec, 500), 5)
            peer += calls
        ready = [time_app_ready(browser, work / f"app{i}") for i in range(args.rounds)]

    rows = [
        ("MCP start -> tools listed", statistics.median(starts), "ms"),
        ("first code call (CDP connect)", statistics.median(firsts), "ms"),
        ("trivial code call, ours (settle 0)", statistics.median(trivial), "ms"),
        ("trivial code call, peer (default settle)", statistics.median(peer), "ms"),
        ("app start -> prompt", statistics.median(r[0] for r in ready), "ms"),
        ("app resident memory at prompt", statistics.median(r[1] for r in ready), "MB"),
        ("MCP server resident memory", statistics.median(r[2] for r in ready), "MB"),
        ("MCP start, Node permission model only", statistics.median(starts_node), "ms"),
    ]
    print(f"Browser Copilot start-up bench ({args.rounds} rounds, {args.calls} calls each; medians)")
    print(f"server: {spec.confinement.describe()}")
    print(f"{'measure':<44} {'value':>10}")
    for name, value, unit in rows:
        print(f"{name:<44} {value:>8.1f} {unit}")
    ratio = statistics.median(trivial) / statistics.median(peer)
    print(f"trivial call: ours / peer = {ratio:.3f}")
    print(
        f"startup: mcp_start_ms={rows[0][1]:.0f} first_call_ms={rows[1][1]:.0f} "
        f"trivial_call_ms={rows[2][1]:.1f} peer_trivial_ms={rows[3][1]:.0f} settle_ratio={ratio:.3f} "
        f"app_ready_ms={rows[4][1]:.0f} app_rss_mb={rows[5][1]:.0f} mcp_rss_mb={rows[6][1]:.0f} "
        f"mcp_start_node_ms={rows[7][1]:.0f} confinement={spec.confinement.level}"
    )


if __name__ == "__main__":
    asyncio.run(main())
