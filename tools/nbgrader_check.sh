#!/usr/bin/env bash
# Check that solutions/ imports into nbgrader and grades as intended: build a throwaway course
# (its nbgrader_config.py calls companion.course.configure, as a course's does), generate the
# release copies, autograde three fake students (one submits the solutions, one nbgrader's blank
# release copies, one the exercises/ copies this repository hands out) and require full marks
# for the first and zero for the other two, notebook by notebook. Each student is graded with
# the seed of their own id (solver, blank, handout: three different variants), so the solutions
# pass at seeds other than the chapter's too.
#
# nbgrader is not a dependency of the companion: it runs from its own virtual environment,
# $NBGRADER_VENV (default /tmp/nbgrader-venv), created here on first use with nbgrader and the
# companion's dependencies installed. The notebooks import the companion of this checkout
# (PYTHONPATH), whichever checkout created the venv. Nothing is written outside a temporary
# directory and that venv.
#
# usage: tools/nbgrader_check.sh [solution notebooks ...]   (default: all of solutions/ex*.ipynb)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${NBGRADER_VENV:-/tmp/nbgrader-venv}"
PYTHON="${PYTHON:-python3}"
if [ "$#" -gt 0 ]; then
    NOTEBOOKS=("$@")
else
    NOTEBOOKS=("$ROOT"/solutions/ex*.ipynb)
fi

if [ ! -x "$VENV/bin/nbgrader" ]; then
    echo "creating $VENV with nbgrader and the companion (first run only)"
    "$PYTHON" -m venv "$VENV"
    # the course lock's pins (nbgrader among them, hash-checked), then the companion itself
    "$VENV/bin/pip" install -q --require-hashes --no-deps -r "$ROOT/requirements-course.lock"
    "$VENV/bin/pip" install -q --no-deps --no-build-isolation --no-index -e "$ROOT"
fi
START=$SECONDS          # the time reported below is the check's, not the venv's creation
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
FOUND="$("$VENV/bin/python" -c 'import companion; print(companion.__file__)')"
case "$FOUND" in
    "$ROOT"/companion/*) ;;
    *) echo "FAIL: the nbgrader venv imports $FOUND, not this checkout's companion"; exit 1 ;;
esac

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
COURSE="$WORK/course"
export JUPYTER_CONFIG_DIR="$WORK/jupyter-config" JUPYTER_DATA_DIR="$WORK/jupyter-data"
export JUPYTER_RUNTIME_DIR="$WORK/jupyter-runtime" IPYTHONDIR="$WORK/ipython"
export MPLBACKEND=Agg COMPANION_FAST=1 PYTHONHASHSEED=0
export PATH="$VENV/bin:$PATH"

ASSIGNMENT=exercises
mkdir -p "$COURSE/source/$ASSIGNMENT"
cat > "$COURSE/nbgrader_config.py" <<PY
c = get_config()
c.CourseDirectory.course_id = "companion"
c.CourseDirectory.root = "$COURSE"
c.CourseDirectory.db_url = "sqlite:///$COURSE/gradebook.db"
c.Exchange.root = "$COURSE/exchange"
c.ExecutePreprocessor.timeout = 300
# the answer stub, each student's own seed at autograde, kernels on Unix sockets
from companion.course import configure
configure(c)
PY
for nb in "${NOTEBOOKS[@]}"; do
    cp "$nb" "$COURSE/source/$ASSIGNMENT/"
done
echo "nbgrader-check: ${#NOTEBOOKS[@]} notebooks"

# nbgrader's own metadata validator first, for a readable message instead of a traceback
"$VENV/bin/python" - "$COURSE"/source/$ASSIGNMENT/*.ipynb <<'PY'
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
nbgrader db assignment add $ASSIGNMENT >/dev/null
nbgrader db student add solver --last-name=Solver --first-name=Sol >/dev/null
nbgrader db student add blank --last-name=Blank --first-name=Bob >/dev/null
nbgrader db student add handout --last-name=Handout --first-name=Hal >/dev/null
nbgrader generate_assignment $ASSIGNMENT --force --log-level=WARN

# solver hands in the solution notebooks themselves, blank the release copies untouched,
# handout the copies of exercises/ untouched
mkdir -p submitted/{solver,blank,handout}/$ASSIGNMENT
cp source/$ASSIGNMENT/*.ipynb submitted/solver/$ASSIGNMENT/
cp release/$ASSIGNMENT/*.ipynb submitted/blank/$ASSIGNMENT/
for nb in source/$ASSIGNMENT/*.ipynb; do
    cp "$ROOT/exercises/$(basename "$nb")" submitted/handout/$ASSIGNMENT/
done
if grep -l "BEGIN SOLUTION" release/$ASSIGNMENT/*.ipynb; then
    echo "FAIL: solution text left in the release copies"; exit 1
fi

nbgrader autograde $ASSIGNMENT --log-level=WARN
nbgrader export --log-level=WARN

# scores notebook by notebook, from the gradebook
"$VENV/bin/python" - "$COURSE/gradebook.db" "$ASSIGNMENT" "$((SECONDS - START))" <<'PY'
import sys
from nbgrader.api import Gradebook

db, assignment, elapsed = sys.argv[1], sys.argv[2], int(sys.argv[3])
wanted = {"solver": "full", "blank": "zero", "handout": "zero"}
totals = {s: [0.0, 0.0] for s in wanted}
bad = []
with Gradebook(f"sqlite:///{db}") as gb:
    names = sorted(nb.name for nb in gb.find_assignment(assignment).notebooks)
    print(f"{'notebook':<10}" + "".join(f"{s:>16}" for s in wanted))
    for name in names:
        row = f"{name:<10}"
        for student, want in wanted.items():
            sub = gb.find_submission_notebook(name, assignment, student)
            score, top = float(sub.score), float(sub.max_score)
            totals[student][0] += score
            totals[student][1] += top
            row += f"{score:>9g} / {top:<4g}"
            if (want == "full" and score != top) or (want == "zero" and score != 0) or top <= 0:
                bad.append(f"{student} {name}: {score:g} of {top:g} (want {want} marks)")
        print(row)
(solved, top), (blank, _), (handout, _) = (totals[s] for s in wanted)
for line in bad:
    print(f"FAIL: {line}")
if bad:
    sys.exit(1)
print(f"NBGRADER OK: {len(names)} notebooks; solutions {solved:g}/{top:g}, blank release copies "
      f"{blank:g}/{top:g}, exercises/ copies {handout:g}/{top:g} ({elapsed} s)")
PY
