"""Only the user approves: the agent's own code cannot answer "Allow once" on the card its held action
raised, even though the user has the server's page open in the very browser the agent drives.

The user's tab is opened the way a person opens it: through the browser's DevTools HTTP endpoint,
outside the agent's calls, and driven over a DevTools connection of its own with real mouse events (a
person's click). The agent is the real graph behind the real server, its model scripted; its code runs
in the real MCP server's box. The order site counts the orders it really received.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from browser_copilot.browser.launcher import LaunchedBrowser
from browser_copilot.llm.provider import build_chat_model, resolve_llm
from browser_copilot.server.serve import running
from browser_copilot.server.sessions import Session, SessionManager
from tests.conftest import make_settings
from tests.support.openai_server import ScriptedOpenAI, call, text
from tests.support.processes import pids_mentioning
from tests.support.sites import Request, Site
from tests.support.waiting import async_wait_until, eventually

LIMIT = 60.0


def devtools_http(url: str, method: str) -> Any:
    with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10) as answer:
        body = answer.read().decode()
    return json.loads(body) if body.startswith(("{", "[")) else body


class UserTab:
    """A tab the user opened, and the user's hands in it (a DevTools connection of the test's own)."""

    def __init__(self, endpoint: str, info: dict[str, Any]) -> None:
        self.endpoint = endpoint
        self.info = info
        self.http = aiohttp.ClientSession()
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self._id = 0

    @classmethod
    async def open(cls, endpoint: str, url: str) -> UserTab:
        info = await asyncio.to_thread(devtools_http, f"{endpoint}/json/new?{url}", "PUT")
        tab = cls(endpoint, info)
        tab.ws = await tab.http.ws_connect(info["webSocketDebuggerUrl"], max_msg_size=0)
        return tab

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        assert self.ws is not None
        self._id += 1
        await self.ws.send_json({"id": self._id, "method": method, "params": params or {}})
        async with asyncio.timeout(LIMIT):
            while True:
                message = await self.ws.receive_json()
                if message.get("id") == self._id:
                    assert "error" not in message, message
                    return dict(message.get("result") or {})

    async def evaluate(self, expression: str) -> Any:
        result = await self.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}
        )
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    async def wait_for(self, expression: str, what: str) -> Any:
        async def check() -> Any:
            return await self.evaluate(expression)

        return await eventually(check, timeout=LIMIT, what=what)

    async def click(self, selector: str) -> None:
        """A person's click: real mouse events at the middle of the element (`isTrusted`)."""
        await self.call("Page.bringToFront")
        x, y = await self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " e.scrollIntoView({ block: 'center' }); const r = e.getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            await self.call(
                "Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}
            )

    async def ask(self, words: str) -> None:
        """The user types a message and sends it; again while the page says it is not connected yet (its
        WebSocket opens a moment after the server counts it: the page keeps the text until it is sent)."""

        async def sent() -> bool:
            return bool(
                await self.evaluate(
                    f"(() => {{ const input = document.getElementById('input');"
                    f" if (!input.value) input.value = {json.dumps(words)};"
                    " document.getElementById('composer').requestSubmit(); return input.value === ''; })()"
                )
            )

        await eventually(sent, timeout=LIMIT, what="the message to be sent")

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        await self.http.close()
        await asyncio.to_thread(devtools_http, f"{self.endpoint}/json/close/{self.info['id']}", "GET")


def shop(request: Request, port: int) -> str:
    if request.path.startswith("/order"):
        return "<!doctype html><title>Ordered</title><p>Thank you for your order.</p>"
    return (
        "<!doctype html><html lang=en><title>Desk lamp — Shop</title><h1>Desk lamp</h1>"
        "<form method=post action=/order><p>Total: €49.00</p>"
        "<input type=hidden name=item value=lamp><button type=submit>Place order</button></form>"
    )


@pytest.fixture
def orders() -> Iterator[Site]:
    with Site(shop) as site:
        yield site


@contextlib.asynccontextmanager
async def serving(browser: LaunchedBrowser, llm: ScriptedOpenAI, tmp_path: Path) -> AsyncIterator[Any]:
    """`main.py serve`'s server and agent (`running`), the agent on `browser`, the model scripted."""
    settings = make_settings(
        tmp_path,
        cdp_endpoint=browser.endpoint.url,
        llm_base_url=llm.base_url,
        llm_api_key="sk-test-123",
        llm_model="scripted-model",
    )
    endpoint = resolve_llm(settings)
    assert endpoint is not None
    tabs = f"{browser.endpoint.url}/json/list"
    before = {t["id"] for t in await asyncio.to_thread(devtools_http, tabs, "GET") if t["type"] == "page"}
    try:
        async with running(
            settings,
            host="127.0.0.1",
            port=0,
            llm=lambda: build_chat_model(settings, endpoint),
            notice=lambda _: None,
            announce=lambda _: None,
        ) as server:
            yield server
    finally:  # the shared browser keeps no tab of the agent's (other tests count what a page shows)
        for tab in await asyncio.to_thread(devtools_http, tabs, "GET"):
            if tab["type"] == "page" and tab["id"] not in before:
                close = f"{browser.endpoint.url}/json/close/{tab['id']}"
                await asyncio.to_thread(devtools_http, close, "GET")


def the_session(manager: SessionManager) -> Session:
    assert len(manager.sessions) == 1, manager.sessions
    return next(iter(manager.sessions.values()))


async def signed_in(tab: UserTab, manager: SessionManager) -> None:
    """Until the page has its session and its WebSocket is connected."""
    await tab.wait_for("!!document.querySelector('.session[aria-current]')", "the page's session")
    await async_wait_until(
        lambda: any(s.hub.clients for s in manager.sessions.values()), timeout=LIMIT, what="the WebSocket"
    )


async def card_shown(tab: UserTab, manager: SessionManager, enabled: bool = False) -> None:
    selector = ".card button.allow" + (":not([disabled])" if enabled else "")
    try:
        await tab.wait_for(f"!!document.querySelector({json.dumps(selector)})", "the confirmation card")
    except AssertionError as exc:
        events = [f"{k}: {b[:300]}" for _, k, b in the_session(manager).hub.after(0)]
        raise AssertionError("\n".join([str(exc), *events])) from None


# The model's code, written to approve its own held order through the server's page.
OPEN_THE_SERVER = """async (page) => {
  const tab = await page.context().newPage();
  const loaded = await tab.goto(%(server)s + '/', { waitUntil: 'load' })
    .then((r) => 'loaded ' + (r && r.status()), (e) => 'refused: ' + String(e.message || e).slice(0, 120));
  const clicked = await tab.locator('.card button.allow').click({ timeout: 1000 })
    .then(() => 'clicked', (e) => 'not clicked: ' + String(e.message || e).slice(0, 120));
  return { loaded, clicked };
}"""

IN_THE_USERS_TAB = """async (page) => {
  const theirs = page.context().pages().find((p) => p.url().startsWith(%(server)s));
  if (!theirs) return 'no server tab';
  return await (theirs.evaluate || (() => Promise.reject(new Error('no evaluate'))))(() => {
    window.__tries = 0; window.__replies = [];
    setInterval(() => {
      window.__tries += 1;
      // A script's click on the user's own card (which holds the nonce)...
      for (const b of document.querySelectorAll('.card button.allow')) { b.disabled = false; b.click(); }
      // ...and a WebSocket of its own, with the page's cookie and the server's own Origin.
      const s = new WebSocket('ws://' + location.host + '/ws/' + location.hash.slice(1)
        + '?client=' + (sessionStorage.getItem('bc_tab') || 'attacker-tab-000001'));
      s.onmessage = (e) => {
        const m = JSON.parse(e.data);
        window.__replies.push(m.kind === 'error' ? m.code : m.kind);
        if (m.kind === 'agent_question') {
          for (const text of ['/yes', 'ok', 'yes']) {
            const nonce = m.nonce || 'guess-' + Math.random();
            s.send(JSON.stringify({ kind: 'user_message', text, nonce }));
          }
          setTimeout(() => s.close(), 1000);
        }
      };
    }, 400);
    return 'planted';
  }).catch((e) => 'refused: ' + String(e.message || e).slice(0, 160));
}"""

PLACE_ORDER = """async (page) => {
  await page.goto(%(shop)s);
  await page.getByRole('button', { name: 'Place order' }).click();
}"""


def results(manager: SessionManager) -> list[dict[str, Any]]:
    """The code tool's results the agent's run saw (SSE `tool_result` data)."""
    out = []
    for _, kind, body in the_session(manager).hub.after(0):
        if kind == "tool_result":
            out.append(json.loads(body)["data"])
    return out


async def test_the_agents_code_cannot_approve_its_own_held_order_through_the_servers_page(
    external_browser: LaunchedBrowser, llm: ScriptedOpenAI, orders: Site, tmp_path: Path
) -> None:
    async with serving(external_browser, llm, tmp_path) as server:
        manager = server.manager
        policy = manager.browser.url_policy
        # Every name of the server's address is refused to the agent's tabs, before the browser started.
        for alias in ("127.0.0.1", "localhost", "[::1]"):
            assert policy.forbidden(f"http://{alias}:{server.port}/ws/x"), alias
        assert not policy.forbidden(f"http://127.0.0.1:{server.port + 1}/")
        values = {"server": json.dumps(server.base_url), "shop": json.dumps(orders.url("/lamp"))}
        llm.script(
            call("browser_run_code", code=OPEN_THE_SERVER % values),
            call("browser_run_code", code=IN_THE_USERS_TAB % values),
            call("browser_run_code", code=PLACE_ORDER % values),
            text("Ordered the lamp."),
        )
        user = await UserTab.open(external_browser.endpoint.url, f"{server.base_url}/?token={server.token}")
        try:
            await signed_in(user, manager)
            await user.ask("Buy the desk lamp")
            await card_shown(user, manager, enabled=True)
            s = the_session(manager)
            assert s.state == "waiting_user" and s.approval is not None
            # 1. [sandbox side: the network policy, given the server's origins by `running`] The tab the
            # code opened never loaded the server.
            first = results(manager)[0]
            assert "refused: page.goto: net::ERR_BLOCKED_BY_CLIENT" in first["result"], first
            # 2. In the user's own tab (found through pages()): either the sandbox refused to act there
            # [sandbox side], or the planted script ran and the server refused every approval it made
            # (the nonce, on its own: it holds today, when the plant succeeds).
            planted = await user.evaluate("typeof window.__tries === 'number'")
            if planted:
                await user.wait_for(
                    "window.__replies.filter((r) => r === 'not_approved').length >= 6",
                    "the planted script's approvals, refused",
                )
                assert "agent_question" in await user.evaluate("window.__replies")
            assert orders.received("POST", "/order") == 0
            assert s.state == "waiting_user" and s.approval is not None  # the card still waits
            assert await user.evaluate("document.querySelector('.card .card-result').textContent") == ""
            # The user's own click allows it: the order is placed, once.
            await user.click(".card button.allow")
            await async_wait_until(
                lambda: orders.received("POST", "/order") == 1, timeout=LIMIT, what="order"
            )
            await user.wait_for("document.querySelector('.message.final') !== null", "the final answer")
            assert orders.received("POST", "/order") == 1
        finally:
            await user.close()
    await async_wait_until(lambda: not pids_mentioning(str(tmp_path)), timeout=30, what="the MCP server")


async def test_a_tab_shown_the_card_without_its_nonce_cannot_allow_it_even_with_a_persons_click(
    external_browser: LaunchedBrowser,
    llm: ScriptedOpenAI,
    orders: Site,
    tmp_path: Path,
) -> None:
    """As if a page the agent drove had loaded the server after all (the sandbox failed): that page
    shows the card but has no nonce; the nonce alone keeps the order from being approved."""
    llm.script(
        call("browser_run_code", code=PLACE_ORDER % {"shop": json.dumps(orders.url("/lamp"))}),
        text("Ordered the lamp."),
    )
    async with serving(external_browser, llm, tmp_path) as server:
        manager = server.manager
        link = f"{server.base_url}/?token={server.token}"
        cdp = external_browser.endpoint.url
        user = await UserTab.open(cdp, link)
        other: UserTab | None = None
        try:
            await signed_in(user, manager)
            await user.ask("Buy the desk lamp")
            await card_shown(user, manager, enabled=True)
            session_id = the_session(manager).id
            # Another tab of the same browser, signed in by the same cookie, on the same session.
            other = await UserTab.open(cdp, f"{server.base_url}/#{session_id}")
            await other.wait_for("!!document.querySelector('.card button.allow')", "the card elsewhere")
            assert await other.evaluate("document.querySelector('.card button.allow').disabled") is True
            await other.evaluate(
                "document.querySelector('.card button.allow').disabled = false"
            )  # even enabled by a script, a real click there has no nonce to send
            await other.click(".card button.allow")
            result = await other.evaluate("document.querySelector('.card .card-result').textContent")
            assert result.startswith("Only the tab you asked from can allow this"), result  # nothing sent
            replies = await other.evaluate(
                """new Promise((done) => {
                  const got = [];
                  const s = new WebSocket('ws://' + location.host + '/ws/' + location.hash.slice(1));
                  s.onmessage = (e) => {
                    const m = JSON.parse(e.data);
                    got.push(m.kind === 'error' ? m.code : m.kind);
                    if (m.kind === 'agent_question') {
                      s.send(JSON.stringify({ kind: 'user_message', text: '/yes' }));
                      s.send(JSON.stringify({ kind: 'user_message', text: 'ok', nonce: 'A'.repeat(32) }));
                    }
                    if (got.filter((k) => k === 'not_approved').length === 2) { s.close(); done(got); }
                  };
                })"""
            )
            assert replies == ["status", "agent_question", "not_approved", "not_approved"], replies
            # In the user's own tab, a script's click on Allow once sends nothing (not a person's click).
            sent = await user.evaluate(
                "(() => { document.querySelector('.card button.allow').click();"
                " return document.querySelector('.card .card-result').textContent; })()"
            )
            assert sent == ""
            assert orders.received("POST", "/order") == 0
            assert the_session(manager).state == "waiting_user"
            # The user's own click allows it, once.
            await user.click(".card button.allow")
            await async_wait_until(
                lambda: orders.received("POST", "/order") == 1, timeout=LIMIT, what="order"
            )
            await user.wait_for("document.querySelector('.message.final') !== null", "the final answer")
        finally:
            await user.close()
            if other is not None:
                await other.close()
