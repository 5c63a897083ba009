"""The chat model: any OpenAI-compatible endpoint through `ChatOpenAI` (F3).

With nothing configured, a local Ollama or LM Studio server answering on its default port is used.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import SecretStr

from browser_copilot.config import Settings
from browser_copilot.errors import CopilotError

if TYPE_CHECKING:
    from langchain_openai import ChatOpenAI

OPENAI_URL = "https://api.openai.com/v1"
LOCAL_SERVERS: tuple[tuple[str, str], ...] = (
    ("Ollama", "http://127.0.0.1:11434/v1"),
    ("LM Studio", "http://127.0.0.1:1234/v1"),
)
HOW_TO_CONFIGURE = (
    "No LLM is configured. Set these in .env (see .env.example):\n"
    "  LLM_BASE_URL  an OpenAI-compatible API, e.g.\n"
    "                https://api.openai.com/v1 or https://openrouter.ai/api/v1,\n"
    "                http://127.0.0.1:11434/v1 (Ollama), http://127.0.0.1:1234/v1\n"
    "                (LM Studio)\n"
    "  LLM_API_KEY   your key (not needed for a local server)\n"
    "  LLM_MODEL     a model that can call tools, e.g. gpt-4.1-mini, qwen3:8b\n"
    "A local Ollama or LM Studio server is used automatically when it runs."
)


class LlmUnavailable(CopilotError):
    """The LLM endpoint cannot be used; the message says why and how to fix it."""


@dataclass(frozen=True, slots=True)
class LlmEndpoint:
    base_url: str
    api_key: SecretStr | None
    model: str | None
    source: Literal["configured", "Ollama", "LM Studio"]

    def describe(self) -> str:
        where = "" if self.source == "configured" else f" ({self.source}, found automatically)"
        return f"{self.model or '(no model)'} at {self.base_url}{where}"


def list_models(base_url: str, api_key: SecretStr | None, *, timeout: float = 5.0) -> list[str]:
    """GET `<base_url>/models`; the model ids, or `LlmUnavailable` with the reason and fix."""
    request = urllib.request.Request(f"{base_url}/models")
    if api_key is not None:
        request.add_header("Authorization", f"Bearer {api_key.get_secret_value()}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            payload = json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise LlmUnavailable(
                f"{base_url} refused the API key (HTTP {exc.code}). Fix: check LLM_API_KEY."
            ) from None
        raise LlmUnavailable(
            f"{base_url}/models answered HTTP {exc.code}. Fix: check that LLM_BASE_URL is the "
            "API's base URL (it usually ends in /v1)."
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise LlmUnavailable(
            f"{base_url} does not answer ({reason}). Fix: start the server or correct LLM_BASE_URL."
        ) from None
    except ValueError:
        raise LlmUnavailable(f"{base_url}/models did not answer JSON. Fix: check LLM_BASE_URL.") from None
    data = payload.get("data", []) if isinstance(payload, dict) else []
    return [str(item["id"]) for item in data if isinstance(item, dict) and "id" in item]


def detect_local(
    *, timeout: float = 0.3, servers: tuple[tuple[str, str], ...] = LOCAL_SERVERS
) -> LlmEndpoint | None:
    """The first local Ollama / LM Studio server that answers with at least one model."""
    for name, url in servers:
        try:
            models = list_models(url, None, timeout=timeout)
        except LlmUnavailable:
            continue
        if models:
            source: Literal["Ollama", "LM Studio"] = "Ollama" if name == "Ollama" else "LM Studio"
            return LlmEndpoint(url, None, models[0], source)
    return None


def resolve_llm(settings: Settings, *, detect: bool = True) -> LlmEndpoint | None:
    """The endpoint to use: the configured one, else a local server, else None."""
    if settings.llm_configured:
        base = settings.llm_base_url or OPENAI_URL
        return LlmEndpoint(base, settings.llm_api_key, settings.llm_model, "configured")
    return detect_local() if detect else None


def check_llm(endpoint: LlmEndpoint, *, timeout: float = 5.0) -> list[str]:
    """Raise `LlmUnavailable` unless the endpoint answers and serves the model; returns the models."""
    if endpoint.base_url == OPENAI_URL and endpoint.api_key is None:
        raise LlmUnavailable("LLM_API_KEY is not set for api.openai.com. Fix: set LLM_API_KEY.")
    models = list_models(endpoint.base_url, endpoint.api_key, timeout=timeout)
    if endpoint.model is None:
        sample = ", ".join(models[:8]) or "none listed"
        raise LlmUnavailable(f"LLM_MODEL is not set. Fix: set it to one of: {sample}.")
    if models and endpoint.model not in models:
        sample = ", ".join(models[:8])
        raise LlmUnavailable(
            f"{endpoint.base_url} does not list the model {endpoint.model!r}. "
            f"Fix: set LLM_MODEL to one it serves, e.g. {sample}."
        )
    return models


def build_chat_model(settings: Settings, endpoint: LlmEndpoint) -> ChatOpenAI:
    """`ChatOpenAI` for the endpoint; retries with backoff on transient errors (F59)."""
    from langchain_openai import ChatOpenAI  # heavy: imported when a model is first needed

    if endpoint.model is None:
        raise LlmUnavailable("LLM_MODEL is not set. Fix: set LLM_MODEL.")
    key = endpoint.api_key or SecretStr("not-needed-for-local-servers")
    return ChatOpenAI(
        model=endpoint.model,
        base_url=endpoint.base_url,
        api_key=key,
        temperature=settings.llm_temperature,
        timeout=settings.llm_timeout,
        max_retries=3,
        stream_usage=True,  # the agent streams its replies (F62) and still counts tokens
    )
