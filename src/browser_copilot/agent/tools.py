"""The tools the model can call. Their descriptions reach it through `bind_tools` only (F30).

`browser_run_code` is the filtered MCP code tool under its stable name; the others are local:
working-state updates, questions to the user, dialogs, tabs and a full-page observation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, ValidationError

from browser_copilot.agent.memory_tools import MEMORY_TOOLS
from browser_copilot.agent.state import FINAL_PLAN_ITEM, Fact, Progress
from browser_copilot.agent.wordlists import word_pattern


# Tool names are the class names, hence snake_case.
class browser_run_code(BaseModel):
    """Run browser code in the agent's tab and return what it returns.

    `code` is `async (page) => { ... }`. It gets this part of Playwright's API, with Playwright's names
    and behaviour, and nothing else (any other name is undefined):
    - page: goto(url), goBack(), goForward(), reload(), url(), title(), locator(selector),
      getByRole(role, { name }), getByText, getByLabel, getByPlaceholder, getByAltText, getByTitle,
      getByTestId, frameLocator(selector), keyboard.press(key) / type(text), mouse.click(x, y) /
      dblclick / move / down / up / wheel(dx, dy), waitForURL(url), waitForLoadState(),
      waitForTimeout(ms), waitForEvent('popup'), screenshot(), bringToFront(), close(),
      context().pages() / newPage() / waitForEvent('page').
    - locators, and `el(N)` for element [N] of the current observation: click, dblclick, hover, fill,
      clear, press, pressSequentially, check, uncheck, setChecked, selectOption, dragTo(locator),
      focus, scrollIntoViewIfNeeded, setInputFiles (files the user named); reads: innerText,
      textContent, allInnerTexts, allTextContents, getAttribute, inputValue, count, isVisible,
      isHidden, isEnabled, isChecked, isEditable, boundingBox, waitFor; first, last, nth, filter, all,
      and, or, locator, getBy*.
    The code does not run in the page: no evaluate, document or window. Read through locators and
    compute in the function. Every input is checked before it reaches the page; one that commits
    waits for the user's confirmation. Return a small JSON value to read data; afterwards the app
    observes the page again.
    """

    code: str = Field(description="An `async (page) => { ... }` function using the API above.")


class observe_page(BaseModel):
    """Observe the current page again; `full_page=true` lists the whole page, not only the viewport."""

    full_page: bool = Field(default=False, description="List elements and text of the whole page.")


class PlanProgress(BaseModel):
    current: int = Field(description="1-based number of the plan item being worked on now.")
    done: list[int] = Field(default_factory=list, description="Numbers of finished plan items.")
    blocked: list[int] = Field(default_factory=list, description="Numbers of items that cannot be done.")


class FactItem(BaseModel):
    fact: str = Field(description="A short generalisation worth remembering, in your own words.")
    source: str = Field(description="The URL it was learned from.")


class update_working_state(BaseModel):
    """Update the working state: goal, plan (3-6 items, the last answers the user), progress, facts.

    Facts are short generalisations with their source URL: no HTML, no element numbers, no copied
    page text. Replanning keeps the facts already gathered.
    """

    current_goal: str | None = Field(default=None, description="The user's goal, restated.")
    plan: list[str] | None = Field(default=None, description="3-6 steps; the last is answering the user.")
    progress: PlanProgress | None = None
    add_facts: list[FactItem] | None = Field(default=None, description="Facts to add.")


class request_user_confirmation(BaseModel):
    """Ask the user a question and wait for the answer (e.g. which of the open tabs to use)."""

    question: str
    options: list[str] = Field(default_factory=list, description="Choices to offer, if any.")


class hand_over(BaseModel):
    """Ask the user to do something themselves in the browser (sign in, solve a captcha, enter a one-time
    code or card details) and wait until they say they are done. Never ask for the secret itself."""

    what: str = Field(description="What the user should do in the browser, in one or two sentences.")


class handle_dialog(BaseModel):
    """Answer the page's open alert/confirm/prompt dialog (accepting may need the user's /yes)."""

    accept: bool
    prompt_text: str | None = Field(default=None, description="Text for a prompt() dialog.")


class upload_file(BaseModel):
    """Upload a file the user named into element [element]: a file input, the button or label that stands
    for a hidden one, or a drop zone (paths the user did not name are refused)."""

    element: int = Field(description="The element's number in the current observation.")
    path: str = Field(description="The file's path exactly as the user wrote it.")


class read_download(BaseModel):
    """Read the text of a file the page downloaded in your tabs (a CSV, TXT, JSON or PDF), by the name the
    observation reported it under; without a name, the newest finished one."""

    name: str | None = Field(default=None, description="The downloaded file's name, as the observation said.")


class switch_tab(BaseModel):
    """Make tab `index` (from the observation's tab list) the agent's tab."""

    index: int


TOOLS: list[type[BaseModel]] = [
    browser_run_code,
    observe_page,
    update_working_state,
    request_user_confirmation,
    hand_over,
    handle_dialog,
    switch_tab,
    upload_file,
    read_download,
    *MEMORY_TOOLS,
]
TOOL_NAMES = {tool.__name__ for tool in TOOLS}
BROWSER_TOOLS = {
    "browser_run_code",
    "observe_page",
    "handle_dialog",
    "switch_tab",
    "upload_file",
    "read_download",
}
"""Tool calls that count as tool steps (MAX_TOOL_STEPS)."""


class ToolArgsError(ValueError):
    """Arguments the model can fix: the message goes back to it."""


def parse_args(name: str, args: dict[str, Any], *, others: Iterable[str] = ()) -> BaseModel:
    """`args` of built-in tool `name`, validated; `others` are the other tools offered (extra MCP
    servers'), named in the error for an unknown tool so the model can correct the name."""
    schema = next((tool for tool in TOOLS if tool.__name__ == name), None)
    if schema is None:
        offered = ", ".join(sorted(TOOL_NAMES | set(others)))
        raise ToolArgsError(f"unknown tool {name!r}; the tools are: {offered}")
    try:
        return schema.model_validate(args)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or name}: {e['msg']}" for e in exc.errors())
        raise ToolArgsError(f"invalid arguments for {name}: {problems}") from None


_DOM = re.compile(r"<\s*/?\s*[a-z][a-z0-9-]*[\s>/]|data-bc-|querySelector|xpath=|css=", re.IGNORECASE)
_NUMBER_REF = re.compile(r"\[\s*\d+\s*\]|\bel\(\s*\d+\s*\)|\belement\s*#?\s*\d+\b|№\s*\d+", re.IGNORECASE)


def _answering() -> re.Pattern[str]:
    """The words that make a plan item the answer to the user, in many languages (`plan_words.json`)."""
    return word_pattern("plan_words.json")


def check_fact(item: FactItem) -> Fact:
    """A fact is a short generalisation with an http(s) source: no DOM, numbers or copied text."""
    text = item.fact.strip()
    if not text:
        raise ToolArgsError("a fact is empty")
    if _DOM.search(text):
        raise ToolArgsError(f"fact {text[:60]!r} contains HTML or selectors: state what you learned instead")
    if _NUMBER_REF.search(text):
        raise ToolArgsError(
            f"fact {text[:60]!r} refers to an element number: numbers change with every observation"
        )
    if len(text) > 240:
        raise ToolArgsError("a fact is longer than 240 characters: generalise, do not copy page text")
    source = item.source.strip()
    if urlsplit(source).scheme not in ("http", "https"):
        raise ToolArgsError(f"fact source {source!r} is not an http(s) URL")
    return {"fact": text, "source": source}


def check_plan(plan: list[str]) -> list[str]:
    """The plan's items; its last one answers the user (the app adds "Answer the user" unless the
    model's last item already says so, in its own words and language)."""
    items = [step.strip() for step in plan if step.strip()]
    if items and not _answering().search(items[-1]):
        items.append(FINAL_PLAN_ITEM)
    if not 3 <= len(items) <= 6:
        raise ToolArgsError(
            f"a plan has 3-6 items and its last one answers the user; this one has {len(items)}"
        )
    return items


def check_progress(progress: PlanProgress, plan_length: int) -> Progress:
    numbers = [progress.current, *progress.done, *progress.blocked]
    if plan_length and any(not 1 <= n <= plan_length for n in numbers):
        raise ToolArgsError(f"progress refers to items outside the plan (1-{plan_length})")
    return {
        "current": progress.current,
        "done": sorted(set(progress.done)),
        "blocked": sorted(set(progress.blocked)),
    }


MAX_FACTS = 30


def apply_working_state(args: update_working_state, state: dict[str, Any]) -> dict[str, Any]:
    """Validate an update against the current state; returns the state update (or raises)."""
    update: dict[str, Any] = {}
    if args.current_goal is not None and args.current_goal.strip():
        update["current_goal"] = args.current_goal.strip()[:500]
    plan = state.get("plan") or []
    if args.plan is not None:
        plan = check_plan(args.plan)
        update["plan"] = plan
        if args.progress is None:
            update["progress"] = {"current": 1, "done": [], "blocked": []}
    if args.progress is not None:
        update["progress"] = check_progress(args.progress, len(plan))
    if args.add_facts:
        facts: list[Fact] = list(state.get("facts") or [])
        known = {f["fact"].lower() for f in facts}
        for item in args.add_facts:
            fact = check_fact(item)
            if fact["fact"].lower() not in known:
                facts.append(fact)
                known.add(fact["fact"].lower())
        update["facts"] = facts[-MAX_FACTS:]
    if not update:
        raise ToolArgsError("nothing to update: give a goal, a plan, progress or facts")
    return update


def builtin_specs() -> list[dict[str, Any]]:
    """The built-in tools as `bind_tools` sends them (for the tool-schema budget, extras/budget.py)."""
    # Imported here: the chat's start-up loads LangChain in the background (ui/startup.py).
    from langchain_core.utils.function_calling import convert_to_openai_tool

    return [convert_to_openai_tool(tool) for tool in TOOLS]
