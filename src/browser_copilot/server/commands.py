"""The web chat's own commands, answered at once to the tab that asked (no run starts, also while one is
active): `/status`, `/plan`, `/tabs` and `/help`, as the terminal has them (`/tools`, `/memory` and
`/forget` are in `tools.py` and `memory.py`). Each answer is an `agent_message` carrying `command`, in
Markdown; it goes through the redaction like every outgoing message.

`browser_status` is also the page's status line (`GET /api/status`): the model, the browser (and
whether it has a window), the browser tool's confinement."""

from __future__ import annotations

from typing import Any

from browser_copilot.sandbox.cdp import CdpError
from browser_copilot.server.hub import VERSION
from browser_copilot.server.sessions import Session, SessionManager

COMMANDS = (
    "/yes",
    "/no",
    "/chat",
    "/exit",
    "/status",
    "/plan",
    "/tabs",
    "/tools",
    "/memory",
    "/forget",
    "/help",
)
HELP = """**Commands** (type them here, or use the buttons above the chat):

- `/status` — this session: state, steps, tokens, errors; the browser and the model
- `/plan` — the working state: goal, plan with progress, facts found
- `/tabs` — the browser's tabs, and which one the agent works in
- `/tools` — the tools the agent can use (extra MCP servers: read-only or asks first)
- `/memory` — what the agent remembers about you; `/forget N` removes one (`/forget all`)
- `/yes` / `/no` — answer a confirmation (or use its buttons: only the tab you asked from can allow)
- `/chat` / `/exit` — chat mode (every message goes to the agent, the default here) or command mode
- `/help` — this list

Anything else goes to the agent, and answers its question or a hand-over ("done").
**Stop** cancels a run: the browser and the session stay, and the next message goes on with the same goal.
The **Browser** panel shows the agent's tab live; when the agent hands over (a sign-in, a captcha) or has
finished, click and type in the picture to act in that page yourself."""

STATE_WORDS = {
    "running": "running",
    "idle": "idle",
    "waiting_user": "waiting for you",
    "error": "stopped on an error",
}
WAITING_WORDS = {
    "confirm": "your confirmation of an action",
    "manual": "you to act in the browser (a hand-over), then “done”",
    "question": "your answer to its question",
}


def reply(command: str, text: str) -> dict[str, Any]:
    return {
        "v": VERSION,
        "kind": "agent_message",
        "text": text,
        "stop_reason": "answered",
        "command": command,
    }


async def browser_status(manager: SessionManager) -> dict[str, Any]:
    """The browser, the browser tool and the model, for the page's status line and `/status`."""
    browser = manager.browser
    endpoint, spec = browser.endpoint, browser.spec
    headless = await manager.headless()
    return {
        "model": manager.model,
        "browser": {
            "url": endpoint.url if endpoint else "",
            "how": endpoint.how if endpoint else "",
            "name": endpoint.browser if endpoint else "",
            "headless": headless,
            "connected": browser.mcp is not None,
        },
        "mcp": (
            {
                "version": spec.version,
                "confinement": spec.confinement.level,
                "label": spec.confinement.label,
                "restarts": dict(browser.restarts),
            }
            if spec
            else None
        ),
    }


async def status_reply(manager: SessionManager, s: Session) -> dict[str, Any]:
    details = await manager.detail(s)
    info = await browser_status(manager)
    metrics = s.metrics
    usage = details["usage"]
    pending = details["pending"]
    state = STATE_WORDS.get(str(details["state"]), str(details["state"]))
    if s in manager.queue:
        state += f", waiting for the browser (place {manager.queue.index(s) + 1} in the queue)"
    lines = [
        f"**Session** `{s.id}` — {state} ({details['mode']} mode)",
        f"**Goal** {details['goal'] or '(none yet)'}",
        f"**Waiting for** {WAITING_WORDS.get(str(pending['pending_kind']), 'you') if pending else 'nothing'}",
        f"**Tokens** {usage['prompt_tokens']:,} prompt + {usage['completion_tokens']:,} completion "
        f"({usage['prompt_tokens'] + usage['completion_tokens']:,} in all, this session)",
        f"**Since the server started** {_count(metrics.requests, 'request')}, "
        f"{_count(metrics.session.steps, 'browser step')}, errors: "
        + (", ".join(f"{k} {v}" for k, v in metrics.errors.items()) or "none"),
    ]
    lines.append(f"**Browser** {_browser_line(info['browser'])}")
    mcp = info["mcp"]
    if mcp:
        restarts = ", ".join(f"{k} {v}" for k, v in mcp["restarts"].items() if v) or "none"
        lines.append(
            f"**Browser tool** @playwright/mcp {mcp['version']}, confinement {mcp['confinement']} "
            f"({mcp['label']}), restarts: {restarts}"
        )
    lines.append(f"**Model** {info['model'] or 'not configured'}")
    return reply("/status", "\n".join(f"- {line}" for line in lines))


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _browser_line(browser: dict[str, Any]) -> str:
    how = {"configured": "attached", "devtools-active-port": "attached", "launched": "launched by the app"}
    name = browser["name"] or "a Chromium browser"
    where = f"{name} at {browser['url']}, {how.get(browser['how'], browser['how'])}"
    if browser["headless"]:
        return where + "; **no window** (headless): use the Browser panel to see and act in its page"
    return where + ("; with a window" if browser["headless"] is False else "")


async def plan_reply(manager: SessionManager, s: Session) -> dict[str, Any]:
    values = await s.runner.values()
    plan = [str(p) for p in values.get("plan") or []]
    progress = values.get("progress") or {}
    done, blocked = set(progress.get("done") or []), set(progress.get("blocked") or [])
    current = progress.get("current")
    lines = [f"**Goal** {values.get('current_goal') or '(none yet)'}", ""]
    for n, step in enumerate(plan, start=1):
        mark = "✓ done" if n in done else "✗ blocked" if n in blocked else "· to do"
        mark = "▸ now" if n == current and n not in done | blocked else mark
        lines.append(f"{n}. {step} — {mark}")
    if not plan:
        lines.append("No plan yet: the agent writes one when a task has several steps.")
    facts = values.get("facts") or []
    if facts:
        lines += ["", "**Facts**"]
        lines += [f"- {f.get('fact', '')} ({f.get('source', '')})" for f in facts if isinstance(f, dict)]
    return reply("/plan", "\n".join(lines))


async def tabs_reply(manager: SessionManager, s: Session, own: set[str]) -> dict[str, Any]:
    """The tabs, marking this session's, other sessions', those the app opened and the server's page
    (`own`: the server's origins)."""
    try:
        tabs = await manager.live.targets()
    except CdpError as exc:
        return reply("/tabs", f"The browser's tabs cannot be read now: {exc}")
    agent = await manager.live_target(s)
    lines = []
    for n, tab in enumerate(tabs, start=1):
        notes = []
        if tab.id == agent:
            notes.append("**this session's tab**")
        elif any(tab.id == other.target for other in manager.sessions.values()):
            notes.append("another session's tab")
        if tab.id in s.opened:
            notes.append("opened by the app")
        if any(tab.url.startswith(origin + "/") for origin in own):
            notes.append("this page")
        title = tab.title or "(no title)"
        lines.append(f"{n}. {title} — {tab.url}" + (f" ({', '.join(notes)})" if notes else ""))
    return reply("/tabs", "\n".join(lines) or "No tabs are open.")


def help_reply() -> dict[str, Any]:
    return reply("/help", HELP)
