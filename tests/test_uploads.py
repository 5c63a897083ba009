"""Uploads of a file the user named work on what pages really use (issue 26): a file input, a hidden one
behind a button, and a drop zone, through `upload_file` (the model names the element and the path the
user gave). A path the user did not name is refused, and the code's own `setInputFiles` takes only the
files the app staged for the user."""

from __future__ import annotations

from pathlib import Path

import pytest

from browser_copilot.browser.guarded import guarded_code
from browser_copilot.browser.observing import observe
from browser_copilot.browser.session import BrowserSession
from tests.support.agent import make_runner, value
from tests.support.pages import PageServer
from tests.support.scripted_model import call, say


@pytest.mark.parametrize(
    ("name", "how"),
    [("Passport scan", "input"), ("Choose a file", "button"), ("Drop your invoice here", "drop")],
)
async def test_a_file_the_user_named_is_uploaded_however_the_page_takes_it(
    browser_session: BrowserSession, pages: PageServer, tmp_path: Path, name: str, how: str
) -> None:
    document = tmp_path / "invoice-2026.pdf"
    document.write_bytes(b"%PDF-1.4\n% the user's invoice\n")
    await browser_session.goto(pages.url("uploads.html"))
    observation = await observe(browser_session)
    element = next(e.n for e in observation.elements if e.name.startswith(name))
    runner, _ = make_runner(
        browser_session,
        call("upload_file", element=element, path=str(document)),
        say("Uploaded."),
    )
    outcome = await runner.send(f"Upload {document} to the page")
    said = [str(m.content) for m in outcome.values["messages"] if m.type == "tool"]
    assert any(t.startswith("Uploaded invoice-2026.pdf") for t in said), said
    got = await value(browser_session, "document.getElementById('got').textContent")
    assert f"{how}: invoice-2026.pdf" in got, got


async def test_a_path_the_user_did_not_name_is_not_uploaded(
    browser_session: BrowserSession, pages: PageServer, tmp_path: Path
) -> None:
    await browser_session.goto(pages.url("uploads.html"))
    observation = await observe(browser_session)
    element = next(e.n for e in observation.elements if e.name.startswith("Passport scan"))
    runner, _ = make_runner(
        browser_session, call("upload_file", element=element, path="/etc/passwd"), say("Done.")
    )
    outcome = await runner.send("Upload my passport scan")
    said = [str(m.content) for m in outcome.values["messages"] if m.type == "tool"]
    assert any("the user did not name '/etc/passwd'" in t for t in said), said
    assert await value(browser_session, "document.getElementById('got').textContent") == ""
    refused = await browser_session.run_code(
        guarded_code("async (page) => { await page.locator('#plain').setInputFiles('/etc/hostname') }")
    )
    assert not refused.ok and "Only files the user named" in (refused.error or "")
