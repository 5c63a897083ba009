"""A small real MCP server for the tests (the `mcp` package's FastMCP): notes kept in a JSON file.

    python tests/support/notes_server.py --store FILE [--http PORT]

Tools: `read_note` and `list_notes` (read-only), `add_note` (writes the file), `server_pid`, `wait`
(sleeps: a hang past the app's call timeout) and `crash` (the process exits in the middle of the call).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

READS = ToolAnnotations(readOnlyHint=True)
WRITES = ToolAnnotations(readOnlyHint=False, destructiveHint=False)


def build(store: Path, port: int) -> FastMCP:
    server = FastMCP("notes", host="127.0.0.1", port=port, log_level="WARNING")

    def notes() -> dict[str, str]:
        return json.loads(store.read_text()) if store.exists() else {}

    @server.tool(annotations=READS)
    def read_note(title: str) -> str:
        """Read the note called `title`."""
        found = notes().get(title)
        if found is None:
            raise ValueError(f"there is no note called {title!r}")
        return found

    @server.tool(annotations=READS)
    def list_notes() -> list[str]:
        """The titles of all notes."""
        return sorted(notes())

    @server.tool(annotations=WRITES)
    def add_note(title: str, text: str) -> str:
        """Save a note called `title` with `text` (replaces a note of the same title)."""
        current = notes()
        current[title] = text
        store.write_text(json.dumps(current))
        return f"saved {title}"

    @server.tool(annotations=READS)
    def server_pid() -> int:
        """This server's process id."""
        return os.getpid()

    @server.tool(annotations=READS)
    async def wait(seconds: float) -> str:
        """Wait `seconds`, then answer."""
        await asyncio.sleep(seconds)
        return "waited"

    @server.tool(annotations=READS)
    def crash() -> str:
        """Exit the server process at once."""
        os._exit(3)

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--http", type=int, default=0, help="serve streamable HTTP on this port")
    args = parser.parse_args()
    server = build(args.store, args.http)
    server.run("streamable-http" if args.http else "stdio")


if __name__ == "__main__":
    main()
