"""The session's memory of secret values, by digest (safety/seen_secrets.py): what it masks in a prompt,
what it leaves, and that its digest is the page's (observer.js `digestOf`), byte for byte."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from browser_copilot.agent.conversation import masked
from browser_copilot.safety.seen_secrets import MASK, SeenSecrets, digest
from browser_copilot.scripts import script_source

PASSWORD = "Vq7-export-Pw91"


def seen(*values: str) -> SeenSecrets:
    memory = SeenSecrets()
    memory.learn([digest(memory.salt, v) for v in values])
    return memory


@pytest.mark.parametrize(
    "text",
    [
        f"Page: Welcome — http://shop.test/welcome?user=alice&p={PASSWORD} · whole page",
        f"the title is now «{PASSWORD}»",
        f"Your password was {PASSWORD}.",
        f'["{PASSWORD}", "Continue"]',
        "http://shop.test/?p=p%40ss-w0rd-9",
    ],
    ids=["address", "guillemets", "sentence", "json", "url-encoded"],
)
def test_a_seen_value_is_masked_wherever_it_went(text: str) -> None:
    memory = seen(PASSWORD, "p@ss-w0rd-9")
    out = memory.mask(text)
    assert PASSWORD not in out and "p%40ss-w0rd-9" not in out
    assert MASK in out


@pytest.mark.parametrize(
    "word",
    [
        "id:Tr0ub4dor77",
        "user@Tr0ub4dor77",
        "Tr0ub4dor77…",
        "a-b-c-Tr0ub4dor77-x",
        "Tr0\u200bub4dor77",
        "Ｔｒ０ｕｂ４ｄｏｒ７７",
        "welcome?u=id%3ATr0ub4dor77",
    ],
    ids=["prefixed", "at", "ellipsis", "inside-dashes", "zero-width", "full-width", "encoded-prefix"],
)
def test_a_seen_value_joined_to_other_characters_is_masked(word: str) -> None:
    """The review's probes: the next document writes the value beside other characters, or in other forms
    of the same letters."""
    out = seen("Tr0ub4dor77").mask(f"Signed in as {word} today")
    assert "Tr0ub4dor77" not in out and "ｄｏｒ" not in out and "ub4dor77" not in out, out
    assert out.startswith("Signed in as ") and out.endswith(" today")


def test_what_was_not_seen_stays_and_short_values_are_not_remembered() -> None:
    memory = seen(PASSWORD, "12345")
    text = "Order 12345 of alice: 3 items, total 42.00 EUR, see http://shop.test/orders/12345"
    assert memory.mask(text) == text
    assert SeenSecrets().mask(f"nothing seen: {PASSWORD}") == f"nothing seen: {PASSWORD}"


def test_only_digests_are_kept_never_a_value() -> None:
    memory = SeenSecrets()
    memory.learn([PASSWORD, 42, None, "0" * 15, "g" * 16, digest(memory.salt, PASSWORD)])
    assert len(memory) == 1
    assert PASSWORD not in repr(vars(memory))
    assert SeenSecrets().salt != memory.salt  # a new salt in every session


def test_every_message_of_a_prompt_is_masked_text_parts_too() -> None:
    memory = seen(PASSWORD)
    image = {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AAAA"}}
    prompt = [
        HumanMessage(f"sign in as alice ({PASSWORD})"),
        AIMessage("", tool_calls=[{"name": "browser_run_code", "args": {"code": "x"}, "id": "c1"}]),
        ToolMessage(f'["http://shop.test/welcome?p={PASSWORD}"]', tool_call_id="c1"),
        HumanMessage(content=[{"type": "text", "text": f"Page: {PASSWORD}"}, image]),
        AIMessage("Done."),
    ]
    out = masked(prompt, memory.mask)
    assert PASSWORD not in json.dumps([m.model_dump() for m in out])
    assert out[1] is prompt[1] and out[4] is prompt[4]  # unchanged messages are the same objects
    assert out[3].content[1] == image
    assert out[2].tool_call_id == "c1"


@pytest.mark.parametrize("value", [PASSWORD, "482913", "пароль-Ω7€", "p@ss w0rd"])
def test_the_pages_digest_is_the_sessions(value: str) -> None:
    """observer.js computes the digest in the page; Node runs the same function here."""
    node = shutil.which("node")
    assert node, "node is needed (the MCP server runs on it)"
    source = script_source("browser_copilot.browser", "observer.js")
    found = re.search(r"\n  digestOf\(salt, value\) \{\n.*?\n  \},\n", source, re.S)
    assert found, "observer.js has no digestOf"
    write = "process.stdout.write(o.digestOf(process.argv[1], process.argv[2]));"
    program = f"const o = {{{found.group(0)}}};\n{write}"
    salt = SeenSecrets().salt
    out = subprocess.run([node, "-e", program, salt, value], capture_output=True, text=True, check=True)
    assert out.stdout == digest(salt, value)
