# Every target bootstraps what it needs (uv, `uv sync --frozen`, `npm ci`, a browser) first.
.PHONY: run test check bench setup doctor lint serve

run:  ## the terminal chat (pass more with ARGS="...")
	@scripts/dev.sh run $(ARGS)

test:  ## ruff, mypy --strict on src/, pytest (real Chromium + real @playwright/mcp)
	@scripts/dev.sh test

check:  ## the fast tier: ruff, mypy and the tests that need no browser (under a minute)
	@scripts/dev.sh check

bench:  ## benchmarks under bench/
	@scripts/dev.sh bench

serve:  ## the web page + WebSocket/SSE server on 127.0.0.1 (prints the URL; pass more with ARGS="...")
	@scripts/dev.sh run serve $(ARGS)

doctor:  ## step-by-step check of browser, MCP server, code tool, LLM and data dir
	@scripts/dev.sh run doctor

setup:  ## only install what is missing
	@scripts/dev.sh setup
