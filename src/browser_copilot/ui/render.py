"""Rendering the agent's events, cards and outcomes (F53). The UI renders; it decides nothing.

Every function takes a `Console`, so tests render into `Console(file=StringIO(), width=...)`."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.live import Live
from rich.markdown import Markdown
from rich.markup import escape
from rich.padding import Padding
from rich.panel import Panel
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from browser_copilot.events import Event
from browser_copilot.plain_steps import Narrator, one_line, plural, shorten
from browser_copilot.safety.redaction import redact_data

if TYPE_CHECKING:  # annotations only: the chat's prompt comes before LangGraph and the MCP client load
    from browser_copilot.agent.metrics import RunCount
    from browser_copilot.agent.turns import TurnOutcome

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
        text = json.dumps(args, ensure_ascii=False, default=str)
    return shorten(one_line(text).strip("{} "), width)


def show(console: Console, renderable: Any) -> None:
    """Print a panel, table or Markdown wrapped at word boundaries to the console's width (the app's
    console soft-wraps plain lines, which would crop these)."""
    console.print(renderable, soft_wrap=False)


def _hanging(console: Console, prefix: str, text: str, style: str) -> None:
    """`prefix` then `text` wrapped at words, continuation lines under the text (not under the prefix)."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column()
    grid.add_row(Text.from_markup(prefix), Text(text, style=style))
    show(console, grid)


MARKS = {
    "done": "[ok]✓[/ok]",
    "failed": "[fail]✗[/fail]",
    "held": "[warn]⚠[/warn]",
    "unsure": "[warn]?[/warn]",
    "refused": "[fail]✗[/fail]",
    "allowed": "[ok]✓[/ok]",
    "declined": "[fail]✗[/fail]",
    "judged_safe": "[ok]✓[/ok]",
    "judged_risky": "[warn]⚠[/warn]",
}
"""The mark of each outcome (`plain_steps`): a step the judge let through is done, not refused."""


@dataclass
class StepRecord:
    """One step of the last run, for `/code N`: its sentence, its code (or arguments) and its result."""

    number: str
    summary: str
    code: str
    result: str = ""
    outcome: str = ""


def _quiet(text: str) -> str:
    """'Clicking “Next”' -> 'clicking “Next”' (for the status line)."""
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


class EventPrinter:
    """An event sink: one line per step in plain words ("  3 ✓ Clicked “Place order”"), printed when the
    step has ended; while the agent works, a live region at the bottom with the status line (what it
    does now, in words, the step count and the plan's progress) and the model's answer as it streams
    (F62). The region is transient: when the turn ends, `render_outcome` prints the final answer.

    The sentences come in the events (`summary`, from `plain_steps`); with `show_code` each step is
    followed by its code and result text (the terminal's `/code`)."""

    def __init__(self, console: Console, *, limit: int = 10, show_code: bool = False) -> None:
        self.console = console
        self.limit = limit
        self.show_code = show_code
        self.step = 0
        self.activity = "starting"
        """What the agent does now, in words (never a node's name)."""
        self.started = time.monotonic()
        self.streamed = ""
        """The text of the reply streaming now (kept after a cancel, so it can be shown)."""
        self.plan: list[str] = []
        self.progress: dict[str, Any] = {}
        self.steps: list[StepRecord] = []
        """The steps of the current (or last) run."""
        self._pending: StepRecord | None = None
        self._url: str | None = None
        self._dialog = False
        self._held = False
        self._narrator = Narrator()  # only for events that arrive without a sentence
        self._live: Live | None = None
        self._spinner = Spinner("dots")

    def start(self, started: float, values: dict[str, Any] | None = None) -> None:
        """A new turn; `values`: the session's state, for the plan already made."""
        self.started = started
        self.step = 0
        self.activity = "starting"
        self.streamed = ""
        self.steps = []
        self._pending = None
        self._held = False
        if values is not None:
            self.plan = [one_line(p) for p in values.get("plan") or []]
            self.progress = dict(values.get("progress") or {})

    # ----- the live region --------------------------------------------------------------------

    def plan_position(self) -> str:
        """'plan 2/4' while a plan exists (the item being worked on), else ''."""
        if not self.plan:
            return ""
        done = self.progress.get("done") or []
        if len(done) >= len(self.plan):
            return f"plan {len(self.plan)}/{len(self.plan)} done"
        current = int(self.progress.get("current") or 1)
        return f"plan {min(max(current, 1), len(self.plan))}/{len(self.plan)}"

    def status_text(self) -> str:
        elapsed = time.monotonic() - self.started
        tail = [f"step {self.step}/{self.limit}", self.plan_position(), f"{elapsed:.0f}s"]
        rest = " · ".join(t for t in tail if t)
        room = max(12, self.console.width - len(rest) - 6)
        return f"[muted]{escape(shorten(self.activity, room))} · {rest}[/muted]"

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

    # ----- lines ------------------------------------------------------------------------------

    def _line(self, prefix: str, text: str, style: str = "") -> None:
        """One line: `prefix` (markup, 6 cells) and `text` cut at a word to fit the console."""
        room = max(20, self.console.width - 8)
        shown = escape(shorten(text, room))
        self.console.print(f"{prefix} [{style}]{shown}[/{style}]" if style else f"{prefix} {shown}")

    def _stream(self, data: dict[str, Any]) -> None:
        self.activity = "writing"  # the model is writing (node events come when a node has finished)
        self.streamed = str(data.get("text", ""))
        if data.get("done") and data.get("tool_calls"):
            # The model wrote a note on its way to a tool call: keep it as a step line, not as the answer.
            note = one_line(self.streamed)
            if note:
                self._line("    [muted]…[/muted]", note, "muted")
            self.streamed = ""
            self.activity = "checking the action"

    def _call(self, data: dict[str, Any], summary: str) -> None:
        self.streamed = ""
        counted = bool(data.get("counted", True))
        if counted:
            self.step = int(data.get("step", self.step + 1))
        args = data.get("args") if isinstance(data.get("args"), dict) else {}
        code = str(args.get("code") or "") if args else ""
        shown = code or (_preview(args, 400) if args else "")
        number = f"{self.step:>3}" if counted else "  ·"
        self._pending = StepRecord(number, summary, shown)
        self.activity = _quiet(summary)

    def _result(self, data: dict[str, Any], summary: str) -> None:
        tool = str(data.get("tool") or "")
        outcome = str(data.get("outcome") or ("done" if data.get("ok", True) else "failed"))
        record = self._pending or StepRecord("  ·", summary, "")
        self._pending = None
        record.summary, record.result, record.outcome = summary, one_line(data.get("result") or ""), outcome
        self.activity = "reading the page" if record.number.strip() != "·" else "thinking"
        if tool == "update_working_state" and outcome == "done":
            return  # the plan's own line says what changed
        self.steps.append(record)
        self._held = outcome == "held"
        self._line(f"{record.number} {MARKS.get(outcome, MARKS['done'])}", summary)
        if self.show_code:
            self._code(record)

    def _code(self, record: StepRecord) -> None:
        if record.code:
            lines = record.code.strip().splitlines()
            body = "\n".join(lines[:40]) + ("\n…" if len(lines) > 40 else "")
            show(self.console, Padding(Text(body, style="muted"), (0, 0, 0, 8)))
        if record.result:
            show(self.console, Padding(Text(f"→ {shorten(record.result, 600)}", style="muted"), (0, 0, 0, 8)))

    def interrupted(self) -> None:
        """The turn was cancelled: say which step was under way."""
        record, self._pending = self._pending, None
        if record is not None:
            self._line(f"{record.number} [fail]✗[/fail]", f"Cancelled while {_quiet(record.summary)}")

    def show_step(self, number: int) -> bool:
        """`/code N`: step N of the last run with its code and result; False when there is none."""
        for record in self.steps:
            if record.number.strip() == str(number):
                self._line(f"{record.number} {MARKS.get(record.outcome, MARKS['done'])}", record.summary)
                self._code(record)
                return True
        return False

    def _observation(self, data: dict[str, Any], summary: str) -> None:
        url = str(data.get("url") or "")
        dialog = bool(data.get("dialog"))
        if url != self._url or (dialog and not self._dialog) or self.show_code:
            extra = f" ({data.get('elements')} elements, {data.get('ms')} ms)" if self.show_code else ""
            self._line("    [muted]·[/muted]", summary + extra, "muted")
        self._url, self._dialog = url, dialog
        self.activity = "thinking"

    def _plan(self, data: dict[str, Any], summary: str) -> None:
        plan = [one_line(p) for p in data.get("plan") or []]
        progress = dict(data.get("progress") or {})
        if plan != self.plan:
            render_plan(self.console, data, compact=True)
        elif progress != self.progress:
            self._line("    [notice]▸[/notice]", summary, "notice")
        self.plan, self.progress = plan, progress

    def __call__(self, event: Event) -> None:
        data = redact_data(event.data)
        kind = event.kind
        if "summary" not in data and kind not in ("answer_stream", "usage"):
            data = {**data, **self._narrator(kind, data)}
        summary = str(data.get("summary") or "")
        if kind == "answer_stream":
            self._stream(data)
        elif kind == "node":
            self.activity = summary or self.activity
        elif kind == "status":
            if data.get("state") == "waiting_user":
                self.activity = "waiting for you"
        elif kind == "tool_call":
            self._call(data, summary)
        elif kind == "tool_result":
            self._result(data, summary)
        elif kind == "observation":
            self._observation(data, summary)
        elif kind == "plan":
            self._plan(data, summary)
        elif kind == "policy_request":
            record, self._pending = self._pending, None
            if not self._held:  # a step held while it ran has said so already
                self._line(f"{record.number if record else '   '} [warn]⚠[/warn]", summary)
            self._held = False
            self.activity = "waiting for you"
        elif kind == "policy_result":
            self._line(f"    {MARKS.get(str(data.get('outcome')), '[muted]·[/muted]')}", summary)
        elif kind == "error":
            _hanging(self.console, "    [error]![/error]", shorten(summary, 600), "error")
        elif kind == "notice":
            _hanging(self.console, "    [notice]i[/notice]", summary, "notice")
        elif kind == "progress":
            self._line("    [muted]·[/muted]", summary, "muted")
        self._refresh()


def render_plan(console: Console, values: dict[str, Any], *, compact: bool = False) -> None:
    plan = values.get("plan") or []
    progress = values.get("progress") or {"current": 1, "done": [], "blocked": []}
    goal = values.get("current_goal")
    lines = [f"[bold]Goal[/bold] {escape(str(goal))}" if goal else "[muted]No goal yet.[/muted]"]
    for i, step in enumerate(plan, start=1):
        mark = (
            "[ok]✓[/ok]"
            if i in (progress.get("done") or [])
            else "[fail]✗[/fail]"
            if i in (progress.get("blocked") or [])
            else ("[notice]▸[/notice]" if i == progress.get("current") else " ")
        )
        lines.append(f" {mark} {i}. {escape(str(step))}")
    if not plan and goal:
        lines.append("[muted]No plan yet: the agent makes one as it starts.[/muted]")
    facts = values.get("facts") or []
    if facts and not compact:
        lines.append("[bold]Facts[/bold]")
        lines.extend(f" • {escape(f['fact'])} [muted]({escape(f['source'])})[/muted]" for f in facts)
    elif facts:
        lines.append(f"[muted]{plural(len(facts), 'fact')} recorded[/muted]")
    show(console, Panel("\n".join(lines), title="Plan", expand=False, border_style="muted"))


def confirmation_card(payload: dict[str, Any]) -> Panel:
    """The card of a pending confirmation: what the action commits, read from the page (`details`: the
    order's items, the address, the payment, the recipients, the row), fitted to the console's width
    with lines broken between words."""
    card = payload.get("card") or {}  # shown to its owner: values as typed (secrets are masked at the source)
    table = Table.grid(padding=(0, 1))
    table.add_column(style="muted", justify="right", no_wrap=True, max_width=14)
    table.add_column()
    first = (
        ("does", "happens"),
        ("action", "what"),
        ("site", "site"),
        ("page", "page"),
        ("amount", "amount"),
    )
    for label, key in first:
        if card.get(key):
            table.add_row(label, escape(str(card[key])))
    if card.get("count"):
        table.add_row("items", escape(str(card["count"])))
    for pair in card.get("details") or []:
        if isinstance(pair, list | tuple) and len(pair) == 2 and str(pair[1]).strip():
            table.add_row(escape(str(pair[0])), escape(str(pair[1])))
    for label, key in (("arguments", "arguments"), ("why", "reason")):  # arguments: an extra MCP tool's call
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


def render_outcome(
    console: Console, outcome: TurnOutcome, *, seconds: float | None = None, counts: RunCount | None = None
) -> None:
    """How a run ended, for the terminal's foreground and background runs alike: a card or a question,
    or the stop reason, the Unverified mark with its reasons, the answer; with `seconds`, the end-of-run
    line (from `counts`, the run's own, when given: the same numbers `/status` shows)."""
    payload = outcome.interrupt
    if payload is not None:
        kind = payload.get("kind")
        if kind == "confirm":
            show(console, confirmation_card(payload))
        elif kind == "manual":
            show(
                console,
                Panel(
                    f"{escape(str(payload.get('question', '')))}\n[muted]When you are done, "
                    "write it here (e.g. “done”, “готово”) and I will continue.[/muted]",
                    title="Your turn in the browser",
                    border_style="notice",
                    expand=False,
                ),
            )
        else:
            lines = [escape(str(payload.get("question", "")))]
            lines += [f"  {i}. {escape(str(o))}" for i, o in enumerate(payload.get("options") or [], start=1)]
            show(
                console, Panel("\n".join(lines), title="The agent asks", border_style="notice", expand=False)
            )
        return
    if outcome.stop_reason != "answered":
        console.print(f"[warn]({STOP_LABELS.get(outcome.stop_reason, outcome.stop_reason)})[/warn]")
    reasons = doubts(outcome)
    if reasons is not None:
        console.print("[unverified]Unverified:[/unverified] [warn]the app's checks doubt this answer[/warn]")
        for reason in reasons:
            console.print(f"[warn]  - {escape(reason)}[/warn]")
    show(console, Markdown(outcome.text or "(no answer)"))
    for what in counts.declined if counts is not None else ():
        console.print(f"[warn]You declined: {escape(what)}. It did not happen.[/warn]")
    if seconds is not None and counts is not None:
        console.print(f"[muted]{escape(counts.end_line(seconds))}[/muted]")
    elif seconds is not None:
        steps = int(outcome.values.get("tool_steps", 0) or 0)
        console.print(f"[muted]{plural(steps, 'step')}, {seconds:.1f}s[/muted]")


def render_help(console: Console, commands: Sequence[tuple[str, str]], notes: Sequence[str]) -> None:
    """The command list as two columns that fit the console: commands never broken, descriptions
    wrapped between words under their own column."""
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True, style="bold")
    table.add_column()
    for command, meaning in commands:
        table.add_row(escape(command), escape(meaning))
    show(console, Text("Commands (the prompt starts in command mode):", style="bold"))
    show(console, Padding(table, (0, 0, 0, 2)))
    for note in notes:
        show(console, Text(note, style="muted"))
