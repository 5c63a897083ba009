"""Start-up and per-call cost of the browser layer, against @playwright/mcp's default settings.

Measures, with a headless Chromium this script starts and the pinned MCP server (sandboxed, as the app
runs it), the medians of:
  mcp_start      spawn the server, initialise the session, list tools (confined as MCP_SANDBOX=auto does:
                 bubblewrap + Node's permission model where bubblewrap works)
  mcp_start_node the same with Node's permission model only (MCP_SANDBOX=node), for the box's cost
  first_call     the first code call (connects to the browser over CDP, picks the agent tab)
  trivial_call   `async () => 1` in a warm session (ours: --timeout-settle 0)
  peer_trivial   the same call with the server's default --timeout-settle (500 ms), the peer
  app_ready      `main.py` start -> chat prompt accepting input (the browser, the extra servers and the
                 agent start in the background since issue 18; a message waits for them)
  app_usable     `main.py` start -> the answer to a `/status` typed at once (browser attached, MCP up,
                 agent loaded: what the first task waits for)
  app_imports    interpreter start + the modules `main.py` imports before the prompt
  app_rss        resident memory of the app (Python) and of the MCP server (bwrap + Node), everything up
The app runs with a configured (unreachable) model, so its agent is built, and never probes for one.

Usage: uv run python bench/startup.py [--rounds N] [--baseline DIR]
`--baseline DIR`: another checkout (its `main.py`), measured alternately with this one, round by round,
so both see the same load; its figures are printed next to these and added to the summary.
The last line is the summary others script against:
startup: mcp_start_ms=... first_call_ms=... trivial_call_ms=... peer_trivial_ms=... settle_ratio=...
app_ready_ms=... app_rss_mb=... mcp_rss_mb=... mcp_start_node_ms=... confinement=... app_usable_ms=...
app_imports_ms=... [baseline_ready_ms=... baseline_usable_ms=...]
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


@dataclasses.dataclass(frozen=True)
class AppStart:
    ready_ms: float
    """To the prompt."""
    usable_ms: float
    """To the answer of a `/status` sent at the prompt (everything started)."""
    app_rss: float
    mcp_rss: float


def _read_until(process: subprocess.Popen[bytes], seen: bytearray, mark: str, deadline: float) -> None:
    assert process.stdout is not None
    while mark.encode() not in seen:
        chunk = process.stdout.read1(4096)
        if not chunk or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"the app never printed {mark!r}:\n{seen.decode(errors='replace')}")
        seen += chunk


def time_app_start(browser: LaunchedBrowser, data_dir: Path, *, checkout: Path = ROOT) -> AppStart:
    """`checkout`'s `main.py` attached to `browser`: to its prompt, then to the answer of `/status`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "OPENAI_"))}
    env.update(
        {
            "DATA_DIR": str(data_dir),
            "CDP_ENDPOINT": browser.endpoint.url,
            "BROWSER_AUTO_LAUNCH": "false",
            "LLM_BASE_URL": "http://127.0.0.1:9/v1",  # configured, so the agent is built; never called
            "LLM_API_KEY": "sk-bench-0000",
            "LLM_MODEL": "bench-model",
        }
    )
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, str(checkout / "main.py"), "--env-file", "/nonexistent"],
        cwd=checkout,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert process.stdin is not None
    seen, deadline = bytearray(), time.monotonic() + 60
    _read_until(process, seen, "› ", deadline)
    ready_ms = (time.perf_counter() - started) * 1000
    process.stdin.write(b"/status\n")
    process.stdin.flush()
    _read_until(process, seen, "success rate", deadline)
    usable_ms = (time.perf_counter() - started) * 1000
    app_rss = rss_mb(process.pid)
    mcp_pid = find_child_pid(process.pid, str(data_dir))
    mcp_rss = tree_rss_mb(mcp_pid) if mcp_pid else float("nan")
    process.stdin.write(b"/quit\n")
    process.stdin.flush()
    process.wait(30)
    return AppStart(ready_ms, usable_ms, app_rss, mcp_rss)


def time_imports(checkout: Path = ROOT) -> float:
    """ms for a fresh interpreter to import what `main.py` imports before the chat's prompt."""
    code = f"import sys; sys.path.insert(0, {str(checkout / 'src')!r}); import browser_copilot.ui.chat"
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=checkout, check=True)
    return (time.perf_counter() - started) * 1000


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--baseline", type=Path, help="another checkout, measured alternately with this one")
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
        apps: list[AppStart] = []
        baseline: list[AppStart] = []
        imports: list[float] = []
        for i in range(args.rounds):  # alternately, when there is a baseline: the same minutes, the same load
            apps.append(time_app_start(browser, work / f"app{i}"))
            imports.append(time_imports())
            if args.baseline is not None:
                baseline.append(time_app_start(browser, work / f"base{i}", checkout=args.baseline))

    rows = [
        ("MCP start -> tools listed", statistics.median(starts), "ms"),
        ("first code call (CDP connect)", statistics.median(firsts), "ms"),
        ("trivial code call, ours (settle 0)", statistics.median(trivial), "ms"),
        ("trivial code call, peer (default settle)", statistics.median(peer), "ms"),
        ("app start -> prompt", statistics.median(a.ready_ms for a in apps), "ms"),
        ("app resident memory, everything started", statistics.median(a.app_rss for a in apps), "MB"),
        ("MCP server resident memory", statistics.median(a.mcp_rss for a in apps), "MB"),
        ("MCP start, Node permission model only", statistics.median(starts_node), "ms"),
        ("app start -> /status answered (all started)", statistics.median(a.usable_ms for a in apps), "ms"),
        ("app imports before the prompt (with Python)", statistics.median(imports), "ms"),
    ]
    if baseline:
        rows += [
            ("baseline: app start -> prompt", statistics.median(a.ready_ms for a in baseline), "ms"),
            ("baseline: start -> /status answered", statistics.median(a.usable_ms for a in baseline), "ms"),
        ]
    print(f"Browser Copilot start-up bench ({args.rounds} rounds, {args.calls} calls each; medians)")
    print(f"server: {spec.confinement.describe()}")
    print(f"{'measure':<46} {'value':>10}")
    for name, value, unit in rows:
        print(f"{name:<46} {value:>8.1f} {unit}")
    ratio = statistics.median(trivial) / statistics.median(peer)
    print(f"trivial call: ours / peer = {ratio:.3f}")
    print(
        f"startup: mcp_start_ms={rows[0][1]:.0f} first_call_ms={rows[1][1]:.0f} "
        f"trivial_call_ms={rows[2][1]:.1f} peer_trivial_ms={rows[3][1]:.0f} settle_ratio={ratio:.3f} "
        f"app_ready_ms={rows[4][1]:.0f} app_rss_mb={rows[5][1]:.0f} mcp_rss_mb={rows[6][1]:.0f} "
        f"mcp_start_node_ms={rows[7][1]:.0f} confinement={spec.confinement.level} "
        f"app_usable_ms={rows[8][1]:.0f} app_imports_ms={rows[9][1]:.0f}"
        + (f" baseline_ready_ms={rows[10][1]:.0f} baseline_usable_ms={rows[11][1]:.0f}" if baseline else "")
    )


if __name__ == "__main__":
    asyncio.run(main())
