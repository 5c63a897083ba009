"""Parsing the code tool's markdown answers (texts as @playwright/mcp 0.0.83 sends them)."""

from __future__ import annotations

import json
import re

from browser_copilot.agent.signals import result_text
from browser_copilot.browser.results import UNDEFINED, CodeResult, Tab, parse_code_result

RESULT = (
    '### Result\n{"a":[1,"x"]}\n### Ran Playwright code\n```js\nawait (async (page) => '
    "{ return {a:[1,'x']}; })(page);\n```\n### Page\n- Page URL: about:blank\n- Page Title: Hi"
)


def test_a_returned_value_is_decoded_from_json() -> None:
    result = parse_code_result(RESULT, is_error=False)
    assert result.ok
    assert result.returned
    assert result.value == {"a": [1, "x"]}
    assert (result.page_url, result.page_title) == ("about:blank", "Hi")
    assert result.tabs is None


def test_no_result_section_means_undefined_not_none() -> None:
    text = "### Ran Playwright code\n```js\nawait (async (page) => {})(page);\n```"
    result = parse_code_result(text, is_error=False)
    assert result.ok
    assert result.value is UNDEFINED
    assert not result.returned
    assert parse_code_result("### Result\nnull", is_error=False).value is None


def test_errors_lose_their_ansi_escapes() -> None:
    text = (
        "### Error\nTimeoutError: locator.click: Timeout 500ms exceeded.\nCall log:\n"
        "\x1b[2m  - waiting for locator('#nope')\x1b[22m\n"
    )
    result = parse_code_result(text, is_error=True)
    assert not result.ok
    assert result.error is not None
    assert "\x1b" not in result.error
    assert result.error.startswith("TimeoutError: locator.click: Timeout 500ms exceeded.")
    assert "waiting for locator('#nope')" in result.error


def test_an_error_flag_without_sections_keeps_the_whole_text() -> None:
    result = parse_code_result("connect ECONNREFUSED 127.0.0.1:9222", is_error=True)
    assert not result.ok
    assert result.error == "connect ECONNREFUSED 127.0.0.1:9222"


def test_open_tabs_are_parsed_with_the_current_one() -> None:
    text = (
        "### Result\n2\n### Ran Playwright code\n```js\n...\n```\n### Open tabs\n"
        "- 0: (current) [Hi](about:blank)\n- 1: [Shop [sale]](https://shop.test/a?b=1)\n"
        "### Page\n- Page URL: about:blank\n- Page Title: Hi"
    )
    result = parse_code_result(text, is_error=False)
    assert result.value == 2
    assert result.tabs == [
        Tab(0, "Hi", "about:blank", True),
        Tab(1, "Shop [sale]", "https://shop.test/a?b=1", False),
    ]


def test_a_result_that_is_not_json_is_kept_as_text() -> None:
    result = parse_code_result("### Result\nnot json at all", is_error=False)
    assert result.value == "not json at all"


def test_a_long_tool_result_is_cut_at_a_word_and_says_how_much_is_left() -> None:
    value = {"http://wiki.test/Tarnwick": ["Population (2025 estimate) 48,210 " * 200]}
    text = result_text(CodeResult(ok=True, value=value))
    assert len(text) < 4200
    cut = re.search(r"… \[cut: ([\d,]+) more characters; return less, or a part of it\]$", text)
    assert cut is not None
    shown = text[len("Returned: ") : cut.start()]
    assert shown.endswith(("estimate)", "48,210", "Population", "(2025"))  # a whole word, not a piece
    assert len(shown) + int(cut.group(1).replace(",", "")) == len(json.dumps(value, ensure_ascii=False))
