"""The OS confinement of the code tool's process (bubblewrap around Node's permission model), tried as an
attacker would.

Each probe reaches Node's `process` the way model code would if the membrane ever failed: the raw code
goes to `BrowserSession.run_code` without the static vetting, escapes through `page.constructor`, then
reaches for what the box must keep out — the app's environment, /proc of other processes, files of the
home directory and of browser profiles (also through `/proc/self/root`, which Node's permission model
does not resolve), writes outside the MCP folders, child processes.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from browser_copilot.browser.launcher import LaunchedBrowser
from browser_copilot.browser.mcp_server import build_server_spec
from browser_copilot.browser.session import BrowserSession
from browser_copilot.doctor import mcp_server_check
from browser_copilot.errors import ConfigError, McpStartError
from browser_copilot.sandbox.confinement import box_options
from tests.conftest import ROOT, make_settings
from tests.support.app import app_env, run_app
from tests.support.pages import PageServer
from tests.support.processes import alive, pids_mentioning
from tests.support.waiting import async_wait_until, wait_until

# Set in the app's environment while the box runs: none of them may reach the code tool.
FAKE_SECRETS = {
    "LLM_API_KEY": "sk-confinement-fake-0a1b2c3d4e",
    "OPENAI_API_KEY": "sk-confinement-fake-openai-9z8y7x",
    "DATABASE_URL": "postgresql://bc:confinement-fake-pw@127.0.0.1:1/bc",
}
# Everything the server's environment may hold (PWD is set by bubblewrap's --chdir).
SERVER_ENV = {"PATH", "HOME", "XDG_CACHE_HOME", "TMPDIR", "PWTEST_SOCKETS_DIR", "PWD"}

ESCAPE = (
    "async (page) => {{ const process = page.constructor.constructor('return process')();"
    " const fs = process.getBuiltinModule('fs');"
    " const attempt = (f) => {{ try {{ return {{ ok: true, value: f() }}; }}"
    " catch (e) {{ return {{ ok: false, error: String(e.code || e.message) }}; }} }};"
    " {body} }}"
)


async def in_node(session: BrowserSession, body: str) -> Any:
    """Run `body` (statements with `process`, `fs` and `attempt(() => ...)`, returning a JSON value) in
    the code tool's Node process, reached through an escape the static vetting would have refused."""
    result = await session.run_code(ESCAPE.format(body=body))
    assert result.ok, result.error
    return result.value


def refused(attempt: dict[str, Any]) -> bool:
    return attempt["ok"] is False


def program(pid: int) -> str:
    """The executable a process runs, as its command line names it."""
    return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()


@dataclass
class Box:
    session: BrowserSession
    home: Path
    data_dir: Path


@pytest_asyncio.fixture(scope="module")
async def box(
    external_browser: LaunchedBrowser, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Box]:
    """A session with the default sandbox, started by an app whose environment holds fake secrets and
    whose HOME holds a file; the app's own browser profile folder holds a cookie file."""
    home = tmp_path_factory.mktemp("home")
    (home / "notes.txt").write_text("a file of the user's home directory")
    data_dir = tmp_path_factory.mktemp("confined-data")
    cookies = data_dir / "profile" / "Default" / "Cookies"
    cookies.parent.mkdir(parents=True)
    cookies.write_text("the app profile's cookies")
    settings = make_settings(data_dir, cdp_endpoint=external_browser.endpoint.url)
    saved = {name: os.environ.get(name) for name in [*FAKE_SECRETS, "HOME"]}
    os.environ.update(FAKE_SECRETS)
    os.environ["HOME"] = str(home)
    try:
        async with BrowserSession(settings, root=ROOT) as session:
            yield Box(session, home, data_dir)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    await async_wait_until(lambda: not pids_mentioning(str(data_dir)), what="the confined server to exit")


async def test_the_code_tool_runs_in_bubblewrap_with_nodes_permission_model_inside(box: Box) -> None:
    spec = box.session.spec
    assert spec is not None
    assert spec.confinement.level == "os" and spec.confinement.complete, spec.confinement.describe()
    assert Path(spec.command).name == "bwrap"
    assert "--clearenv" in spec.args and "--unshare-pid" in spec.args
    assert {"--experimental-permission", "--permission"} & set(spec.args)
    command_line = " ".join(spec.args)
    assert str(box.home) not in command_line
    assert str(box.data_dir / "profile") not in command_line
    seen = await in_node(
        box.session,
        r"return { pid: process.pid, pids: fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n)) };",
    )
    assert seen["pids"] == [str(seen["pid"])]  # alone in its pid namespace


async def test_the_code_tool_sees_none_of_the_apps_environment(box: Box) -> None:
    app = os.getpid()
    seen = await in_node(
        box.session,
        "return { env: process.env, ppid: process.ppid,"
        f" app: attempt(() => fs.readFileSync('/proc/{app}/environ', 'latin1')),"
        " parent: attempt(() => fs.readFileSync(`/proc/${process.ppid}/environ`, 'latin1')),"
        r" all: fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))"
        "   .map((n) => attempt(() => fs.readFileSync(`/proc/${n}/environ`, 'latin1'))) };",
    )
    assert refused(seen["app"]), "the app's environment is readable through /proc"
    assert refused(seen["parent"]), "the parent's environment is readable through /proc"
    assert set(seen["env"]) <= SERVER_ENV, seen["env"]
    everything = json.dumps(seen)
    for name, value in FAKE_SECRETS.items():
        assert os.environ[name] == value  # the app does have it
        assert value not in everything, name


async def test_home_files_cannot_be_read_directly_or_through_proc_self_root(box: Box) -> None:
    notes = box.home / "notes.txt"
    paths = [str(notes), f"/proc/self/root{notes}", f"/proc/1/root{notes}"]
    home = json.dumps(str(box.home))
    seen = await in_node(
        box.session,
        f"return {{ home: process.env.HOME, listing: attempt(() => fs.readdirSync({home})),"
        f" reads: {json.dumps(paths)}.map((p) => attempt(() => fs.readFileSync(p, 'utf8'))) }};",
    )
    assert all(refused(read) for read in seen["reads"]), seen["reads"]
    assert refused(seen["listing"])
    assert seen["home"] != str(box.home)


async def test_browser_profiles_cannot_be_read(box: Box, external_browser: LaunchedBrowser) -> None:
    users = external_browser.profile_dir / "Local State"
    await async_wait_until(users.is_file, what="the user's browser to write its profile")
    files = [users, box.data_dir / "profile" / "Default" / "Cookies"]
    files += [p for p in external_browser.profile_dir.glob("Default/**/Cookies") if p.is_file()]
    paths = [str(p) for p in files] + [f"/proc/self/root{p}" for p in files]
    seen = await in_node(
        box.session, f"return {json.dumps(paths)}.map((p) => attempt(() => fs.readFileSync(p, 'latin1')));"
    )
    assert all(refused(read) for read in seen), dict(zip(paths, seen, strict=True))


async def test_the_box_writes_only_in_the_mcp_folders(box: Box, tmp_path: Path) -> None:
    spec = box.session.spec
    assert spec is not None
    outside = tmp_path / "escaped.txt"
    inside = Path(spec.output_dir) / "written-in-the-box.txt"
    seen = await in_node(
        box.session,
        f"return {{ direct: attempt(() => fs.writeFileSync({json.dumps(str(outside))}, 'x')),"
        f" rooted: attempt(() => fs.writeFileSync({json.dumps(f'/proc/self/root{outside}')}, 'x')),"
        f" inside: attempt(() => fs.writeFileSync({json.dumps(str(inside))}, 'inside')),"
        " mounts: fs.readFileSync('/proc/self/mountinfo', 'utf8') };",
    )
    assert refused(seen["direct"]) and refused(seen["rooted"])
    assert not outside.exists()
    assert seen["inside"]["ok"], seen["inside"]
    assert inside.read_text() == "inside"
    # Structurally: the only writable mounts of the box are its MCP folders and its own /tmp, /proc, /dev.
    mcp_folders = {spec.output_dir, spec.env["XDG_CACHE_HOME"], spec.env["TMPDIR"]}
    mcp_folders |= {spec.env["PWTEST_SOCKETS_DIR"]} if "PWTEST_SOCKETS_DIR" in spec.env else set()
    writable = set()
    for line in seen["mounts"].splitlines():
        fields = line.split()
        if fields[5].split(",")[0] == "rw":
            writable.add(fields[4])
    allowed = {p for p in writable if p in mcp_folders or p == "/tmp" or p.startswith(("/proc", "/dev"))}
    assert writable == allowed, sorted(writable - allowed)
    assert mcp_folders <= writable


async def test_a_child_process_is_refused_and_the_server_is_alone_in_its_pid_namespace(box: Box) -> None:
    seen = await in_node(
        box.session,
        "return { pid: process.pid, ppid: process.ppid,"
        " run: attempt(() => process.getBuiltinModule('child_process').execSync('id').toString()) };",
    )
    assert refused(seen["run"]) and seen["run"]["error"] == "ERR_ACCESS_DENIED", seen["run"]
    assert (seen["pid"], seen["ppid"]) == (1, 0)


async def test_the_code_tool_opens_and_reads_pages_in_the_box(box: Box, pages: PageServer) -> None:
    url = pages.url("index.html")
    result = await box.session.run_code(
        f"async (page) => {{ await page.goto({json.dumps(url)}); return await page.title(); }}"
    )
    assert result.ok, result.error
    assert result.value == "Test bed home"
    assert box.session.spec is not None and box.session.spec.confinement.level == "os"


async def test_killing_the_servers_process_ends_node_in_the_box(
    external_browser: LaunchedBrowser, tmp_path: Path
) -> None:
    settings = make_settings(tmp_path, cdp_endpoint=external_browser.endpoint.url)
    async with BrowserSession(settings, root=ROOT) as session:
        assert session.mcp is not None and session.spec is not None
        marker = session.spec.output_dir
        pid = session.mcp.server_pid()
        assert pid is not None
        assert program(pid).endswith("bwrap")
        inner = [p for p in pids_mentioning(marker) if p != pid]
        assert inner, "Node runs in the box, as another process"
        os.kill(pid, signal.SIGKILL)
        await async_wait_until(
            lambda: not any(alive(p) for p in [pid, *inner]), what="bwrap and the Node inside it to exit"
        )
    await async_wait_until(
        lambda: not pids_mentioning(str(tmp_path)), what="every process of the run to exit"
    )


def test_doctor_names_the_node_level_when_mcp_sandbox_is_node(
    tmp_path: Path, external_browser: LaunchedBrowser
) -> None:
    env = app_env(tmp_path / "data", CDP_ENDPOINT=external_browser.endpoint.url, MCP_SANDBOX="node")
    done = run_app("doctor", env=env)
    line = next(line for line in done.stdout.splitlines() if "mcp server" in line)
    assert line.startswith("OK   mcp server"), done.stdout
    assert "confinement node (Node permission model only)" in line
    assert "not confined: no OS confinement" in line
    wait_until(lambda: not pids_mentioning(str(tmp_path / "data")), what="doctor's processes to exit")


def failing_bwrap(folder: Path) -> Path:
    """A `bwrap` that fails as it does where user namespaces are off."""
    fake = folder / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    return fake


@pytest.mark.parametrize("bwrap", ["missing", "failing"])
def test_mcp_sandbox_os_refuses_to_start_without_a_working_bubblewrap(tmp_path: Path, bwrap: str) -> None:
    path = failing_bwrap(tmp_path) if bwrap == "failing" else tmp_path / "nowhere" / "bwrap"
    with pytest.raises(McpStartError) as raised:
        build_server_spec(
            cdp_endpoint="http://127.0.0.1:9",
            data_dir=tmp_path / "data",
            sandbox="os",
            root=ROOT,
            bwrap=str(path),
        )
    message = str(raised.value)
    assert "MCP_SANDBOX=os needs bubblewrap" in message
    assert "Fix: install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`)" in message
    if bwrap == "failing":
        assert "No permissions to create a new namespace" in message


def test_auto_without_a_working_bubblewrap_starts_with_nodes_permission_model_and_says_so(
    tmp_path: Path,
) -> None:
    spec = build_server_spec(
        cdp_endpoint="http://127.0.0.1:9",
        data_dir=tmp_path / "data",
        sandbox="auto",
        root=ROOT,
        bwrap=str(failing_bwrap(tmp_path)),
    )
    assert spec.confinement.level == "node"
    assert Path(spec.command).name.startswith("node")
    assert "/proc" in spec.confinement.gaps
    notes = " ".join(spec.notes)
    assert "No permissions to create a new namespace" in notes
    assert "sudo apt-get install bubblewrap" in notes


def test_doctor_warns_when_auto_falls_short_of_bubblewrap_and_fails_below_the_setting(tmp_path: Path) -> None:
    data = tmp_path / "data"
    spec = build_server_spec(
        cdp_endpoint="http://127.0.0.1:9", data_dir=data, root=ROOT, bwrap=str(failing_bwrap(tmp_path))
    )
    check = mcp_server_check(make_settings(data), spec, "browser_run_code_unsafe", 0.4)
    assert check.ok and check.warn
    assert "confinement node (Node permission model only)" in check.detail
    assert "sudo apt-get install bubblewrap" in check.fix
    old_node = tmp_path / "node"
    old_node.write_text("#!/bin/sh\necho v18.19.0\n")
    old_node.chmod(0o755)
    spec = build_server_spec(
        cdp_endpoint="http://127.0.0.1:9", data_dir=data, sandbox="node", root=ROOT, node=str(old_node)
    )
    check = mcp_server_check(make_settings(data, mcp_sandbox="node"), spec, "browser_run_code_unsafe", 0.4)
    assert not check.ok
    assert "confinement off (NOT confined)" in check.detail
    assert "install Node.js 20 or newer" in check.fix


@pytest.mark.parametrize(
    ("value", "level"),
    [("auto", "auto"), ("OS", "os"), ("node", "node"), ("off", "off"), ("true", "auto"), ("false", "off")],
)
def test_mcp_sandbox_takes_the_levels_and_the_former_booleans(tmp_path: Path, value: str, level: str) -> None:
    assert make_settings(tmp_path, mcp_sandbox=value).mcp_sandbox == level


def test_an_unknown_mcp_sandbox_level_names_the_levels(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        make_settings(tmp_path, mcp_sandbox="bubble")
    assert any(
        p.startswith("MCP_SANDBOX:") and "Fix: set MCP_SANDBOX to auto" in p for p in raised.value.problems
    )


def test_a_project_or_node_under_tmp_stays_visible_in_the_box(tmp_path: Path) -> None:
    # The box has its own /tmp; what lives under the host's /tmp (a clone, a Node) is bound on top of it.
    modules = tmp_path / "project" / "node_modules"
    node = tmp_path / "node" / "bin" / "node"
    options = box_options(node=node, read_only=[modules])
    tmpfs = options.index("/tmp", options.index("--tmpfs"))
    assert options.index(str(modules)) > tmpfs
    assert options.index(str(node)) > tmpfs
