"""Where a command's CPU goes, by kind of process: Chromium (per process type), the Node MCP servers,
pytest and its workers, the app processes the tests start (per command), PostgreSQL.

    uv run python bench/suite_cpu.py -- make test
    uv run python bench/suite_cpu.py -- uv run pytest -n 3 --dist loadfile tests/security

Linux only (it reads /proc). Every process is sampled every `--interval` seconds; a process that starts
after the sampler counts from its first tick, one that ends between two samples loses at most one
interval. Prints a table, then one summary line (wall, CPU, cores busy, the largest shares)."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

_APP_COMMANDS = ("run", "serve", "worker", "chat", "observe", "doctor", "graph", "policy-check")


def kind_of(cmdline: str) -> str:
    """A process's kind, from its command line (Chromium rewrites its children's into one string)."""
    if "chromium" in cmdline or "chrome" in cmdline.split(" ", 1)[0]:
        found = re.search(r"--type=([\w-]+)", cmdline)
        return f"chromium {found.group(1) if found else 'browser'}"
    words = cmdline.split()
    if words and Path(words[0]).name.startswith("node"):
        return "node (MCP servers)"
    if "main.py" in cmdline:
        command = next((w for w in words if w in _APP_COMMANDS), "chat")
        return f"app {command}"
    if "pytest" in cmdline or "execnet" in cmdline or re.search(r"python\S* -u -c", cmdline):
        return "pytest and its workers"
    if "postgres" in cmdline:
        return "postgres"
    return "other"


def _ticks(pid: str) -> tuple[int, int] | None:
    """(CPU ticks used, start tick) of a process, or None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[11]) + int(fields[12]), int(fields[19])


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def measure(command: list[str], interval: float) -> tuple[float, Counter[str], int]:
    """Run `command`; (wall seconds, CPU ticks by kind, its exit code)."""
    hz = os.sysconf("SC_CLK_TCK")
    started_at = float(Path("/proc/uptime").read_text().split()[0]) * hz
    seen: dict[tuple[str, int], list[object]] = {}
    used: Counter[str] = Counter()
    me = str(os.getpid())
    start = time.monotonic()
    child = subprocess.Popen(command)
    while True:
        done = child.poll() is not None
        for pid in (p for p in os.listdir("/proc") if p.isdigit() and p != me):
            ticks = _ticks(pid)
            if ticks is None:
                continue
            cpu, began = ticks
            known = seen.get((pid, began))
            if known is None:
                cmdline = _cmdline(pid)
                if not cmdline:
                    continue
                kind = kind_of(cmdline)
                seen[(pid, began)] = [cpu, kind]
                if began > started_at:
                    used[kind] += cpu
                continue
            used[str(known[1])] += cpu - int(str(known[0]))
            known[0] = cpu
        if done:
            break
        time.sleep(interval)
    return time.monotonic() - start, Counter({k: v / hz for k, v in used.items()}), int(child.returncode)


def main() -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between samples (0.5)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or not Path("/proc/self/stat").exists():
        parser.error("give a command after -- (and run on Linux: the sampler reads /proc)")
    wall, used, code = measure(command, args.interval)
    total = sum(used.values()) or 1.0
    print(f"\n{'processes':<32} {'CPU s':>8} {'share':>6}")
    for kind, seconds in used.most_common():
        if seconds >= 0.05:
            print(f"{kind:<32} {seconds:8.1f} {seconds / total:6.1%}")
    top = ", ".join(f"{k} {v / total:.0%}" for k, v in used.most_common(3))
    print(
        f"suite_cpu: wall {wall:.0f} s, CPU {total:.0f} s ({total / wall:.2f} cores busy); {top}; exit {code}"
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
