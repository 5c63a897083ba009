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
import json
import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
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
from browser_copilot.browser.results import CodeResult, Tab, parse_code_result
from browser_copilot.config import Settings
from browser_copilot.errors import (
    BrowserNotFound,
    BrowserUnavailable,
    McpUnavailable,
    NavigationError,
    NetworkPolicyDown,
)
from browser_copilot.sandbox.cdp import CdpError
from browser_copilot.sandbox.effects import Allowed, HeldRequest, SentRequest
from browser_copilot.sandbox.guard import Allow, needs_runtime, runtime_install_code
from browser_copilot.sandbox.network import Download, NetworkGuard, TabOwners, run_tab_url
from browser_copilot.sandbox.urls import Refusal, UrlPolicy
from browser_copilot.scripts import project_root

log = logging.getLogger(__name__)

Notice = Callable[[str], None]

_BROWSER_GONE = (
    "ECONNREFUSED",
    "Target page, context or browser has been closed",
    "Browser has been closed",
    "browser has disconnected",
    "Target closed",
    "WebSocket error",
    "socket hang up",
    "connectOverCDP",
)
_NOTHING_RAN = ("ECONNREFUSED", "connectOverCDP")

_ENSURE_AGENT_TAB = """async (page) => {
  const hint = %s;
  const adopt = %s;
  const blank = (u) => u === 'about:blank' || /^(chrome|edge):\\/\\/(newtab|new-tab-page)/.test(u);
  const pages = page.context().pages();
  let target = hint ? pages.find((p) => p.url() === hint) : undefined;
  let adopted = false;
  if (!target && adopt) {
    // The tab the user has in front: focused, else the only visible one.
    const seen = await Promise.all(pages.map((p) => p.evaluate(
      () => [document.visibilityState === 'visible', document.hasFocus()]).catch(() => [false, false])));
    const focused = pages.filter((p, i) => seen[i][1]);
    const visible = pages.filter((p, i) => seen[i][0]);
    const active = focused[0] || (visible.length === 1 ? visible[0] : undefined);
    if (active && /^https?:/.test(active.url())) { target = active; adopted = true; }
  }
  if (!target && blank(page.url())) target = page;
  let created = false;
  if (!target) { target = await page.context().newPage(); created = true; }
  // The tab chosen at start: the first server session works there (see _SESSION_TAB).
  if (!hint) page.context().__bcStartTab = { page: target, adopted, created };
  return { index: page.context().pages().indexOf(target), current: target === page, created, adopted,
    url: target.url(), title: await target.title().catch(() => '') };
}"""

_LIST_TABS = """async (page) => {
  // A real round trip, which fails when the browser has gone (a navigation may interrupt it).
  await page.evaluate('0').catch((e) => { if (!/context was destroyed|navigat/i.test(String(e))) throw e; });
  return Promise.all(page.context().pages().map(async (p, index) => ({
    index, url: p.url(), title: await p.title().catch(() => ''), current: p === page })));
}"""

_GOTO = """async (page) => {
  if (await page.evaluate(() => document.hidden).catch(() => false)) await page.bringToFront();
  const response = await page.goto(%s, { waitUntil: 'domcontentloaded' });
  return { url: page.url(), title: await page.title(), status: response ? response.status() : null };
}"""


_SESSION_TAB = """async (page) => {
  const key = %s;
  const claim = %s;
  const hint = %s;
  const context = page.context();
  const tabs = context.__bcSessionTabs || (context.__bcSessionTabs = new Map());
  const idOf = async (p) => {
    const cdp = await context.newCDPSession(p);
    try { return (await cdp.send('Target.getTargetInfo')).targetInfo.targetId; }
    finally { await cdp.detach().catch(() => {}); }
  };
  let target = tabs.get(key);
  let created = false;
  let adopted = false;
  if ((!target || target.isClosed()) && hint) {
    // The session's tab, found by its target id (another MCP process of the pool opened it).
    for (const p of context.pages()) {
      if (await idOf(p).catch(() => '') === hint) { target = p; tabs.set(key, p); break; }
    }
  }
  const start = context.__bcStartTab;
  if ((!target || target.isClosed()) && claim && start && !start.page.isClosed()
      && ![...tabs.values()].includes(start.page)) {
    // The tab chosen at start (the user's page in front, or the blank tab), as in the terminal.
    target = start.page; created = start.created; adopted = start.adopted; tabs.set(key, target);
  }
  if (!target || target.isClosed()) {
    // A window of its own: a background tab of a shared window draws no frames, and runs go on at once.
    const known = new Set(context.pages());
    const cdp = await context.browser().newBrowserCDPSession();
    let id = '';
    try { id = (await cdp.send('Target.createTarget', { url: %s, newWindow: true })).targetId; }
    finally { await cdp.detach().catch(() => {}); }
    for (let i = 0; i < 400 && !target; i++) {
      for (const p of context.pages()) {
        if (!known.has(p) && await idOf(p).catch(() => '') === id) { target = p; break; }
      }
      if (!target) await new Promise((resolve) => setTimeout(resolve, 25));
    }
    if (!target) throw new Error('the new window did not appear');
    created = true; tabs.set(key, target);
  }
  return { index: context.pages().indexOf(target), current: target === page, created, adopted,
    url: target.url(), title: adopted ? await target.title().catch(() => '') : '',
    id: await idOf(target).catch(() => null) };
}"""


_AGENT_TARGET = """async (page) => {
  const session = await page.context().newCDPSession(page);
  try { return (await session.send('Target.getTargetInfo')).targetInfo.targetId; }
  finally { await session.detach().catch(() => {}); }
}"""
"""The agent's tab's CDP target id, asked by the app's own (trusted) code, for the network policy."""

_INDEX_OF = """async (page) => {
  const id = %s;
  const context = page.context();
  for (const [i, p] of context.pages().entries()) {
    const session = await context.newCDPSession(p).catch(() => null);
    if (!session) continue;
    try { if ((await session.send('Target.getTargetInfo')).targetInfo.targetId === id) return i; }
    catch (e) { /* closed meanwhile */ }
    finally { await session.detach().catch(() => {}); }
  }
  return -1;
}"""
"""The index of the tab with this CDP target id in the MCP server's list (-1: none)."""


@dataclass(frozen=True)
class SessionTab:
    """The tab a server session works in: `created` by the app (now or at start), or `adopted` (the
    user's own page, which the app never closes)."""

    created: bool
    adopted: bool
    url: str
    title: str


def browser_gone(error: str | None) -> bool:
    return error is not None and any(marker in error for marker in _BROWSER_GONE)


def check_navigable(url: str) -> str:
    """http(s) and about:blank only (F46); returns the URL or raises `ValueError` saying why."""
    scheme = urlsplit(url).scheme.lower()
    if url == "about:blank" or (scheme in ("http", "https") and urlsplit(url).hostname):
        return url
    raise ValueError(f"{url!r}: only http(s) URLs and about:blank may be opened")


class BrowserSession:
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

    async def _ensure_agent_tab(self) -> None:
        """The agent's tab: the one it worked in (after a recovery), else the user's page in front when
        it is an ordinary web page (F44, announced), else a blank tab, else a new one. A parallel run's
        session: the connection made (a cold server's first call waits for loading tabs), then its
        session's tab again after a recovery."""
        if self.instance is not None:
            await self._pooled_tab()
            return
        adopt = self.settings.start_in_current_tab and self._agent_url is None
        code = _ENSURE_AGENT_TAB % (json.dumps(self._agent_url), json.dumps(adopt))
        result = await self._call(code, timeout=60)
        url = str(result.value.get("url") or "") if result.ok and isinstance(result.value, dict) else ""
        if url and self.url_policy.forbidden(url):
            # The tab in front is the app's own page (or DevTools): the user's, never the agent's.
            result = await self._call(_ENSURE_AGENT_TAB % ("null", "false"), timeout=60)
        if not result.ok:
            if browser_gone(result.error):
                raise BrowserUnavailable(f"the browser did not accept the connection: {result.error}")
            raise BrowserUnavailable(f"could not open the agent's tab: {result.error}")
        info = result.value
        self.created_tab = isinstance(info, dict) and bool(info.get("created"))
        if isinstance(info, dict) and not info.get("current"):
            assert self.mcp is not None
            self.look.through_code_tool_next()  # another tab becomes the code tool's page
            await self.mcp.call("browser_tabs", {"action": "select", "index": info["index"]})
        adopted = isinstance(info, dict) and bool(info.get("adopted"))
        if isinstance(info, dict) and adopted:
            self._agent_url = str(info.get("url") or "") or None
            self.started_on = {"url": str(info.get("url") or ""), "title": str(info.get("title") or "")}
            self._notice(
                f"Working in your tab: {self.started_on['title'] or '(untitled)'} — {self.started_on['url']}"
            )
        await self._track_agent_tab(bring_in=adopted)

    async def _pooled_tab(self) -> None:
        if self._tab_key is None:  # connected, and the guard runtime installed ahead of the first call
            warm = await self._call(runtime_install_code(self._root or project_root()), timeout=60)
            if not warm.ok:
                raise BrowserUnavailable(f"the browser did not accept the connection: {warm.error}")
            self.facts.told = None
            return
        code = _SESSION_TAB % (
            json.dumps(self._tab_key),
            "false",
            json.dumps(self.agent_target),
            json.dumps(run_tab_url()),
        )
        result = await self._call(code, timeout=60)
        if not result.ok or not isinstance(result.value, dict):
            raise BrowserUnavailable(f"could not open the session's tab: {result.error}")
        await self._select_tab(int(result.value["index"]), result.value.get("id"))

    async def _track_agent_tab(self, *, bring_in: bool = False, known: str | None = None) -> None:
        """Tell the network policy which target is the agent's tab (`bring_in`: the user's own page;
        `known`: its target id, just asked)."""
        if self.network is None:
            return
        result = CodeResult(ok=True, value=known) if known else await self._call(_AGENT_TARGET, timeout=30)
        if result.ok and isinstance(result.value, str):
            self.agent_target = result.value
            self.facts.owned.add(result.value)
            await self.network.set_agent_tab(result.value, bring_in=bring_in)
        else:
            log.warning("could not identify the agent's tab for the network policy: %s", result.error)

    async def _select_tab(self, index: int, target_id: str | None, *, bring_in: bool = False) -> None:
        """Make a tab the MCP server's current page by its index in the server's list, checked by its
        target id before the network policy is told: a tab of another run or process that opens or
        closes between the call that found the index and the select moves the indexes (selected by a
        stale index, a run worked in another run's window)."""
        assert self.mcp is not None
        self.look.through_code_tool_next()  # another tab becomes the code tool's page
        known = None
        for _ in range(5):
            await self.mcp.call("browser_tabs", {"action": "select", "index": index})
            if target_id is None:
                break
            now = await self._call(_AGENT_TARGET, timeout=30)
            if now.ok and now.value == target_id:
                known = target_id
                break
            found = await self._call(_INDEX_OF % json.dumps(target_id), timeout=30)
            if not found.ok or not isinstance(found.value, int) or found.value < 0:
                raise BrowserUnavailable("the session's tab closed before it could be selected")
            index = found.value
        else:
            raise BrowserUnavailable("the session's tab could not be selected: the tabs kept changing")
        await self._track_agent_tab(bring_in=bring_in, known=known)

    async def select_tab(self, index: int) -> tuple[str, bool]:
        """Make tab `index` the agent's (the MCP server's current page); the network policy covers it."""
        if self.mcp is None:
            raise McpUnavailable("the browser session is closed")
        async with self._lock:
            self.look.through_code_tool_next()  # another tab becomes the code tool's page
            text, is_error = await self.mcp.call("browser_tabs", {"action": "select", "index": index})
            if not is_error:
                await self._track_agent_tab()
        return text, is_error

    def name_sites(self, text: str) -> None:
        """Sites the user's messages name are part of the task (the network policy's rule without lists)."""
        if self.network is not None:
            self.network.name_sites(text)

    def use_sites(self, sites: set[str]) -> None:
        """The task's sites from now on are this set (a session's own: a site named in one session
        never becomes part of another's task); the policy adds the sites it learns to it."""
        if self.network is not None:
            self.network.use_sites(sites)

    def refusals(self) -> list[Refusal]:
        """What the network policy refused since the last time this was asked."""
        return self.network.refusals() if self.network is not None else []

    @property
    def agent_url(self) -> str | None:
        """The URL of the agent's tab, as last seen."""
        return self._agent_url

    async def return_to(self, url: str) -> bool:
        """Work in the tab showing `url` again (a session resumed in a new process): select it, or open
        the URL in the agent's tab when no tab shows it. True when the agent is there."""
        check_navigable(url)
        if self.network is not None:
            self.network.bring_in(url)
        code = (
            "async (page) => { const pages = page.context().pages();"
            f" const i = pages.findIndex((p) => p.url() === {json.dumps(url)});"
            " return { index: i, current: i >= 0 && pages[i] === page }; }"
        )
        result = await self.run_code(code, idempotent=True)
        info = result.value if result.ok else None
        if isinstance(info, dict) and int(info.get("index", -1)) >= 0:
            if not info.get("current"):
                async with self._lock:
                    await self._select_tab(int(info["index"]), None)
            self._agent_url = url
            return True
        await self.goto(url)
        return True

    async def session_tab(
        self, key: str, *, claim_start: bool = False, target: str | None = None
    ) -> SessionTab:
        """Work in the tab kept for `key` (a server session, F66), or the tab whose CDP target id is
        `target` (opened by another session of the pool): select it; when it has none (or it was
        closed), the tab chosen at start if `claim_start` and no session has it yet (the user's page in
        front, by the terminal's rule), else a fresh blank tab in a window of its own."""
        self._tab_key = key
        code = _SESSION_TAB % (
            json.dumps(key),
            json.dumps(claim_start),
            json.dumps(target),
            json.dumps(run_tab_url()),
        )
        result = await self.run_code(code, idempotent=True, timeout=30)
        info = result.value if result.ok else None
        if not isinstance(info, dict):
            raise BrowserUnavailable(f"could not open the session's tab: {result.error}")
        if not info.get("current") or self.agent_target is None:
            async with self._lock:
                await self._select_tab(int(info["index"]), info.get("id"), bring_in=bool(info.get("adopted")))
        self._agent_url = str(info.get("url") or "") or None
        return SessionTab(
            created=bool(info.get("created")),
            adopted=bool(info.get("adopted")),
            url=str(info.get("url") or ""),
            title=str(info.get("title") or ""),
        )

    async def keep_tab(self, key: str) -> None:
        """The tab the agent is in now becomes `key`'s (the run may have switched tabs)."""
        code = (
            "async (page) => { const c = page.context();"
            f" (c.__bcSessionTabs || (c.__bcSessionTabs = new Map())).set({json.dumps(key)}, page); }}"
        )
        await self.run_code(code, idempotent=True, timeout=30)

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

    def downloads(self) -> list[Download]:
        """The downloads of the agent's tabs, as the browser reported them (oldest first)."""
        return self.network.downloads() if self.network is not None else []

    async def downloads_finished(self, timeout: float) -> None:
        """Wait, up to `timeout` seconds, until no download of the agent's tabs is still coming."""
        if self.network is not None:
            await self.network.downloads_finished(timeout)

    def downloads_begun(self) -> int:
        return self.network.downloads_begun if self.network is not None else 0

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

    # ----- what the network policy's effect gate needs from the agent --------------------------------

    def issue(self, allow: Allow, how: Allowed) -> None:
        """`allow`'s one-time token opens a `how` window (a user's /yes: approved; the judge: judged)."""
        if self.network is not None:
            self.network.issue(allow.token, how)

    def held_requests(self) -> list[HeldRequest]:
        """Requests the effect gate held since the last time this was asked."""
        return self.network.held_requests() if self.network is not None else []

    def sent_requests(self) -> list[SentRequest]:
        """Writing or committing requests the agent's inputs let leave since the last time this was asked."""
        return self.network.sent_requests() if self.network is not None else []

    def app_window(self, kind: str, allowed: Allowed) -> None:
        """The app itself acts in the agent's tab (it answers the page's dialog)."""
        if self.network is not None:
            self.network.app_window(kind, allowed)

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

    # ----- conveniences -----------------------------------------------------------------------

    async def tabs(self) -> list[Tab]:
        result = await self.run_code(_LIST_TABS, timeout=30, idempotent=True)
        if not result.ok or not isinstance(result.value, list):
            raise BrowserUnavailable(f"could not list tabs: {result.error}")
        return [
            Tab(int(t["index"]), str(t["title"]), str(t["url"]), bool(t["current"])) for t in result.value
        ]

    async def goto(self, url: str, *, timeout: float = 60.0) -> dict[str, Any]:
        """Navigate the agent's tab; returns url, title and HTTP status."""
        try:
            target = check_navigable(url)
        except ValueError as exc:
            raise NavigationError(str(exc)) from None
        if self.network is not None:
            self.network.bring_in(target)  # the app opens it (the user gave it): part of the task
        result = await self.run_code(_GOTO % json.dumps(target), timeout=timeout)
        if not result.ok:
            raise NavigationError(f"could not open {url}: {result.error}")
        value: dict[str, Any] = result.value
        return value

    def stage_upload(self, source: Path) -> Path:
        """Copy a file into the folder the sandboxed MCP server may read, for `setInputFiles`."""
        if self.spec is None:
            raise McpUnavailable("the browser session is closed")
        folder = Path(self.spec.env["TMPDIR"]) / "uploads"
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / source.name
        shutil.copyfile(source, target)
        if str(target) not in self.facts.uploads:
            self.facts.uploads.append(str(target))
        return target

    async def round_trip_ms(self) -> float:
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
