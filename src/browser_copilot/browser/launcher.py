"""Launching Chrome/Edge/Chromium with a dedicated, persistent profile and a DevTools port.

Chrome 136+ ignores `--remote-debugging-port` on the user's default profile, so the app keeps its own
profile under the data dir: the user logs in there once and stays logged in. Debugging binds to
127.0.0.1 only and `--remote-allow-origins` is never passed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from browser_copilot.browser.endpoints import Endpoint, fetch_version, read_active_port
from browser_copilot.errors import BrowserLaunchError, BrowserNotFound

log = logging.getLogger(__name__)

_LINUX_NAMES = (
    "google-chrome",
    "google-chrome-stable",
    "google-chrome-beta",
    "microsoft-edge",
    "microsoft-edge-stable",
    "chromium",
    "chromium-browser",
    "chrome",
)
_MAC_PATHS = (
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
    "/Applications/Microsoft Edge.app/Contents/MacOS/Microsoft Edge",
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
)
_WINDOWS_SUFFIXES = (
    "Google/Chrome/Application/chrome.exe",
    "Microsoft/Edge/Application/msedge.exe",
    "Chromium/Application/chrome.exe",
)

INSTALL_HINT = (
    "Install Google Chrome, Microsoft Edge or Chromium (Debian/Ubuntu: `sudo apt-get install "
    "chromium`), or set BROWSER_EXECUTABLE to its path."
)


def find_executable(configured: Path | None = None) -> Path:
    """The browser to launch: `configured`, else the first installed Chrome/Edge/Chromium."""
    if configured is not None:
        return configured
    if sys.platform == "darwin":
        candidates = [Path(p) for p in _MAC_PATHS]
    elif sys.platform == "win32":
        roots = [os.environ.get(v, "") for v in ("PROGRAMFILES", "PROGRAMFILES(X86)", "LOCALAPPDATA")]
        candidates = [Path(r) / s for r in roots if r for s in _WINDOWS_SUFFIXES]
    else:
        candidates = [Path(p) for n in _LINUX_NAMES if (p := shutil.which(n))]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise BrowserNotFound(f"No Chrome, Edge or Chromium is installed. Fix: {INSTALL_HINT}")


def has_display() -> bool:
    """Whether a headed browser window can be shown here."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def browser_args(*, profile_dir: Path, port: int, headless: bool) -> list[str]:
    """Command-line flags for a browser the app launches (without the executable)."""
    args = [
        f"--user-data-dir={profile_dir}",
        f"--remote-debugging-port={port}",
        "--remote-debugging-address=127.0.0.1",
        "--no-first-run",
        "--no-default-browser-check",
        # Quiet: no background fetches, component updates or sync from the agent's profile.
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
    ]
    if headless:
        # Headless windows default to 800x600: too small for pages laid out for desktops.
        args += ["--headless", "--disable-gpu", "--window-size=1280,900"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--no-sandbox")  # Chromium refuses to start as root with its sandbox on.
    args.append("about:blank")
    return args


def free_port(preferred: int) -> int:
    """`preferred` if nothing listens on it on 127.0.0.1, else 0 (the browser picks a port)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        if sys.platform != "win32":
            # As a listening server would: a port in TIME_WAIT after a browser died is free.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", preferred))
        except OSError:
            return 0
    return preferred


@dataclass
class LaunchedBrowser:
    """A browser process this app started, and therefore may close."""

    process: subprocess.Popen[bytes]
    executable: Path
    profile_dir: Path
    endpoint: Endpoint
    log_file: Path
    helpers: set[int] = field(default_factory=set)
    """Detached helper processes (crashpad handlers) that appeared with this browser."""
    _closed: bool = field(default=False, repr=False)

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self, timeout: float = 10.0) -> None:
        """Ask the browser to quit (SIGTERM lets it save the profile), then make sure it is gone."""
        if self._closed:
            return
        self._closed = True
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                log.warning("browser %s did not quit in %.0fs; killing it", self.pid, timeout)
                self.process.kill()
                self.process.wait(timeout)
        _stop_helpers(self.helpers)
        # Its other processes (zygotes, renderers, crashpad) name the profile it was started with, which
        # only this browser can hold: wait until they are gone, so nothing of it outlives the app.
        marker = str(self.profile_dir).encode()

        def ours(cmdline: bytes) -> bool:
            program = Path(os.fsdecode(cmdline.split(b"\0", 1)[0])).name.lower()
            return marker in cmdline and any(k in program for k in _BROWSER_PROGRAMS)

        _stop_and_wait(lambda: _pids_where(ours) | _live(self.helpers))


_BROWSER_PROGRAMS = ("chrom", "crashpad", "msedge", "brave", "vivaldi", "opera")
"""Program names of a Chromium browser's processes (a process of another program is never stopped)."""


def _pids_where(matches: Callable[[bytes], bool]) -> set[int]:
    """PIDs of running (not zombie) processes whose command line `matches` (Linux; none elsewhere)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return set()
    pids: set[int] = set()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z" and matches(cmdline):
            pids.add(int(entry.name))
    return pids


def _crashpad_pids() -> set[int]:
    """PIDs of running crashpad handlers. Chromium starts them detached, not as children."""
    return _pids_where(lambda cmdline: b"crashpad_handler" in cmdline.split(b"\0", 1)[0])


def _live(pids: set[int]) -> set[int]:
    return _pids_where(lambda _: True) & pids if pids else set()


def _stop_helpers(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            continue


def _stop_and_wait(remaining: Callable[[], set[int]], timeout: float = 5.0) -> None:
    """Poll until `remaining()` is empty; after `timeout`, SIGKILL what is left."""
    deadline = time.monotonic() + timeout
    delay = 0.01
    while (left := remaining()) and time.monotonic() < deadline:
        time.sleep(delay)
        delay = min(delay * 2, 0.2)
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


@dataclass(frozen=True, slots=True)
class ProfileHolder:
    """The process that holds a profile's lock (Chromium's `SingletonLock` symlink, `host-PID`)."""

    pid: int
    host: str
    program: str = ""
    """Its executable, from /proc (empty on another computer)."""
    headless: bool = False
    port: int | None = None
    """Its DevTools port, when it was started with one."""

    def describe(self) -> str:
        if self.host != socket.gethostname():
            return f"PID {self.pid} on another computer ({self.host})"
        how = ["headless" if self.headless else "with a window"]
        how.append(f"DevTools port {self.port}" if self.port else "no DevTools port")
        return f"PID {self.pid} ({self.program}, {', '.join(how)})"

    def problem(self, profile_dir: Path) -> str:
        """One or two lines: who holds the profile and the fix."""
        if self.host != socket.gethostname():
            fix = (
                f"close the browser there, or, if that computer no longer uses this folder, delete "
                f"{profile_dir / 'SingletonLock'}; or set BROWSER_PROFILE_DIR to another folder."
            )
        elif self.port:
            fix = (
                f"use it: set CDP_ENDPOINT=http://127.0.0.1:{self.port}; or close it (kill {self.pid}), "
                "or set BROWSER_PROFILE_DIR to another folder."
            )
        else:
            fix = f"close that browser (kill {self.pid}), or set BROWSER_PROFILE_DIR to another folder."
        return f"The profile {profile_dir} is in use by another browser: {self.describe()}. Fix: {fix}"


def profile_holder(profile_dir: Path) -> ProfileHolder | None:
    """Who holds `profile_dir`'s lock, or None: no lock, or a stale one (its process is gone or is not
    a browser, which Chromium itself then takes over)."""
    try:
        target = os.readlink(profile_dir / "SingletonLock")
    except OSError:
        return None
    host, _, pid_text = target.rpartition("-")
    if not pid_text.isdigit():
        return None
    pid = int(pid_text)
    if host != socket.gethostname():
        return ProfileHolder(pid, host)
    try:
        args = [os.fsdecode(a) for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
    except OSError:
        return None
    if not args or not any(k in Path(args[0]).name.lower() for k in _BROWSER_PROGRAMS):
        return None
    port = next((a.split("=", 1)[1] for a in args if a.startswith("--remote-debugging-port=")), "")
    return ProfileHolder(
        pid,
        host,
        program=args[0],
        headless=any(a.startswith("--headless") for a in args),
        port=int(port) if port.isdigit() and int(port) > 0 else None,
    )


def launch(
    *,
    executable: Path,
    profile_dir: Path,
    preferred_port: int,
    headless: bool,
    log_file: Path,
    timeout: float = 30.0,
) -> LaunchedBrowser:
    """Start the browser and wait until its DevTools endpoint answers, or raise `BrowserLaunchError`
    (naming the process that holds the profile, when one does)."""
    profile_dir.mkdir(parents=True, exist_ok=True)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    holder = profile_holder(profile_dir)
    if holder is not None:
        # A second browser on a locked profile only hands its URL to the first one and exits.
        raise BrowserLaunchError(holder.problem(profile_dir))
    active_file = profile_dir / "DevToolsActivePort"
    active_file.unlink(missing_ok=True)
    port = free_port(preferred_port)
    helpers_before = _crashpad_pids()
    cmd = [str(executable), *browser_args(profile_dir=profile_dir, port=port, headless=headless)]
    log.info("launching browser: %s", " ".join(cmd))
    with log_file.open("ab") as sink:
        process = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, start_new_session=True
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # Chromium writes DevToolsActivePort only when it picks the port itself (port 0).
        active = read_active_port(active_file) if port == 0 else None
        actual = active.port if active is not None else port
        if actual:
            http_url = f"http://127.0.0.1:{actual}"
            version = fetch_version(http_url, timeout=0.5)
            if version is not None:
                endpoint = Endpoint(http_url, "launched", str(executable), version.get("Browser", ""))
                helpers = _crashpad_pids() - helpers_before
                return LaunchedBrowser(process, executable, profile_dir, endpoint, log_file, helpers)
        if process.poll() is not None:
            _stop_helpers(_crashpad_pids() - helpers_before)
            holder = profile_holder(profile_dir)  # taken meanwhile by a browser started at the same time
            if holder is not None:
                raise BrowserLaunchError(holder.problem(profile_dir))
            raise BrowserLaunchError(_exit_message(executable, process.returncode, log_file))
        time.sleep(0.05)
    process.kill()
    process.wait(5)
    _stop_helpers(_crashpad_pids() - helpers_before)
    raise BrowserLaunchError(
        f"{executable} started but its DevTools port did not open within {timeout:.0f}s. "
        f"Its output is in {log_file}. Fix: close other windows using the profile {profile_dir} "
        "or set BROWSER_PROFILE_DIR to another folder."
    )


def _exit_message(executable: Path, code: int | None, log_file: Path) -> str:
    try:
        tail = log_file.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
    except OSError:
        tail = []
    hint = (
        "If a window of the same profile is already open without a debugging port, close it and try again."
        if code == 0
        else "Check that the browser starts from a terminal."
    )
    return (
        f"{executable} exited (code {code}) before opening its DevTools port. {hint} "
        f"Last output ({log_file}):\n" + "\n".join(tail)
    )
