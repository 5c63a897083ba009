"""`/tools`: the tools the model can call now, the built-in ones and each extra MCP server's (F60)."""

from __future__ import annotations

import io

from rich.console import Console
from rich.markup import escape

from browser_copilot.agent.tools import TOOLS
from browser_copilot.extras.budget import TOOL_SCHEMA_BUDGET, SchemaTokens
from browser_copilot.extras.servers import ExtraServers, listing
from browser_copilot.ui.theme import make_console


def render_tools(console: Console, extras: ExtraServers, tokens: SchemaTokens | None = None) -> None:
    builtin = ", ".join(tool.__name__ for tool in TOOLS)
    console.print(f"[bold]Built-in[/bold] ({len(TOOLS)}): {escape(builtin)}", highlight=False)
    servers = listing(extras)
    if not servers:
        console.print("[muted]No extra MCP servers (add them in MCP_SERVERS_FILE; see the README).[/muted]")
    for server in servers:
        where = escape(server.transport)
        if server.state != "ready":
            why = f": {escape(server.reason)}" if server.reason else ""
            state = f"[fail]{server.state}[/fail]{why}"
            console.print(
                f"[bold]{escape(server.name)}[/bold] {state} [muted]({where})[/muted]", highlight=False
            )
            continue
        read_only = sum(t.read_only for t in server.tools)
        console.print(
            f"[bold]{escape(server.name)}[/bold] [ok]ready[/ok], {len(server.tools)} tools, "
            f"{read_only} read-only [muted]({where})[/muted]",
            highlight=False,
        )
        for tool in server.tools:
            mark = "[ok]read-only [/ok]" if tool.read_only else "[warn]asks first[/warn]"
            hint = f" [muted](server says: {tool.hint})[/muted]" if tool.hint and not tool.read_only else ""
            console.print(f"  {mark} {escape(tool.qualified)}{hint}", highlight=False)
    if tokens is not None:
        over = tokens.over_budget
        note = f" — above the {TOOL_SCHEMA_BUDGET:,}-token budget" if over else ""
        style = "warn" if over else "muted"
        console.print(f"[{style}]tool schemas: {escape(tokens.line())}{note}[/{style}]", highlight=False)


def tools_text(extras: ExtraServers, tokens: SchemaTokens | None = None, *, width: int = 100) -> str:
    """The same listing as plain text (the web chat)."""
    out = io.StringIO()
    render_tools(make_console(out, width=width), extras, tokens)
    return out.getvalue().rstrip()
