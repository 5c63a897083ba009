"""`BrowserSession`: the user's browser, attached through one persistent @playwright/mcp session.

Attach order (F10-F12): the configured `CDP_ENDPOINT`; a `DevToolsActivePort` file of an installed
Chrome/Edge/Chromium profile (the Chrome 144+ toggle) or of the app's own profile; else, if allowed,
launch the installed browser with the app's dedicated profile. A browser the app did not launch is
never closed or killed.

Recovery: the browser gone (connection refused, target closed) -> relaunch it if the app launched it,
else look for it again and report `BrowserUnavailable` while it is not back; the MCP server process
gone -> restart the session once and say so. The model's code is only re-sent when it cannot have
run (the connection was refused before it started).

The network policy (`sandbox.network.NetworkGuard`, the app's own DevTools connection) starts after the
MCP server and covers every code call; while it is not connected no code runs (fail closed).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from browser_copilot.browser import endpoints
from browser_copilot.browser.calls import REVOKE, SessionFacts, unwrap, wrap_call
from browser_copilot.browser.endpoints import Endpoint
from browser_copilot.browser.launcher import INSTALL_HINT, LaunchedBrowser, find_executable, launch
from browser_copilot.browser.launcher import has_display as _has_display
from browser_copilot.browser.look import Look, observer_source
from browser_copilot.browser.mcp_server import McpConnection, ServerSpec, build_server_spec
from browser_copilot.browser.pacing import PACED_MARK, PacingLedger
from browser_copilot.browser.results import CodeResult, browser_gone, parse_code_result
from browser_copilot.browser.session_policy import SessionPolicy
from browser_copilot.browser.session_tabs import SessionTab, SessionTabs, check_navigable
from browser_copilot.config import Settings
from browser_copilot.errors import BrowserNotFound, BrowserUnavailable, McpUnavailable, NetworkPolicyDown
from browser_copilot.safety.seen_secrets import SeenSecrets
from browser_copilot.sandbox.cdp import CdpError
from browser_copilot.sandbox.effects import Allowed
from browser_copilot.sandbox.guard import needs_runtime, runtime_install_code
from browser_copilot.sandbox.network import NetworkGuard
from browser_copilot.sandbox.tabs import TabOwners
from browser_copilot.sandbox.urls import UrlPolicy
from browser_copilot.scripts import project_root

log = logging.getLogger(__name__)

Notice = Callable[[str], None]

_NOTHING_RAN = ("ECONNREFUSED", "connectOverCDP")


class BrowserSession(SessionTabs, SessionPolicy):
    """The attached browser plus the MCP session; use as `async with BrowserSession(...) as b:`."""

    def __init__(
        self,
        settings: Settings,
        *,
        notice: Notice | None = None,
        root: Path | None = None,
        extra_profile_roots: list[Path] | None = None,
        attach: Endpoint | None = None,
        instance: str | None = None,
        url_policy: UrlPolicy | None = None,
        owners: TabOwners | None = None,
    ) -> None:
        self.settings = settings
        self._attach = attach
        self.instance = instance
        """A parallel run's session (`browser.pool`): attached to `attach`, a server of its own, no tab of
        its own until `session_tab` gives it one."""
        self.tab_owners = owners if owners is not None else TabOwners()
        """Which network guard covers which tab, shared by every session on this browser."""
        self._tab_key: str | None = None
        self.pacing_ledger = PacingLedger()
        """The per-site pacing counts, shared by every session on this browser (`browser.pool`)."""
        self._notice = notice or (lambda message: log.info("%s", message))
        self._root = root
        self._extra_roots = extra_profile_roots or []
        self.endpoint: Endpoint | None = None
        self.launched: LaunchedBrowser | None = None
        self.mcp: McpConnection | None = None
        self.spec: ServerSpec | None = None
        self._agent_url: str | None = None
        self.started_on: dict[str, str] | None = None
        """The user's page the agent adopted at start (F44), if it did."""
        self.created_tab = False
        """Whether the agent's tab was opened by this session (not the user's, nor one it found blank)."""
        self._lock = asyncio.Lock()
        self.call_ended = 0.0
        """When the last code call through this session ended (`time.monotonic`; 0: none yet), or the
        last action of guarded code in it, when the guard said (an observation's settle counts from it)."""
        self.restarts = {"mcp": 0, "browser": 0}
        self.url_policy = url_policy if url_policy is not None else UrlPolicy.from_settings(settings)
        """The one URL policy: the network guard's, and the observation's after-the-fact check."""
        self.facts = SessionFacts()
        """The session's own tabs, the files the user named for upload (what its calls may reach)."""
        self._origins_told: list[str] | None = None
        self.network: NetworkGuard | None = None
        self.agent_target: str | None = None
        """The CDP target id of the agent's tab, as last told to the network policy."""
        self.look = Look()
        """The framework's own look at the agent's tab, beside the code tool (`browser.look`)."""
        self.seen_secrets = SeenSecrets()
        """Digests of the secret values the session's observations saw in fields (never the values)."""
        self._preparing: set[asyncio.Future[None]] = set()
        self._closing = False
        """Set by `close`: no recovery starts a server or a browser after it (a call still in flight
        when the session closed would otherwise restart one that nobody stops)."""

    async def __aenter__(self) -> BrowserSession:
        await self.open()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # ----- attach -----------------------------------------------------------------------------

    async def open(self) -> None:
        opened = False
        self._closing = False
        try:
            self.endpoint = await self._resolve(allow_launch=self.settings.browser_auto_launch)
            await self._start_mcp()
            await self._start_network()
            await self._ensure_agent_tab()
            opened = True
        finally:
            if not opened:  # failed or cancelled half-way: stop what was started
                await self.close()

    def _roots(self) -> list[Path]:
        return [*endpoints.profile_roots(), self.settings.profile_dir, *self._extra_roots]

    async def _resolve(self, *, allow_launch: bool) -> Endpoint:
        if self._attach is not None:  # a parallel run: the browser the first session found
            return self._attach
        configured = self.settings.cdp_endpoint
        found = await asyncio.to_thread(endpoints.probe, configured)
        if found is not None:
            return found
        found = await asyncio.to_thread(endpoints.find_active_port, self._roots())
        if found is not None:
            self._notice(f"Found a browser through {found.detail}.")
            if found.url.startswith("ws"):
                self._notice("If the browser asks whether to allow remote debugging, allow it.")
            return found
        if not allow_launch:
            raise BrowserNotFound(
                f"No browser answers at {configured} and no DevToolsActivePort file was found. "
                "Fix: start Chrome/Edge with --remote-debugging-port="
                f"{urlsplit(configured).port} --user-data-dir=<a folder>, or turn on "
                "chrome://inspect/#remote-debugging (Chrome 144+), or set BROWSER_AUTO_LAUNCH=true."
            )
        return await self._launch(urlsplit(configured).port or 9222)

    async def _launch(self, port: int) -> Endpoint:
        executable = find_executable(self.settings.browser_executable)
        headless = self.settings.browser_headless == "true" or (
            self.settings.browser_headless == "auto" and not _has_display()
        )
        mode = "headless" if headless else "with a window"
        self._notice(f"Launching {executable} {mode} (profile {self.settings.profile_dir}).")
        self.launched = await asyncio.to_thread(
            launch,
            executable=executable,
            profile_dir=self.settings.profile_dir,
            preferred_port=port,
            headless=headless,
            log_file=self.settings.logs_dir / "browser.log",
        )
        return self.launched.endpoint

    async def _start_mcp(self) -> None:
        assert self.endpoint is not None
        self.spec = await asyncio.to_thread(
            build_server_spec,
            cdp_endpoint=self.endpoint.url,
            data_dir=self.settings.data_dir,
            sandbox=self.settings.mcp_sandbox,
            root=self._root,
            instance=self.instance,
        )
        for note in self.spec.notes:
            self._notice(note)
        self.mcp = McpConnection(self.spec)
        await self.mcp.start()

    async def _start_network(self) -> None:
        """The app's own DevTools connection, deciding what the agent's tabs load and send (F46)."""
        assert self.endpoint is not None
        if self.network is None:
            self.network = NetworkGuard(self.url_policy, notice=self._notice, owners=self.tab_owners)
            self.network.on_document = self._document_loaded
        try:
            await self.network.start(self.endpoint.url)
        except NetworkPolicyDown as exc:
            raise BrowserUnavailable(
                f"{exc} Fix: check that the browser accepts a second DevTools connection."
            ) from exc

    @property
    def agent_url(self) -> str | None:
        """The URL of the agent's tab, as last seen."""
        return self._agent_url

    # ----- the framework's own look -------------------------------------------------------------

    async def look_payload(self, opts: dict[str, Any], version: str, install: str) -> dict[str, Any] | None:
        """An observation's data through the app's own DevTools connection (`browser.look`), or None when
        the code tool must look (it knows a dialog, a download, a new tab; or this failed)."""
        network = self.network
        if network is None or not network.connected:
            return None
        async with self._lock:
            try:
                data = await self.look.payload(network, opts, version, install)
            except CdpError as exc:
                log.debug("the look at the agent's tab failed (the code tool looks): %s", exc)
                return None
        if data is not None and data.get("url"):
            self._agent_url = str(data["url"])
        return data

    def _document_loaded(self, target_id: str) -> None:
        """A new document in a tab (the network policy saw it parsed): the agent's gets the observer."""
        network = self.network
        if network is None:
            return
        version, install = observer_source()
        task = asyncio.ensure_future(self.look.prepare(network, target_id, version, install))
        self._preparing.add(task)
        task.add_done_callback(self._prepared)

    def _prepared(self, task: asyncio.Future[None]) -> None:
        self._preparing.discard(task)
        if not task.cancelled() and isinstance(task.exception(), CdpError):
            log.debug("putting the observer ahead into a new document failed: %s", task.exception())

    # ----- calls ------------------------------------------------------------------------------

    async def _call(self, code: str, *, timeout: float) -> CodeResult:
        """One code call, inside the network policy's window; none while the policy is not connected.
        Whatever an earlier call's code may still be doing ends first (`calls.wrap_call`); a call that is
        interrupted or times out has its code ended too (`_revoke`)."""
        if self.mcp is None or self.network is None:
            raise McpUnavailable("the browser session is closed")
        try:
            await self.network.ensure()
            async with self.network.acting():
                text, is_error = await self.mcp.call(
                    self.mcp.code_tool_name, {"code": wrap_call(code, timeout)}, timeout=timeout
                )
        except NetworkPolicyDown as exc:
            # Nothing ran. A refused connection reads as the browser gone, so `run_code` recovers.
            return CodeResult(ok=False, error=str(exc))
        except asyncio.CancelledError:
            self._revoke_soon()
            raise
        finally:
            self.call_ended = time.monotonic()
        if is_error and "did not answer within" in text:
            await self._revoke()
        result, acted, opened = unwrap(parse_code_result(text, is_error=is_error))
        if "[File chooser]" in result.sections.get("Modal state", ""):
            # A click opened the page's file chooser (the call stopped there): it is cancelled, or the
            # MCP server would refuse every call until it is answered. Uploads go through upload_file.
            await self.mcp.call("browser_file_upload", {}, timeout=30)
            result = replace(result, notes={**result.notes, "chooser": True})
        if acted is not None:
            # The settle counts from the code's last input (the wall clock, shared with the MCP process).
            ago = min(max(0.0, time.time() - acted), 1.0)
            self.call_ended = min(self.call_ended, time.monotonic() - ago)
        self.facts.owned.update(opened)
        return result

    async def _revoke(self) -> None:
        """End what a call's code may still be doing; a server that cannot even answer that (its code
        holds Node's only thread) is restarted."""
        if self.mcp is None:
            return
        try:
            text, failed = await self.mcp.call(self.mcp.code_tool_name, {"code": REVOKE}, timeout=5)
        except McpUnavailable:
            return
        if failed and "does not handle the modal state" not in text:
            await self._restart_mcp("a call's code did not stop")

    def _revoke_soon(self) -> None:
        """`_revoke` once the interrupted call has let go of the session."""

        async def revoke() -> None:
            async with self._lock:
                await self._revoke()

        task = asyncio.ensure_future(revoke())
        self._preparing.add(task)
        task.add_done_callback(self._preparing.discard)

    async def run_code(self, code: str, *, timeout: float = 120.0, idempotent: bool = False) -> CodeResult:
        """Run `async (page) => {...}` in the agent's tab (see `_run_code`). A paced call while several
        server processes share the browser starts from the per-site counts of all of them, and gives its
        own back (`PacingLedger`)."""
        if not (self.pacing_ledger.sharing and PACED_MARK in code):
            return await self._run_code(code, timeout=timeout, idempotent=idempotent)
        async with self.pacing_ledger.turn(self._agent_url):
            await self._share_pacing(self.pacing_ledger.seed_code())
            try:
                return await self._run_code(code, timeout=timeout, idempotent=idempotent)
            finally:
                counts = await asyncio.shield(self._share_pacing(self.pacing_ledger.read_code))
                self.pacing_ledger.merge(counts)

    async def _share_pacing(self, code: str) -> object:
        async with self._lock:
            try:
                result = await self._call(code, timeout=30)
            except McpUnavailable:
                return None
        return result.value if result.ok else None

    async def _run_code(self, code: str, *, timeout: float = 120.0, idempotent: bool = False) -> CodeResult:
        """Run `async (page) => {...}` in the agent's tab, recovering from a lost server or browser.

        `idempotent` code (observations, tab lists) is re-sent after a recovery; other code only when
        it cannot have run. Raises `BrowserUnavailable` / `McpUnavailable` when recovery fails.
        """
        async with self._lock:
            try:
                result = await self._call_guarded(code, timeout=timeout)
            except McpUnavailable as exc:
                await self._restart_mcp(str(exc))
                if not idempotent:
                    return CodeResult(
                        ok=False,
                        error="The browser tool was restarted (its server process had stopped); "
                        "the code may not have run. Observe the page, then try again.",
                    )
                result = await self._call_guarded(code, timeout=timeout)
            if result.ok or not browser_gone(result.error) or self._tab_closed_by_policy(result):
                await self._remember(result)
                return result
            nothing_ran = any(marker in (result.error or "") for marker in _NOTHING_RAN)
            already_back = await self._recover_browser(result.error or "")
            # A browser that was back before we looked died before this call, not during it.
            if idempotent or nothing_ran or already_back:
                result = await self._call_guarded(code, timeout=timeout)
                await self._remember(result)
            return result

    async def _call_guarded(self, code: str, *, timeout: float) -> CodeResult:
        """One call; guarded code that finds the server without the guard runtime gets it, then runs."""
        await self._tell_session(timeout)
        result = await self._call(code, timeout=timeout)
        if result.ok and needs_runtime(result.value):
            installed = await self._call(runtime_install_code(self._root or project_root()), timeout=timeout)
            if not installed.ok:
                return installed
            self.facts.told = None  # a new browser context: it is told again
            await self._tell_session(timeout)
            result = await self._call(code, timeout=timeout)
        return result

    async def _tell_session(self, timeout: float) -> None:
        """The guarded calls learn (again, when they changed) the session's facts: its own tabs, the
        origins no agent tab may show, the files the user named."""
        origins = list(self.url_policy.forbidden_origins)
        if self.agent_target is not None:
            self.facts.owned.add(self.agent_target)
        code = self.facts.code(origins)
        if code is None:
            return
        if self.network is not None and self._origins_told not in (None, origins):
            self.network.refresh_rules()  # an origin forbidden after the tabs were covered
        told = await self._call(code, timeout=timeout)
        self.facts.learned(told)
        if told.ok:
            self._origins_told = origins

    async def answer_dialog(
        self, accept: bool, prompt_text: str | None, allowed: Allowed
    ) -> tuple[str, bool]:
        """Answer the page's alert/confirm/prompt (the MCP server's `browser_handle_dialog`), in a window of
        the effect gate's (`allowed`): what the page sends after an accepted dialog is checked like what
        an input sets off."""
        if self.mcp is None or self.network is None:
            raise McpUnavailable("the browser session is closed")
        arguments: dict[str, Any] = {"accept": accept}
        if prompt_text is not None:
            arguments["promptText"] = prompt_text
        async with self._lock, self.network.acting():
            self.network.app_window("dialog", allowed)
            return await self.mcp.call("browser_handle_dialog", arguments)

    async def _remember(self, result: CodeResult) -> None:
        if result.page_url:
            self._agent_url = result.page_url
        # A tab opened, closed or was selected: which one is the agent's now. Not for a parallel run's
        # session that has no tab of its own yet (a warm spare): its server's current page is then
        # whichever tab came first, another run's, which its network policy would claim as its own.
        if result.tabs is not None and (self.instance is None or self.agent_target is not None):
            await self._track_agent_tab()

    def _tab_closed_by_policy(self, result: CodeResult) -> bool:
        """A tab the policy closed (opened on a refused URL) failed the code with 'Target closed': the
        browser is there (the policy's own connection says so), nothing to recover."""
        return self.network is not None and self.network.connected and self.network.closed_tabs > 0

    def _refuse_when_closing(self) -> None:
        if self._closing:
            raise McpUnavailable("the browser session is closed")

    async def _restart_mcp(self, reason: str) -> None:
        self._refuse_when_closing()
        self.restarts["mcp"] += 1
        self.look.forget()  # a new server lists its tabs in its own order
        self._notice(f"The browser tool's server stopped ({reason.split('. ')[0]}); restarting it.")
        if self.mcp is not None:
            await self.mcp.close()
        try:
            await self._start_mcp()
            await self._stop_if_closing()
            await self._ensure_agent_tab()
        except McpUnavailable as exc:
            raise McpUnavailable(f"restarting the MCP server failed: {exc}") from exc
        self._notice("The browser tool is back.")

    async def _recover_browser(self, error: str) -> bool:
        """Bring the browser back; True when it was already back (a user's restarted browser)."""
        self._refuse_when_closing()
        self.restarts["browser"] += 1
        self.look.forget()
        already_back = self.launched is None
        if self.launched is not None:
            self._notice("The browser the app launched has gone; launching it again.")
            await asyncio.to_thread(self.launched.close)
            self.launched = None
            endpoint = await self._launch(self.endpoint.port if self.endpoint else 9222)
        else:
            try:
                endpoint = await self._resolve(allow_launch=False)
            except BrowserNotFound:
                raise BrowserUnavailable(
                    f"The browser at {self.endpoint.url if self.endpoint else '?'} has gone "
                    f"({error.splitlines()[0][:120]}). Fix: start it again (the app never closes "
                    "a browser it did not launch); the session and its state are kept."
                ) from None
        if self.endpoint is None or endpoint.url != self.endpoint.url:
            self.endpoint = endpoint
            if self.mcp is not None:
                await self.mcp.close()
            await self._start_mcp()
        self.endpoint = endpoint
        await self._stop_if_closing()
        await self._start_network()
        await self._ensure_agent_tab()
        self._notice(f"Browser attached again at {endpoint.url}.")
        return already_back

    async def round_trip_ms(self) -> float:
        """One trivial call through the whole path (doctor, bench), in milliseconds."""
        started = time.perf_counter()
        result = await self.run_code("async () => 1", timeout=30, idempotent=True)
        if not result.ok:
            raise BrowserUnavailable(f"trivial code failed: {result.error}")
        return (time.perf_counter() - started) * 1000

    async def _stop_if_closing(self) -> None:
        """A recovery that started something while the session closed stops it again, and says so."""
        if self._closing:
            await self.close()
            raise McpUnavailable("the browser session is closed")

    async def close(self) -> None:
        """Stop the MCP server and the network policy; close the browser only if this app launched it
        (and may)."""
        self._closing = True
        if self.mcp is not None:
            await self.mcp.close()
            self.mcp = None
        if self.network is not None:
            self.tab_owners.release(self.network)
            await self.network.stop()
            self.network = None
        if self.launched is not None and not self.settings.browser_keep_open:
            await asyncio.to_thread(self.launched.close)
            self.launched = None


__all__ = ["INSTALL_HINT", "BrowserSession", "SessionTab", "browser_gone", "check_navigable"]
