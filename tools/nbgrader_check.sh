#!/usr/bin/env bash
# Check that solutions/ imports into nbgrader and grades as intended: build a throwaway course,
# generate the release copies, autograde two fake students (one submits the solutions, one the
# blank release copies) and require full marks for the first and zero for the second.
#
# nbgrader is not a dependency of the companion: it runs from its own virtual environment,
# $NBGRADER_VENV (default /tmp/nbgrader-venv), created here on first use with nbgrader and this
# repository installed. Nothing is written outside a temporary directory and that venv.
#
# usage: tools/nbgrader_check.sh [solution notebooks ...]   (default: ex8_1 and ex8_8)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${NBGRADER_VENV:-/tmp/nbgrader-venv}"
PYTHON="${PYTHON:-python3}"
if [ "$#" -gt 0 ]; then
    NOTEBOOKS=("$@")
else
    NOTEBOOKS=("$ROOT/solutions/ex8_1.ipynb" "$ROOT/solutions/ex8_8.ipynb")
fi

if [ ! -x "$VENV/bin/nbgrader" ]; then
    echo "creating $VENV with nbgrader and the companion (first run only)"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install -q nbgrader
    "$VENV/bin/pip" install -q -e "$ROOT"
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
COURSE="$WORK/course"
export JUPYTER_CONFIG_DIR="$WORK/jupyter-config" JUPYTER_DATA_DIR="$WORK/jupyter-data"
export JUPYTER_RUNTIME_DIR="$WORK/jupyter-runtime" IPYTHONDIR="$WORK/ipython"
export MPLBACKEND=Agg COMPANION_FAST=1 PYTHONHASHSEED=0
export PATH="$VENV/bin:$PATH"

mkdir -p "$COURSE/source/ch08"
cat > "$COURSE/nbgrader_config.py" <<PY
c = get_config()
c.CourseDirectory.course_id = "companion-ch08"
c.CourseDirectory.root = "$COURSE"
c.CourseDirectory.db_url = "sqlite:///$COURSE/gradebook.db"
c.Exchange.root = "$COURSE/exchange"
c.ExecutePreprocessor.timeout = 300
PY
for nb in "${NOTEBOOKS[@]}"; do
    cp "$nb" "$COURSE/source/ch08/"
done

# nbgrader's own metadata validator first, for a readable message instead of a traceback
"$VENV/bin/python" - "$COURSE"/source/ch08/*.ipynb <<'PY'
import sys
import nbformat
from nbgrader.nbgraderformat import MetadataValidator, ValidationError
bad = 0
for path in sys.argv[1:]:
    try:
        MetadataValidator().validate_nb(nbformat.read(path, as_version=4))
    except ValidationError as err:
        bad += 1
        print(f"FAIL: {path.rsplit('/', 1)[-1]}: {str(err).splitlines()[0]}")
if bad:
    print("nbgrader rejects these notebooks: a markdown solution cell must also be a grade cell "
          '("grade": true, with "points")')
    sys.exit(1)
PY

cd "$COURSE"
nbgrader db assignment add ch08 >/dev/null
nbgrader db student add solver --last-name=Solver --first-name=Sol >/dev/null
nbgrader db student add blank --last-name=Blank --first-name=Bob >/dev/null
nbgrader generate_assignment ch08 --force --log-level=WARN

# solver hands in the solution notebooks themselves; blank hands in the release copies untouched
mkdir -p submitted/solver/ch08 submitted/blank/ch08
cp source/ch08/*.ipynb submitted/solver/ch08/
cp release/ch08/*.ipynb submitted/blank/ch08/
if grep -l "BEGIN SOLUTION" release/ch08/*.ipynb; then
    echo "FAIL: solution text left in the release copies"; exit 1
fi

nbgrader autograde ch08 --log-level=WARN
nbgrader export --log-level=WARN
cat grades.csv

"$VENV/bin/python" - <<'PY'
import csv
rows = {r["student_id"]: r for r in csv.DictReader(open("grades.csv"))}
solver, blank = rows["solver"], rows["blank"]
top = float(solver["max_score"])
assert top > 0, "no points in the assignment"
assert float(solver["score"]) == top, f"solutions scored {solver['score']} of {top}"
assert float(blank["score"]) == 0, f"blank release copies scored {blank['score']}"
print(f"NBGRADER OK: solutions {solver['score']}/{top}, blank copies {blank['score']}/{top}")
PY
