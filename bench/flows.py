"""Three flows with a scripted model and a scripted safety judge (issue 29): what each costs in model
requests, judge calls, actions and cards, and whether it got the job done.

- shop: a consent banner and a newsletter pop-up, four teas added to the cart in one code call, then
  the checkout's "Place order" (one card, allowed) and, in the same code, a read of the page it led to
  (which the model sees without another request only when the code goes on after the /yes);
- cancel: "Cancel subscription" opens the site's own dialog with the fee; its button cancels (one card);
- options: a transfer form's account chosen by an option label as the observation shortened it.

The model's replies are fixed (the same script for every version of the app), so what differs is what
the app does with them: a version that drops the rest of the code after a judged click leaves items out
of the cart; one that asks twice shows two cards. `--before DIR` runs the same flows in another checkout
of the app (its own `.venv`, this tree's test pages) in the same run and prints both.

    uv run python bench/flows.py [--before /path/to/old/checkout]

Last line: `flows shop_requests=… shop_judge=… shop_done=… cancel_… options_…`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = Path(sys.argv[sys.argv.index("--root") + 1]) if "--root" in sys.argv else HERE.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from langchain_core.messages import AIMessage  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from tests.support.pages import PageServer  # noqa: E402
from tests.support.scripted_model import ScriptedModel, code, goto, say  # noqa: E402

from browser_copilot.agent.context import AgentContext, Limits  # noqa: E402
from browser_copilot.agent.runner import AgentRunner, compile_graph, new_session_id  # noqa: E402
from browser_copilot.browser.launcher import find_executable, launch  # noqa: E402
from browser_copilot.browser.session import BrowserSession  # noqa: E402
from browser_copilot.config import load_settings  # noqa: E402
from browser_copilot.events import EventLog  # noqa: E402
from browser_copilot.safety.judge import Judge  # noqa: E402

FLOWS = ("shop", "cancel", "options")
ADD_FOUR = (
    "async (page) => { const add = page.getByRole('button', { name: 'Grab it' });"
    " for (let i = 0; i < 4; i += 1) await add.nth(i).click(); }"
)


PLACE_AND_READ = (
    "async (page) => { await page.getByRole('button', { name: 'Place order' }).click();"
    " await page.waitForURL('**/orders'); return 'now at ' + page.url().replace(/^https?:\\/\\/[^/]+/, ''); }"
)
"""The order placed and its page read in one call: the model learns where the order went without
another request only when the code goes on after the user's /yes."""


class SafeJudge(ScriptedModel):
    """The judge: an ordinary step, whatever it is asked (the rules hold what commits)."""

    def _next(self, messages: list[Any]) -> AIMessage:
        self.prompts.append(list(messages))
        return AIMessage(content=json.dumps({"destructive": False, "category": "safe", "reason": "ordinary"}))


def script(flow: str, url: Any) -> list[AIMessage]:
    if flow == "shop":
        return [
            goto(url("shop-flow.html")),
            code(ADD_FOUR),
            code("async (page) => { await page.locator('#checkout').click(); }"),
            code(PLACE_AND_READ),
            say("Ordered the four teas."),
        ]
    if flow == "cancel":
        return [
            goto(url("opener-dialog.html")),
            code(
                "async (page) => { await page.locator('#open').click(); await page.locator('#yes').click(); }"
            ),
            say("The subscription is cancelled."),
        ]
    return [
        goto(url("long-options.html")),
        code(
            "async (page) => page.getByLabel('From account')"
            ".selectOption({ label: 'High-Yield Savings •••• 5678 — available…' })"
        ),
        say("Chose the savings account."),
    ]


async def done_check(session: BrowserSession, flow: str) -> str:
    reads = {
        "shop": "async (page) => page.url().endsWith('/orders') ? 'order sent' : 'no order'",
        "cancel": "async (page) => page.evaluate(() => window.__cancelled)",
        "options": "async (page) => page.evaluate(() => document.getElementById('from').selectedIndex)",
    }
    result = await session.run_code(reads[flow], idempotent=True)
    return json.dumps(result.value if result.ok else None, ensure_ascii=False)


async def one(session: BrowserSession, pages: PageServer, flow: str) -> dict[str, Any]:
    model = ScriptedModel(replies=script(flow, pages.url))
    judge = Judge(SafeJudge())
    log = EventLog()
    context = AgentContext(llm=model, browser=session, limits=Limits(), events=log, judge=judge)
    runner = AgentRunner(compile_graph(InMemorySaver()), context, session_id=new_session_id())
    outcome = await runner.send(f"Do the {flow} flow")
    cards = 0
    while outcome.interrupt is not None and outcome.interrupt.get("kind") == "confirm" and cards < 5:
        cards += 1
        outcome = await runner.send("/yes")
    cart = await session.run_code(
        "async (page) => page.evaluate(() => sessionStorage.getItem('cart'))", idempotent=True
    )
    told = " ".join(str(m.content) for m in outcome.values.get("messages", []) if m.type in ("tool", "human"))
    return {
        "seen": "now at /orders" in told,
        "requests": len(model.prompts),
        "judge": judge.calls,
        "actions": int(outcome.values.get("total_steps", 0)),
        "cards": cards,
        "stop": outcome.stop_reason,
        "state": await done_check(session, flow),
        "cart": len(json.loads(cart.value or "[]")) if cart.ok and isinstance(cart.value, str) else None,
    }


async def measure(pages_root: Path) -> dict[str, dict[str, Any]]:
    work = Path(tempfile.mkdtemp(prefix="bench-flows-"))
    browser = launch(
        executable=find_executable(None),
        profile_dir=work / "profile",
        preferred_port=0,
        headless=True,
        log_file=work / "browser.log",
    )
    try:
        with PageServer(pages_root) as pages:
            settings = load_settings(
                None,
                data_dir=work / "data",
                cdp_endpoint=browser.endpoint.url,
                browser_auto_launch=False,
                start_in_current_tab=False,
                pacing="off",
            )
            async with BrowserSession(settings, root=ROOT) as session:
                return {flow: await one(session, pages, flow) for flow in FLOWS}
    finally:
        browser.close()


def before(checkout: Path) -> dict[str, dict[str, Any]] | None:
    """The same flows in another checkout (its own virtual environment), this tree's pages."""
    python = checkout / ".venv" / "bin" / "python"
    done = subprocess.run(
        [
            str(python),
            str(Path(__file__).resolve()),
            "--json",
            "--root",
            str(checkout),
            "--pages",
            str(HERE.parent / "tests" / "pages"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=checkout,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        print(f"(before: the other checkout failed: {done.stderr.strip()[-300:]})")
        return None
    found: dict[str, dict[str, Any]] = json.loads(lines[-1])
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="another checkout of the app to measure in the same run")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--pages", type=Path, default=HERE.parent / "tests" / "pages", help=argparse.SUPPRESS)
    args = parser.parse_args()
    now = asyncio.run(measure(args.pages))
    if args.json:
        print(json.dumps(now))
        return 0
    old = before(args.before) if args.before else None
    print(f"{'flow':8} {'':7} {'model requests':>14} {'judge calls':>11} {'actions':>7} {'cards':>5}  done")
    for flow in FLOWS:
        for label, figures in (("before", (old or {}).get(flow)), ("now", now[flow])):
            if figures is None:
                continue
            done = f"cart {figures['cart']}/4, {figures['state']}" if flow == "shop" else figures["state"]
            if flow == "shop" and "seen" in figures:
                done += ", its page read in the same call" if figures["seen"] else ", its page not read"
            print(
                f"{flow:8} {label:7} {figures['requests']:>14} {figures['judge']:>11} {figures['actions']:>7}"
                f" {figures['cards']:>5}  {figures['stop']}: {done}"
            )
    summary = " ".join(
        f"{flow}_{key}={now[flow][key]}"
        for flow in FLOWS
        for key in ("requests", "judge", "actions", "cards")
    )
    print(f"flows {summary} shop_cart={now['shop']['cart']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
