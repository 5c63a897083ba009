"""The tests' warm start of the app (`tests/support/warm.py`) is `python main.py` in all a test can see:
the same output and exit code as a cold start, the app's own pid, signals reaching it, and no app left
behind when the process a test started is killed outright."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from browser_copilot.browser.launcher import LaunchedBrowser
from tests.support.app import ROOT, App, app_env, main_command
from tests.support.openai_server import ScriptedOpenAI
from tests.support.waiting import wait_until


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"


def test_a_warm_run_prints_and_ends_as_a_cold_one(tmp_path: Path) -> None:
    env = app_env(tmp_path / "data")
    for args in (["--help"], ["run", "--json", "go on"], ["no-such-command"]):
        warm = subprocess.run(
            main_command(*args), cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
        )
        cold = subprocess.run(
            [sys.executable, str(ROOT / "main.py"), "--env-file", "/nonexistent/.env", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "warm_client.py" in " ".join(main_command(*args))
        assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr), (
            args
        )


def test_a_warm_app_has_its_own_pid_takes_signals_and_goes_with_a_killed_client(
    tmp_path: Path, llm: ScriptedOpenAI, external_browser: LaunchedBrowser
) -> None:
    model = {
        "LLM_BASE_URL": llm.base_url,
        "LLM_API_KEY": "sk-test-123",
        "LLM_MODEL": "scripted-model",
        "CDP_ENDPOINT": external_browser.endpoint.url,
    }
    app = App("serve", "--port", "0", env=app_env(tmp_path / "data", **model))
    try:
        app.wait_for("http://127.0.0.1:")
        assert app.pid != app.process.pid and alive(app.pid)
        app.process.send_signal(signal.SIGTERM)  # forwarded: the app shuts down as it does for SIGTERM
        assert app.wait(30) == 143
        assert not alive(app.pid)
    finally:
        app.kill()
    second = App("serve", "--port", "0", env=app_env(tmp_path / "data2", **model))
    try:
        second.wait_for("http://127.0.0.1:")
        pid = second.pid
        second.process.kill()  # SIGKILL to the client: the server kills the app
        second.wait(30)
        wait_until(lambda: not alive(pid), timeout=30, what="the app to go with its client")
    finally:
        second.kill()
