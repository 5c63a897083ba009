"""The box the model's code runs in, inside the MCP server's Node process (F45).

`@playwright/mcp` runs each code call in a fresh `vm` context whose globals are objects of Node's main
realm: any of them leads to the main realm's `Function`, hence `process`. So the model's code never
runs there. Once per server, an install call loads Hardened JavaScript (npm `ses`, pinned in
package.json) into a realm of its own, `lockdown()`s it (its intrinsics frozen) and leaves the box
(`membrane.js`) on the browser context object. Each call then hands the box the real page and the
model's *source*, which the box evaluates in a fresh `Compartment` whose only globals are the
membrane's page, `el`, the box's own timers and the exposed globals of `globals.json`, wrapped or
refused. See membrane.js for what crosses and how.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from browser_copilot.errors import McpStartError
from browser_copilot.scripts import script_source

SES_FILE = Path("node_modules") / "ses" / "dist" / "ses.umd.min.js"

# `errorTrapping`/`unhandledRejectionTrapping`: the realm has no `process` to hook, and the MCP server
# keeps its own handlers. Error stacks stay hidden from the code (`errorTaming` safe, the default).
_LOCKDOWN = (
    "lockdown({ errorTrapping: 'none', unhandledRejectionTrapping: 'none', consoleTaming: 'unsafe',"
    " stackFiltering: 'concise' });"
)


MODEL_CODE_URL = "browser-copilot-model-code.js"
"""The `//# sourceURL` the model's page code carries (membrane.js): in a request's initiator stack it
says the model's code made the request (sandbox/network.py)."""


@cache
def globals_policy() -> dict[str, Any]:
    """`globals.json`: what the code gets for each global of the code tool's context."""
    data: dict[str, Any] = json.loads(
        resources.files("browser_copilot.sandbox").joinpath("globals.json").read_text("utf-8")
    )
    return data


def known_globals() -> set[str]:
    policy = globals_policy()
    return {*policy["wrap"], *policy["timers"], *policy["refuse"], *policy["internal"]}


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


def membrane_source() -> str:
    return script_source("browser_copilot.sandbox", "membrane.js")


def box_install_lines(root: Path) -> str:
    """Statements for the install call (the real `page` in scope, `c` its context): lock this call's
    realm down and leave the box on the context as `c.__bcBox`."""
    policy = globals_policy()
    return (
        "  const __host = { setTimeout, clearTimeout, setInterval, clearInterval,"
        " setImmediate, clearImmediate };\n"
        f"  Object.assign(__host, ({script_source('browser_copilot.sandbox', 'host.js')})(setTimeout));\n"
        # lockdown() checks this realm's globals as its own intrinsics: Node's (TextEncoder...) go first.
        f"  for (const k of Object.keys({exposed_globals_js()})) delete globalThis[k];\n"
        f"{ses_source(root)}\n"
        f"  {_LOCKDOWN}\n"
        f"  c.__bcBox = ({membrane_source()})(__host, "
        f"{json.dumps({'wrap': policy['wrap'], 'refuse': policy['refuse'], 'sourceTag': MODEL_CODE_URL})},"
        " harden, Compartment);\n"
    )


@cache
def exposed_globals_js() -> str:
    """An expression (in the code tool's per-call realm) for the globals the context got from Node's
    main realm: every own property of `globalThis` whose value is not of this realm."""
    internal = json.dumps(globals_policy()["internal"])
    return (
        "Object.fromEntries(Object.getOwnPropertyNames(globalThis)"
        f".filter((k) => !{internal}.includes(k))"
        ".map((k) => [k, globalThis[k]])"
        ".filter(([, v]) => (typeof v === 'object' || typeof v === 'function') && v !== null"
        " && !(v instanceof Object)))"
    )
