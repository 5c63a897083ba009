"""Tool calls written as text are parsed; malformed ones get a reason for the model."""

from __future__ import annotations

from browser_copilot.agent.textual import parse_textual_calls
from browser_copilot.agent.tools import TOOL_NAMES


def test_a_function_call_line_is_parsed() -> None:
    parsed = parse_textual_calls(
        'function_call: name=browser_run_code args={"code": "async (page) => 1"}', TOOL_NAMES
    )
    assert parsed is not None
    assert parsed.error is None
    assert parsed.calls[0]["name"] == "browser_run_code"
    assert parsed.calls[0]["args"] == {"code": "async (page) => 1"}


def test_json_in_a_code_block_is_parsed() -> None:
    text = 'I will look.\n```json\n{"name": "observe_page", "arguments": {"full_page": true}}\n```'
    parsed = parse_textual_calls(text, TOOL_NAMES)
    assert parsed is not None
    assert [(c["name"], c["args"]) for c in parsed.calls] == [("observe_page", {"full_page": True})]


def test_tagged_tool_calls_are_parsed() -> None:
    text = '<tool_call>{"name": "switch_tab", "arguments": {"index": 1}}</tool_call>'
    parsed = parse_textual_calls(text, TOOL_NAMES)
    assert parsed is not None
    assert parsed.calls[0]["args"] == {"index": 1}


def test_plain_text_is_not_a_call() -> None:
    assert parse_textual_calls("The cheapest flight is €45.", TOOL_NAMES) is None


def test_malformed_calls_get_a_reason() -> None:
    broken = parse_textual_calls('function_call: name=browser_run_code args={"code": ', TOOL_NAMES)
    assert broken is not None
    assert broken.calls == []
    assert broken.error is not None
    unknown = parse_textual_calls('```json\n{"name": "click", "arguments": {}}\n```', TOOL_NAMES)
    assert unknown is not None
    assert unknown.error is not None
    assert "no tool named 'click'" in unknown.error
