"""Framework time per agent step (everything but the LLM), against the raw round trips beneath it.

A scripted model (answers instantly) drives the real graph, MCP server and Chromium through a task of
small-page steps (click, type, navigate). A step is the time from one browser tool call to the next:
validator, code call, fresh observation, prompt assembly, model call (scripted), routing, checkpoint.
Peers measured in the same run: a raw CDP `Runtime.evaluate` round trip over a WebSocket, and a
trivial code call through the MCP session.

With `--pacing both` (the default) the same task runs again with human pacing (PACING=human: per-key
typing, pauses before clicks, the same-site navigation gap, the per-site action limit, defaults).

Also the tool schemas every model call carries (F60), in o200k tokens: the built-in tools alone, and
with the two extra MCP servers the tests use (the pinned server-filesystem and the FastMCP notes server).

Where a step's time goes (without pacing), per phase, median ms per step: the code call that acts
(guard, browser action, MCP), the observation (settle, extraction, the look), the model call (scripted,
through LangChain), checkpoint writes, event narration (plain_steps) and the rest (graph routing, nodes,
prompt assembly, checks, state). Timed from the outside: a `BrowserSession`, model, checkpointer and
event sink that time their calls. Then the same actions once more outside the agent, each as raw code
and as guarded code, and the observation with and without its settle wait: what the guard and the
settle add.

Usage: uv run python bench/step.py [--steps N] [--rounds N] [--pacing both|off|human]
The last line: step_median_ms=... step_p90_ms=... mcp_call_ms=... raw_cdp_ms=... overhead_ratio=...
prompt_tokens_median=... prompt_prefix_share=... step_median_ms_human=... step_p90_ms_human=...
tool_schema_tokens=... tool_schema_tokens_servers=... act_ms=... observe_ms=... model_ms=...
checkpoint_ms=... events_ms=... graph_ms=... guard_ms=... settle_ms=... runtime_install_ms=...
framework_median_ms=...
(step_* without pacing, *_human with it; a mode not run is left out; tool_schema_tokens_servers is
built-in plus the two servers; act_ms...graph_ms: the phases, median per step without pacing; guard_ms:
guarded minus raw code call for the same action, median; settle_ms: observation with minus without settle;
runtime_install_ms: a guarded call in a new document minus the next one there; framework_median_ms:
each step without pacing minus the median raw code call of its action (measured outside the agent in
the state a run acts in: see `guard_and_settle`) — what the framework adds to what the browser itself
does, one MCP round trip of transport left in the action; the table of the
actions outside the agent gives it per kind of action, as the median of those steps)
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import itertools
import json
import statistics
import sys
import time
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import websockets
from langchain_core.messages import BaseMessageChunk
from langgraph.checkpoint.memory import InMemorySaver

from common import bench_browser, raw_code

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.support.pages import PageServer  # noqa: E402
from tests.support.scripted_model import ScriptedModel, code, say  # noqa: E402

from browser_copilot.agent.context import AgentContext, Limits  # noqa: E402
from browser_copilot.agent.conversation import to_state  # noqa: E402
from browser_copilot.agent.runner import AgentRunner, compile_graph  # noqa: E402
from browser_copilot.agent.tools import builtin_specs  # noqa: E402
from browser_copilot.browser.guarded import guarded_code  # noqa: E402
from browser_copilot.browser.launcher import LaunchedBrowser  # noqa: E402
from browser_copilot.browser.observing import observe  # noqa: E402
from browser_copilot.browser.pacing import Pacing  # noqa: E402
from browser_copilot.browser.results import CodeResult  # noqa: E402
from browser_copilot.browser.session import BrowserSession  # noqa: E402
from browser_copilot.config import load_settings  # noqa: E402
from browser_copilot.events import Event, EventLog  # noqa: E402
from browser_copilot.extras.budget import SchemaTokens, schema_tokens  # noqa: E402
from browser_copilot.extras.config import parse_servers  # noqa: E402
from browser_copilot.extras.servers import ExtraServers  # noqa: E402
from browser_copilot.llm.tokens import count_tokens  # noqa: E402
from browser_copilot.plain_steps import NarratedSink  # noqa: E402

PHASES = {
    "act": "act: the guarded code call (guard, browser, MCP)",
    "observe": "observe: the observation (settle, extraction, the look)",
    "model": "model call (scripted, through LangChain)",
    "checkpoint": "checkpoint writes (in memory)",
    "events": "events: plain_steps narration and the sink",
    "graph": "the rest: graph routing, nodes, prompt, checks, state",
}


class Spans:
    """Timed calls, each stamped with the wall clock at its end (as `Event.at` is)."""

    def __init__(self) -> None:
        self.spans: list[tuple[float, str, float]] = []

    def add(self, phase: str, started: float) -> None:
        self.spans.append((time.time(), phase, (time.perf_counter() - started) * 1000))

    def per_step(self, stamps: list[float]) -> list[dict[str, float]]:
        """Each phase's time in each step (between two tool calls); the rest is `graph`."""
        steps = []
        for a, b in itertools.pairwise(stamps):
            phases = collections.Counter({name: 0.0 for name in PHASES})
            for at, phase, ms in self.spans:
                if a < at <= b:
                    phases[phase] += ms
            phases["graph"] = max(0.0, (b - a) * 1000 - sum(phases.values()))
            steps.append(dict(phases))
        return steps


SPANS = Spans()


class TimedSession(BrowserSession):
    """The browser session, its code calls timed: the guarded ones act, the others observe."""

    async def run_code(self, code: str, *, timeout: float = 120.0, idempotent: bool = False) -> CodeResult:
        started = time.perf_counter()
        try:
            return await super().run_code(code, timeout=timeout, idempotent=idempotent)
        finally:
            SPANS.add("act" if "const __call = " in code else "observe", started)

    async def look_payload(self, opts: dict[str, Any], version: str, install: str) -> dict[str, Any] | None:
        started = time.perf_counter()
        try:
            return await super().look_payload(opts, version, install)
        finally:
            SPANS.add("observe", started)


class TimedModel(ScriptedModel):
    async def astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[BaseMessageChunk]:
        started = time.perf_counter()
        try:
            async for chunk in super().astream(*args, **kwargs):
                yield chunk
        finally:
            SPANS.add("model", started)


class TimedSaver(InMemorySaver):
    async def aput(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await super().aput(*args, **kwargs)
        finally:
            SPANS.add("checkpoint", started)

    async def aput_writes(self, *args: Any, **kwargs: Any) -> None:
        started = time.perf_counter()
        try:
            await super().aput_writes(*args, **kwargs)
        finally:
            SPANS.add("checkpoint", started)


class TimedNarration(NarratedSink):
    """The agent's event sink (`narrate` keeps a `NarratedSink` as it is), timed."""

    def __call__(self, event: Event) -> None:
        started = time.perf_counter()
        try:
            super().__call__(event)
        finally:
            SPANS.add("events", started)


def page_targets(browser: LaunchedBrowser) -> list[dict[str, str]]:
    with urllib.request.urlopen(f"{browser.endpoint.url}/json/list") as response:
        targets: list[dict[str, str]] = json.load(response)
    return targets


async def raw_cdp_ms(browser: LaunchedBrowser, calls: int) -> float:
    targets = [t for t in await asyncio.to_thread(page_targets, browser) if t["type"] == "page"]
    times = []
    async with websockets.connect(targets[0]["webSocketDebuggerUrl"], max_size=None) as ws:
        for i in range(calls):
            started = time.perf_counter()
            await ws.send(
                json.dumps({"id": i + 1, "method": "Runtime.evaluate", "params": {"expression": "1"}})
            )
            while json.loads(await ws.recv()).get("id") != i + 1:
                pass
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def moves(pages: PageServer) -> list[str]:
    return [
        f"async (page) => {{ await page.goto('{pages.url('index.html')}') }}",
        "async (page) => { await el(1).click() }",
        f"async (page) => {{ await page.goto('{pages.url('form.html')}') }}",
        "async (page) => { await el(1).fill('Ada Lovelace') }",
        f"async (page) => {{ await page.goto('{pages.url('shop.html')}') }}",
        "async (page) => { await el(2).click() }",
    ]


def script(pages: PageServer, steps: int) -> list[object]:
    sources = moves(pages)
    return [*(code(sources[i % len(sources)]) for i in range(steps)), say("Done.")]


def prompt_figures(prompts: list[list[Any]]) -> tuple[list[int], list[float]]:
    """Tokens of each prompt sent to the model, and the share of each prompt that repeats the start of
    the one before it, message for message (what a provider's prompt cache can reuse)."""
    texts = [[f"{type(m).__name__}: {m.content}" for m in prompt] for prompt in prompts]
    flat = [t for prompt in texts for t in prompt]
    counts, _ = count_tokens(flat)
    sizes: list[list[int]] = []
    at = 0
    for prompt in texts:
        sizes.append(counts[at : at + len(prompt)])
        at += len(prompt)
    totals = [sum(s) for s in sizes]
    shares = []
    for (before, _), (after, size) in itertools.pairwise(zip(texts, sizes, strict=True)):
        same = 0
        while same < min(len(before), len(after)) and before[same] == after[same]:
            same += 1
        shares.append(sum(size[:same]) / max(1, sum(size)))
    return totals, shares


async def run_round(
    session: BrowserSession, pages: PageServer, steps: int, pacing: Pacing
) -> tuple[list[float], ScriptedModel, list[dict[str, float]]]:
    """The step times, the model (its prompts) and each step's phases."""
    log = EventLog()
    model = TimedModel(replies=script(pages, steps))
    limits = Limits(max_tool_steps=steps + 1)
    context = AgentContext(
        llm=model, browser=session, limits=limits, events=TimedNarration(log), pacing=pacing
    )
    runner = AgentRunner(compile_graph(TimedSaver()), context, session_id=f"bench-{time.time_ns()}")
    SPANS.spans.clear()
    outcome = await runner.send("Do the scripted steps")
    assert outcome.stop_reason == "answered", outcome.text
    stamps = [e.at for e in log.of("tool_call")]
    return [(b - a) * 1000 for a, b in itertools.pairwise(stamps)], model, SPANS.per_step(stamps)


async def timed_call(session: BrowserSession, code: str) -> float:
    started = time.perf_counter()
    result = await session.run_code(code)
    assert result.ok, result.error
    return (time.perf_counter() - started) * 1000


ACTIONS = ("goto", "click", "goto", "fill", "goto", "click")
"""What each of `moves` does."""


async def guard_and_settle(
    session: BrowserSession, pages: PageServer, rounds: int
) -> tuple[float, float, float, dict[str, tuple[float, float]]]:
    """Outside the agent, the scripted actions each as raw code (`el(N)` only) and as guarded code, each
    in the state a run acts in: its page just loaded by a guarded goto (the guard has met the document)
    and observed with the settle, then the action at once (a click right after a load waits longer for
    the browser than one in a document that has been idle: measured apart, the raw click took ~70 ms
    instead of ~104, which the framework figure then wrongly took as its own); and the observation
    after each with and without its settle wait: the medians of what the guard adds to an action, what
    the settle adds to an observation, what a guarded call adds in a document the guard meets first
    (the runtime put there), and per kind of action (raw, guarded)."""
    guard, settle, install = [], [], []
    kinds: dict[str, tuple[list[float], list[float]]] = {kind: ([], []) for kind in ACTIONS}
    nothing = guarded_code("async (page) => 1")
    for turn in range(rounds * 2):
        for kind, source in zip(ACTIONS, moves(pages), strict=True):
            start = json.dumps((await session.run_code("async (page) => page.url()", idempotent=True)).value)
            back = guarded_code(f"async (page) => {{ await page.goto({start}) }}")
            pairs = list(zip((raw_code, guarded_code), kinds[kind], strict=True))
            for wrap, times in pairs[:: 1 if turn % 2 else -1]:  # raw first every other turn
                await session.run_code(back)  # each from the same page, just loaded as in a run
                frames = to_state(await observe(session, settle=True))["frames"]
                times.append(await timed_call(session, wrap(source, frames)))
            guard.append(kinds[kind][1][-1] - kinds[kind][0][-1])
            if kind == "goto":  # the last call was raw or guarded: a guarded call meets a new document
                await session.run_code(raw_code(source))
                first = await timed_call(session, nothing)
                install.append(first - await timed_call(session, nothing))
            started = time.perf_counter()
            await observe(session, settle=True)
            settled = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            await observe(session, settle=False)
            settle.append(settled - (time.perf_counter() - started) * 1000)
    per_kind = {k: (statistics.median(raw), statistics.median(held)) for k, (raw, held) in kinds.items()}
    return statistics.median(guard), statistics.median(settle), statistics.median(install), per_kind


async def tool_schemas(work: Path) -> tuple[SchemaTokens, dict[str, int]]:
    """The tool schemas' tokens with the two extra servers the tests use, and each server's tool count."""
    files = work / "files"
    files.mkdir(exist_ok=True)
    fs = ROOT / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
    notes = ROOT / "tests" / "support" / "notes_server.py"
    fs_reads = ["read_file", "read_text_file", "read_multiple_files", "list_directory", "directory_tree"]
    fs_reads += ["list_directory_with_sizes", "search_files", "get_file_info", "list_allowed_directories"]
    config = {
        "fs": {"command": "node", "args": [str(fs), str(files)], "read_only_tools": fs_reads},
        "notes": {
            "command": sys.executable,
            "args": [str(notes), "--store", str(work / "notes.json")],
            "read_only_tools": ["read_note", "list_notes", "server_pid", "wait", "crash"],
        },
    }
    loaded = parse_servers(json.dumps(config), work / "mcp_servers.json")
    async with ExtraServers(loaded.servers, log_dir=work / "logs") as extras:
        counts = {s.name: len(s.tools) for s in extras.servers}
        return await asyncio.to_thread(schema_tokens, extras, builtin_specs()), counts


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pacing", choices=("both", "off", "human"), default="both")
    args = parser.parse_args()
    modes = ["off", "human"] if args.pacing == "both" else [args.pacing]
    with bench_browser("bc-bench-step-") as (browser, work):
        settings = load_settings(
            None, data_dir=work / "data", cdp_endpoint=browser.endpoint.url, browser_auto_launch=False
        )
        with PageServer() as pages:
            async with TimedSession(settings) as session:
                by_mode: dict[str, list[float]] = {mode: [] for mode in modes}
                kinds_off: list[str] = []  # the action of each step without pacing
                phases: list[dict[str, float]] = []
                prompt_tokens: list[int] = []
                prefix_shares: list[float] = []
                for mode in modes:
                    pacing = Pacing(mode="human" if mode == "human" else "off")
                    for _ in range(args.rounds):
                        times, model, steps = await run_round(session, pages, args.steps, pacing)
                        by_mode[mode] += times
                        if mode == "off":
                            phases += steps
                            kinds_off += [ACTIONS[i % len(ACTIONS)] for i in range(len(times))]
                        tokens, shares = await asyncio.to_thread(prompt_figures, model.prompts)
                        prompt_tokens += tokens
                        prefix_shares += shares
                mcp = []
                for _ in range(30):
                    started = time.perf_counter()
                    await session.run_code("async () => 1", idempotent=True)
                    mcp.append((time.perf_counter() - started) * 1000)
                guard_ms, settle_ms, install_ms, per_kind = await guard_and_settle(
                    session, pages, args.rounds
                )
            raw = await raw_cdp_ms(browser, 30)
        schemas, tool_counts = await tool_schemas(work)
    figures = {
        mode: (statistics.median(times), sorted(times)[int(len(times) * 0.9) - 1])
        for mode, times in by_mode.items()
    }
    mcp_ms = statistics.median(mcp)
    count = sum(len(times) for times in by_mode.values())
    print(
        f"Browser Copilot step bench: {count} steps on small local pages, scripted model, "
        f"pacing {' and '.join(modes)}"
    )
    print(f"{'measure':<52} {'median ms':>10}")
    if "off" in figures:
        median, p90 = figures["off"]
        print(f"{'agent step (validate, act, observe, reason, route)':<52} {median:>10.1f}")
        print(f"{'agent step, 90th percentile':<52} {p90:>10.1f}")
    if "human" in figures:
        median, p90 = figures["human"]
        print(f"{'agent step with human pacing':<52} {median:>10.1f}")
        print(f"{'agent step with human pacing, 90th percentile':<52} {p90:>10.1f}")
    print(f"{'trivial code call through the MCP session':<52} {mcp_ms:>10.1f}")
    print(f"{'raw CDP Runtime.evaluate round trip':<52} {raw:>10.2f}")
    shares = {name: statistics.median(step[name] for step in phases) for name in PHASES} if phases else {}
    if shares:
        print(f"{'where a step goes (no pacing), per phase':<58} {'median ms':>10} {'mean ms':>8}")
        for name, label in PHASES.items():
            mean = statistics.mean(step[name] for step in phases)
            print(f"  {label:<56} {shares[name]:>10.1f} {mean:>8.1f}")
    framework = [t - per_kind[kind][0] for t, kind in zip(by_mode.get("off", []), kinds_off, strict=True)]
    heading = f"{'the same actions outside the agent':<36} {'raw code ms':>11} {'guarded ms':>10}"
    print(f"{heading} {'framework':>10}")
    for kind, (raw_ms, guarded_ms) in per_kind.items():
        of_kind = [f for f, k in zip(framework, kinds_off, strict=True) if k == kind]
        step_ms = f"{statistics.median(of_kind):>10.1f}" if of_kind else f"{'-':>10}"
        print(f"  {kind:<34} {raw_ms:>11.1f} {guarded_ms:>10.1f} {step_ms}")
    print(f"{'of an action: what the guard adds (guarded - raw call)':<58} {guard_ms:>10.1f}")
    if framework:
        framework_ms = statistics.median(framework)
        label = "a step minus its action as one raw code call (framework)"
        print(f"{label:<58} {framework_ms:>10.1f}")
    print(f"{'a new document: the guard runtime put there (first call)':<58} {install_ms:>10.1f}")
    print(f"{'of an observation: what the settle wait adds':<58} {settle_ms:>10.1f}")
    tokens_median = statistics.median(prompt_tokens)
    prefix_median = statistics.median(prefix_shares)
    summary = []
    if "off" in figures:
        median, p90 = figures["off"]
        print(f"step / raw CDP = {median / raw:.0f}x; step / MCP call = {median / mcp_ms:.1f}x")
        summary.append(f"step_median_ms={median:.1f} step_p90_ms={p90:.1f}")
    print(
        f"prompt per step: median {tokens_median:.0f} o200k tokens (messages only; tool schemas excluded), "
        f"stable prefix {prefix_median:.1%} (the start of the previous step's prompt, unchanged)"
    )
    print(f"{'tool schemas sent with every model call':<52} {'o200k tok':>10}")
    print(f"{'built-in tools':<52} {schemas.builtin:>10,}")
    for name, tokens in schemas.servers.items():
        label = f"+ {name} ({tool_counts[name]} tools)"
        print(f"{label:<52} {tokens:>10,}")
    print(f"{'built-in + the two test servers':<52} {schemas.total:>10,}")
    summary.append(f"mcp_call_ms={mcp_ms:.1f} raw_cdp_ms={raw:.2f}")
    if "off" in figures:
        summary.append(f"overhead_ratio={figures['off'][0] / raw:.0f}")
    summary.append(f"prompt_tokens_median={tokens_median:.0f} prompt_prefix_share={prefix_median:.3f}")
    if "human" in figures:
        median, p90 = figures["human"]
        summary.append(f"step_median_ms_human={median:.1f} step_p90_ms_human={p90:.1f}")
    summary.append(f"tool_schema_tokens={schemas.builtin} tool_schema_tokens_servers={schemas.total}")
    summary += [f"{name}_ms={ms:.1f}" for name, ms in shares.items()]
    summary.append(f"guard_ms={guard_ms:.1f} settle_ms={settle_ms:.1f} runtime_install_ms={install_ms:.1f}")
    if framework:
        summary.append(f"framework_median_ms={framework_ms:.1f}")
    print(" ".join(summary))


if __name__ == "__main__":
    asyncio.run(main())
