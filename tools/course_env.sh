#!/usr/bin/env bash
# Create (first use) or reuse the environment of the course check, in the folder $1
# (the Makefile passes $(COURSE_ENV), default .state/course-env):
#   $1/venv   JupyterHub + nbgrader + the companion (editable), one venv serving both the hub and
#             the single-user servers on this one machine (TLJH and Z2JH keep them apart: deploy/)
#   $1/proxy  configurable-http-proxy from npm, installed locally with the machine's node/npm
# A stamp holds a hash of pyproject.toml and this script: when either changes, the venv is
# rebuilt. Exit status 3 with a message on stderr when a prerequisite (python3 venv, node, npm)
# is missing, so callers can tell "cannot be set up here" from "setup broke".
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ENV_DIR="${1:?usage: tools/course_env.sh ENV_DIR}"
PYTHON="${PYTHON:-python3}"
CHP_VERSION="${CHP_VERSION:-5.3.0}"
mkdir -p "$ENV_DIR"
ENV_DIR="$(cd "$ENV_DIR" && pwd)"
STAMP="$ENV_DIR/.installed"
WANT="$(cat "$ROOT/pyproject.toml" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16) chp-$CHP_VERSION"

missing() { echo "course env: $1" >&2; exit 3; }
command -v node >/dev/null || missing "node is not installed (apt-get install nodejs npm)"
command -v npm >/dev/null || missing "npm is not installed (apt-get install npm)"
"$PYTHON" -c "import venv, ensurepip" 2>/dev/null || missing "$PYTHON cannot create venvs"

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] \
   && [ -x "$ENV_DIR/venv/bin/jupyterhub" ] \
   && [ -x "$ENV_DIR/proxy/node_modules/.bin/configurable-http-proxy" ]; then
    exit 0
fi

echo "course env: creating $ENV_DIR (JupyterHub, nbgrader, companion; first run only)" >&2
rm -rf "$ENV_DIR/venv" "$STAMP"
"$PYTHON" -m venv "$ENV_DIR/venv"
"$ENV_DIR/venv/bin/python" -m pip install -q --upgrade pip
"$ENV_DIR/venv/bin/python" -m pip install -q -e "$ROOT[course]"

# npm's cache follows $npm_config_cache (the Makefile points it into .state); never global.
mkdir -p "$ENV_DIR/proxy"
npm install --prefix "$ENV_DIR/proxy" --no-audit --no-fund --loglevel=error \
    "configurable-http-proxy@$CHP_VERSION" >&2
"$ENV_DIR/proxy/node_modules/.bin/configurable-http-proxy" --version >/dev/null

echo "$WANT" > "$STAMP"
echo "course env: ready" >&2
