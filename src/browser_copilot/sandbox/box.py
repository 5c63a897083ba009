"""The box the model's code runs in, inside the MCP server's Node process (F45).

`@playwright/mcp` runs each code call in a fresh `vm` context whose globals are objects of Node's main
realm: any of them leads to the main realm's `Function`, hence `process`. So the model's code never
runs there. Once per server, an install call loads Hardened JavaScript (npm `ses`, pinned in
package.json) into a realm of its own, `lockdown()`s it (its intrinsics frozen) and leaves the box on
the browser context object: `facade.js`, the browser API the code gets. Each call then hands the box
the real page and the model's *source*, which it evaluates in a fresh `Compartment` whose only globals
are the façade's `page` and `el`, the call's timers, Date and Math. Everything else is absent.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from browser_copilot.errors import McpStartError
from browser_copilot.scripts import script_source

SES_FILE = Path("node_modules") / "ses" / "dist" / "ses.umd.min.js"

# `errorTrapping`/`unhandledRejectionTrapping`: the realm has no `process` to hook, and the MCP server
# keeps its own handlers. Error stacks stay hidden from the code (`errorTaming` safe, the default).
_LOCKDOWN = (
    "lockdown({ errorTrapping: 'none', unhandledRejectionTrapping: 'none', consoleTaming: 'unsafe',"
    " stackFiltering: 'concise' });"
)
_CALL_GLOBALS = ("page", "__end__", "__fn__")
"""The code tool's own names in its per-call context (not Node's, which the install call removes)."""


@cache
def ses_source(root: Path) -> str:
    """The pinned `ses` bundle (it defines `lockdown`, `harden` and `Compartment` on its realm)."""
    path = root / SES_FILE
    try:
        return path.read_text("utf-8")
    except OSError:
        raise McpStartError(
            f"Hardened JavaScript (npm `ses`) is not installed at {path}. Fix: run `npm ci` in {root}, "
            "which installs the version pinned in package.json."
        ) from None


def facade_source() -> str:
    return script_source("browser_copilot.sandbox", "facade.js")


def box_install_lines(root: Path) -> str:
    """Statements for the install call (the real `page` in scope, `c` its context): lock this call's
    realm down and leave the box on the context as `c.__bcBox`. Node's globals that the code tool copied
    into this realm go first (lockdown checks the realm's globals as its own intrinsics); the box keeps
    only Node's timers, for the calls' own."""
    return (
        "  const __host = { setTimeout, clearTimeout, setInterval, clearInterval };\n"
        "  for (const k of Object.getOwnPropertyNames(globalThis)) {\n"
        "    const v = globalThis[k];\n"
        f"    if (!{list(_CALL_GLOBALS)!r}.includes(k) && (typeof v === 'object' || typeof v === 'function')"
        " && v !== null && !(v instanceof Object)) delete globalThis[k];\n"
        "  }\n"
        f"{ses_source(root)}\n"
        f"  {_LOCKDOWN}\n"
        f"  c.__bcBox = ({facade_source()})(__host, harden, Compartment);\n"
    )
