"""The effect gate (F46): one gate at the effect, for every request of the agent's tabs.

Every input of the model's code is judged first by the guard in the page (guard.js); one that may go
opens a *window* for its tab: the guard tells it here, through a binding only its isolated world has
(`__bcEffect`), with how the input was allowed — `structure` (the control commits nothing, by what it
is), `judged` (the safety judge found it ordinary) or `approved` (the user's /yes). Which of the last
two a window is, this side decides from the one-time tokens it issued (`issue`); a window that names a
token this side never issued, or spent, counts as `structure`.

A request that commits something (`safety.addresses.request_commits`: a DELETE, an address that acts,
a write whose path or body names an order, a payment, a message sent...) is *held* when it falls in a
window that was not approved and whose control was not judged to do that very thing: refused before
it leaves (fail closed: nothing reaches the site), with a card made from the request itself, and the
input that caused it is done again, once, if the user says /yes (`HeldRequest.action`). A reload or a
history step that would send a form again is held the same way, and so is a form submitted by an input
that pressed no control (a choice, a text or a tick whose page submits the form when it changes: the
guard judged the input, not the form). Requests the page sends by itself,
outside any window (heartbeats, autosave, its analytics), are its own: the model's code cannot cause
them (it holds no timers, listeners or page code), and asking about them would teach "yes".

A window lasts until the next input of its tab, or `TAIL_SECONDS` after its call ended. A tab an input
opened (a popup, a form or a link with target=_blank) is covered by its opener's window until an input
of its own (`RequestGate._window_tab`).
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

from browser_copilot.safety.addresses import request_commits, together
from browser_copilot.safety.redaction import looks_secret, redact

TAIL_SECONDS = 2.0
"""How long after its call a window still covers what its input set off (a debounced send)."""

Allowed = Literal["structure", "judged", "approved"]
_READS = frozenset({"GET", "HEAD", "OPTIONS"})
_OWN_KINDS = frozenset({"navigate", "upload"})
"""Windows whose form submission is their own doing: a navigation (judged as the address, or sent again:
held as that) and an upload of a file the user named (a form that sends it as it is chosen)."""
_SECRET_KEYS = ("pass", "pwd", "otp", "pin", "cvv", "cvc", "csc", "card", "iban", "token", "secret", "code")


@dataclass
class Window:
    """The window of one input that the guard let go."""

    id: str
    tab: str
    kind: str
    allowed: Allowed
    site: str | None = None
    category: str | None = None
    name: str | None = None
    action: dict[str, Any] | None = None
    context: int | None = None
    """The guard world's execution context in the tab (to tell the running call, `NetworkGuard`)."""
    closes: float | None = None
    opened: float = field(default_factory=time.monotonic)
    """When the input was let go (monotonic): a document that began loading before it met the input."""
    scope: str | None = None
    """For an approved window whose card the effect gate made from a request: that request's category
    (`issue`). A request that commits something else in it (the press that sent the order also deletes the
    account) was not asked. A card about a control has none: its words and the request's address name one
    action in two vocabularies ("Delete account" is a cancel, `POST /delete` a delete)."""
    activates: bool = True
    """The input pressed a control (a button, a link, a form's default button); False: it only changed a
    field or the view (a text, a choice, a tick, a hover), so a form it submits was never judged."""


@dataclass(frozen=True)
class HeldRequest:
    """A request the gate refused, as the card shows it, and the input to do again after a /yes."""

    id: str
    window: str
    method: str
    url: str
    site: str
    path: str
    category: str
    because: str
    fields: tuple[tuple[str, str], ...] = ()
    control: str | None = None
    action: dict[str, Any] | None = None
    beyond: str | None = None
    """Held in an approved window, because it commits something else than the card the user allowed
    (that card's category): no card of its own (its /yes would replay the allowed input a second time)."""

    def to_event(self) -> dict[str, Any]:
        """The held entry as the agent reads it (the shape of the guard's held actions)."""
        name = f"{self.method} {self.site}{self.path}"
        return {
            "id": self.window,
            "kind": "request",
            "request": {"method": self.method, "site": self.site, "path": self.path, "because": self.because},
            "action": self.action,
            "facts": {
                "tag": "request",
                "role": "request",
                "name": name,
                "url": self.url,
                "control": self.control,
            },
            "verdict": {
                "destructive": True,
                "category": self.category,
                "reason": f"the request it sent {self.because}",
                "judge": False,
            },
            "values": [list(f) for f in self.fields],
            "amount": None,
            "count": None,
            "details": [["request", f"{self.method} {self.site}{self.path}"]]
            + ([["after", f'"{self.control}"']] if self.control else []),
        }


@dataclass(frozen=True)
class SentRequest:
    """A request an input's window let leave that writes or commits (what really went, for the step)."""

    method: str
    site: str
    path: str
    category: str | None
    allowed: Allowed

    def __str__(self) -> str:
        return f"{self.method} {self.site}{self.path}"


def _fields(body: str, content_type: str) -> tuple[tuple[str, str], ...]:
    """A form's or JSON object's fields, for the card: secrets and personal data masked."""
    pairs: list[tuple[str, str]] = []
    text = body[:20_000]
    if "json" in content_type or text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            pairs = [(str(k), json.dumps(v) if not isinstance(v, str) else v) for k, v in data.items()]
    elif "=" in text:
        pairs = parse_qsl(text, keep_blank_values=True)
    out = []
    for key, value in pairs[:12]:
        secret = any(s in key.lower() for s in _SECRET_KEYS) or looks_secret(value)
        out.append((key[:40], "<masked>" if secret else redact(value)[:80]))
    return tuple(out)


class EffectGate:
    """The windows of the agent's tabs, the tokens this side issued, and the requests it held."""

    def __init__(self) -> None:
        self._windows: dict[str, Window] = {}
        self._issued: dict[str, Allowed] = {}
        self._scopes: dict[str, str] = {}
        self._spent: set[str] = set()
        self._held: list[HeldRequest] = []
        self._sent: list[SentRequest] = []
        self._newest = ""
        """The tab whose window opened last."""
        self.calls = 0

    def issue(self, token: str, how: Allowed, scope: str | None = None) -> None:
        """A one-time permission the app hands a call (a user's /yes, or the judge's verdict); `scope`: the
        category of what the user's card showed."""
        if token:
            self._issued[token] = how
            if scope:
                self._scopes[token] = scope

    def opened(self, tab: str, payload: str, context: int | None) -> Window | None:
        """The guard let an input go in `tab` (the binding's payload): its window opens."""
        try:
            data = json.loads(payload)
        except ValueError:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("id"), str):
            return None
        allowed: Allowed = "structure"
        token = data.get("token")
        issued = isinstance(token, str) and token in self._issued and token not in self._spent
        if data.get("allowed") == "allow" and issued:
            allowed = self._issued[str(token)]
            self._spent.add(str(token))
        action = data.get("action")
        category = str(data["category"]) if isinstance(data.get("category"), str) else None
        window = Window(
            id=data["id"][:80],
            tab=tab,
            kind=str(data.get("kind") or "input")[:20],
            allowed=allowed,
            site=str(data["site"]) if isinstance(data.get("site"), str) else None,
            category=category,
            scope=self._scopes.pop(str(token), None) if allowed == "approved" else None,
            name=str(data["name"])[:80] if isinstance(data.get("name"), str) else None,
            action=action if isinstance(action, dict) else None,
            context=context,
            activates=data.get("activates") is not False,
        )
        self._windows[tab] = window
        self._newest = tab
        return window

    def newest_tab(self) -> str | None:
        """The tab of the newest window still open (what a popup that keeps no opener came from)."""
        return self._newest if self._newest and self.window_of(self._newest) is not None else None

    def app_window(self, tab: str, kind: str, allowed: Allowed) -> Window:
        """A window the app opens itself (it answers a page's dialog): until the next input or call end."""
        window = Window(id=f"app-{secrets.token_hex(4)}", tab=tab, kind=kind, allowed=allowed)
        self._windows[tab] = window
        return window

    def call_began(self) -> None:
        self.calls += 1

    def call_ended(self) -> None:
        """The call is over: its windows close `TAIL_SECONDS` from now."""
        self.calls = max(0, self.calls - 1)
        closes = time.monotonic() + TAIL_SECONDS
        for window in self._windows.values():
            if window.closes is None:
                window.closes = closes

    def window_of(self, tab: str) -> Window | None:
        window = self._windows.get(tab)
        if window is None or (window.closes is not None and window.closes < time.monotonic()):
            return None
        return window

    def decide(
        self,
        tab: str,
        *,
        method: str,
        url: str,
        body: str = "",
        content_type: str = "",
        document: bool = False,
    ) -> HeldRequest | None:
        """The held request when this one may not leave, else None (see the module's rule)."""
        window = self.window_of(tab)
        if window is None:
            return None
        verb = method.upper()
        found = request_commits(verb, url, body, content_type)
        again = (window.action or {}).get("name") in ("reload", "goBack", "goForward")
        if found is None and again and document and verb not in _READS:
            found = ("submit", "would send a form again")
        submitted = document and verb not in _READS and not window.activates
        if found is None and submitted and window.kind not in _OWN_KINDS:
            found = ("submit", "would submit a form its input did not press")
        parts = urlsplit(url)
        beyond = (
            window.scope
            if found is not None and window.allowed == "approved" and not together(window.scope, found[0])
            else None
        )
        if beyond is None and (
            found is None
            or window.allowed == "approved"
            or (
                window.allowed == "judged"
                and window.category == found[0]  # the judge looked at this very thing
            )
        ):
            if found is not None or verb not in _READS:
                sent = SentRequest(verb, parts.netloc, parts.path or "/", found and found[0], window.allowed)
                self._sent = [*self._sent[-19:], sent]
            return None
        assert found is not None  # `beyond` is only found with a category
        category, said = found
        because = said if said.startswith("would") else f"{category}s (“{said}”)"
        held = HeldRequest(
            id=secrets.token_hex(6),
            window=window.id,
            method=verb,
            url=url,
            site=parts.netloc,
            path=parts.path or "/",
            category=category,
            because=because,
            fields=_fields(body, content_type.lower()),
            control=window.name,
            action=window.action,
            beyond=beyond,
        )
        self._held.append(held)
        return held

    def sent(self) -> list[SentRequest]:
        """The writing or committing requests inputs' windows let leave since the last time this was
        asked (and forget them)."""
        drained, self._sent = self._sent, []
        return drained

    def held(self) -> list[HeldRequest]:
        """What was held since the last time this was asked (and forget it)."""
        drained, self._held = self._held, []
        return drained


__all__ = ["TAIL_SECONDS", "EffectGate", "HeldRequest", "SentRequest", "Window"]
