"""The process a test starts for a warm `python main.py ARGS` (see warm.py): run as `python -S -I
warm_client.py SOCKET ARGS...`; standard library only, so it starts in milliseconds. It hands the warm
server its standard streams, arguments, environment and directory, forwards the signals it gets to the
app, and ends as the app ended."""

import array
import contextlib
import json
import os
import signal
import socket
import struct
import sys


def main() -> None:
    path, args = sys.argv[1], sys.argv[2:]
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    body = json.dumps({"argv": args, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
    conn.sendmsg(
        [struct.pack("!I", len(body)) + body],
        [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))],
    )
    replies = conn.makefile("r")
    pid = json.loads(replies.readline())["pid"]
    if os.environ.get("BC_WARM_PID_FILE"):  # for a test that needs the app's own pid (support/app.py)
        with open(os.environ["BC_WARM_PID_FILE"] + ".new", "w") as out:
            out.write(str(pid))
        os.replace(os.environ["BC_WARM_PID_FILE"] + ".new", os.environ["BC_WARM_PID_FILE"])

    def forward(sig: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGABRT, signal.SIGUSR1):
        signal.signal(sig, forward)
    line = replies.readline()
    end = json.loads(line) if line else {"exit": 1}
    if "signal" in end:
        signal.signal(end["signal"], signal.SIG_DFL)
        os.kill(os.getpid(), end["signal"])
    sys.exit(end["exit"])


if __name__ == "__main__":
    main()
