"""Rendering the agent's events, cards and outcomes (F53). The UI renders; it decides nothing.

Every function takes a `Console`, so tests render into `Console(file=StringIO(), width=...)`."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.markdown import Markdown
from rich.markup import escape
from rich.panel import Panel
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from browser_copilot.agent.runner import TurnOutcome
from browser_copilot.agent.signals import step_summary
from browser_copilot.browser.session import BrowserSession
from browser_copilot.events import Event
from browser_copilot.metrics import Metrics
from browser_copilot.safety.redaction import redact_data

STOP_LABELS = {
    "answered": "answered",
    "step_limit": "stopped at the step limit",
    "loop_detected": "stopped: going in circles",
    "waiting_confirmation": "waiting for your /yes or /no",
    "waiting_user": "waiting for you",
    "blocked": "blocked",
    "error": "stopped by an error",
    "cancelled": "cancelled",
}


def _preview(args: dict[str, Any], width: int = 90) -> str:
    if "code" in args:
        text = str(args["code"])
        text = text.split("=>", 1)[1] if "=>" in text else text
    else:
        text = ", ".join(f"{k}={v!r}" for k, v in args.items())
    flat = " ".join(text.split()).strip("{} ")
    return flat if len(flat) <= width else flat[: width - 1] + "…"


class EventPrinter:
    """An event sink: one compact line per step; while the agent works, a live region at the bottom with
    the status line and the model's answer as it streams (F62). The region is transient: when the turn
    ends, `render_outcome` prints the final answer in its place."""

    def __init__(self, console: Console, *, limit: int = 10) -> None:
        self.console = console
        self.limit = limit
        self.step = 0
        self.node = "starting"
        self.started = time.monotonic()
        self.streamed = ""
        """The text of the reply streaming now (kept after a cancel, so it can be shown)."""
        self._live: Live | None = None
        self._spinner = Spinner("dots")

    def start(self, started: float) -> None:
        self.started = started
        self.step = 0
        self.node = "starting"
        self.streamed = ""

    def status_text(self) -> str:
        elapsed = time.monotonic() - self.started
        return f"[muted]{self.node} · step {self.step}/{self.limit} · {elapsed:.0f}s[/muted]"

    def __rich__(self) -> Group:
        """The live region: the streaming answer's last lines, then the status line."""
        self._spinner.update(text=Text.from_markup(self.status_text()))
        if not self.streamed:
            return Group(self._spinner)
        room = max(3, self.console.height - 4)
        lines = self.streamed.splitlines()
        tail = "\n".join(lines[-room:])
        return Group(Markdown(tail), self._spinner)

    @contextlib.contextmanager
    def live(self) -> Iterator[None]:
        with Live(self, console=self.console, transient=True, refresh_per_second=10) as live:
            self._live = live
            try:
                yield
            finally:
                self._live = None

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.refresh()

    def _stream(self, data: dict[str, Any]) -> None:
        self.node = "writing"  # the model is writing (node events come when a node has finished)
        self.streamed = str(data.get("text", ""))
        if data.get("done") and data.get("tool_calls"):
            # The model wrote a note on its way to a tool call: keep it as a step line, not as the answer.
            note = " ".join(self.streamed.split())
            if note:
                self.console.print(f"    [muted]… {escape(note[:200])}[/muted]")
            self.streamed = ""

    def __call__(self, event: Event) -> None:
        data = redact_data(event.data)
        kind = event.kind
        if kind == "answer_stream":
            self._stream(data)
        elif kind == "node":
            self.node = str(data.get("node", ""))
        elif kind == "tool_call":
            self.streamed = ""
            self.step = int(data.get("step", self.step + 1))
            tool = str(data["tool"])
            number = f"{self.step:>3}" if data.get("counted", True) else "  ·"
            room = max(30, self.console.width - len(tool) - 8)
            self.console.print(
                f"[muted]{number} →[/muted] [bold]{escape(tool)}[/bold] "
                f"[muted]{escape(_preview(data.get('args', {}), room))}[/muted]"
            )
        elif kind == "tool_result":
            mark = "[ok]✓[/ok]" if data.get("ok", True) else "[fail]✗[/fail]"
            shown = step_summary(str(data.get("summary", "")), 140)
            self.console.print(f"    {mark} [muted]{escape(shown)}[/muted]")
        elif kind == "observation":
            dialog = " · dialog open" if data.get("dialog") else ""
            self.console.print(
                f"    [muted]· {escape(str(data.get('title') or data.get('url')))} "
                f"({data.get('elements')} elements, {data.get('ms')} ms){dialog}[/muted]"
            )
        elif kind == "plan":
            render_plan(self.console, data, compact=True)
        elif kind == "policy_request":
            self.console.print("    [warn]⚠ needs your confirmation[/warn]")
        elif kind == "error":
            self.console.print(f"    [error]! {escape(str(data.get('message', '')))[:300]}[/error]")
        elif kind == "notice":
            self.console.print(f"    [notice]{escape(str(data.get('text', '')))}[/notice]")
        elif kind == "progress":
            self.console.print(
                f"    [muted]progress: {data.get('done')}/{data.get('total')} plan items, "
                f"{data.get('steps')}/{data.get('limit')} steps[/muted]"
            )
        self._refresh()


def render_plan(console: Console, values: dict[str, Any], *, compact: bool = False) -> None:
    plan = values.get("plan") or []
    progress = values.get("progress") or {"current": 1, "done": [], "blocked": []}
    lines = [f"[bold]Goal[/bold] {escape(str(values.get('current_goal') or '(none yet)'))}"]
    for i, step in enumerate(plan, start=1):
        mark = (
            "[ok]✓[/ok]"
            if i in progress["done"]
            else "[fail]✗[/fail]"
            if i in progress["blocked"]
            else ("[notice]▸[/notice]" if i == progress["current"] else " ")
        )
        lines.append(f" {mark} {i}. {escape(str(step))}")
    facts = values.get("facts") or []
    if facts and not compact:
        lines.append("[bold]Facts[/bold]")
        lines.extend(f" • {escape(f['fact'])} [muted]({escape(f['source'])})[/muted]" for f in facts)
    elif facts:
        lines.append(f"[muted]{len(facts)} {'fact' if len(facts) == 1 else 'facts'} recorded[/muted]")
    console.print(Panel("\n".join(lines), title="Plan", expand=False, border_style="muted"))


def confirmation_card(payload: dict[str, Any]) -> Panel:
    card = payload.get("card") or {}  # shown to its owner: values as typed (secrets are masked at the source)
    table = Table.grid(padding=(0, 1))
    table.add_column(style="muted", justify="right")
    table.add_column()
    for label, key in (
        ("does", "happens"),
        ("action", "what"),
        ("site", "site"),
        ("page", "page"),
        ("amount", "amount"),
        ("items", "count"),
        ("arguments", "arguments"),  # an extra MCP server's tool call (masked)
        ("why", "reason"),
    ):
        if card.get(key):
            table.add_row(label, escape(str(card[key])))
    if card.get("by") in ("judge", "cache"):
        table.add_row("checked", "the safety judge (a separate model call that saw only the page's facts)")
    elif card.get("by") == "fail-closed":
        table.add_row("checked", "the safety judge could not decide, so you are asked")
    for name, value in card.get("values") or []:
        table.add_row("typed", f"{escape(str(name))}: {escape(str(value))}")
    if card.get("code"):
        table.add_row("code", escape(_preview({"code": card["code"]}, 100)))
    body = Table.grid()
    body.add_row(f"[bold]{escape(str(payload.get('question', '')))}[/bold]")
    body.add_row(table)
    body.add_row("Answer [ok]/yes[/ok] to allow it once, or [fail]/no[/fail] to refuse.")
    return Panel(
        body,
        title=f"Confirm: {escape(str(card.get('category', 'action')))}",
        border_style="warn",
        expand=False,
    )


def doubts(outcome: TurnOutcome) -> list[str] | None:
    """Why the app's checks doubt an answer (the state's `verified` / `doubts`), or None when it is a
    verified answer or not an answer at all."""
    values = outcome.values
    if outcome.stop_reason != "answered" or outcome.interrupt is not None or values.get("verified", True):
        return None
    return [str(d) for d in values.get("doubts") or []] or ["the app's checks could not confirm it"]


def render_outcome(console: Console, outcome: TurnOutcome, *, seconds: float | None = None) -> None:
    payload = outcome.interrupt
    if payload is not None:
        kind = payload.get("kind")
        if kind == "confirm":
            console.print(confirmation_card(payload))
        elif kind == "manual":
            console.print(
                Panel(
                    f"{escape(str(payload.get('question', '')))}\n[muted]When you are done, "
                    "write it here (e.g. “done”, “готово”) and I will continue.[/muted]",
                    title="Your turn in the browser",
                    border_style="notice",
                    expand=False,
                )
            )
        else:
            lines = [escape(str(payload.get("question", "")))]
            lines += [f"  {i}. {escape(str(o))}" for i, o in enumerate(payload.get("options") or [], start=1)]
            console.print(
                Panel("\n".join(lines), title="The agent asks", border_style="notice", expand=False)
            )
        return
    if outcome.stop_reason != "answered":
        console.print(f"[warn]({STOP_LABELS.get(outcome.stop_reason, outcome.stop_reason)})[/warn]")
    reasons = doubts(outcome)
    if reasons is not None:
        console.print("[unverified]Unverified:[/unverified] [warn]the app's checks doubt this answer[/warn]")
        for reason in reasons:
            console.print(f"[warn]  - {escape(reason)}[/warn]")
    console.print(Markdown(outcome.text or "(no answer)"))
    if seconds is not None:
        steps = outcome.values.get("tool_steps", 0)
        console.print(f"[muted]{steps} steps, {seconds:.1f}s[/muted]")


def render_status(
    console: Console,
    *,
    session: str,
    mode: str,
    values: dict[str, Any],
    metrics: Metrics,
    browser: BrowserSession,
    model: str,
) -> None:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="muted")
    table.add_column()
    endpoint, spec = browser.endpoint, browser.spec
    current = metrics.current
    summary = metrics.summary()
    per_step = metrics.median_step_seconds
    rate = metrics.success_rate
    rows = [
        ("session", f"{session} ({mode} mode)"),
        ("goal", str(values.get("current_goal") or "-")),
        ("waiting", str(values.get("pending_kind") or "none")),
        (
            "this request",
            f"{current.steps} steps, {current.prompt_tokens} prompt + "
            f"{current.completion_tokens} completion tokens",
        ),
        (
            "session",
            f"{summary['requests']} requests, {summary['steps']} steps, {metrics.prompt_tokens} prompt + "
            f"{metrics.completion_tokens} completion tokens",
        ),
        ("success rate", f"{rate:.0%}" if rate is not None else "-"),
        ("time per step", f"{per_step:.2f}s median" if per_step is not None else "-"),
        ("errors", ", ".join(f"{k} {v}" for k, v in metrics.errors.items()) or "none"),
        ("loop triggers", str(metrics.loop_triggers)),
        ("browser", f"{endpoint.url if endpoint else '-'}" + (f" ({endpoint.how})" if endpoint else "")),
        (
            "mcp",
            f"@playwright/mcp {spec.version}, confinement {spec.confinement.level} "
            f"({spec.confinement.label}), restarts {browser.restarts}"
            if spec
            else "-",
        ),
        ("not confined", spec.confinement.gaps if spec else "-"),
        ("model", model),
    ]
    for label, value in rows:
        table.add_row(label, escape(value))
    console.print(table)
