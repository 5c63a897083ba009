"""A small site for the security tests: it answers with the HTML a test gives it and records every
request it really received (method, path, body), so a test can tell what the browser sent."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from browser_copilot.browser.guarded import guard_report, guarded_code, replay_code
from browser_copilot.browser.session import BrowserSession
from browser_copilot.sandbox.guard import Allow
from tests.support.waiting import async_wait_until


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    body: str


Pages = Callable[[Request, int], str]
"""What the site answers to a request (its port given, for pages that link to another origin)."""


class Site:
    """A site on 127.0.0.1 (also reachable as `localhost`, another origin); use as a context manager."""

    def __init__(self, pages: Pages) -> None:
        self.requests: list[Request] = []
        self.raw: dict[str, tuple[str, bytes]] = {}
        """Files served as they are, by path: (content type, bytes)."""
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = Request(self.command, self.path, self.rfile.read(length).decode() if length else "")
                site.requests.append(request)
                kind, body = site.raw.get(self.path) or (
                    "text/html; charset=utf-8",
                    pages(request, site.port).encode(),
                )
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def received(self, method: str, prefix: str = "/") -> int:
        """How many `method` requests for paths starting with `prefix` it received."""
        return sum(1 for r in self.requests if r.method == method and r.path.startswith(prefix))

    async def received_once_more(
        self, session: BrowserSession, before: int, method: str = "POST", prefix: str = "/"
    ) -> None:
        """A replayed action's request leaves the page after the replay returns: wait for it, then
        check that a round trip through the session (which a second copy would have preceded)
        brought no other."""
        await async_wait_until(lambda: self.received(method, prefix) > before, what=f"the {method} request")
        assert (await session.run_code("async (page) => page.url()", idempotent=True)).ok
        assert self.received(method, prefix) == before + 1

    def __enter__(self) -> Site:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def reached(site: Site, prefix: str) -> list[str]:
    """The requests under `prefix` the site received ("POST /api/x/orders body")."""
    return [f"{r.method} {r.path} {r.body}".rstrip() for r in site.requests if r.path.startswith(prefix)]


def site_watched(pages: Pages, prefix: str) -> tuple[Any, Any]:
    """A test module's `site` fixture (one site for the module) and its autouse `clean` fixture: no
    request under `prefix` (the site's acting addresses) reaches the site without a card in any test.
    Assign both at the module's top level: `site, clean = site_watched(answer, "/api/x")`."""

    @pytest.fixture(scope="module")
    def site() -> Iterator[Site]:
        with Site(pages) as recorded:
            yield recorded

    @pytest.fixture(autouse=True)
    def clean(site: Site, request: pytest.FixtureRequest) -> Iterator[None]:
        site.requests.clear()
        yield
        if request.node.get_closest_marker("xfail"):  # an expected failure: its own assertion says it
            return
        found = reached(site, prefix)
        assert not found, f"a request reached the site without a card: {found}"

    return site, clean


async def held_then_allowed(session: BrowserSession, code: str) -> dict[str, Any]:
    """Run the model's `code` as the agent would: something must be held (by the guard, or by the effect
    gate); then the user's `/yes`: the held input runs once, and is not held again. The held event."""
    session.held_requests()
    report = guard_report(await session.run_code(guarded_code(code)))
    held_list = [
        *(report.held if report is not None else []),
        *(h.to_event() for h in session.held_requests()),
    ]
    assert held_list, "nothing was held"
    held = held_list[0]
    url = str(held.get("url") or "")
    allow = Allow(names=[url] if held["kind"] == "navigate" and url else [], held=[held["id"]])
    session.issue(allow, "approved")
    replayed = await session.run_code(replay_code(held["id"], held.get("action") or {}, allow))
    assert replayed.ok, replayed.error
    assert guard_report(replayed) is None
    assert not session.held_requests()
    return dict(held)
