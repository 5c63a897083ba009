"""What the network policy (sandbox/network.py) adds to a page load in the agent's tab.

A headless Chromium this script starts, the pinned MCP server, and the test pages (tests/pages, served on
127.0.0.1), plus one page with 60 subresources (images, scripts, styles; `many.html`) for the cost per
request. Each page is loaded in the agent's tab with `page.goto(url, {waitUntil: 'load'})` through the
code tool, in three modes, interleaved round by round:
  off       the policy's connection closed: nothing paused (what the app did before it)
  covered   the policy on, between code calls: the agent's tab pauses each request in the policy's
            own session (Fetch) until the app decides
  in_call   as the agent runs code: also the browser-wide Fetch of a code call (each of the agent's
            requests is paused twice, every other tab's once)
Per mode: the median and p90 of a page load and the requests decided per load; the same for many.html.

Usage: uv run python bench/network.py [--rounds N]
The last line is the summary others script against:
network: off_ms=... covered_ms=... in_call_ms=... added_covered_ms=... added_in_call_ms=...
many_added_covered_ms=... many_added_in_call_ms=... per_request_ms=...
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from common import ROOT, bench_browser

sys.path.insert(0, str(ROOT))

from tests.support.pages import PAGES, PageServer

from browser_copilot.browser.session import BrowserSession
from browser_copilot.config import load_settings
from browser_copilot.sandbox.network import NetworkGuard

MODES = ("off", "covered", "in_call")
LOAD = "async (page) => { await page.goto(%s, { waitUntil: 'load' }); }"
SUBRESOURCES = 60
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


class _Many(BaseHTTPRequestHandler):
    """many.html: a page whose HTML loads 60 subresources from its own site (a typical page's count)."""

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path == "/many.html":
            parts = [f'<img src="/i/{n}.png?v={n}">' for n in range(SUBRESOURCES // 3)]
            parts += [f'<script src="/s/{n}.js?v={n}"></script>' for n in range(SUBRESOURCES // 3)]
            parts += [f'<link rel="stylesheet" href="/c/{n}.css?v={n}">' for n in range(SUBRESOURCES // 3)]
            body, kind = (
                ("<!doctype html><html><body>" + "".join(parts) + "</body></html>").encode(),
                "text/html",
            )
        elif path.endswith(".png"):
            body, kind = PIXEL, "image/png"
        elif path.endswith(".js"):
            body, kind = b"window.n = (window.n || 0) + 1;", "text/javascript"
        else:
            body, kind = b"p { margin: 0 }", "text/css"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)


async def set_mode(session: BrowserSession, guard: NetworkGuard, mode: str, endpoint: str) -> None:
    if mode == "off":
        await guard.stop()
        return
    if not guard.connected:
        await guard.start(endpoint)
        deadline = time.monotonic() + 10
        while not any(t.agent and t.covered for t in guard._targets.values()):
            if time.monotonic() > deadline:
                raise SystemExit("the agent's tab was not covered again")
            await asyncio.sleep(0.01)
    await guard._set_browser_fetch(False)


async def load(session: BrowserSession, mode: str, url: str) -> float:
    code = LOAD % json.dumps(url)
    started = time.perf_counter()
    assert session.mcp is not None and session.network is not None
    if mode == "in_call":  # inside the code-call window, as `BrowserSession.run_code` opens it
        async with session.network.acting():
            text, failed = await session.mcp.call(session.mcp.code_tool_name, {"code": code})
    else:  # straight to the code tool: no code-call window (and, when off, no policy to ask)
        text, failed = await session.mcp.call(session.mcp.code_tool_name, {"code": code})
    ok, error = not failed, text
    elapsed = (time.perf_counter() - started) * 1000
    if not ok:
        raise SystemExit(f"loading {url} failed in mode {mode}: {error}")
    return elapsed


async def run(rounds: int) -> None:
    names = sorted(p.name for p in PAGES.glob("*.html"))
    many_server = ThreadingHTTPServer(("127.0.0.1", 0), _Many)
    threading.Thread(target=many_server.serve_forever, daemon=True).start()
    many = f"http://127.0.0.1:{many_server.server_address[1]}/many.html"
    with bench_browser("bc-bench-network-") as (browser, work), PageServer() as pages:
        settings = load_settings(
            None,
            data_dir=work / "data",
            cdp_endpoint=browser.endpoint.url,
            browser_auto_launch=False,
            start_in_current_tab=False,
            pacing="off",
        )
        async with BrowserSession(settings, root=ROOT) as session:
            guard = session.network
            assert guard is not None
            times: dict[str, list[float]] = {mode: [] for mode in MODES}
            decided: dict[str, list[int]] = {mode: [] for mode in MODES}
            heavy: dict[str, list[float]] = {mode: [] for mode in MODES}
            heavy_decided: dict[str, list[int]] = {mode: [] for mode in MODES}
            for name in names:  # warm-up: caches, the guard runtime, first-load costs
                await load(session, "in_call", pages.url(name))
            for _ in range(rounds):
                for mode in MODES:
                    await set_mode(session, guard, mode, browser.endpoint.url)
                    for name in names:
                        before = guard.paused
                        times[mode].append(await load(session, mode, pages.url(name)))
                        decided[mode].append(guard.paused - before)
                    for _ in range(10):
                        before = guard.paused
                        heavy[mode].append(await load(session, mode, many))
                        heavy_decided[mode].append(guard.paused - before)
            await set_mode(session, guard, "covered", browser.endpoint.url)
    many_server.shutdown()
    print(f"page loads in the agent's tab, headless Chromium, page.goto(waitUntil: 'load'), {rounds} rounds")
    print(f"{'pages':<24} {'mode':<9} {'median ms':>10} {'p90 ms':>8} {'added ms':>9} {'decided/load':>13}")
    summary: dict[str, float] = {}
    for label, series, counts in (
        (f"test pages ({len(names)})", times, decided),
        (f"many.html ({SUBRESOURCES} subres.)", heavy, heavy_decided),
    ):
        base = statistics.median(series["off"])
        for mode in MODES:
            values = sorted(series[mode])
            median = statistics.median(values)
            p90 = values[int(0.9 * (len(values) - 1))]
            per_load = statistics.mean(counts[mode])
            print(
                f"{label:<24} {mode:<9} {median:>10.1f} {p90:>8.1f} {median - base:>9.1f} {per_load:>13.1f}"
            )
            summary[f"{'many' if label.startswith('many') else 'pages'}_{mode}"] = median
    pages_off, many_off = summary["pages_off"], summary["many_off"]
    per_request = (summary["many_covered"] - many_off) / max(statistics.mean(heavy_decided["covered"]), 1)
    print(
        f"network: off_ms={pages_off:.1f} covered_ms={summary['pages_covered']:.1f}"
        f" in_call_ms={summary['pages_in_call']:.1f}"
        f" added_covered_ms={summary['pages_covered'] - pages_off:.1f}"
        f" added_in_call_ms={summary['pages_in_call'] - pages_off:.1f}"
        f" many_added_covered_ms={summary['many_covered'] - many_off:.1f}"
        f" many_added_in_call_ms={summary['many_in_call'] - many_off:.1f} per_request_ms={per_request:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(run(args.rounds))


if __name__ == "__main__":
    main()
