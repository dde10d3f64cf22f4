#!/usr/bin/env bash
# Installs the third-party MCP memory servers that tests/arms/test_arms_mcp_real.py runs
# (docs/arms.md, "Memory servers over MCP") into one folder, default .memrun-cache/mcp-servers
# at the repository root (or $MEMRUN_MCP_SERVERS):
#   node_modules/.bin/mcp-server-memory  the reference knowledge-graph server (npm)
#   logbook/bin/agent-logbook            agent-logbook (PyPI) in a venv of its own: it
#                                        imports mcp 1.x, memrun's client is mcp 2.x
#   local-memory/bin/local-memory        local-memory (PyPI; SQLite + FTS, MEMORY_DB_PATH), in a
#                                        venv of its own for the same reason
# Idempotent: what is there already is kept.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dest="${MEMRUN_MCP_SERVERS:-$root/.memrun-cache/mcp-servers}"
mkdir -p "$dest"
if ! command -v npm >/dev/null 2>&1; then  # Node is on these machines; a bare one gets Debian's
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq nodejs npm
fi
if [ ! -x "$dest/node_modules/.bin/mcp-server-memory" ]; then
    npm install --prefix "$dest" --no-audit --no-fund --silent @modelcontextprotocol/server-memory@2026.8.31
fi
if [ ! -x "$dest/logbook/bin/agent-logbook" ]; then
    python3 -m venv "$dest/logbook"
    "$dest/logbook/bin/python" -m pip install -q agent-logbook==0.1.1 'mcp<2'
fi
if [ ! -x "$dest/local-memory/bin/local-memory" ]; then
    python3 -m venv "$dest/local-memory"
    "$dest/local-memory/bin/python" -m pip install -q local-memory==0.2.0 'mcp<2'
fi
echo "MCP memory servers in $dest"
