"""The web page's pictures for the docs (a script, not a test): `docs/screenshots/web-*.png`.

`main.py serve` runs as a child process over a headless Chromium of the script's (the agent's browser),
with the scripted OpenAI-compatible model and the test pages (`tests/support`), as `server_load.py` does.
The web page is opened in a second headless Chromium, driven by Playwright as a person would: a task,
the confirmation card and the live view at desktop (1280×800) and phone (390×844) width, the large live
view, and the chat after Allow once and a reload. Usage:
  uv run python bench/web_screenshots.py [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

from playwright.async_api import Page, async_playwright

from common import bench_browser

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.openai_server import ScriptedOpenAI, call, text  # noqa: E402
from tests.support.pages import PageServer  # noqa: E402

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
LIMIT = 60_000  # ms a page condition may take


def script(llm: ScriptedOpenAI, pages: PageServer) -> None:
    """Email Alice: open the mail page, fill the message, click Send (a card), then answer."""
    run = "browser_run_code"
    llm.script(
        call(
            "update_working_state",
            current_goal="Email Alice about lunch on Friday",
            plan=["Open the mail page", "Write to Alice", "Send the message"],
        ),
        call(run, code=f"async (page) => {{ await page.goto({json.dumps(pages.url('mail.html'))}) }}"),
        call(
            run,
            code="async (page) => { await page.getByLabel('To').fill('alice@example.test');"
            " await page.getByLabel('Subject').fill('Lunch on Friday');"
            " await page.getByLabel('Message').fill('Friday at 12:30 works for me. See you!'); }",
        ),
        call(run, code="async (page) => { await page.getByRole('button', { name: 'Send' }).click() }"),
        call("update_working_state", progress={"current": 3, "done": [1, 2, 3]}),
        text("Sent the message to **Alice**: “Lunch on Friday”, Friday at 12:30."),
    )


async def until(page: Page, expression: str) -> None:
    await page.wait_for_function(f"() => ({expression})", timeout=LIMIT, polling=100)


async def shoot(page: Page, out: Path, name: str) -> None:
    path = out / f"{name}.png"
    await page.screenshot(path=str(path))
    print(f"{path}: {path.stat().st_size // 1024} KB")


async def pictures(page: Page, printed: str, out: Path) -> None:
    await page.goto(printed)
    await until(page, "document.getElementById('status-text').textContent === 'Idle'")
    await page.get_by_label("Message to the agent").fill("Email Alice that Friday lunch at 12:30 works")
    await page.get_by_role("button", name="Send", exact=True).click()
    await until(page, "!(document.querySelector('.card .allow') || { disabled: true }).disabled")
    await until(page, "!document.getElementById('live-img').hidden")
    await shoot(page, out, "web-desktop-card")

    await page.set_viewport_size(PHONE)
    await page.evaluate("window.scrollTo(0, 0)")
    await shoot(page, out, "web-phone-live")
    await page.evaluate("document.querySelector('.card').scrollIntoView({ block: 'end' })")
    await shoot(page, out, "web-phone-card")
    await page.set_viewport_size(DESKTOP)

    await page.get_by_role("button", name="Allow once").click()
    await until(page, "document.querySelector('.message.final') !== null")
    await until(page, "document.getElementById('status-text').textContent === 'Idle'")
    await page.reload()
    await until(page, "!!document.querySelector('.card[data-decision=allowed]')")
    await until(page, "!!document.querySelector('.message.final')")
    await until(page, "!document.getElementById('live-img').hidden")
    await shoot(page, out, "web-desktop-after-reload")
    await page.get_by_role("button", name="Enlarge").click()
    await until(page, "document.getElementById('live-large').open")
    await shoot(page, out, "web-desktop-live-large")


async def main(args: argparse.Namespace) -> None:
    out: Path = args.out
    with (
        bench_browser("bc-shots-agent-") as (browser, work),
        bench_browser("bc-shots-user-") as (viewer, _),
        PageServer() as pages,
        ScriptedOpenAI(api_key="sk-shots") as llm,
    ):
        script(llm, pages)
        env = {
            **os.environ,
            "CDP_ENDPOINT": browser.endpoint.url,
            "LLM_BASE_URL": llm.base_url,
            "LLM_API_KEY": "sk-shots",
            "LLM_MODEL": "scripted-model",
            "DATA_DIR": str(work / "data"),
            "BROWSER_AUTO_LAUNCH": "false",
            "START_IN_CURRENT_TAB": "false",
            "PACING": "off",
        }
        server = await asyncio.create_subprocess_exec(
            sys.executable,
            str(ROOT / "main.py"),
            "--env-file",
            str(work / "none.env"),
            "serve",
            "--port",
            "0",
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            cwd=ROOT,
        )
        try:
            assert server.stdout is not None
            printed = (await asyncio.wait_for(server.stdout.readline(), 120)).decode().strip()
            if not printed.startswith("http://"):
                raise SystemExit(f"the server did not start: {printed!r}")
            async with async_playwright() as playwright:
                user = await playwright.chromium.connect_over_cdp(viewer.endpoint.url)
                context = await user.new_context(viewport=DESKTOP, color_scheme="light")
                await pictures(await context.new_page(), printed, out)
                await context.close()
        finally:
            if server.returncode is None:
                server.terminate()
            await asyncio.wait_for(server.wait(), 30)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    options = parser.parse_args()
    options.out = Path(options.out).resolve()
    options.out.mkdir(parents=True, exist_ok=True)
    asyncio.run(main(options))
