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


# ----- the whole package: one-way layers and circles (issue 28) ----------------------------------------
# ui/server/jobs (and the CLI) -> agent -> browser -> sandbox -> the base (safety, llm, extras, config,
# events, errors and the small shared modules). Modules of one layer may import each other.
RANK = {"cli": 5, "__main__": 5, "doctor": 5, "ui": 4, "server": 4, "jobs": 4, "agent": 3, "plain_steps": 3}
RANK |= {"browser": 2, "sandbox": 1}
BASE = 0  # every other unit: safety, llm, extras, config, events, errors, logs, metrics, scripts, mcp_wire


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = [p for p in path.relative_to(PACKAGE).with_suffix("").parts if p != "__init__"]
        found[".".join(["browser_copilot", *parts])] = path
    return found


def _runtime_imports(path: Path) -> set[str]:
    """What a module imports when it runs (lazy imports inside functions too; not `if TYPE_CHECKING:`)."""
    tree = ast.parse(path.read_text("utf-8"))
    skip = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for n in ast.walk(node)
    }
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return {name for name in out if name.startswith("browser_copilot.")}


def _unit(module: str) -> str:
    return module.split(".")[1]


def test_no_module_imports_a_layer_above_its_own() -> None:
    modules = _modules()
    upward = sorted(
        f"{name} -> {target}"
        for name, path in modules.items()
        for target in _runtime_imports(path)
        if target in modules and RANK.get(_unit(target), BASE) > RANK.get(_unit(name), BASE)
    )
    assert upward == []


def test_no_import_circle() -> None:
    """No module imports one that (through others, also inside functions) imports it back."""
    modules = _modules()
    edges = {
        name: {t for t in _runtime_imports(path) if t in modules and t != name}
        for name, path in modules.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                circles.append(sorted(part))

    for name in modules:
        if name not in index:
            visit(name)
    named = [" -> ".join(m.removeprefix("browser_copilot.") for m in c) for c in circles]
    assert named == [], f"import circles: {named}"


def test_no_asyncio_wait_for_in_the_sources() -> None:
    """On Python 3.11 `asyncio.wait_for` can swallow a cancellation that comes as its awaitable finishes
    (fixed in 3.12): the live view's picture loop went on after its cancellation and the server's shutdown
    waited for it for ever. `async with asyncio.timeout(...)` does not."""
    found = [
        f"{path.relative_to(PACKAGE)}:{n}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for n, line in enumerate(path.read_text("utf-8").splitlines(), start=1)
        if "asyncio.wait_for(" in line
    ]
    assert found == []
