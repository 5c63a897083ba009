"""A warm start for the app processes the tests run: `python main.py ARGS` in a few milliseconds instead
of seconds (importing LangGraph, LangChain, the OpenAI and MCP clients costs ~4 s of CPU per process on
a 2-core machine, ~15 % of the whole suite's CPU).

One server per test worker imports the app once and then forks a child per run. The process a test
starts is a small client (`warm_client.py`, standard library only) that hands the server its standard
input, output and error (their file descriptors, also a pseudo-terminal's), its arguments, environment
and directory; the server forks, and the child becomes what `python main.py ARGS` would be: a session of
its own with the client's terminal as its controlling terminal (so Ctrl+C in it reaches the app), fresh
`sys.std*` over those descriptors, the client's environment, signals as a new interpreter has them, and
then `main.py` run as `__main__`. The client forwards the signals it gets (SIGINT, SIGTERM, SIGABRT...)
to the child, and ends as the child ended: with its exit code, or killed by the same signal. If the client
is killed outright, the server kills the child.

The server imports only: it starts no thread and no event loop, so a fork is a clean copy, and nothing the
app reads from its environment is read before the fork (checked: no module reads `os.environ` when it is
imported). `tests/test_startup.py` and a few others start the real interpreter, which stays tested as
users run it. `BC_TEST_COLD=1` makes every run a cold one."""

from __future__ import annotations

import array
import atexit
import contextlib
import faulthandler
import gc
import importlib
import io
import json
import os
import runpy
import selectors
import signal
import socket
import struct
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MAIN = ROOT / "main.py"
HEADER = struct.Struct("!I")


def preload() -> None:
    """What `python main.py run` and `chat` import, imported once."""
    sys.path.insert(0, str(ROOT / "src"))
    for name in ("cli", "agent.graph", "jobs.queue", "llm.provider", "ui.chat"):
        importlib.import_module(f"browser_copilot.{name}")
    gc.collect()
    gc.freeze()  # what was imported stays shared with every child, never collected again


def receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """One request: a length-prefixed JSON document and three file descriptors."""
    fds = array.array("i")
    data, ancillary, _flags, _addr = conn.recvmsg(1 << 20, socket.CMSG_SPACE(3 * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - (len(payload) % fds.itemsize)])
    (size,) = HEADER.unpack_from(data)
    body = data[HEADER.size :]
    while len(body) < size:
        more = conn.recv(size - len(body))
        if not more:
            raise EOFError("the client went away")
        body += more
    return json.loads(body), list(fds)


def send(conn: socket.socket, message: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        conn.sendall((json.dumps(message) + "\n").encode())


def serve(path: str) -> tuple[dict[str, Any], list[int]]:
    """Answer runs until the parent goes; returns only in a forked child, with its request."""
    preload()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "listener")
    selector.register(wake_r, selectors.EVENT_READ, "wake")
    children: dict[int, socket.socket] = {}
    parent = os.getppid()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while os.getppid() == parent:
        for key, _ in selector.select(timeout=1.0):
            if key.data == "listener":
                conn, _ = listener.accept()
                try:
                    request, fds = receive(conn)
                except (OSError, ValueError, EOFError):
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    signal.set_wakeup_fd(-1)
                    for other in (listener, conn, *children.values()):
                        other.close()
                    selector.close()
                    os.close(wake_r)
                    os.close(wake_w)
                    return request, fds
                for fd in fds:
                    os.close(fd)
                children[pid] = conn
                selector.register(conn, selectors.EVENT_READ, pid)
                send(conn, {"pid": pid})
            elif key.data == "wake":
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_r, 512)
                reap(children, selector)
            else:  # the client closed its end: killed outright, its child goes too
                pid = key.data
                if pid in children:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                    selector.unregister(children[pid])
                    children[pid].close()
                    del children[pid]
                reap(children, selector)
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    raise SystemExit(0)


def reap(children: dict[int, socket.socket], selector: selectors.BaseSelector) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is None:
            continue
        if os.WIFSIGNALED(status):
            send(conn, {"signal": os.WTERMSIG(status)})
        else:
            send(conn, {"exit": os.WEXITSTATUS(status)})
        selector.unregister(conn)
        conn.close()


def become(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: what a fresh `python main.py ARGS` in the client's place would be."""
    os.setsid()
    for target, fd in enumerate(fds):
        os.dup2(fd, target, inheritable=True)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    if os.isatty(0):
        import fcntl
        import termios

        with contextlib.suppress(OSError):
            fcntl.ioctl(0, termios.TIOCSCTTY, 1)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    for sig in (
        signal.SIGCHLD,
        signal.SIGTERM,
        signal.SIGHUP,
        signal.SIGQUIT,
        signal.SIGABRT,
        signal.SIGUSR1,
    ):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))

    def stream(fd: int, mode: str) -> io.TextIOWrapper:
        tty = os.isatty(fd)
        raw = io.FileIO(fd, mode, closefd=False)
        buffered: Any = (
            raw
            if unbuffered and mode == "w"
            else (io.BufferedWriter(raw) if mode == "w" else io.BufferedReader(raw))
        )
        return io.TextIOWrapper(
            buffered,
            encoding="utf-8",
            errors="backslashreplace" if fd == 2 else "strict",
            line_buffering=mode == "w" and (tty or fd == 2),
            write_through=unbuffered and mode == "w",
        )

    sys.stdin, sys.stdout, sys.stderr = stream(0, "r"), stream(1, "w"), stream(2, "w")
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
    if os.environ.get("PYTHONFAULTHANDLER"):
        faulthandler.enable(file=sys.stderr, all_threads=True)
    sys.argv = [str(MAIN), *request["argv"]]


def run() -> None:
    """`main.py` as `__main__`, ended as the interpreter ends a program (its threads joined, then its
    `atexit` handlers, its streams flushed), without tearing down the thousands of modules it shares with
    the server, which alone takes a second."""
    signalled = 0
    try:
        runpy.run_path(str(MAIN), run_name="__main__")
        code = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            sys.stderr.write(f"{exc.code}\n")
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        code, signalled = 130, signal.SIGINT
    except BaseException:  # noqa: BLE001  (an uncaught error ends a program with its traceback and 1)
        traceback.print_exc()
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if signalled:
        signal.signal(signalled, signal.SIG_DFL)
        os.kill(os.getpid(), signalled)
    os._exit(code)


if __name__ == "__main__":
    job = serve(sys.argv[1])
    become(*job)
    del job
    run()
