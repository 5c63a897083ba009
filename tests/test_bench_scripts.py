"""The benchmarks under bench/ are interfaces others script against: each one still imports what it
uses from the app (a function renamed in the app breaks a bench, not only a test). One process loads
them all (the app's modules once, not once a script), and says which ones failed and why."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if p.name != "common.py")

LOAD = """
import importlib.util, json, sys, traceback
sys.path.insert(0, sys.argv[1])
report = {}
for path in sys.argv[2:]:
    name = 'bench_' + path.rsplit('/', 1)[-1][:-3]
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        report[path] = 'main' if callable(getattr(module, 'main', None)) else 'no main()'
    except BaseException:
        report[path] = traceback.format_exc(limit=3)[-1500:]
print(json.dumps(report))
"""


def test_every_bench_script_is_found() -> None:
    assert {"step.py", "network.py", "observation.py", "policy.py"} <= set(SCRIPTS)


def test_every_bench_script_imports_what_it_uses() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LOAD, str(BENCH), *(str(BENCH / s) for s in SCRIPTS)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(report) == len(SCRIPTS)
    failed = {Path(path).name: why for path, why in report.items() if why != "main"}
    assert not failed, failed
