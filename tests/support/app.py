"""Running `main.py` as a real subprocess and reading its output as it comes."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import pexpect

from tests.support.ports import free_port
from tests.support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
_warm: dict[str, Any] = {}
_warm_lock = threading.Lock()


def _warm_socket() -> str | None:
    """The socket of this test process's warm server (warm.py), started on first use; None when runs
    are to be cold (`BC_TEST_COLD=1`) or the server would not start."""
    if os.environ.get("BC_TEST_COLD"):
        return None
    with _warm_lock:
        server = _warm.get("server")
        if server is not None and server.poll() is None:
            return str(_warm["socket"])
        folder = Path(tempfile.mkdtemp(prefix="bc-warm-"))
        path = folder / "s"
        server = subprocess.Popen(
            [sys.executable, "-m", "tests.support.warm", str(path)],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert server.stdout is not None
        if server.stdout.readline().strip() != "ready":
            server.kill()
            server.wait(10)
            return None
        _warm.update(server=server, socket=path)
        atexit.register(_stop_warm, server)
        return str(path)


def _stop_warm(server: subprocess.Popen[str]) -> None:
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()


def main_command(*args: str) -> list[str]:
    """`python main.py --env-file /nonexistent/.env ARGS`, started warm when it can be (warm.py)."""
    args = ("--env-file", "/nonexistent/.env", *args)
    path = _warm_socket()
    if path is None:
        return [sys.executable, str(ROOT / "main.py"), *args]
    return [sys.executable, "-I", "-S", str(ROOT / "tests" / "support" / "warm_client.py"), path, *args]


def launch_endpoint() -> str:
    """A `CDP_ENDPOINT` where nothing answers yet, for a test whose app launches its own browser there (it
    takes the endpoint's port). Never port 9: the tests that need a port nothing answers on use that one,
    and a browser launched on it meanwhile answered them (HTTP 404) in a parallel run."""
    return f"http://127.0.0.1:{free_port()}"


def app_env(data_dir: Path, **settings: str) -> dict[str, str]:
    """The environment for a run: the test's data dir and settings, nothing from the developer's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "BROWSER_", "CDP_"))}
    env.pop("OPENAI_API_KEY", None)
    env.update({"DATA_DIR": str(data_dir), "BROWSER_AUTO_LAUNCH": "false", "COLUMNS": "200"})
    env.update(settings)
    return env


class Chat(pexpect.spawn):  # type: ignore[misc]
    """A chat in a pseudo-terminal whose `expect` timing out says where the app was: it is sent SIGABRT,
    and Python's fault handler (`PYTHONFAULTHANDLER`) prints every thread's stack into the error."""

    def expect(self, pattern: Any, *args: Any, **kwargs: Any) -> int:
        try:
            return int(super().expect(pattern, *args, **kwargs))
        except pexpect.TIMEOUT as exc:
            if not self.isalive():
                raise
            seen = self.before if isinstance(self.before, str) else ""
            self.kill(signal.SIGABRT)
            with contextlib.suppress(pexpect.TIMEOUT, pexpect.EOF):
                super().expect(pexpect.EOF, timeout=10)
            stacks = self.before if isinstance(self.before, str) else ""
            raise pexpect.TIMEOUT(
                f"{exc}\n--- the app's output (last 3000 chars) ---\n{seen[-3000:]}"
                f"\n--- its threads when it timed out ---\n{stacks[-6000:]}"
            ) from None


def spawn_chat(data_dir: Path, cdp: str, llm_base_url: str, **settings: str) -> pexpect.spawn:
    """The terminal chat in a real pseudo-terminal (50×200, no colour) against a scripted model (key
    `sk-test-123`), at its first prompt; what it printed before the prompt is in `child.before`."""
    env = app_env(
        data_dir,
        CDP_ENDPOINT=cdp,
        LLM_BASE_URL=llm_base_url,
        LLM_API_KEY="sk-test-123",
        LLM_MODEL="scripted-model",
        **settings,
    )
    env.update({"NO_COLOR": "1", "TERM": "xterm-256color", "PYTHONFAULTHANDLER": "1"})
    command = main_command()
    child = Chat(
        command[0],
        command[1:],
        cwd=str(ROOT),
        env=env,
        encoding="utf-8",
        dimensions=(50, 200),
        timeout=60,
    )
    child.expect("› ")
    return child


class App:
    """`python main.py ARGS` with stdin as a pipe and stdout+stderr collected on a thread."""

    def __init__(self, *args: str, env: dict[str, str]) -> None:
        # The app's own PID (a worker names itself by it): a warm run's client writes it here.
        self._pid_file = Path(tempfile.mkdtemp(prefix="bc-app-")) / "pid"
        self.process = subprocess.Popen(
            main_command(*args),
            cwd=ROOT,
            env={**env, "BC_WARM_PID_FILE": str(self._pid_file)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            encoding="utf-8",
        )
        self._chunks: list[str] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    @property
    def pid(self) -> int:
        """The app's own process id (with a warm start, not the client's: warm.py)."""
        if not any(str(part).endswith("warm_client.py") for part in self.process.args):  # type: ignore[union-attr]
            return self.process.pid
        return int(
            wait_until(
                lambda: self._pid_file.exists() and self._pid_file.read_text(), timeout=30, what="the pid"
            )
        )

    def _pump(self) -> None:
        assert self.process.stdout is not None
        while True:
            chunk = self.process.stdout.read(1)
            if not chunk:
                return
            with self._lock:
                self._chunks.append(chunk)

    @property
    def output(self) -> str:
        with self._lock:
            return "".join(self._chunks)

    def wait_for(self, text: str, *, timeout: float = 60.0, after: int = 0) -> int:
        """Wait until `text` appears (after offset `after`); returns the offset just past it."""

        def found() -> int:
            index = self.output.find(text, after)
            return index + len(text) if index >= 0 else 0

        try:
            return wait_until(found, timeout=timeout, what=repr(text))
        except AssertionError:
            raise AssertionError(f"{text!r} never appeared; output so far:\n{self.output}") from None

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def close_stdin(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()

    def wait(self, timeout: float = 60.0) -> int:
        code = self.process.wait(timeout)
        self._thread.join(10)  # the rest of the output
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def stop_apps(apps: list[App], timeout: float = 60.0) -> None:
    """SIGTERM to every one still running, then wait for each (killed if it does not end in time)."""
    for app in apps:
        if app.process.poll() is None:
            app.process.terminate()
    for app in apps:
        try:
            app.wait(timeout)
        finally:
            app.kill()


def run_app(*args: str, env: dict[str, str], timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        main_command(*args),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def files_holding(folder: Path, secret: str) -> list[Path]:
    """The files below `folder` whose bytes contain `secret`."""
    return [p for p in folder.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
