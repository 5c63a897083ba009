"""The chat model: any OpenAI-compatible endpoint through `ChatOpenAI` (F3).

With nothing configured, a local Ollama or LM Studio server answering on its default port is used.
"""

from __future__ import annotations

import contextlib
import json
import re
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


def _plain(reason: object) -> str:
    """`connection refused` from `[Errno 111] Connection refused`."""
    text = re.sub(r"^\[Errno -?\d+\]\s*", "", str(reason).strip()) or "no answer"
    return text[0].lower() + text[1:]


def endpoint_problem(
    base_url: str,
    *,
    status: int | None = None,
    reason: object = None,
    detail: str = "",
    request: str = "/models",
    model: str | None = None,
    timed_out: bool = False,
) -> str:
    """What is wrong with the LLM endpoint and the fix, in one sentence each. `doctor` (through
    `list_models`) and a failed model call (`describe_llm_error`) both say it with these words.

    `status`: the HTTP status it answered; `reason`: why it did not answer at all; `detail`: the
    provider's own message; `request`: the path asked (`/models`, `/chat/completions`)."""
    said = f": {detail[:100]}" if detail else ""
    if status in (401, 403):
        return f"{base_url} refused the API key (HTTP {status}{said}). Fix: check LLM_API_KEY."
    if status == 429:
        return (
            f"{base_url} refused the request: too many requests, or no quota left (HTTP 429{said}). "
            "Fix: wait a minute and try again, or check your plan's quota and billing."
        )
    if status is not None and status >= 500:
        return (
            f"{base_url} failed on its side (HTTP {status}{said}). "
            "Fix: try again later; for a server of your own, see its log."
        )
    if status == 404 and request != "/models":
        which = f" ({model} is not served there?)" if model else ""
        return (
            f"{base_url} answered HTTP 404{said}{which}. Fix: set LLM_MODEL to a model it serves "
            "(`main.py doctor` lists them) and LLM_BASE_URL to the API's base URL (often ending in /v1)."
        )
    if status is not None and request != "/models":
        return (
            f"{base_url} refused the request (HTTP {status}{said}). Fix: check that LLM_MODEL can call "
            "tools; `main.py doctor` checks the endpoint and lists its models."
        )
    if status is not None:
        return (
            f"{base_url}{request} answered HTTP {status}. Fix: check that LLM_BASE_URL is the "
            "API's base URL (it usually ends in /v1)."
        )
    if timed_out:
        return (
            f"{base_url} did not answer within LLM_TIMEOUT. Fix: check that the server is not "
            "overloaded, or raise LLM_TIMEOUT."
        )
    return f"{base_url} does not answer ({_plain(reason)}). Fix: start the server or correct LLM_BASE_URL."


_API_PATHS = ("/chat/completions", "/completions", "/responses", "/embeddings", "/models")


def describe_llm_error(exc: BaseException) -> str:
    """A failed model call (an `openai.APIError`) in plain words: the model's URL, the HTTP status or
    the connection problem, and the fix, as `doctor` says them."""
    import openai  # loaded with the chat model already

    request = getattr(exc, "request", None)
    url = str(request.url) if request is not None else "the model's API"
    base, path = url, "/chat/completions"
    for suffix in _API_PATHS:
        if url.endswith(suffix):
            base, path = url.removesuffix(suffix), suffix
            break
    model: str | None = None
    with contextlib.suppress(AttributeError, ValueError, TypeError):
        asked = json.loads(request.content) if request is not None else None
        model = str(asked["model"]) if isinstance(asked, dict) and asked.get("model") else None
    if isinstance(exc, openai.APITimeoutError):
        problem = endpoint_problem(base, timed_out=True)
    elif isinstance(exc, openai.APIConnectionError):
        # The transport's own error says what happened (`connection refused`, a name not found); the
        # SDK's (and LangChain's wrapper of it) only says "Connection error.".
        cause: BaseException | None = exc
        while isinstance(cause, openai.APIError):
            cause = cause.__cause__ or cause.__context__
        problem = endpoint_problem(base, reason=cause or exc.message)
    elif isinstance(exc, openai.APIStatusError):
        body = exc.body
        detail = body.get("message") if isinstance(body, dict) else body
        problem = endpoint_problem(
            base, status=exc.status_code, detail=str(detail or ""), request=path, model=model
        )
    else:
        problem = (
            f"{base} answered something the app cannot use ({_plain(exc)}). Fix: check that LLM_BASE_URL "
            "is an OpenAI-compatible API; `main.py doctor` checks it."
        )
    return f"Model call failed: {problem}"


def list_models(base_url: str, api_key: SecretStr | None, *, timeout: float = 5.0) -> list[str]:
    """GET `<base_url>/models`; the model ids, or `LlmUnavailable` with the reason and fix."""
    request = urllib.request.Request(f"{base_url}/models")
    if api_key is not None:
        request.add_header("Authorization", f"Bearer {api_key.get_secret_value()}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            payload = json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        raise LlmUnavailable(endpoint_problem(base_url, status=exc.code)) from None
    except TimeoutError:
        raise LlmUnavailable(endpoint_problem(base_url, reason="no answer in time")) from None
    except (urllib.error.URLError, OSError) as exc:
        raise LlmUnavailable(endpoint_problem(base_url, reason=getattr(exc, "reason", exc))) from None
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
    """The endpoint to use: the configured one, else a local server, else None.

    `detect=False`: no network at all (the configured endpoint or None). The chat resolves it so before
    its prompt and runs `detect_local` in the background after it (issue 18: no blocking probe)."""
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
