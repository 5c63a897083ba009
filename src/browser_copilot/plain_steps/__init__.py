"""Each event in one short sentence for a person: "Clicked “Place order”", "Typed the address into
5 fields", "Opened Checkout (shop.test)", "Asked you to confirm “Place order” on shop.test".

The sentence goes into the event's data as `summary` at the source (`narrate`, wrapped around the
agent's event sink by `AgentContext`), so the terminal, the logs, the SSE stream and the web page all show
the same words. It is derived from what the event really carries: the Playwright calls of the model's
code (getByRole / getByText / getByLabel / locator / `el(N)` + click / fill / press / selectOption /
check / goto ...), the names of the numbered elements it aims at (`targets`, from the observation), the
observation's title and address, the tool result's `ok` and text, the policy's verdicts. Code it cannot
read gets a generic, honest sentence, never a dump of the code.

Typed values are shown only after the step ran, only when short, and never when the field or the value
looks secret (a password, a code, a card number): the downstream redaction masks e-mails, phones and
cards in whatever is left.

`summary` per kind: `tool_call` says what the step is doing now ("Clicking “Next”"), `tool_result` what
it did ("Clicked “Next”", "Could not click “Next”: it did not appear in time"); `tool_result` also gets
`outcome` (done | failed | held | refused) and `policy_result` gets `outcome` (allowed | declined |
refused | judged_safe | judged_risky), so every consumer shows the same true status. `node` says what the
agent is doing now ("checking the action"), for status lines. `answer_stream` and `usage` get none.
"""

from __future__ import annotations

from browser_copilot.plain_steps.actions import (
    LOCATOR_BUILDERS,
    LOOKS,
    PASS_THROUGH,
    READS,
    ROLE_WORDS,
    SELECTOR_FIRST,
    TAG_WORDS,
    Action,
    Target,
    code_actions,
    humanise,
    selector_target,
)
from browser_copilot.plain_steps.narrator import NODE_WORDS, STOP_WORDS, NarratedSink, Narrator, narrate
from browser_copilot.plain_steps.tokens import (
    MAX_CODE,
    SUMMARY_LIMIT,
    Seg,
    Tok,
    one_line,
    plural,
    quoted,
    shorten,
    tokens,
)
from browser_copilot.plain_steps.words import (
    ADDRESS_WORDS,
    CONTACT_WORDS,
    KEY_NAMES,
    SECRET_WORDS,
    code_phrases,
    element_targets,
    error_reason,
    forms,
    merged,
    outcome_of,
    thing,
)

__all__ = [
    "ADDRESS_WORDS",
    "CONTACT_WORDS",
    "KEY_NAMES",
    "LOCATOR_BUILDERS",
    "LOOKS",
    "MAX_CODE",
    "NODE_WORDS",
    "PASS_THROUGH",
    "READS",
    "ROLE_WORDS",
    "SECRET_WORDS",
    "SELECTOR_FIRST",
    "STOP_WORDS",
    "SUMMARY_LIMIT",
    "TAG_WORDS",
    "Action",
    "NarratedSink",
    "Narrator",
    "Seg",
    "Target",
    "Tok",
    "code_actions",
    "code_phrases",
    "element_targets",
    "error_reason",
    "forms",
    "humanise",
    "merged",
    "narrate",
    "one_line",
    "outcome_of",
    "plural",
    "quoted",
    "selector_target",
    "shorten",
    "thing",
    "tokens",
]
