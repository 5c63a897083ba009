"""The LLM endpoint: discovery, checks with the fix, and the real ChatOpenAI path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from browser_copilot.config import load_settings
from browser_copilot.llm.provider import (
    LlmEndpoint,
    LlmUnavailable,
    build_chat_model,
    check_llm,
    describe_llm_error,
    detect_local,
    resolve_llm,
)
from tests.support.openai_server import ScriptedOpenAI, text


@pytest.fixture
def server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(models=["scripted-model", "other"], api_key="sk-test-123") as running:
        yield running


def endpoint(
    server: ScriptedOpenAI, *, key: str = "sk-test-123", model: str | None = "scripted-model"
) -> LlmEndpoint:
    return LlmEndpoint(server.base_url, SecretStr(key), model, "configured")


def test_a_configured_endpoint_is_checked_against_its_model_list(server: ScriptedOpenAI) -> None:
    assert check_llm(endpoint(server)) == ["scripted-model", "other"]


def test_a_wrong_key_is_reported_as_a_key_problem(server: ScriptedOpenAI) -> None:
    with pytest.raises(LlmUnavailable, match=r"refused the API key .* Fix: check LLM_API_KEY"):
        check_llm(endpoint(server, key="sk-wrong"))


def test_a_model_the_endpoint_does_not_serve_is_named_with_alternatives(
    server: ScriptedOpenAI,
) -> None:
    with pytest.raises(LlmUnavailable, match=r"does not list the model 'gpt-9'.*scripted-model"):
        check_llm(endpoint(server, model="gpt-9"))


def test_a_missing_model_lists_what_is_served(server: ScriptedOpenAI) -> None:
    with pytest.raises(
        LlmUnavailable, match=r"LLM_MODEL is not set\. Fix: set it to one of: scripted-model, other"
    ):
        check_llm(endpoint(server, model=None))


def test_an_endpoint_that_does_not_answer_says_so() -> None:
    dead = LlmEndpoint("http://127.0.0.1:9/v1", None, "m", "configured")
    with pytest.raises(
        LlmUnavailable, match=r"does not answer .* Fix: start the server or correct LLM_BASE_URL"
    ):
        check_llm(dead, timeout=1)


def test_nothing_configured_and_no_local_server_means_no_endpoint(tmp_path: Path) -> None:
    settings = load_settings(None, data_dir=tmp_path)
    assert resolve_llm(settings, detect=False) is None


def test_an_api_key_alone_means_openai(tmp_path: Path) -> None:
    settings = load_settings(
        None, data_dir=tmp_path, llm_api_key="sk-proj-abcdef0123", llm_model="gpt-4.1-mini"
    )
    found = resolve_llm(settings)
    assert found is not None
    assert found.base_url == "https://api.openai.com/v1"


def test_the_chat_model_talks_to_the_configured_endpoint(server: ScriptedOpenAI, tmp_path: Path) -> None:
    settings = load_settings(
        None,
        data_dir=tmp_path,
        llm_base_url=server.base_url,
        llm_api_key="sk-test-123",
        llm_model="scripted-model",
    )
    found = resolve_llm(settings)
    assert found is not None
    server.script(text("hello from the script"))
    reply = build_chat_model(settings, found).invoke("hi")
    assert reply.content == "hello from the script"
    assert server.requests[-1]["model"] == "scripted-model"


def test_a_local_server_is_detected_with_its_first_model() -> None:
    with ScriptedOpenAI(models=["qwen3:8b", "llama3.2"]) as local:
        found = detect_local(servers=(("Ollama", "http://127.0.0.1:9/v1"), ("LM Studio", local.base_url)))
    assert found is not None
    assert (found.source, found.model, found.base_url) == ("LM Studio", "qwen3:8b", local.base_url)
    assert "found automatically" in found.describe()


def test_a_local_server_without_models_is_not_used() -> None:
    with ScriptedOpenAI(models=[]) as local:
        assert detect_local(servers=(("Ollama", local.base_url),)) is None


def failed_call(base_url: str, key: str = "sk-test-123", model: str = "scripted-model") -> openai.APIError:
    """The error a real `ChatOpenAI` call raises against `base_url` (no retries)."""
    chat = ChatOpenAI(model=model, base_url=base_url, api_key=SecretStr(key), max_retries=0, timeout=5)
    with pytest.raises(openai.APIError) as caught:
        chat.invoke("hi")
    return caught.value


def test_a_model_that_does_not_answer_is_explained_with_its_url_and_the_fix_as_doctor_says_it() -> None:
    said = describe_llm_error(failed_call("http://127.0.0.1:9/v1"))
    assert said == (
        "Model call failed: http://127.0.0.1:9/v1 does not answer (connection refused). "
        "Fix: start the server or correct LLM_BASE_URL."
    )
    with pytest.raises(LlmUnavailable) as doctor:
        check_llm(LlmEndpoint("http://127.0.0.1:9/v1", None, "m", "configured"), timeout=1)
    assert said == f"Model call failed: {doctor.value}"  # one wording, written once


def test_a_refused_key_mid_chat_names_the_status_and_the_fix(server: ScriptedOpenAI) -> None:
    said = describe_llm_error(failed_call(server.base_url, key="sk-wrong"))
    assert said == (
        f"Model call failed: {server.base_url} refused the API key (HTTP 401: invalid api key). "
        "Fix: check LLM_API_KEY."
    )


def test_a_wrong_path_or_model_answering_404_says_which_settings_to_check(server: ScriptedOpenAI) -> None:
    said = describe_llm_error(failed_call(f"{server.base_url}/nope", model="gpt-9"))
    assert said.startswith(f"Model call failed: {server.base_url}/nope answered HTTP 404: not found (gpt-9 ")
    assert "Fix: set LLM_MODEL to a model it serves" in said and "LLM_BASE_URL" in said
