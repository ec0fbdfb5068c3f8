#!/usr/bin/env bash
# Put the companion, nbgrader and nbgrader's exchange on a TLJH server (untested here: see
# deploy/README.md). Run as root from a clone of this repository checked out at a release tag:
#     sudo deploy/tljh/install-user-env.sh
# Installs into TLJH's user environment (/opt/tljh/user), the Python every student's server
# and kernel run on; the hub environment (/opt/tljh/hub) is left alone.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
USER_ENV="${TLJH_USER_ENV:-/opt/tljh/user}"
PIP=("$USER_ENV/bin/python" -m pip install --no-cache-dir)
JUPYTER="$USER_ENV/bin/jupyter"

# 1. the versions the project's CI verified (hash-checked), then the companion without
#    re-resolving, then nbgrader at the version `make course-check` runs, and nbgitpuller for
#    handing out the chapter notebooks
"${PIP[@]}" -r "$ROOT/requirements.lock"
"${PIP[@]}" --no-deps "$ROOT"
"${PIP[@]}" "nbgrader==0.9.6" nbgitpuller

# 2. the exchange: every student writes submissions into it, so world-writable with the sticky
#    bit (nobody can remove another's files)
install -d -m 1777 /srv/nbgrader/exchange

# 3. course-wide nbgrader settings for every server
install -D -m 644 "$ROOT/deploy/tljh/nbgrader_config.py" \
    "$USER_ENV/etc/jupyter/nbgrader_config.py"

# 4. students get the assignment list only (nbgrader's table for "one class, one grader");
#    the instructor re-enables the rest for their own account below
"$JUPYTER" server extension disable --sys-prefix nbgrader.server_extensions.formgrader
"$JUPYTER" server extension disable --sys-prefix nbgrader.server_extensions.course_list
for ext in formgrader course-list create-assignment; do
    "$JUPYTER" labextension disable --level=sys_prefix "@jupyter/nbgrader:$ext"
done

# 5. the lock moved shared packages (tornado, jupyter-server, ...) under TLJH's own jupyterhub:
#    make sure nothing conflicts, and that the students' Python imports what the exercises need
"$USER_ENV/bin/python" -m pip check
"$USER_ENV/bin/python" -c "import companion, nbgrader, jupyterhub; from companion import grading"

cat <<'MSG'
Done. In a terminal of the instructor's own JupyterHub server, run once:
    jupyter server extension enable --user nbgrader.server_extensions.formgrader
    jupyter server extension enable --user nbgrader.server_extensions.course_list
    jupyter labextension enable --level=user @jupyter/nbgrader:formgrader
    jupyter labextension enable --level=user @jupyter/nbgrader:course-list
    jupyter labextension enable --level=user @jupyter/nbgrader:create-assignment
    mkdir -p ~/course/source ~/.jupyter
    echo "c.CourseDirectory.root = '$HOME/course'" >> ~/.jupyter/nbgrader_config.py
then restart that server (File > Hub Control Panel > Stop My Server, Start My Server).
MSG
