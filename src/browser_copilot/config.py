"""Settings: one object, read once from the environment and `.env`, then passed down.

Every field is documented in `.env.example` (a test keeps the two in sync). Invalid values fail fast
with a `ConfigError` whose lines name the variable and the fix.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from dotenv import dotenv_values
from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from browser_copilot.errors import ConfigError

HeadlessMode = Literal["auto", "true", "false"]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]
PacingSetting = Literal["off", "human", "auto"]
ServerToken = Literal["keep", "new"]

_PLACEHOLDER = re.compile(
    r"^(your[_-].*|.*[_-]here|<.*>|\{.*\}|x{4,}|\*{3,}|\.{3,}|changeme|change[_-]me|todo|tbd|"
    r"none|null|placeholder|api[_-]?key|sk-(\.\.\.|x+|your.*|\*+)|sk-\.{3}.*)$",
    re.IGNORECASE,
)


SandboxSetting = Literal["auto", "os", "node", "off"]
"""What `MCP_SANDBOX` asks for."""


def normalise_setting(value: object) -> object:
    """`MCP_SANDBOX` values: the levels, plus the former booleans (`true` = auto, `false` = off)."""
    if isinstance(value, bool):
        return "auto" if value else "off"
    if isinstance(value, str):
        lowered = value.strip().lower()
        aliases = {"true": "auto", "1": "auto", "yes": "auto", "on": "auto"}
        aliases |= {"false": "off", "0": "off", "no": "off"}
        return aliases.get(lowered, lowered)
    return value


def default_data_dir() -> Path:
    """`$XDG_DATA_HOME/browser-copilot`, or `~/.local/share/browser-copilot`."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "browser-copilot"


# Fix hints shown with validation errors, by environment variable.
_FIXES: dict[str, str] = {
    "LLM_BASE_URL": "an http(s) URL of an OpenAI-compatible API, e.g. https://api.openai.com/v1 "
    "or http://127.0.0.1:11434/v1 for Ollama",
    "LLM_API_KEY": "your provider's API key (leave it empty for a local server such as Ollama)",
    "LLM_MODEL": "a model name your endpoint serves, e.g. gpt-4.1-mini or qwen3:8b",
    "LLM_TEMPERATURE": "a number from 0 to 2 (0 is the most deterministic)",
    "LLM_VISION": "true or false",
    "LLM_TIMEOUT": "seconds to wait for one LLM answer, a number above 0",
    "CDP_ENDPOINT": "http://127.0.0.1:9222 or a ws://127.0.0.1:PORT/devtools/browser/ID URL",
    "BROWSER_AUTO_LAUNCH": "true or false",
    "BROWSER_EXECUTABLE": "the full path of chrome, msedge or chromium, e.g. /usr/bin/chromium",
    "BROWSER_HEADLESS": "auto (headless only when there is no display), true or false",
    "BROWSER_PROFILE_DIR": "a folder the app may create and own",
    "BROWSER_KEEP_OPEN": "true or false",
    "START_IN_CURRENT_TAB": "true (work in the page you have open) or false (always a tab of its own)",
    "MAX_TOOL_STEPS": "a whole number from 1 to 200",
    "DATA_DIR": "a folder the app may create and write to",
    "LOG_LEVEL": "DEBUG, INFO, WARNING or ERROR",
    "MCP_SANDBOX": "auto (bubblewrap + Node's permission model where available, else the best there is), "
    "os (require bubblewrap), node (Node's permission model only) or off; true = auto, false = off",
    "MCP_SERVERS_FILE": "the path of a JSON file of extra MCP servers (see README, Extra MCP servers), "
    "or leave it empty for DATA_DIR/mcp_servers.json",
    "MCP_SERVERS_TIMEOUT": "seconds from 1 to 600 an extra MCP server may take to answer one call",
    "ALLOWED_DOMAINS": "a comma-separated list of domains, e.g. example.com,shop.example.org",
    "BLOCKED_DOMAINS": "a comma-separated list of domains, e.g. bank.example.com",
    "PACING": "auto (human in your own browser, off in a browser the app launched), human or off",
    "PACING_ACTIONS_PER_MINUTE": "a whole number from 1 to 600 (actions per site per minute)",
    "PACING_SAME_SITE_GAP_MS": "milliseconds from 0 to 60000 between navigations to the same site",
    "DATABASE_URL": "a postgresql://USER:PASSWORD@HOST:PORT/DATABASE URL, or leave it empty for the "
    "embedded SQLite file in DATA_DIR",
    "MEMORY": "on (keep facts you state or confirm for later sessions) or off",
    "SERVER_KEEP_TABS": "true (leave the tabs a web session opened) or false (close them when the session "
    "is deleted or the server stops)",
    "SERVER_TOKEN": "keep (the same token and sign-ins across restarts) or new (a fresh token, every "
    "browser signed out)",
    "JOB_QUEUE": "on (tasks go into the DATABASE_URL job queue, run by `main.py worker` processes) or off "
    "(each server runs its tasks itself)",
    "JOB_STALLED_AFTER": "seconds from 3 to 3600 without a worker's heartbeat before its job is taken again",
    "JOB_SHUTDOWN_GRACE": "seconds from 0 to 600 a worker asked to stop lets its running job go on before it "
    "gives it back to the queue",
    "MAX_PARALLEL_RUNS": "a whole number from 1 to 16 (sessions that run at the same time in one browser)",
    "MCP_IDLE_SECONDS": "seconds from 5 to 86400 an extra browser-tool process may stay idle before it stops",
}


class Settings(BaseSettings):
    """All configuration of Browser Copilot. Environment variables win over `.env`."""

    model_config = SettingsConfigDict(
        env_file=".env",
        env_file_encoding="utf-8",
        env_ignore_empty=True,
        extra="ignore",
        case_sensitive=False,
        validate_default=True,
    )

    llm_base_url: str | None = None
    llm_api_key: SecretStr | None = None
    llm_model: str | None = None
    llm_temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    llm_vision: bool = False
    llm_timeout: float = Field(default=60.0, gt=0.0)

    cdp_endpoint: str = "http://127.0.0.1:9222"
    browser_auto_launch: bool = True
    browser_executable: Path | None = None
    browser_headless: HeadlessMode = "auto"
    browser_profile_dir: Path | None = None
    browser_keep_open: bool = False
    start_in_current_tab: bool = True

    max_tool_steps: int = Field(default=10, ge=1, le=200)
    allowed_domains: str = ""
    blocked_domains: str = ""
    pacing: PacingSetting = "auto"
    pacing_actions_per_minute: int = Field(default=30, ge=1, le=600)
    pacing_same_site_gap_ms: int = Field(default=1500, ge=0, le=60_000)
    data_dir: Path = Field(default_factory=default_data_dir)
    log_level: LogLevel = "INFO"
    mcp_sandbox: SandboxSetting = "auto"
    """How the MCP server (the model's code) is confined: auto, os, node or off (see sandbox.confinement)."""
    mcp_servers_file: Path | None = None
    mcp_servers_timeout: float = Field(default=30.0, ge=1.0, le=600.0)
    database_url: SecretStr | None = None
    memory: bool = True
    """Long-term memory of the user's facts (MEMORY=on|off)."""
    server_keep_tabs: bool = False
    """Server mode: leave the tabs a web session opened when it is deleted or the server stops."""
    server_token: ServerToken = "keep"
    """Server mode: keep the token and the browsers' sign-ins across restarts (DATA_DIR), or start anew."""
    job_queue: bool = False
    """JOB_QUEUE=on: the server and `run --detach` put tasks into the Postgres job queue (`jobs/`)."""
    job_stalled_after: float = Field(default=30.0, ge=3.0, le=3600.0)
    """Seconds without a worker's heartbeat after which its job is taken again by another worker."""
    job_shutdown_grace: float = Field(default=5.0, ge=0.0, le=600.0)
    """Seconds a worker asked to stop (SIGTERM, Ctrl+C) lets its running job go on before giving it back."""
    max_parallel_runs: int = Field(default=3, ge=1, le=16)
    """Sessions that run at the same time in one browser, each in its own window and MCP process."""
    mcp_idle_seconds: float = Field(default=300.0, ge=5.0, le=86_400.0)
    """An extra MCP process (parallel runs) idle this long is stopped (`browser.pool`)."""

    @field_validator("llm_base_url")
    @classmethod
    def _check_llm_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{value!r} is not an http(s) URL")
        return value.strip().rstrip("/")

    @field_validator("llm_api_key")
    @classmethod
    def _check_api_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None:
            return None
        raw = value.get_secret_value().strip()
        if _PLACEHOLDER.match(raw):
            raise ValueError("looks like a placeholder, not a real key")
        if any(ch.isspace() for ch in raw):
            raise ValueError("contains white space; copy the key again without spaces")
        return SecretStr(raw)

    @field_validator("llm_model")
    @classmethod
    def _check_model(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if _PLACEHOLDER.match(value.strip()):
            raise ValueError("looks like a placeholder, not a model name")
        return value.strip()

    @field_validator("database_url")
    @classmethod
    def _check_database_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None:
            return None
        raw = value.get_secret_value().strip()
        if not raw:
            return None
        parts = urlsplit(raw)
        if parts.scheme not in ("postgresql", "postgres"):
            scheme = f"a {parts.scheme}:// URL" if parts.scheme else "not a URL"
            raise ValueError(f"is {scheme}, not a postgresql:// URL")
        return SecretStr(raw)

    @field_validator("cdp_endpoint")
    @classmethod
    def _check_cdp(cls, value: str) -> str:
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https", "ws", "wss") or not parts.hostname:
            raise ValueError(f"{value!r} is not an http(s):// or ws(s):// URL")
        try:
            port = parts.port
        except ValueError as exc:
            raise ValueError(f"{value!r} has an invalid port") from exc
        if port is None:
            raise ValueError(f"{value!r} has no port (Chrome's default is 9222)")
        return value.strip().rstrip("/") if parts.scheme.startswith("http") else value.strip()

    @field_validator(
        "browser_executable", "browser_profile_dir", "data_dir", "mcp_servers_file", mode="before"
    )
    @classmethod
    def _expand_path(cls, value: Any) -> Any:
        if isinstance(value, str):
            return Path(os.path.expandvars(value)).expanduser()
        if isinstance(value, Path):
            return value.expanduser()
        return value

    @field_validator("browser_executable")
    @classmethod
    def _check_executable(cls, value: Path | None) -> Path | None:
        if value is None:
            return None
        if not value.is_file() or not os.access(value, os.X_OK):
            raise ValueError(f"{str(value)!r} is not an executable file")
        return value

    @field_validator("browser_headless", mode="before")
    @classmethod
    def _normalise_headless(cls, value: Any) -> Any:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str):
            lowered = value.strip().lower()
            aliases = {"1": "true", "yes": "true", "on": "true", "0": "false", "no": "false"}
            return aliases.get(lowered, lowered)
        return value

    @field_validator("allowed_domains", "blocked_domains")
    @classmethod
    def _check_domains(cls, value: str) -> str:
        for domain in _split(value):
            if not re.fullmatch(r"(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)*", domain):
                raise ValueError(f"{domain!r} is not a domain name")
        return value

    @field_validator("pacing", mode="before")
    @classmethod
    def _normalise_pacing(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("mcp_sandbox", mode="before")
    @classmethod
    def _normalise_sandbox(cls, value: Any) -> Any:
        return normalise_setting(value)

    @field_validator("log_level", mode="before")
    @classmethod
    def _normalise_level(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    # Derived locations, all inside the data dir unless configured otherwise.
    @property
    def profile_dir(self) -> Path:
        return self.browser_profile_dir or self.data_dir / "profile"

    @property
    def logs_dir(self) -> Path:
        return self.data_dir / "logs"

    @property
    def servers_file(self) -> Path:
        """The extra MCP servers' file: MCP_SERVERS_FILE, else DATA_DIR/mcp_servers.json (F60)."""
        return self.mcp_servers_file or self.data_dir / "mcp_servers.json"

    @property
    def domain_lists(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(allowed, blocked) domains."""
        return _split(self.allowed_domains), _split(self.blocked_domains)

    @property
    def database(self) -> str | None:
        """The PostgreSQL URL of `DATABASE_URL`, or None for the embedded SQLite file."""
        return self.database_url.get_secret_value() if self.database_url else None

    @property
    def llm_configured(self) -> bool:
        return bool(self.llm_base_url or self.llm_api_key or self.llm_model)


def _split(value: str) -> tuple[str, ...]:
    return tuple(d.strip().lower().removeprefix("*.") for d in value.split(",") if d.strip())


def env_names() -> list[str]:
    """Every environment variable `Settings` reads, in declaration order."""
    return [name.upper() for name in Settings.model_fields]


FALLBACKS: dict[str, tuple[str, ...]] = {
    "llm_base_url": ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
    "llm_api_key": ("OPENAI_API_KEY",),
}
"""Other tools' names for a setting (the OpenAI SDK's), read from the environment, then `.env`, when
the setting itself is set in neither: `LLM_*` always wins, wherever it is set."""

_ENVIRONMENT_ONLY: dict[str, str] = {
    "XDG_DATA_HOME": "set DATA_DIR in .env instead, or export XDG_DATA_HOME in your shell",
    "XDG_CONFIG_HOME": "export it in your shell (it is where the app looks for your browser's profiles)",
    "DISPLAY": "export it in your shell, or set BROWSER_HEADLESS in .env",
    "WAYLAND_DISPLAY": "export it in your shell, or set BROWSER_HEADLESS in .env",
    "OPENAI_ORG_ID": "export it in your shell (the model client reads it from there)",
    "OPENAI_ORGANIZATION": "export it in your shell (the model client reads it from there)",
    "OPENAI_PROJECT_ID": "export it in your shell (the model client reads it from there)",
}
"""Variables the app (or its model client) reads from the environment only: in `.env` they would be
silently ignored, so they are pointed out like a misspelt key."""

_LOOKALIKES = {"OPENAI_MODEL": "LLM_MODEL", "OPENAI_MODEL_NAME": "LLM_MODEL", "MODEL": "LLM_MODEL"}
"""Names other tools use for a setting that the app does not read under that name."""


def _env_name(loc: tuple[int | str, ...], sources: dict[str, str]) -> str:
    """The variable a validation error is about: the one the value came from (`OPENAI_API_KEY`)."""
    field = str(loc[0]) if loc else "?"
    return sources.get(field, field.upper())


def _typo_problems(env_file: Path) -> list[str]:
    """Keys in `.env` that are not settings but look like a misspelt one, or that only the environment
    can set."""
    known = [*env_names(), *(name for names in FALLBACKS.values() for name in names)]
    problems: list[str] = []
    for key in dotenv_values(env_file):
        upper = key.upper()
        if upper in known:
            continue
        if upper in _ENVIRONMENT_ONLY:
            problems.append(
                f"{key} (in {env_file}): read from the environment only, so this line does nothing. "
                f"Fix: {_ENVIRONMENT_ONLY[upper]}."
            )
            continue
        close = [_LOOKALIKES[upper]] if upper in _LOOKALIKES else []
        close = close or difflib.get_close_matches(upper, known, n=1, cutoff=0.8)
        if close:
            problems.append(f"{key} (in {env_file}): not a setting. Fix: did you mean {close[0]}? Rename it.")
    return problems


def _fallback_values(
    env_file: Path | None, overrides: dict[str, Any]
) -> tuple[dict[str, str], dict[str, str]]:
    """(values, the variable each came from) of `FALLBACKS` for the settings set nowhere else."""
    in_file: dict[str, str] = {}
    if env_file is not None and env_file.is_file():
        in_file = {k.upper(): (v or "").strip() for k, v in dotenv_values(env_file).items()}
    values: dict[str, str] = {}
    sources: dict[str, str] = {}
    for field, others in FALLBACKS.items():
        own = field.upper()
        if (
            field in overrides
            or any(os.environ.get(name, "").strip() for name in (own, field))
            or in_file.get(own)
        ):
            continue
        for other in others:
            value = os.environ.get(other, "").strip() or in_file.get(other, "")
            if value:
                values[field], sources[field] = value, other
                break
    return values, sources


def load_settings(env_file: Path | None = Path(".env"), **overrides: Any) -> Settings:
    """Build `Settings` from the environment, `env_file` and `overrides`, or raise `ConfigError`.

    Each line of the error names the variable, what is wrong and the fix.
    """
    problems: list[str] = []
    if env_file is not None and env_file.is_file():
        problems.extend(_typo_problems(env_file))
    fallbacks, sources = _fallback_values(env_file, overrides)
    try:
        values: dict[str, Any] = {**fallbacks, **overrides}
        settings = Settings(_env_file=env_file, **values)  # type: ignore[call-arg]
    except ValidationError as exc:
        for error in exc.errors():
            name = _env_name(error["loc"], sources)
            message = str(error["msg"]).removeprefix("Value error, ")
            fix = _FIXES.get(str(error["loc"][0]).upper() if error["loc"] else "", "see .env.example")
            problems.append(f"{name}: {message}. Fix: set {name} to {fix}.")
        raise ConfigError(problems) from None
    problems.extend(_servers_file_problems(settings))
    if problems:
        raise ConfigError(problems)
    return settings


def _servers_file_problems(settings: Settings) -> list[str]:
    """What is wrong in the extra MCP servers' file, if anything (F60)."""
    from browser_copilot.extras.config import load_servers

    try:
        load_servers(settings.servers_file, explicit=settings.mcp_servers_file is not None)
    except ConfigError as exc:
        return exc.problems
    return []
