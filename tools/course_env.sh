#!/usr/bin/env bash
# Create (first use) or reuse the environment of the course check, in the folder $1
# (the Makefile passes $(COURSE_ENV), default .state/course-env):
#   $1/venv   JupyterHub + nbgrader + the companion (editable), one venv serving both the hub and
#             the single-user servers on this one machine (TLJH and Z2JH keep them apart: deploy/)
#   $1/proxy  configurable-http-proxy from npm, exactly deploy/proxy/package-lock.json (npm ci),
#             installed locally with the machine's node/npm
# Both come from committed locks (requirements-course.lock: `make lock`; deploy/proxy/). A stamp
# holds a hash of the locks, pyproject.toml and this script: when one changes, the env is rebuilt. Exit status 3 with a message on stderr when a prerequisite (python3 venv, node, npm)
# is missing, so callers can tell "cannot be set up here" from "setup broke".
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ENV_DIR="${1:?usage: tools/course_env.sh ENV_DIR}"
PYTHON="${PYTHON:-python3}"
# the companion's own venv's uv (requirements.lock pins it) installs the course lock
UV="${UV:-$ROOT/.venv/bin/uv}"
PROXY_LOCK="$ROOT/deploy/proxy"   # package.json + package-lock.json: the proxy and its tree
mkdir -p "$ENV_DIR"
ENV_DIR="$(cd "$ENV_DIR" && pwd)"
STAMP="$ENV_DIR/.installed"
WANT="$(cat "$ROOT/pyproject.toml" "$ROOT/requirements-course.lock" "$PROXY_LOCK/package-lock.json" \
         "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)"

missing() { echo "course env: $1" >&2; exit 3; }
command -v node >/dev/null || missing "node is not installed (apt-get install nodejs npm)"
command -v npm >/dev/null || missing "npm is not installed (apt-get install npm)"
"$PYTHON" -c "import venv" 2>/dev/null || missing "$PYTHON cannot create venvs"
[ -x "$UV" ] || { echo "course env: no uv at $UV (make setup installs it)" >&2; exit 1; }

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] \
   && [ -x "$ENV_DIR/venv/bin/jupyterhub" ] \
   && [ -x "$ENV_DIR/proxy/node_modules/.bin/configurable-http-proxy" ]; then
    exit 0
fi

echo "course env: creating $ENV_DIR (JupyterHub, nbgrader, companion; first run only)" >&2
rm -rf "$ENV_DIR/venv" "$STAMP"
# exactly the pins of requirements-course.lock (make lock; the same versions as
# requirements.lock wherever both have a package, pip and setuptools among them), then the
# companion itself without deps. uv, not pip, and a venv without ensurepip's own pip: this
# runs inside make test's first pass on a fresh clone, and took 32 s (24 s once pip no longer
# byte-compiled) against about 4 s.
"$PYTHON" -m venv --without-pip "$ENV_DIR/venv"
"$UV" pip install -q --python "$ENV_DIR/venv/bin/python" --require-hashes --no-deps \
    -r "$ROOT/requirements-course.lock"
"$UV" pip install -q --python "$ENV_DIR/venv/bin/python" --offline --no-deps \
    --no-build-isolation -e "$ROOT"

# npm's cache follows $npm_config_cache (the Makefile points it into .state); never global.
rm -rf "$ENV_DIR/proxy" && mkdir -p "$ENV_DIR/proxy"
cp "$PROXY_LOCK/package.json" "$PROXY_LOCK/package-lock.json" "$ENV_DIR/proxy/"
npm ci --prefix "$ENV_DIR/proxy" --no-audit --no-fund --loglevel=error >&2
"$ENV_DIR/proxy/node_modules/.bin/configurable-http-proxy" --version >/dev/null

echo "$WANT" > "$STAMP"
echo "course env: ready" >&2
