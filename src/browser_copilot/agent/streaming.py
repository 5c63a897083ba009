"""The model's reply, streamed (F62): its text reaches the user while it is generated.

`complete()` streams one model call and returns the whole message. On the way it emits `answer_stream`
events carrying the text so far (not increments, so every consumer redacts whole text and a reconnecting
client needs only the last one):

- at most one per `interval` seconds, plus a last one with `done: true` and `tool_calls`: whether the
  reply turned out to call tools (then the text was a note on the way, not the answer);
- tool calls are never streamed: their arguments arrive in pieces and are shown once complete
  (`tool_call` events of the tools node);
- the trailing word, and a run of digits before it, wait for what follows: a card number, a code or a
  key is never shown half-typed, before the whole of it can be recognised and masked;
- a reply that starts like a tool call written as text (`{`, a code fence, `<tool…`) is not streamed.

A model without streaming gives one chunk: one `done` event, the same result.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.utils import message_chunk_to_message

from browser_copilot.events import Event, EventSink

INTERVAL = 0.08
"""Seconds between two `answer_stream` events (a terminal repaints ~10 times a second; the server's
event buffer stays small)."""
_PENDING_TAIL = re.compile(r"(?:[\d][\d \-./]*)?\S*$")
"""What waits for more text: the unfinished last word, with a run of digits/separators before it."""
_TEXTUAL_CALL = re.compile(r"^\s*(?:[{\[]|```|<\w*tool|<function)")


def visible(text: str) -> str:
    """The part of `text` safe to show while more may follow."""
    match = _PENDING_TAIL.search(text)  # always matches: `\S*$` may be empty
    return text[: match.start()] if match else text


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks
        return "".join(
            str(block.get("text", "")) if isinstance(block, dict) else str(block) for block in content
        )
    return str(content or "")


class AnswerStream:
    """Turns chunks into throttled `answer_stream` events for one model call (`call` numbers it)."""

    def __init__(
        self,
        events: EventSink,
        *,
        call: int,
        interval: float = INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.events = events
        self.call = call
        self.interval = interval
        self.clock = clock
        self.text = ""
        self.shown = ""
        self._last = float("-inf")
        self._calls = False

    def add(self, chunk: AIMessageChunk) -> None:
        self.text += _text(chunk.content)
        if chunk.tool_call_chunks:
            self._calls = True
        if self._calls or _TEXTUAL_CALL.match(self.text):
            return
        now = self.clock()
        if now - self._last < self.interval:
            return
        shown = visible(self.text)
        if shown.strip() and shown != self.shown:
            self._emit(shown, done=False)
            self._last = now

    def finish(self, message: AIMessage) -> None:
        """The last event: the whole text, and whether the reply calls tools."""
        text = _text(message.content)
        calls = bool(message.tool_calls or message.invalid_tool_calls)
        if self.shown or (text.strip() and not calls and not _TEXTUAL_CALL.match(text)):
            self._emit(text, done=True, tool_calls=calls)

    def _emit(self, text: str, *, done: bool, tool_calls: bool = False) -> None:
        self.shown = text
        data: dict[str, Any] = {"call": self.call, "text": text, "done": done}
        if done:
            data["tool_calls"] = tool_calls
        self.events(Event("answer_stream", data))


async def complete(
    model: BaseChatModel, tools: Sequence[Any], prompt: Sequence[BaseMessage], stream: AnswerStream
) -> AIMessage:
    """One model call with `tools` bound, streamed into `stream`; the whole reply."""
    whole: AIMessageChunk | None = None
    message: BaseMessage | None = None
    async for chunk in model.bind_tools(tools).astream(list(prompt)):
        if isinstance(chunk, AIMessageChunk):
            whole = chunk if whole is None else whole + chunk
            stream.add(chunk)
        elif isinstance(chunk, AIMessage):  # a model that cannot stream gives its whole reply
            message = chunk
    if message is None:
        message = message_chunk_to_message(whole) if whole is not None else AIMessage(content="")
    assert isinstance(message, AIMessage)
    stream.finish(message)
    return message
