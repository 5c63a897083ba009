"""What the terminal says about a run is what the run did (issue 27): a `/bg` job's answer carries the
same Unverified mark and reasons as one in front, `/jobs N` shows the job's steps with their marks, and
`/status` counts what the run's end line counts. The chat in a real pseudo-terminal, a scripted
OpenAI-compatible server, a real Chromium and the real MCP server."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from browser_copilot.agent.metrics import Metrics
from browser_copilot.agent.turns import TurnOutcome
from browser_copilot.browser.launcher import LaunchedBrowser
from browser_copilot.events import Event
from browser_copilot.ui.render import render_outcome
from browser_copilot.ui.theme import make_console
from tests.support.app import spawn_chat
from tests.support.openai_server import ScriptedOpenAI, call, text
from tests.support.pages import PageServer
from tests.test_parallel import devtools_json
from tests.test_terminal import quit_app

MUG = "The blue mug costs €39."  # the shop says $12.00: €39 is on no page
FIGURES = "these figures were not found on any page: €39"
UNVERIFIED = r"Unverified:\S* the app's checks doubt this answer"  # styles may sit around the words
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
CALL_USAGE = (100, 10)
"""What the scripted server says each model call used (prompt, completion tokens)."""


@contextmanager
def windows_closed_after(endpoint: str) -> Iterator[None]:
    """A job's window stays after the app (the user's to look at): the shared browser keeps none."""
    before = {t["id"] for t in devtools_json(f"{endpoint}/json/list", "GET")}
    try:
        yield
    finally:
        for tab in devtools_json(f"{endpoint}/json/list", "GET"):
            if tab["type"] == "page" and tab["id"] not in before:
                devtools_json(f"{endpoint}/json/close/{tab['id']}", "GET")


def plain(output: str) -> str:
    """The terminal's output without its styles and cursor moves."""
    return ANSI.sub("", output).replace("\r", "")


def run_end_line(output: str) -> str:
    """The counts of the last end-of-run line in `output` ('2 steps, 4 model calls, …'), time left out."""
    lines = re.findall(r"\n(\d+ steps?), \d+\.\ds · ([^\n]+)", plain(output))
    assert lines, plain(output)
    steps, rest = lines[-1]
    return f"{steps}, {rest.strip()}"


def status_row(output: str, label: str) -> str:
    """The value of `/status`'s row `label`."""
    row = re.search(rf"\n{label}\s+([^\n]+)", plain(output))
    assert row is not None, plain(output)
    return row.group(1).strip()


def test_a_background_job_that_ends_unverified_shows_the_mark_and_reasons_and_jobs_n_its_steps(
    tmp_path: Path, external_browser: LaunchedBrowser, llm: ScriptedOpenAI, pages: PageServer
) -> None:
    llm.script(
        call(
            "browser_run_code",
            code="async (page) => { await page.getByRole('button', { name: 'Nowhere' })"
            ".click({ timeout: 300 }) }",
        ),
        call("browser_run_code", code=f"async (page) => {{ await page.goto('{pages.url('shop.html')}') }}"),
        text(MUG),
        text(MUG),  # said again after the app's check sent it back: an unverified answer
    )
    endpoint = external_browser.endpoint.url
    with windows_closed_after(endpoint):
        child = spawn_chat(tmp_path / "data", endpoint, llm.base_url)
        child.sendline("/bg What does the blue mug cost?")
        child.expect("Job 1 started")
        # The end, as a run in front ends: the mark, its reasons, the answer, the end line.
        child.expect("Job 1 done")
        child.expect(UNVERIFIED)
        child.expect(re.escape(f"  - {FIGURES}"))
        child.expect(re.escape(MUG))
        child.expect(r"2 steps, \d+\.\ds")
        child.sendline("/jobs")
        child.expect(r"done, unverified — The blue mug costs")
        child.sendline("/jobs 1")
        # Its steps in plain words with their marks, as they were shown live in front.
        child.expect(r"Job 1\S* What does the blue mug cost\?")
        child.expect(r"1 \S*✗\S* \S+")
        child.expect(r"2 \S*✓\S* Opened 127\.0\.0\.1:\d+/shop\.html")
        child.expect("Job 1 is in front now")
        child.expect(UNVERIFIED)
        child.expect(re.escape(f"  - {FIGURES}"))
        child.expect("› ")
        end_line = run_end_line(child.before)
        assert end_line.startswith(f"2 steps, {len(llm.requests)} model calls, "), end_line
        child.sendline("/status")  # the job in front: its run's counts
        child.expect("scripted-model")
        assert status_row(child.before, "this run") == end_line
        quit_app(child)


def test_status_counts_what_the_runs_end_line_counts(
    tmp_path: Path, external_browser: LaunchedBrowser, llm: ScriptedOpenAI, pages: PageServer
) -> None:
    llm.script(
        call("update_working_state", current_goal="Email Alice", plan=["Write it", "Send it"]),  # no step
        call("browser_run_code", code=f"async (page) => {{ await page.goto('{pages.url('mail.html')}') }}"),
        call(
            "browser_run_code",
            code="async (page) => { await page.getByLabel('To').fill('alice@example.test');"
            " await page.getByRole('button', { name: 'Send' }).click() }",
        ),
        call("update_working_state", progress={"current": 2, "done": [1, 2]}),
        text("Sent the message to Alice."),
    )
    child = spawn_chat(tmp_path / "data", external_browser.endpoint.url, llm.base_url)
    child.sendline("/ask Email Alice")
    child.expect("Confirm: send")
    child.expect("› ")
    child.sendline("/yes")
    child.expect("Sent the message to Alice.")
    child.expect("› ")
    end_line = run_end_line(child.before)
    calls = len(llm.requests)
    prompt, completion = CALL_USAGE[0] * calls, CALL_USAGE[1] * calls
    assert end_line == (
        f"2 steps, {calls} model calls, {prompt + completion} tokens ({prompt} prompt + {completion} "
        "completion), 1 allowed, none declined"
    )
    child.sendline("/status")
    child.expect("scripted-model")  # the last row
    assert status_row(child.before, "this run") == end_line
    assert status_row(child.before, "all runs") == f"1 run: {end_line}"
    quit_app(child)


def test_the_counts_are_the_runs_own_and_the_end_says_what_was_declined() -> None:
    counts = Metrics()
    for event in (
        Event("status", {"state": "running", "resumed": False}),
        Event("usage", {"prompt_tokens": 100, "completion_tokens": 10}),
        Event("tool_call", {"tool": "update_working_state", "step": 0, "counted": False}),
        Event("tool_call", {"tool": "browser_run_code", "step": 1, "counted": True}),
        Event("usage", {"prompt_tokens": 120, "completion_tokens": 12}),
        Event("policy_result", {"approved": False, "refused": "blocked by the policy"}),  # not the user's
        Event("status", {"state": "running", "resumed": True}),  # the /no: the same run goes on
        Event("policy_result", {"approved": False, "card": {"what": "the button “Delete”"}}),
        Event("final", {"stop_reason": "answered", "steps": 1}),
    ):
        counts(event)
    run = counts.run
    assert (run.steps, run.model_calls, run.prompt_tokens, run.completion_tokens) == (1, 2, 220, 22)
    assert (run.allowed, run.declined) == ([], ["the button “Delete”"])
    out = io.StringIO()
    render_outcome(
        make_console(out, width=200),
        TurnOutcome("answered", "Nothing was deleted.", None, {"tool_steps": 1}),
        seconds=2.0,
        counts=run,
    )
    shown = out.getvalue()
    assert "You declined: the button “Delete”. It did not happen." in shown
    assert (
        "1 step, 2.0s · 2 model calls, 242 tokens (220 prompt + 22 completion), none allowed, 1 declined"
        in shown
    )
    counts(Event("status", {"state": "running", "resumed": False}))  # a new request: a new run
    assert counts.run.steps == 0 and counts.runs == 2 and counts.session.declined == ["the button “Delete”"]
