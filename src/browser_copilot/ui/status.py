"""`/status`: the session, what its run counted, the browser and the model.

The counts, rates, times and errors are the session's `Metrics`, the sink the end-of-run line reads too."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from browser_copilot.agent.metrics import Metrics
from browser_copilot.plain_steps import plural
from browser_copilot.ui.render import show

if TYPE_CHECKING:  # annotations only: the chat's prompt comes before the MCP client loads
    from browser_copilot.browser.session import BrowserSession


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
    per_step = metrics.median_step_seconds
    rate = metrics.success_rate
    rows = [
        ("session", f"{session} ({mode} mode)"),
        ("goal", str(values.get("current_goal") or "-")),
        ("waiting", str(values.get("pending_kind") or "none")),
        ("this run", metrics.run.describe() if metrics.runs else "none yet"),
        ("all runs", f"{plural(metrics.runs, 'run')}: {metrics.session.describe()}"),
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
    show(console, table)
