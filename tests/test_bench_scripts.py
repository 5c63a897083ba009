"""The benchmarks under bench/ are interfaces others script against: each one still imports what it
uses from the app (a function renamed in the app breaks a bench, not only a test)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if p.name != "common.py")


def test_every_bench_script_is_found() -> None:
    assert {"step.py", "network.py", "observation.py", "policy.py"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_bench_script_imports_what_it_uses(script: str) -> None:
    load = (
        "import importlib.util, sys; sys.path.insert(0, sys.argv[1]);"
        " spec = importlib.util.spec_from_file_location('bench_script', sys.argv[2]);"
        " module = importlib.util.module_from_spec(spec); sys.modules['bench_script'] = module;"
        " spec.loader.exec_module(module); print('loaded', module.main.__name__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", load, str(BENCH), str(BENCH / script)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "loaded main" in done.stdout
