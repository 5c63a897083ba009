"""The typed errors of Browser Copilot.

Three fates for errors (see AGENTS.md): a mistake the model can fix goes back to it as a tool error;
an infrastructure failure raises one of the exceptions below; a configuration problem raises
`ConfigError`, whose message names the setting and the fix.
"""

from __future__ import annotations


class CopilotError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigError(CopilotError):
    """A setting is missing or invalid. The message names the field and how to fix it."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


class BrowserError(CopilotError):
    """Base class of browser attach, launch and loss errors."""


class BrowserNotFound(BrowserError):
    """No browser answers and none can be launched."""


class BrowserLaunchError(BrowserError):
    """The app tried to launch a browser and it did not come up."""


class BrowserUnavailable(BrowserError):
    """The browser went away during the session and could not be brought back (yet)."""


class McpError(CopilotError):
    """Base class of errors of the @playwright/mcp server process."""


class McpStartError(McpError):
    """The MCP server could not be started or did not answer its handshake."""


class CodeToolMissing(McpError):
    """The MCP server offers neither `browser_run_code_unsafe` nor `browser_run_code`."""


class McpUnavailable(McpError):
    """The MCP server died and restarting it did not help."""


class NavigationError(CopilotError):
    """The agent's tab could not open a URL (bad URL, network error, refused by policy)."""


class StorageError(CopilotError):
    """The session store (the SQLite file or the PostgreSQL database of `DATABASE_URL`) cannot be used."""


class SessionBusy(CopilotError):
    """Another run of the same session holds its lock (in this process or another one)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(
            f"Session {session_id} is busy: another process is running it right now. "
            "Wait for that run to finish, or use another session."
        )


class ExtraServerUnavailable(CopilotError):
    """An extra MCP server (F60) is not running: it did not start, it died, or a call hung. The agent
    goes on without its tools; it is not a browser failure and never stops a run."""

    def __init__(self, reason: str, *, back: bool = False) -> None:
        self.reason = reason
        self.back = back
        """True when the server was restarted and its tools work again (the call itself was lost)."""
        super().__init__(reason)


class NetworkPolicyDown(BrowserError):
    """The app's own DevTools connection (the network policy, `sandbox.network`) is not connected: no
    code runs in the browser until it is (fail closed)."""
