"""Rendering the agent's events and outcomes. The UI renders; it decides nothing."""

from __future__ import annotations

from rich.console import Console
from rich.markdown import Markdown
from rich.markup import escape
from rich.panel import Panel

from browser_copilot.agent.runner import TurnOutcome
from browser_copilot.events import Event
from browser_copilot.safety.redaction import redact_data

_REASONS = {
    "step_limit": "stopped at the step limit",
    "loop_detected": "stopped: going in circles",
    "error": "stopped by an error",
    "blocked": "blocked",
    "cancelled": "cancelled",
}


def _preview(args: dict[str, object]) -> str:
    code = str(args.get("code", "")) if "code" in args else ", ".join(f"{k}={v!r}" for k, v in args.items())
    first = " ".join(code.split())
    return first if len(first) <= 100 else first[:99] + "…"


class EventPrinter:
    """An event sink that prints one compact line per step."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def __call__(self, event: Event) -> None:
        data = redact_data(event.data)
        if event.kind == "tool_call":
            self.console.print(f"[muted]  → {data['tool']}[/muted] {escape(_preview(data.get('args', {})))}")
        elif event.kind == "tool_result" and not data.get("ok", True):
            self.console.print(f"[warn]    ✗ {escape(str(data.get('summary', ''))[:160])}[/warn]")
        elif event.kind == "observation":
            self.console.print(
                f"[muted]  · {escape(str(data.get('title') or data.get('url')))} "
                f"({data.get('elements')} elements, {data.get('ms')} ms)[/muted]"
            )
        elif event.kind == "error":
            self.console.print(f"[error]  ! {escape(str(data.get('message', '')))}[/error]")
        elif event.kind == "notice":
            self.console.print(f"[notice]  {escape(str(data.get('text', '')))}[/notice]")


def render_outcome(console: Console, outcome: TurnOutcome) -> None:
    if outcome.interrupt is not None:
        payload = outcome.interrupt
        card = payload.get("card") or {}
        if payload.get("kind") == "confirm":
            lines = [f"[bold]{escape(payload.get('question', ''))}[/bold]"]
            for key in ("what", "site", "page", "reason"):
                if card.get(key):
                    lines.append(f"{key:>6}: {escape(str(card[key]))}")
            lines.append("Answer [ok]/yes[/ok] to allow it once, or [fail]/no[/fail] to refuse.")
            console.print(Panel("\n".join(lines), title="Confirmation needed", border_style="warn"))
        else:
            lines = [escape(str(payload.get("question", "")))]
            for i, option in enumerate(payload.get("options") or [], start=1):
                lines.append(f"  {i}. {escape(str(option))}")
            console.print(Panel("\n".join(lines), title="The agent asks", border_style="notice"))
        return
    if outcome.stop_reason != "answered":
        console.print(f"[warn]({_REASONS.get(outcome.stop_reason, outcome.stop_reason)})[/warn]")
    console.print(Markdown(outcome.text or "(no answer)"))
