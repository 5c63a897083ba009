"""Taking an observation of the page (what it holds and how it reads: `observation.py`).

The app looks over its own DevTools connection (`look.py`, the extractor in an isolated world of its
own), else through the code tool (`observe.js`, the extractor in Playwright's utility world); either way
it is put there by the document's first observation, out of the page's reach. A JavaScript dialog open
in the tab is reported instead of the page.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any, cast

from browser_copilot.browser.guarded import guarded_code
from browser_copilot.browser.look import observer_source
from browser_copilot.browser.observation import (
    REGION_MARKS,
    Dialog,
    Element,
    Fold,
    Observation,
    Region,
    TabInfo,
)
from browser_copilot.browser.results import CodeResult
from browser_copilot.browser.session import BrowserSession
from browser_copilot.errors import BrowserUnavailable
from browser_copilot.safety.redaction import mask_for_model
from browser_copilot.scripts import script_source

_MODAL = re.compile(r'\["(alert|confirm|prompt|beforeunload)" dialog with message "(.*)"\]', re.DOTALL)

SEND_SOURCE = "__bcSendSource"
"""What an observation sent without the page's half answers when its browser context has not kept it."""


def _opts(full: bool, screenshot: bool, settle: bool, banners: bool, extra: dict[str, Any]) -> dict[str, Any]:
    return {"full": full, "screenshot": screenshot, "settle": settle, "banners": banners, **extra}


def observation_code(
    *,
    full: bool = False,
    screenshot: bool = False,
    settle: bool = False,
    banners: bool = True,
    source: bool = True,
    **extra: int | str,
) -> str:
    """The code of one observation (see observe.js): settle, find a consent banner's choice, extract.
    `extra` sets the extractor's budgets (textBudget, maxElements, maxOptions, foldMin...).
    Without `source` the page's half (~50 kB) is not sent: the browser context keeps it from the last
    call that sent it, and the code answers `SEND_SOURCE` when it has not."""
    opts = json.dumps(_opts(full, screenshot, settle, banners, extra))
    version, install = observer_source()
    return (
        script_source("browser_copilot.browser", "observe.js")
        .replace("__OPTS__", opts)
        .replace("__VERSION__", json.dumps(version))
        .replace("__INSTALL__", json.dumps(install) if source else "null")
    )


def parse_dialog(result: CodeResult) -> Dialog | None:
    """The dialog @playwright/mcp holds as its 'modal state', if any."""
    body = result.sections.get("Modal state", "")
    match = _MODAL.search(body)
    return Dialog(match.group(1), match.group(2)) if match else None


def _from_payload(data: dict[str, Any], *, full: bool) -> Observation:
    elements = [
        Element(
            n=int(e["n"]),
            role=str(e["role"]),
            name=mask_for_model(str(e.get("name", ""))),
            # Secrets only (Luhn cards, valid IBANs, keys; secret fields are masked by extractor.js):
            # the user's own details stay visible, so the model can check what it typed.
            state=mask_for_model(str(e.get("state", ""))),
            frame=tuple(int(f) for f in e.get("frame", [])),
            region=cast(Region, e.get("region") if e.get("region") in REGION_MARKS else "view"),
            fold=int(e.get("fold", 0)),
            row=int(e.get("row", 0)),
            context=mask_for_model(str(e.get("context", ""))),
            covered=str(e.get("covered", "")),
            behind=bool(e.get("behind", False)),
        )
        for e in data.get("elements", [])
    ]
    tabs = [
        TabInfo(int(t[0]), bool(t[1]), mask_for_model(str(t[2])), mask_for_model(str(t[3])))
        for t in data.get("tabs", [])
    ]
    return Observation(
        url=mask_for_model(str(data.get("url", ""))),
        title=mask_for_model(str(data.get("title", ""))),
        tabs=tabs,
        elements=elements,
        outline=[mask_for_model(str(line)) for line in data.get("outline", [])],
        counts={k: int(v) for k, v in data.get("counts", {}).items()},
        viewport={k: int(v) for k, v in data.get("viewport", {}).items()},
        full=full,
        screenshot_b64=data.get("screenshot"),
        captcha=bool((data.get("signals") or {}).get("captcha", False)),
        modal=str(data["modal"]) if data.get("modal") else None,
        errors=[str(e) for e in data.get("errors") or []],
        covered=int((data.get("counts") or {}).get("covered", 0)),
        truncated=bool(data.get("truncated", False)),
        folds=[
            Fold(int(f["id"]), mask_for_model(str(f.get("label", ""))), int(f["first"]), int(f["last"]))
            for f in data.get("folds") or []
        ],
        page_ms=float(data.get("page_ms") or 0.0),
        reused=bool(data.get("reused", False)),
        downloads=[
            {k: str(d.get(k, "")) for k in ("name", "url", "state", "path")}
            for d in data.get("downloads", [])
        ],
    )


async def observe(
    session: BrowserSession,
    *,
    full: bool = False,
    screenshot: bool = False,
    settle: bool = False,
) -> Observation:
    """Run the extractor in the agent's tab. A pending dialog is reported instead of the page.

    `settle` (after actions) first waits for the DOM to be quiet, bounded; a blocking consent
    banner is closed by rejecting it. The framework looks over its own DevTools connection
    (`browser.look`) when it can, else through the code tool.

    The look finds the banner and its choice; the click is the guard's, armed, in a guarded call of the
    app's (`close_banner`): a choice that the guard holds (a page's fake cookie layer whose other button
    deletes the account) is not made, and the model is told. Then the page is looked at again.
    """
    observation, found = await _observe(session, full=full, screenshot=screenshot, settle=settle)
    if not found:
        return observation
    result = await session.run_code(guarded_code("async (page) => null", close_banner=True))
    again, _ = await _observe(session, full=full, screenshot=screenshot, settle=True, banners=False)
    if result.ok:
        held = result.notes.get("bannerHeld")
        again.banner_held, again.banner = (str(held), None) if held else (None, result.notes.get("banner"))
    return again


async def _observe(
    session: BrowserSession, *, full: bool, screenshot: bool, settle: bool, banners: bool = True
) -> tuple[Observation, str | None]:
    """One observation (see `observe`), and the consent banner's choice it found, not yet clicked."""
    started = time.perf_counter()
    # The settle's quiet time counts from the end of the last code call (the action), not from now.
    since = round((time.monotonic() - session.call_ended) * 1000) if settle and session.call_ended else 0
    if not screenshot:
        version, install = observer_source()
        opts = {
            **_opts(full, screenshot, settle, banners, {"since": since}),
            "salt": session.seen_secrets.salt,
        }
        data = await session.look_payload(opts, version, install)
        if data is not None:
            session.seen_secrets.learn(data.get("secretDigests") or [])
            observation = _from_payload(data, full=full)
            observation.extract_ms = (time.perf_counter() - started) * 1000
            return observation, _found(data)
    begun = session.downloads_begun()

    def code(source: bool) -> str:
        return observation_code(
            full=full,
            screenshot=screenshot,
            settle=settle,
            banners=banners,
            source=source,
            since=since,
            salt=session.seen_secrets.salt,
        )

    result = await session.run_code(code(False), idempotent=True)
    if result.ok and result.value == SEND_SOURCE:  # the page's half goes with it this time
        result = await session.run_code(code(True), idempotent=True)
    elapsed = (time.perf_counter() - started) * 1000
    dialog = parse_dialog(result)
    if dialog is not None:
        tabs = [TabInfo(t.index, t.current, t.url, t.title) for t in (result.tabs or [])]
        current = next((t for t in tabs if t.current), None)
        return Observation(
            url=current.url if current else (result.page_url or ""),
            title=current.title if current else (result.page_title or ""),
            tabs=tabs,
            elements=[],
            outline=[],
            counts={},
            viewport={},
            full=full,
            dialog=dialog,
            extract_ms=elapsed,
        ), None
    if not result.ok or not isinstance(result.value, dict):
        raise BrowserUnavailable(f"the page could not be observed: {result.error or result.value!r}")
    session.look.learned(result.value, begun)
    session.seen_secrets.learn(result.value.get("secretDigests") or [])
    observation = _from_payload(result.value, full=full)
    observation.extract_ms = elapsed
    return observation, _found(result.value)


def _found(data: dict[str, Any]) -> str | None:
    found = data.get("banner_found")
    return str(found) if found else None
