"""A server session's runs: `SessionRuns`, the part of `SessionManager` that runs a session's messages
(a mixin: it uses the manager's settings, browser pool, queue and live view, declared below for the type
checker).

A run holds a lease of the browser pool (`browser.pool`) for its whole turn: the first free one is the
app's own browser session, the others are MCP server processes of their own on the same browser. Runs
past the limit wait in a FIFO queue, told their place as `status` with `queued`. A run waiting for the
user (a confirmation card, a question) has ended its turn: it holds nothing and blocks no other run.
A message to a session whose run is active (running or queued) is refused with `busy`: wait for the
answer or cancel. Each session works in a tab of its own, in a window of its own
(`BrowserSession.session_tab`), with the sites of its own task (`Session.sites`: a site named in one
session never becomes part of another's); the first new session starts on the tab chosen when the
browser session opened (the user's page in front, by the terminal's rule, and says so in the chat).
The tabs the app opened for a session (its own tab, and the tabs that appeared while it ran that the
agent worked in or that its tabs opened) are closed when the session is deleted or the server stops,
unless `SERVER_KEEP_TABS`; a tab the app did not open never is.

Approvals come from the user's tab, not from any page that can reach the server: each confirmation card
gets a fresh random nonce (`Approval`), sent only to the browser tab whose message started the run (its
client id, `Session.asker`), kept only in memory here. An approval must carry it (`check_approval`); it
is used up by the run it starts. A card without one (pending from before a restart) can only be
declined."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import secrets
import time
from collections.abc import Coroutine
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from browser_copilot.agent.runner import TurnOutcome
from browser_copilot.agent.storage import remember_session
from browser_copilot.browser.pool import BrowserPool
from browser_copilot.browser.session import BrowserSession
from browser_copilot.config import Settings
from browser_copilot.errors import BrowserError, CopilotError, McpError, SessionBusy
from browser_copilot.events import Event
from browser_copilot.sandbox.cdp import CdpError
from browser_copilot.server.hub import VERSION, for_owner, outgoing
from browser_copilot.server.live import LiveView

if TYPE_CHECKING:
    from browser_copilot.server.queued import QueuedRuns
    from browser_copilot.server.sessions import Session

log = logging.getLogger(__name__)

FINISHING_WAIT = 15.0
"""How long a message waits for a run that has answered to end (`SessionRuns.finishing`)."""


def question_message(pending: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "agent_question",
        "question": str(pending.get("question", "")),
        "pending_kind": str(pending.get("kind", "question")),
        "card": pending.get("card") or {},
        "options": list(pending.get("options") or []),
    }


@dataclass(frozen=True)
class Approval:
    """The proof an approval of the pending card must carry: its nonce, and the tab it was shown in."""

    nonce: str
    client: str


NO_PROOF = (
    "this confirmation was asked before the server started: it can only be refused here; "
    "refuse it and ask again, and the new card can be allowed"
)
NOT_SHOWN = (
    "an approval must answer the card shown in the tab that asked (its nonce): this one does not, "
    "so nothing was approved and the card still waits; allow it with the card's Allow once button in "
    "that tab (a note for the agent can go with it), or refuse it"
)


class SessionRuns:
    """The runs of `SessionManager`'s sessions (see the module's docstring)."""

    settings: Settings
    browser: BrowserSession
    pool: BrowserPool
    queue: list[Session]
    queued: QueuedRuns | None
    live: LiveView
    sessions: dict[str, Session]
    _background: set[asyncio.Task[None]]

    def _tell_drivers(self, s: Session) -> None:
        raise NotImplementedError

    # ----- turns --------------------------------------------------------------------------

    def start(self, s: Session, text: str, *, client: str | None = None) -> None:
        """Run one user message from tab `client` (caller checked `busy`); any card's nonce is used up."""
        s.asker = client
        s.approval = None
        s.active = True
        s.answered = False
        if self.queued is not None:  # a worker runs it; the answer comes through the relay
            s.turn = asyncio.create_task(self.queued.submit(s, text), name=f"job-{s.id}")
            return
        s.turn = asyncio.create_task(self._turn(s, text), name=f"turn-{s.id}")

    async def finishing(self, s: Session) -> None:
        """A run that has given its answer ends in a moment (its tab kept, the session remembered): wait
        for that, up to `FINISHING_WAIT` seconds, so the next message is not refused while the page shows
        the answer already."""
        if s.busy and s.answered and s.turn is not None and not s.turn.done():
            await asyncio.wait({s.turn}, timeout=FINISHING_WAIT)

    def cancel(self, s: Session) -> bool:
        if self.queued is not None:
            return self.queued.cancel(s)
        if not s.busy:
            return False
        assert s.turn is not None
        s.turn.cancel()
        return True

    def _announce_queue(self) -> None:
        for place, waiting in enumerate(self.queue, start=1):
            waiting.hub.send({"kind": "status", "state": "running", "queued": place})

    async def _turn(self, s: Session, text: str) -> None:
        s.state = "running"
        s.updated = time.time()
        self.queue.append(s)
        if self.pool.running + self.pool.waiting >= self.pool.limit:  # no free place: say so
            self._announce_queue()
        self._tell_drivers(s)
        try:
            async with self.pool.lease() as browser:
                self.queue.remove(s)
                self._announce_queue()
                await remember_session(self.settings, s.id)
                outcome = await self._act(s, text, browser)
        except asyncio.CancelledError:
            if s in self.queue:
                self.queue.remove(s)
                self._announce_queue()
            s.cancelled()
            raise
        except SessionBusy as exc:  # another server process on the same database runs it now
            s.state = "idle"
            s.hub.send({"kind": "error", "code": "busy", "message": str(exc)})
            s.hub.send({"kind": "status", "state": "idle"})
            return
        except (BrowserError, McpError) as exc:
            s.state = "error"
            s.hub.send({"kind": "error", "code": "browser", "message": str(exc)})
            s.hub.send({"kind": "status", "state": "error"})
            return
        finally:
            s.active = False  # no await between here and the answer: a client's next message is accepted
            s.updated = time.time()
            self._tell_drivers(s)
        self._answer(s, outcome)
        self._tell_drivers(s)
        with contextlib.suppress(CopilotError):
            await remember_session(self.settings, s.id, goal=outcome.values.get("current_goal") or None)

    async def _act(self, s: Session, text: str, browser: BrowserSession) -> TurnOutcome:
        values = await s.runner.values()
        url = str((values.get("observation") or {}).get("url") or "")
        before = await self._tab_ids()
        # A new session starts where the browser session started (the user's page, as in the terminal).
        claim = not url and browser is self.browser
        tab = await browser.session_tab(s.id, claim_start=claim, target=s.target)
        browser.use_sites(s.sites)
        s.runner.context = replace(s.runner.context, browser=browser)
        s.browser = browser
        try:
            self._worked_in(s)
            if tab.created and browser.agent_target:
                s.opened.add(browser.agent_target)
            if tab.adopted:
                where = f"Working in your tab: {tab.title or '(untitled)'} — {tab.url}"
                s.hub(Event("notice", {"text": where, "to_user": True}))
            elif tab.created and url.startswith(("http://", "https://")):
                await browser.goto(url)  # a session from an earlier process: back where it worked
            return await s.runner.send(text, mode=s.mode)
        finally:
            with contextlib.suppress(BrowserError, McpError):
                await asyncio.shield(browser.keep_tab(s.id))
            self._worked_in(s)
            s.browser = None
            await asyncio.shield(self._count_new_tabs(s, before))
            self._in_background(self.live.retarget(s.id, s.target))

    # ----- tabs -----------------------------------------------------------------------------

    def _worked_in(self, s: Session) -> None:
        """The agent's tab now is the session's (it may have switched tabs)."""
        if s.browser is None:
            return
        target = s.browser.agent_target
        if target and target != s.target:
            s.target = target
            s.worked.add(target)
            if self.live.watched(s.id):
                self._in_background(self.live.retarget(s.id, target))

    def _follow(self, session_id: str, event: Event) -> None:
        """Each event of a session's run: the live view follows the agent to another tab at once."""
        s = self.sessions.get(session_id)
        if s is not None and event.kind == "final":
            s.answered = True
        if s is not None and s.browser is not None and event.kind in ("tool_result", "observation", "notice"):
            self._worked_in(s)

    async def _tab_ids(self) -> set[str] | None:
        try:
            return {t.id for t in await self.live.targets()}
        except CdpError:
            return None

    async def _count_new_tabs(self, s: Session, before: set[str] | None) -> None:
        """Tabs that appeared during the run are the session's when the agent worked in them or one of
        the session's tabs opened them (a tab the user opened meanwhile is not)."""
        if before is None:
            return
        try:
            tabs = await self.live.targets()
        except CdpError:
            return
        for tab in tabs:
            if tab.id in before:
                continue
            if tab.id in s.worked or (tab.opener is not None and tab.opener in s.opened | s.worked):
                s.opened.add(tab.id)

    async def _close_tabs(self, sessions: list[Session]) -> None:
        """Close the tabs the app opened for `sessions` (never another's, never the user's own)."""
        if self.settings.server_keep_tabs:
            return
        others = {t for s in self.sessions.values() if s not in sessions for t in s.opened}
        targets = {t for s in sessions for t in s.opened} - others
        with contextlib.suppress(CdpError):
            closed = await self.live.close_tabs(targets)
            for s in sessions:
                s.opened.difference_update(closed)

    def _in_background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("live view: %s", task.exception())

    def _answer(self, s: Session, outcome: TurnOutcome) -> None:
        # The run's own `status` event came before the browser was given back: a page (re)loaded in between
        # was told "running" by `detail`. The state the session ends in is said again, now that it holds.
        self._answered(s, outcome)
        s.hub.send({"kind": "status", "state": s.state})

    def _answered(self, s: Session, outcome: TurnOutcome) -> None:
        if outcome.interrupt is not None:
            s.state = "waiting_user"
            confirm = outcome.interrupt.get("kind") == "confirm"
            s.approval = Approval(secrets.token_urlsafe(24), s.asker) if confirm and s.asker else None
            nonce, client = (s.approval.nonce, s.approval.client) if s.approval else (None, s.asker)
            s.hub.send_question(question_message(outcome.interrupt), nonce=nonce, client=client)
            return
        s.state = "error" if outcome.stop_reason == "error" else "idle"
        answered = outcome.stop_reason == "answered"
        s.hub.send(
            {
                "kind": "agent_message",
                "text": outcome.text,
                "stop_reason": outcome.stop_reason,
                # As in the `final` event: an answer the app's checks doubt is unverified, with the reasons.
                "verified": answered and bool(outcome.values.get("verified", True)),
                "doubts": [str(d) for d in outcome.values.get("doubts") or []] if answered else [],
            }
        )

    @staticmethod
    def check_approval(s: Session, client: str, nonce: object) -> str | None:
        """Why an approval from tab `client` carrying `nonce` does not answer the pending card, or None."""
        if s.approval is None:
            return NO_PROOF
        if not isinstance(nonce, str) or not nonce:
            return NOT_SHOWN
        same_card = hmac.compare_digest(nonce.encode(), s.approval.nonce.encode())
        same_tab = hmac.compare_digest(client.encode(), s.approval.client.encode())
        return None if same_card and same_tab else NOT_SHOWN

    @staticmethod
    def card_for(s: Session, client: str, question: dict[str, Any]) -> dict[str, Any]:
        """The pending question as tab `client` gets it on connect: the tab that asked sees it as its
        owner (`hub.for_owner`), with the nonce of a card of this process; others redacted."""
        confirm = question.get("pending_kind") == "confirm"
        if s.approval is not None and confirm and s.approval.client == client:
            return for_owner({"v": VERSION, **question, "nonce": s.approval.nonce})
        if s.asker is not None and s.asker == client:
            return for_owner({"v": VERSION, **question})
        return outgoing({"v": VERSION, **question})
