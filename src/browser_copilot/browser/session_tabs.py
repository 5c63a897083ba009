"""The tabs a `BrowserSession` works in (F44, F66): the agent's tab at start (the user's page in front,
a blank tab or a new one), a server session's own tab, selecting a tab by its CDP target id so that the
network policy covers the right one, going back to a tab in a new process, and the app's own `goto`.

`SessionTabs` is the part of `BrowserSession` that does this (a mixin: it uses the session's MCP
connection, its call lock and its network policy, declared below for the type checker).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from browser_copilot.browser.look import Look
from browser_copilot.browser.results import CodeResult, Tab, browser_gone
from browser_copilot.config import Settings
from browser_copilot.errors import BrowserUnavailable, McpUnavailable, NavigationError
from browser_copilot.sandbox.guard import runtime_install_code
from browser_copilot.sandbox.network import NetworkGuard
from browser_copilot.sandbox.tabs import run_tab_url
from browser_copilot.sandbox.urls import UrlPolicy
from browser_copilot.scripts import project_root

if TYPE_CHECKING:
    from browser_copilot.browser.calls import SessionFacts
    from browser_copilot.browser.mcp_server import McpConnection

log = logging.getLogger(__name__)

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

_TAB_AT = """async (page) => {
  const p = page.context().pages()[%d];
  if (!p) return null;
  const session = await page.context().newCDPSession(p);
  try {
    const id = (await session.send('Target.getTargetInfo')).targetInfo.targetId;
    return { id, url: p.url(), title: await p.title().catch(() => '') };
  } finally { await session.detach().catch(() => {}); }
}"""
"""The target id, address and title of the tab at an index of the MCP server's list."""

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


def check_navigable(url: str) -> str:
    """http(s) and about:blank only (F46); returns the URL or raises `ValueError` saying why."""
    scheme = urlsplit(url).scheme.lower()
    if url == "about:blank" or (scheme in ("http", "https") and urlsplit(url).hostname):
        return url
    raise ValueError(f"{url!r}: only http(s) URLs and about:blank may be opened")


class SessionTabs:
    """The tab-keeping part of `BrowserSession` (see the module's docstring)."""

    settings: Settings
    instance: str | None
    mcp: McpConnection | None
    network: NetworkGuard | None
    url_policy: UrlPolicy
    look: Look
    facts: SessionFacts
    agent_target: str | None
    created_tab: bool
    started_on: dict[str, str] | None
    _agent_url: str | None
    _tab_key: str | None
    _root: Path | None
    _lock: asyncio.Lock
    _notice: Callable[[str], None]

    async def _call(self, code: str, *, timeout: float) -> CodeResult:
        raise NotImplementedError

    async def run_code(self, code: str, *, timeout: float = 120.0, idempotent: bool = False) -> CodeResult:
        raise NotImplementedError

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

    async def foreign_tab(self, index: int) -> Tab | None:
        """The tab at `index` when it is not this session's own (the user's, another session's), for
        `switch_tab` to ask the user first; None for the session's own tab or no tab there."""
        result = await self.run_code(_TAB_AT % int(index), timeout=30, idempotent=True)
        found = result.value if result.ok else None
        if not isinstance(found, dict) or str(found.get("id")) in self.facts.owned:
            return None
        return Tab(int(index), str(found.get("title") or ""), str(found.get("url") or ""), False)

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


__all__ = ["SessionTab", "SessionTabs", "check_navigable"]
