"""OS confinement of the MCP server's process: the level it runs at, and bubblewrap's command line.

The model's code runs inside `@playwright/mcp`'s Node process. Node's permission model is one fence
(no child processes, writes only in the data dir's MCP folders, no reads of the home directory); it
does not resolve `/proc/self/root/<path>` and leaves `/proc` of every other process readable. On
Linux, bubblewrap (`bwrap`) adds a second, kernel-enforced one: its own pid namespace (no `/proc` of
the app or the user), a read-only view of only what Node and the server need plus the MCP folders of
the data dir, no home directory, no capabilities and an environment of five variables. The network
namespace is shared: the server must reach the browser's DevTools endpoint on 127.0.0.1.

Levels, lowest first: `off` (unconfined), `node` (Node's permission model), `os` (bubblewrap, with
Node's permission model inside). `MCP_SANDBOX` asks for one (`auto`: the best this machine has).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from browser_copilot.config import SandboxSetting
from browser_copilot.errors import McpStartError

Level = Literal["os", "node", "off"]
"""What the server runs under."""

_RANK: dict[Level, int] = {"off": 0, "node": 1, "os": 2}

# The least each setting accepts before `doctor` fails (`auto` starts anyway, and says so).
_REQUIRED: dict[SandboxSetting, Level] = {"auto": "node", "os": "os", "node": "node", "off": "off"}

BWRAP_FIX = (
    "install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`); if it is installed, "
    "allow unprivileged user namespaces (`sudo sysctl -w kernel.unprivileged_userns_clone=1`; "
    "Ubuntu 24.04+: `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`)"
)
NODE_FIX = "install Node.js 20 or newer (its permission model confines the code tool)"

# What is left open at each level (the network is never confined by this module).
_GAPS: dict[tuple[bool, bool], str] = {
    (True, True): "the network is shared with the host: loopback (the browser's DevTools endpoint "
    "included) and abstract Unix sockets",
    (True, False): "inside its box the code tool may start programs and write its MCP folders "
    "(Node here has no permission model); the network is shared with the host",
    (False, True): "no OS confinement: the code tool's process can read /proc of other processes "
    "(the app's environment variables, API keys included, through /proc/<pid>/environ), any file "
    "your user can read through /proc/self/root/<path>, and the network",
    (False, False): "the code tool's process can do whatever your user can: read and write your files, "
    "read the app's environment, start programs, use the network",
}

_LABELS: dict[tuple[bool, bool], str] = {
    (True, True): "bubblewrap + Node permission model on",
    (True, False): "bubblewrap only (this Node.js has no permission model)",
    (False, True): "Node permission model only",
    (False, False): "NOT confined",
}


@dataclass(frozen=True, slots=True)
class Confinement:
    """The level the MCP server runs at, what `MCP_SANDBOX` asked for, and what is left open."""

    requested: SandboxSetting
    bubblewrap: bool
    node_permission: bool
    reason: str = ""
    """Why a higher level is not in use, with the fix (empty when nothing is missing)."""

    @property
    def level(self) -> Level:
        if self.bubblewrap:
            return "os"
        return "node" if self.node_permission else "off"

    @property
    def label(self) -> str:
        return _LABELS[self.bubblewrap, self.node_permission]

    @property
    def gaps(self) -> str:
        return _GAPS[self.bubblewrap, self.node_permission]

    @property
    def enough(self) -> bool:
        """True when the level is at least what `MCP_SANDBOX` requires."""
        return _RANK[self.level] >= _RANK[_REQUIRED[self.requested]]

    @property
    def complete(self) -> bool:
        """Both fences up: bubblewrap with Node's permission model inside."""
        return self.bubblewrap and self.node_permission

    def describe(self) -> str:
        """One line: level, what confines it and what does not, e.g. for doctor and /status."""
        return f"confinement {self.level} ({self.label}); not confined: {self.gaps}"


def choose(
    setting: SandboxSetting,
    *,
    node_permission: bool,
    bwrap_problem: Callable[[], str | None],
    os_supported: bool | None = None,
) -> Confinement:
    """The level to start at. `bwrap_problem()` (called only when needed) is None when bubblewrap
    works here, else why not. `MCP_SANDBOX=os` without a working bubblewrap raises `McpStartError`."""
    linux = sys.platform.startswith("linux") if os_supported is None else os_supported
    node_reason = "" if node_permission else f"Node.js here has no permission model. Fix: {NODE_FIX}."
    if setting == "off":
        return Confinement(setting, bubblewrap=False, node_permission=False)
    if setting == "node":
        return Confinement(setting, bubblewrap=False, node_permission=node_permission, reason=node_reason)
    problem = bwrap_problem() if linux else "OS confinement needs Linux (bubblewrap)"
    if problem is not None and setting == "os":
        fix = f"{BWRAP_FIX}; or set" if linux else "set"
        raise McpStartError(
            f"MCP_SANDBOX=os needs bubblewrap, which does not work here: {problem}. Fix: {fix} "
            "MCP_SANDBOX=auto to start with Node's permission model only."
        )
    reasons = [node_reason] if node_reason else []
    if problem is not None:
        fix = f" Fix: {BWRAP_FIX}." if linux else ""
        reasons.append(f"No OS confinement: {problem}.{fix}")
    return Confinement(
        setting, bubblewrap=problem is None, node_permission=node_permission, reason=" ".join(reasons)
    )


# /etc entries Node and the server read: name resolution (a `localhost` CDP endpoint), the dynamic
# loader's cache, certificates (public), time zone. No passwd/group: nothing calls os.userInfo().
ETC_ENTRIES = (
    "hosts",
    "host.conf",
    "nsswitch.conf",
    "resolv.conf",
    "gai.conf",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "os-release",
    "ssl/certs",
    "ssl/openssl.cnf",
)

# Top-level system folders, bound read-only (or re-created as symlinks on merged-/usr systems).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"


def _system_view() -> list[str]:
    args: list[str] = []
    for name in SYSTEM_DIRS:
        path = Path(name)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), name]
        elif path.is_dir():
            args += ["--ro-bind", name, name]
    for entry in ETC_ENTRIES:
        args += ["--ro-bind-try", f"/etc/{entry}", f"/etc/{entry}"]
    return args


def _covered(path: Path, folders: Sequence[Path]) -> bool:
    return any(path == folder or folder in path.parents for folder in folders)


def box_options(*, node: Path, read_only: Sequence[Path]) -> list[str]:
    """bwrap's options for the box, without the writable folders, environment and command:
    namespaces, a read-only view of the system, Node (`node`, its real path) and `read_only`."""
    args = [
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--as-pid-1",  # no other process in the box: no /proc of a parent to read
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        *_system_view(),
        # The box's own /proc, /dev and /tmp first: what is bound below comes on top of them (a project
        # or a Node that lives under /tmp stays visible).
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
    ]
    system = [Path(name) for name in SYSTEM_DIRS if Path(name).is_dir() and not Path(name).is_symlink()]
    if not _covered(node, system):
        args += ["--ro-bind", str(node), str(node)]
    for folder in read_only:
        args += ["--ro-bind", str(folder), str(folder)]
    return args


def bwrap_command(
    bwrap: str,
    *,
    node: Path,
    read_only: Sequence[Path],
    writable: Sequence[Path],
    env: Mapping[str, str],
    cwd: Path,
    command: Sequence[str],
) -> list[str]:
    """`bwrap OPTIONS -- COMMAND`: `command` (Node first) in the box, with `writable` bound read-write,
    an environment of `env` plus PATH only, in `cwd`; the box's root is made read-only."""
    args = [bwrap, *box_options(node=node, read_only=read_only)]
    for folder in writable:
        args += ["--bind", str(folder), str(folder)]
    args += ["--remount-ro", "/", "--clearenv", "--setenv", "PATH", SANDBOX_PATH]
    for key, value in env.items():
        args += ["--setenv", key, value]
    args += ["--chdir", str(cwd), "--", *command]
    return args


def bwrap_problem(bwrap: str | None, *, node: Path, read_only: Sequence[Path]) -> str | None:
    """None when `bwrap` can run Node in the box here, else why not (checked once per process)."""
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    return _probe((bwrap, *box_options(node=node, read_only=read_only), "--", str(node), "--version"))


@functools.cache
def _probe(argv: tuple[str, ...]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return f"{argv[0]} is not installed"
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{argv[0]} could not be run ({exc})"
    if done.returncode != 0 or not done.stdout.startswith("v"):
        message = " ".join(done.stderr.split()) or f"exit status {done.returncode}"
        return f"bwrap cannot make a sandbox here ({message[:300]})"
    return None
