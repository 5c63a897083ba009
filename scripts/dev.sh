#!/usr/bin/env bash
# One entry point for the Makefile: bootstrap what is missing, then run the app, the tests or a bench.
#   scripts/dev.sh run [ARGS...]   the app (`main.py ARGS`)
#   scripts/dev.sh test            ruff, mypy --strict on src/, pytest
#   scripts/dev.sh check           the fast tier: ruff, mypy and the tests that need no browser
#   scripts/dev.sh bench           the benchmarks under bench/
#   scripts/dev.sh setup           only the bootstrap
# Needs Python >= 3.11 and Node.js >= 18 (installed with apt when missing and allowed: root or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[36m[setup]\033[0m %s\n' "$*" >&2; }
die() { printf '\033[31m[setup] %s\033[0m\n' "$*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo "$@"
  else return 1
  fi
}

apt_updated=""
apt_install() {
  command -v apt-get >/dev/null 2>&1 || return 1
  if [ -z "$apt_updated" ]; then as_root apt-get update -qq || return 1; apt_updated=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

need_python() {
  PYTHON=${PYTHON:-python3}
  command -v "$PYTHON" >/dev/null 2>&1 || die "Python 3.11+ is needed: install python3 (Debian/Ubuntu: sudo apt-get install python3 python3-pip)."
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || die "Python 3.11+ is needed; $("$PYTHON" --version) found. Set PYTHON=/path/to/python3.11 or install a newer one."
}

need_uv() {
  if command -v uv >/dev/null 2>&1; then UV=(uv); return; fi
  if "$PYTHON" -m uv --version >/dev/null 2>&1; then UV=("$PYTHON" -m uv); return; fi
  say "installing uv with pip"
  "$PYTHON" -m pip install -q uv 2>/dev/null || "$PYTHON" -m pip install -q --user uv \
    || die "could not install uv: run \`$PYTHON -m pip install uv\` and try again."
  UV=("$PYTHON" -m uv)
}

need_node() {
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    say "Node.js is missing; installing Debian's nodejs and npm"
    apt_install nodejs npm || die "Node.js 18+ is needed for @playwright/mcp: install nodejs and npm (https://nodejs.org or your package manager)."
  fi
  local major
  major=$(node -p 'process.versions.node.split(".")[0]')
  [ "$major" -ge 18 ] || die "Node.js 18+ is needed; $(node --version) found."
}

need_node_modules() {
  local stamp=node_modules/.browser-copilot-lock
  if [ -f "$stamp" ] && cmp -s package-lock.json "$stamp"; then return; fi
  say "npm ci (installs the pinned @playwright/mcp)"
  npm ci --no-audit --no-fund --loglevel=error >&2 || die "npm ci failed; see the output above."
  cp package-lock.json "$stamp"
}

have_browser() {
  local name
  for name in google-chrome google-chrome-stable microsoft-edge microsoft-edge-stable chromium chromium-browser; do
    command -v "$name" >/dev/null 2>&1 && return 0
  done
  [ -n "${BROWSER_EXECUTABLE:-}" ] && [ -x "${BROWSER_EXECUTABLE}" ]
}

need_browser() {
  # The tests need Chromium itself; the app takes any Chrome/Edge/Chromium.
  if [ "$1" = test ]; then
    if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
      || [ -n "${CHROMIUM:-}" ]; then
      return
    fi
  elif have_browser; then
    return
  fi
  say "no Chrome/Edge/Chromium found; installing Debian's chromium"
  apt_install chromium \
    || die "A browser is needed: install Google Chrome, Microsoft Edge or Chromium (Debian/Ubuntu: sudo apt-get install chromium), or set BROWSER_EXECUTABLE."
}

need_bwrap() {
  # bubblewrap confines the MCP server's process on Linux (MCP_SANDBOX=auto uses it when it is there);
  # the tests need it, the app starts without it (with Node's permission model only) and says so.
  [ "$(uname -s)" = Linux ] || return 0
  command -v bwrap >/dev/null 2>&1 && return
  say "bubblewrap is missing; installing Debian's bubblewrap (it confines the code tool's process)"
  if ! apt_install bubblewrap; then
    [ "$1" = test ] && die "The tests need bubblewrap: install it (Debian/Ubuntu: sudo apt-get install bubblewrap)."
    say "could not install bubblewrap: the code tool runs with Node's permission model only (see main.py doctor)"
  fi
}

pg_bindir() {
  local dir
  dir=$(pg_config --bindir 2>/dev/null || true)
  if [ -n "$dir" ] && [ -x "$dir/initdb" ]; then echo "$dir"; return; fi
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$dir/initdb" ]; then echo "$dir"; return; fi
  done
}

need_postgres() {
  # The Postgres tests start their own server from these binaries; no cluster is started here.
  [ -n "${PG_BIN:-}" ] && [ -x "${PG_BIN}/initdb" ] && return
  [ -n "$(pg_bindir)" ] && return
  say "PostgreSQL is missing; installing Debian's postgresql (the tests start their own server)"
  apt_install postgresql \
    || die "The Postgres tests need PostgreSQL's server binaries: install postgresql (Debian/Ubuntu: sudo apt-get install postgresql), or set PG_BIN=/path/to/postgresql/bin."
}

bootstrap() {
  need_python
  need_uv
  # Bytecode compiled once (site-packages now, src/ before each run): a process that compiles LangChain
  # and LangGraph from source on every start (PYTHONDONTWRITEBYTECODE set, or a read-only install) takes
  # seconds more to start.
  "${UV[@]}" sync --frozen --quiet --compile-bytecode
  "${UV[@]}" run --frozen python -m compileall -q src >/dev/null
  need_node
  need_node_modules
  need_browser "$1"
  need_bwrap "$1"
  if [ "$1" = test ]; then need_postgres; fi
}

command=${1:-run}
shift || true
case "$command" in
  setup) bootstrap run ;;
  run)
    bootstrap run
    exec "${UV[@]}" run --frozen python main.py "$@" ;;
  test)
    bootstrap test
    "${UV[@]}" run --frozen ruff check src tests bench main.py
    "${UV[@]}" run --frozen ruff format --check src tests bench main.py
    "${UV[@]}" run --frozen mypy
    # Three workers, a test file each at a time (its module's browser and servers stay one): the
    # process-starting tests wait more than they compute, so three beat two on two cores (14 vs 16 min).
    # pytest keeps the test modules it rewrote for its asserts only where bytecode may be written: with
    # PYTHONDONTWRITEBYTECODE set, every worker of every run rewrites them again (about 7 s of CPU each).
    # The 15 slowest tests close the output: where the suite's time goes, in every CI log.
    exec env -u PYTHONDONTWRITEBYTECODE "${UV[@]}" run --frozen pytest -n 3 --dist loadfile --durations=15 "$@" ;;
  check)
    # The fast tier for the edit-run loop: lint, types and the tests that need no browser (conftest's
    # --no-browser deselects every test that uses a browser, the MCP server or Postgres).
    bootstrap test
    "${UV[@]}" run --frozen ruff check src tests bench main.py
    "${UV[@]}" run --frozen ruff format --check src tests bench main.py
    "${UV[@]}" run --frozen mypy
    exec env -u PYTHONDONTWRITEBYTECODE "${UV[@]}" run --frozen pytest --no-browser -q -n 2 "$@" ;;
  bench)
    bootstrap test
    docs=(python3-doc postgresql-doc-15 sqlite3-doc cppreference-doc-en-html python-django-doc apache2-doc
          libjs-jquery-ui-docs)
    if ! dpkg -s "${docs[@]}" >/dev/null 2>&1; then
      say "installing the documentation corpus for bench/observation.py (Debian packages)"
      apt_install "${docs[@]}" || say "could not install them: the documentation pages are skipped"
    fi
    for script in bench/startup.py bench/observation.py bench/step.py; do
      "${UV[@]}" run --frozen python "$script"
    done ;;
  *) die "unknown command '$command': use run, test, check, bench or setup" ;;
esac
