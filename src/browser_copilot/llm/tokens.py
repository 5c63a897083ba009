"""Exact token counts (o200k_base, the GPT-4o/4.1 encoding) offline, through the npm package
`gpt-tokenizer` that `npm ci` installs next to @playwright/mcp. Falls back to an estimate."""

from __future__ import annotations

import json
import shutil
import subprocess

from browser_copilot.scripts import project_root

_SCRIPT = """
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
let input = '';
process.stdin.on('data', (d) => { input += d; });
process.stdin.on('end', () => {
  process.stdout.write(JSON.stringify(JSON.parse(input).map((t) => encode(t).length)));
});
"""


def count_tokens(texts: list[str]) -> tuple[list[int], bool]:
    """(counts, exact): exact o200k counts, or ~4-characters-per-token estimates when Node or the
    tokenizer package is missing."""
    node = shutil.which("node")
    root = project_root()
    if node is not None and (root / "node_modules" / "gpt-tokenizer").is_dir():
        try:
            done = subprocess.run(
                [node, "--input-type=module", "-e", _SCRIPT],
                input=json.dumps(texts),
                capture_output=True,
                text=True,
                cwd=root,
                timeout=60,
                check=True,
            )
            return [int(n) for n in json.loads(done.stdout)], True
        except (OSError, subprocess.SubprocessError, ValueError):
            pass
    return [max(1, len(t) // 4) for t in texts], False
