"""A scripted chat model for graph tests: replies in order, records what it was sent.

`FakeMessagesListChatModel` cannot `bind_tools`; this subclass can (tools are ignored: the script
decides). Replies may be callables of the prompt, to answer from what the model was shown.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import Field

Reply = AIMessage | Callable[[list[BaseMessage]], AIMessage]
_ids = itertools.count(1)


def call(name: str, **args: Any) -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": name, "args": args, "id": f"call_{next(_ids)}", "type": "tool_call"}]
    )


def code(source: str) -> AIMessage:
    return call("browser_run_code", code=source)


def goto(url: str) -> AIMessage:
    """The model opens `url` with `page.goto` in its code."""
    return code(f"async (page) => {{ await page.goto('{url}') }}")


def say(text: str) -> AIMessage:
    return AIMessage(content=text)


class ScriptedModel(BaseChatModel):
    """Replies in order; a subclass that answers otherwise (per session, from the conversation) overrides
    `_next` alone."""

    replies: list[Any] = Field(default_factory=list)
    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    index: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, BaseMessage]:
        return self

    def _next(self, messages: list[BaseMessage]) -> AIMessage:
        self.prompts.append(list(messages))
        if self.index >= len(self.replies):
            return AIMessage(content="(script exhausted)")
        reply = self.replies[self.index]
        self.index += 1
        message = reply(messages) if callable(reply) else reply
        # Like a real model: every reply, even a repeated one, has its own tool call ids.
        calls = [{**c, "id": f"call_{next(_ids)}"} for c in message.tool_calls]
        return AIMessage(content=message.content, tool_calls=calls)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._next(messages))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._next(messages))])
