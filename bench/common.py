"""What the benchmarks share: a headless Chromium of their own in a temporary folder, a process's memory."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from browser_copilot.browser.guarded import BRING_TO_FRONT  # noqa: E402
from browser_copilot.browser.launcher import LaunchedBrowser, find_executable, launch  # noqa: E402


@contextlib.contextmanager
def bench_browser(prefix: str) -> Iterator[tuple[LaunchedBrowser, Path]]:
    """A headless browser (CHROMIUM or the installed one) and a work folder, both removed afterwards."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    executable = find_executable(Path(os.environ["CHROMIUM"]) if "CHROMIUM" in os.environ else None)
    browser = launch(
        executable=executable,
        profile_dir=work / "profile",
        preferred_port=0,
        headless=True,
        log_file=work / "browser.log",
    )
    try:
        yield browser, work
    finally:
        browser.close()
        shutil.rmtree(work, ignore_errors=True)


def rss_mb(pid: int) -> float:
    """A process's resident memory in MB (0 when it has gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return 0.0
    return 0.0


def raw_code(code: str, frames: dict[str, list[int]] | None = None) -> str:
    """The peer of a guarded call: the same `async (page) => {...}` as plain Playwright in the code tool,
    with `el(N)` as a locator and nothing judged, no box, no façade (what the browser itself takes)."""
    return (
        "async (page) => {\n"
        f"{BRING_TO_FRONT}"
        f"  const __frames = {json.dumps(frames or {})};\n"
        "  const el = (n) => { let scope = page;\n"
        '    for (const f of __frames[n] || []) scope = scope.frameLocator(`[data-bc-frame="${f}"]`);\n'
        '    return scope.locator(`[data-bc-id="${n}"]`); };\n'
        f"  return await ({code.strip().rstrip(';')})(page);\n"
        "}"
    )
