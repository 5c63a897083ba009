"""Every code example the model is shown runs against the façade (issue 26): the prompts' code spans and
the code tool's description, on a page whose elements carry the numbers the examples use
(tests/pages/patterns.html), through the real MCP server and Chromium. An example the box refused would
teach the model to write code that fails."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

from browser_copilot.agent.tools import browser_run_code
from browser_copilot.browser.guarded import guard_report, guarded_code
from browser_copilot.browser.session import BrowserSession
from tests.support.pages import PageServer

_SPAN = re.compile(r"`([^`]+)`", re.DOTALL)
_CODE = re.compile(r"\bawait\b|\bpage\.|\bel\(\d+\)")
UPLOAD_PATH = "/path/the/user/named"


def examples() -> list[str]:
    """The code spans of the prompts and of the code tool's description that are code, not a name."""
    texts = [
        f.read_text("utf-8")
        for f in resources.files("browser_copilot.agent.prompts").iterdir()
        if f.name.endswith(".md")
    ]
    texts.append(browser_run_code.__doc__ or "")
    found: list[str] = []
    for text in texts:
        for span in _SPAN.findall(text):
            code = " ".join(span.split())
            if _CODE.search(code) and ("(" in code) and code not in found:
                found.append(code)
    return found


def runnable(example: str, page_url: str, upload: str) -> str:
    """The example as a whole function: a statement or an expression is put in one."""
    code = example.replace(UPLOAD_PATH, upload).replace("goto(url)", f"goto({page_url!r})")
    if code.startswith("async (page) =>"):
        return code
    if code.startswith(("await ", "const ", "return ")):
        return f"async (page) => {{ {code} }}"
    return f"async (page) => {{ return await {code} }}"


EXAMPLES = examples()


def test_the_prompts_have_code_examples() -> None:
    assert len(EXAMPLES) >= 15, EXAMPLES
    assert any("setInputFiles" in e for e in EXAMPLES)
    assert any("el(6).click()" in e for e in EXAMPLES)


@pytest.mark.parametrize("example", EXAMPLES)
async def test_every_example_the_model_is_shown_runs_in_the_box(
    browser_session: BrowserSession, pages: PageServer, tmp_path: Path, example: str
) -> None:
    source = tmp_path / "invoice.pdf"
    source.write_bytes(b"%PDF-1.4\n% an example the user named\n")
    staged = browser_session.stage_upload(source)
    await browser_session.goto(pages.url("patterns.html"))
    code = runnable(example, pages.url("second.html"), str(staged))
    result = await browser_session.run_code(guarded_code(code))
    assert guard_report(result) is None, (example, result)
    assert result.ok, (example, code, result.error)
