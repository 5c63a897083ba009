"""No source file over 500 lines (Python, JavaScript, the page's HTML/CSS, prompts): a file nobody holds
in their head is split by what its parts do. The files still over it are listed with their size; the list
may only shrink (a listed file may not grow, and one that got under the limit leaves the list): none is
left today."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "src" / "browser_copilot"
LIMIT = 500
KINDS = {".py", ".js", ".html", ".css", ".md", ".txt"}

# Left to split, with their lines (none since issue 28's splits).
OVER: dict[str, int] = {}


def lines_of(path: Path) -> int:
    return len(path.read_text("utf-8").splitlines())


def sizes() -> dict[str, int]:
    return {
        str(path.relative_to(SOURCES)): lines_of(path)
        for path in sorted(SOURCES.rglob("*"))
        if path.is_file() and path.suffix in KINDS
    }


def test_no_source_file_is_over_the_limit() -> None:
    found = sizes()
    assert found, "no sources found"
    over = {name: n for name, n in found.items() if n > LIMIT and n > OVER.get(name, 0)}
    assert over == {}, f"over {LIMIT} lines (split by what the parts do): {over}"


def test_the_list_of_files_left_to_split_only_shrinks() -> None:
    found = sizes()
    stale = {name: found.get(name) for name in OVER if found.get(name, 0) <= LIMIT}
    assert stale == {}, f"no longer over {LIMIT} lines: take them off OVER: {stale}"


def test_the_check_counts_what_it_reads(tmp_path: Path) -> None:
    long = tmp_path / "long.py"
    long.write_text("x = 1\n" * (LIMIT + 1), "utf-8")
    assert lines_of(long) == LIMIT + 1
