"""Entry point: `uv run python main.py [chat|doctor|observe URL] ...` (see README.md)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))

from browser_copilot.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
