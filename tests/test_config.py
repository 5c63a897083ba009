"""Settings: defaults, validation with the field and the fix, `.env` handling, `.env.example` sync."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from browser_copilot.config import env_names, load_settings
from browser_copilot.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent


def problems_for(tmp_path: Path, **values: object) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_settings(None, data_dir=tmp_path, **values)
    return caught.value.problems


def test_defaults_need_no_configuration(tmp_path: Path) -> None:
    settings = load_settings(None, data_dir=tmp_path)
    assert settings.cdp_endpoint == "http://127.0.0.1:9222"
    assert settings.max_tool_steps == 10
    assert settings.browser_auto_launch is True
    assert settings.browser_headless == "auto"
    assert settings.profile_dir == tmp_path / "profile"
    assert settings.llm_configured is False


@pytest.mark.parametrize(
    "key", ["your_api_key_here", "sk-...", "<your key>", "changeme", "xxxxxxxx", "YOUR-KEY"]
)
def test_placeholder_api_keys_are_refused_with_the_fix(tmp_path: Path, key: str) -> None:
    (problem,) = problems_for(tmp_path, llm_api_key=key)
    assert problem.startswith("LLM_API_KEY: looks like a placeholder")
    assert "Fix: set LLM_API_KEY to" in problem


def test_openai_api_key_is_accepted_as_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-realistic-0123456789")
    settings = load_settings(None, data_dir=tmp_path)
    assert settings.llm_api_key is not None
    assert settings.llm_api_key.get_secret_value() == "sk-proj-realistic-0123456789"


@pytest.mark.parametrize(
    ("field", "value", "env", "says"),
    [
        ("llm_base_url", "api.openai.com/v1", "LLM_BASE_URL", "is not an http(s) URL"),
        ("llm_base_url", "ftp://example.com", "LLM_BASE_URL", "is not an http(s) URL"),
        ("cdp_endpoint", "localhost:9222", "CDP_ENDPOINT", "is not an http(s):// or ws(s):// URL"),
        ("cdp_endpoint", "http://127.0.0.1", "CDP_ENDPOINT", "has no port"),
        ("max_tool_steps", -1, "MAX_TOOL_STEPS", "greater than or equal to 1"),
        ("max_tool_steps", "ten", "MAX_TOOL_STEPS", "valid integer"),
        ("llm_temperature", 3, "LLM_TEMPERATURE", "less than or equal to 2"),
        ("browser_headless", "sometimes", "BROWSER_HEADLESS", "'auto', 'true' or 'false'"),
        ("log_level", "loud", "LOG_LEVEL", "'DEBUG', 'INFO', 'WARNING' or 'ERROR'"),
        ("browser_executable", "/no/such/chrome", "BROWSER_EXECUTABLE", "is not an executable"),
    ],
)
def test_invalid_values_name_the_variable_and_the_fix(
    tmp_path: Path, field: str, value: object, env: str, says: str
) -> None:
    (problem,) = problems_for(tmp_path, **{field: value})
    assert problem.startswith(f"{env}: ")
    assert says in problem
    assert f"Fix: set {env} to " in problem


def test_all_problems_are_reported_at_once(tmp_path: Path) -> None:
    problems = problems_for(tmp_path, max_tool_steps=0, cdp_endpoint="nope", llm_api_key="xxxx")
    assert {p.split(":")[0] for p in problems} == {"MAX_TOOL_STEPS", "CDP_ENDPOINT", "LLM_API_KEY"}


def test_dotenv_values_are_read_and_empty_ones_mean_default(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text("LLM_MODEL=gpt-4.1-mini\nMAX_TOOL_STEPS=\nBROWSER_HEADLESS=yes\n")
    settings = load_settings(env, data_dir=tmp_path)
    assert settings.llm_model == "gpt-4.1-mini"
    assert settings.max_tool_steps == 10
    assert settings.browser_headless == "true"


def test_environment_wins_over_dotenv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = tmp_path / ".env"
    env.write_text("LLM_MODEL=from-file\n")
    monkeypatch.setenv("LLM_MODEL", "from-env")
    assert load_settings(env, data_dir=tmp_path).llm_model == "from-env"


def test_a_misspelt_setting_in_dotenv_is_named_with_a_suggestion(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text("LLM_MODLE=gpt-4.1-mini\nUNRELATED_TOOL_SETTING=1\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(env, data_dir=tmp_path)
    (problem,) = caught.value.problems
    assert "LLM_MODLE" in problem
    assert "did you mean LLM_MODEL?" in problem


def test_paths_expand_the_home_directory(tmp_path: Path) -> None:
    settings = load_settings(None, data_dir="~/bc-data")
    assert settings.data_dir == Path.home() / "bc-data"


def test_env_example_documents_every_setting_and_nothing_else() -> None:
    text = (ROOT / ".env.example").read_text()
    documented = re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", text, flags=re.MULTILINE)
    assert sorted(set(documented) - {"OPENAI_API_KEY"}) == sorted(env_names())


def test_env_example_loads_as_valid_settings(tmp_path: Path) -> None:
    settings = load_settings(ROOT / ".env.example", data_dir=tmp_path)
    assert settings.max_tool_steps == 10


def test_openai_base_url_in_dotenv_is_honoured_like_its_key(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text(
        "OPENAI_BASE_URL=http://127.0.0.1:11434/v1/\nOPENAI_API_KEY=sk-proj-realistic-0123456789\n"
    )
    settings = load_settings(env, data_dir=tmp_path)
    assert settings.llm_base_url == "http://127.0.0.1:11434/v1"
    assert settings.llm_api_key is not None
    assert settings.llm_api_key.get_secret_value() == "sk-proj-realistic-0123456789"


def test_llm_settings_win_over_the_openai_names_wherever_each_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = tmp_path / ".env"
    env.write_text("LLM_BASE_URL=http://127.0.0.1:1234/v1\nLLM_API_KEY=sk-proj-from-the-file-0123\n")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.openai.com/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-for-another-tool-0123")
    settings = load_settings(env, data_dir=tmp_path)
    assert settings.llm_base_url == "http://127.0.0.1:1234/v1"
    assert settings.llm_api_key is not None
    assert settings.llm_api_key.get_secret_value() == "sk-proj-from-the-file-0123"


def test_an_invalid_openai_base_url_is_named_by_the_variable_it_came_from(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text("OPENAI_BASE_URL=api.openai.com/v1\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(env, data_dir=tmp_path)
    (problem,) = caught.value.problems
    assert problem.startswith("OPENAI_BASE_URL: 'api.openai.com/v1' is not an http(s) URL")
    assert "Fix: set OPENAI_BASE_URL to an http(s) URL" in problem


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (
            "XDG_DATA_HOME=/srv/data",
            "read from the environment only, so this line does nothing. Fix: set DATA_DIR",
        ),
        ("DISPLAY=:0", "read from the environment only"),
        ("OPENAI_ORG_ID=org-123", "read from the environment only"),
        ("OPENAI_MODEL=gpt-4.1-mini", "not a setting. Fix: did you mean LLM_MODEL? Rename it."),
    ],
)
def test_a_variable_the_app_would_ignore_in_dotenv_is_pointed_out(
    tmp_path: Path, line: str, says: str
) -> None:
    env = tmp_path / ".env"
    env.write_text(line + "\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(env, data_dir=tmp_path)
    (problem,) = caught.value.problems
    assert problem.startswith(f"{line.split('=')[0]} (in {env}): ")
    assert says in problem
