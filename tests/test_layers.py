"""The layers import in one direction only: `safety` (the policy: classifier, phrase table, redaction,
judge) <- `sandbox` (the box the model's code runs in: vetting, membrane, OS confinement, network
policy, the guard's runtime) <- `browser` (the browser session, observation, the guarded calls) <-
`agent` <- `ui`, `server`, `jobs` (the job queue and its workers, beside the front ends). A lower layer
never imports a higher one, not even lazily."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "browser_copilot"
ORDER = ["safety", "sandbox", "browser"]
ABOVE = {"safety": {"sandbox", "browser", "agent", "ui", "server", "jobs", "extras", "llm"}}
ABOVE["sandbox"] = ABOVE["safety"] - {"sandbox"}
ABOVE["browser"] = ABOVE["sandbox"] - {"browser"}


def imported(path: Path) -> set[str]:
    """The `browser_copilot.<layer>` sub-packages a module imports (top-level, lazy and `from .`)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] if node.level == 0 else []
        for name in names:
            parts = name.split(".")
            if parts[0] == "browser_copilot" and len(parts) > 1:
                found.add(parts[1])
    return found


@pytest.mark.parametrize("layer", ORDER)
def test_a_layer_never_imports_one_above_it(layer: str) -> None:
    modules = sorted((PACKAGE / layer).rglob("*.py"))
    assert modules
    wrong = {
        str(m.relative_to(PACKAGE)): sorted(imported(m) & ABOVE[layer])
        for m in modules
        if imported(m) & ABOVE[layer]
    }
    assert not wrong, f"{layer} imports a layer above it: {wrong}"


def test_the_check_sees_an_import_from_above() -> None:
    source = PACKAGE / "browser" / "session.py"
    assert "sandbox" in imported(source)  # browser -> sandbox is the allowed direction, and it is seen


@pytest.mark.parametrize(
    ("layer", "above"), [("agent", {"ui", "server", "jobs"}), ("jobs", {"ui", "server"})]
)
def test_the_agent_and_the_job_queue_never_import_a_front_end(layer: str, above: set[str]) -> None:
    modules = sorted((PACKAGE / layer).rglob("*.py"))
    assert modules
    wrong = {str(m.relative_to(PACKAGE)): sorted(imported(m) & above) for m in modules if imported(m) & above}
    assert not wrong, f"{layer} imports a layer above it: {wrong}"
