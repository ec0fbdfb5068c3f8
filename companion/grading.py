"""Self-checks for the exercises: tolerant, numbers only, and never revealing the answer.

Each exercise (ids "8-1" ... "8-9", "17-1" ...) is defined once, in its own module under
``companion.exercises`` (``ex8_4`` holds 8-4, as ``solutions/ex8_4.py`` does), as an
:class:`Exercise`: a function from a seed to the given data
(seed 0 is the chapter's own data; other seeds give other sensible numbers, for per-student
variants), a function from the given data to the expected answer of every part (computed by
``companion.calc``/``sim``, never typed in), and for each part its unit, its tolerance and
the hints for the usual wrong turns. Each module's ``exercises()`` returns its exercise;
:func:`exercises` collects them, as ``companion.ledger`` collects its entries.

Students call ``check(exercise, part, answer, seed=...)``. It says whether the answer is
within tolerance; when it is not, it names the quantity, and if the answer matches a known
mistake (MiB vs MB, blocks vs tokens, seconds vs milliseconds, G vs G - 1 outputs, a
fraction given as a percentage, or an exercise-specific slip) it points at that step; else it
says whether the answer is close (within a few percent: the rounding or the units) or far off
(the formula). It never prints the expected value. Wrong types get a message, not a traceback; text ("288 MiB",
"15 blocks") is never read as a number: it is "not yet", with a hint to enter a number in the
part's unit.

Unfinished answers: ``None`` (what the answer cells start from) is "not yet answered", and
``check(..., answers, key=k)`` looks up entry ``k`` of a dict or list itself, so a missing
entry is "not yet answered" too instead of a KeyError in the check cell. A check cell wraps its
checks in ``with grading.checks():``: every part is graded and shows its line, then one line
names the parts not answered yet and those not yet right, and the cell ends normally, so Run All
goes on to the end. Only where nbgrader runs the notebook (``NBGRADER_EXECUTION`` set: autograde,
validate) does the block end in :class:`NotYetCorrect` (an AssertionError, so nbgrader gives
the cell no points), shown as that one message without a traceback. When every part is right,
the block says so in one line.

Whose numbers: :func:`student_seed` is the seed of whoever runs the notebook, with nothing to
type: on a JupyterHub from the hub user name (``JUPYTERHUB_USER``), under nbgrader's autograde
from the submission's student id (``COMPANION_STUDENT``, set by :mod:`companion.course`'s hook
in ``nbgrader_config.py``), and 0 (the chapter's data) anywhere else. A name's seed is
:func:`seed_for_student` (a SHA-256 of the name, never Python's salted ``hash``), unless an
instructor's ``companion_seeds.json`` pins it (:func:`seed_overrides`).

Inside IPython (JupyterLab, nbgrader's kernel) each verdict line is displayed as coloured
HTML (green correct, amber not yet answered, red not yet right) with the same words as its
``text/plain``; elsewhere (a script, a terminal, GitHub's view) it is printed as plain text.
"""

from __future__ import annotations

import hashlib
import html
import importlib
import json
import math
import numbers
import os
import pkgutil
import re
import reprlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

from companion import theme, units

__all__ = ["Part", "Exercise", "CheckResult", "NotYetCorrect", "exercises", "params",
           "resolve_seed", "screen_answers", "check", "checks", "parts", "describe",
           "student_seed", "seed_for_student", "student_name", "seed_overrides",
           "graded_by_nbgrader"]


@dataclass(frozen=True)
class Part:
    """One gradable quantity of an exercise.

    ``tolerance`` is relative for ``kind="rel"`` (default 0.5%), absolute (in ``unit``) for
    ``kind="abs"``; ``kind="exact"`` wants the same whole number (block counts, requests);
    ``kind="bool"`` a True/False decision; ``kind="choice"`` one of ``options``.
    ``no_slips``: factors of the shared unit-slip hints that mean something else in this part
    (a batch of 16 requests is no 16-token block), so no such hint is given for them.
    """

    name: str
    quantity: str
    unit: str = ""
    kind: str = "rel"
    tolerance: float = 0.005
    points: int = 1
    options: tuple = ()
    no_slips: tuple = ()

    def __post_init__(self):
        if self.kind not in ("rel", "abs", "exact", "bool", "choice"):
            raise ValueError(f"kind: unknown kind {self.kind!r}")


@dataclass(frozen=True)
class Exercise:
    """An exercise: given data by seed, expected answers by given data, parts, hints."""

    id: str
    title: str
    section: str
    parts: tuple[Part, ...]
    make_params: Callable[[int], dict]
    solve: Callable[[dict], dict]
    # part -> list of (wrong value, hint) for the mistakes students actually make
    mistakes: Callable[[dict], dict] = field(default=lambda given: {})
    # the conditions a variant must meet to be a fair exercise, in words (``describe`` lists
    # them), and the screen that tests them: seed -> why that seed fails, or None. Without a
    # screen of its own an exercise gets :func:`screen_answers` on its solved answers.
    conditions: tuple[str, ...] = ()
    screen: Callable[[int], str | None] | None = None
    # part -> list of (value, note): other readings of the statement that are also accepted,
    # each with the note that names how it differs from the stated one
    also_accepted: Callable[[dict], dict] = field(default=lambda given: {})

    def part(self, name: str) -> Part:
        for p in self.parts:
            if p.name == name:
                return p
        raise ValueError(f"part: exercise {self.id} has no part {name!r}; its parts are "
                         f"{[p.name for p in self.parts]}")


# an exercise module is named like its notebook: ex8_4 holds exercise 8-4; the package's other
# modules (variants, common_ch08, ...) are helpers the exercise modules share
_EXERCISE_MODULE = re.compile(r"ex\d+_\d+")


def _id_key(exercise_id: str) -> tuple[int, ...]:
    return tuple(int(x) for x in exercise_id.split("-"))


@lru_cache(maxsize=1)
def _collect() -> dict[str, Exercise]:
    """Every exercise module's ``exercises()``, by id in chapter order; an id that two modules
    define is a clash (ValueError naming both)."""
    import companion.exercises as pkg

    found: dict[str, Exercise] = {}
    origin: dict[str, str] = {}
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if not _EXERCISE_MODULE.fullmatch(info.name):
            continue
        name = f"{pkg.__name__}.{info.name}"
        for exercise in importlib.import_module(name).exercises():
            if exercise.id in origin:
                raise ValueError(f"exercise: {exercise.id} is defined twice, by "
                                 f"{origin[exercise.id]} and by {name}")
            found[exercise.id] = exercise
            origin[exercise.id] = name
    return {k: found[k] for k in sorted(found, key=_id_key)}


def exercises() -> dict[str, Exercise]:
    """Every exercise by id, in chapter order."""
    return dict(_collect())


def _exercise(exercise_id) -> Exercise:
    if not isinstance(exercise_id, str):
        raise TypeError(f"exercise: expected an id such as '8-1', got {exercise_id!r}")
    all_ = _collect()
    if exercise_id not in all_:
        raise ValueError(f"exercise: unknown id {exercise_id!r}; known: {list(all_)}")
    return all_[exercise_id]


def _seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed: expected a whole number >= 0, got {seed!r}")
    return int(seed)


# --- the variant screen ----------------------------------------------------------------------

# How far a seed may move before the screen gives up (a bug in an exercise, not a rare variant).
SCREEN_MAX_STEPS = 50
GENERIC_CONDITIONS = (
    "every count the exercise asks for (an exact part) is at least 1",
    "every numeric answer is finite and, for a relative tolerance, not zero",
)


def screen_answers(ex: Exercise, answers: dict) -> str | None:
    """The conditions every exercise shares, on the solved answers of one variant: why they
    fail, or None (parts missing from ``answers`` are not screened). A count (kind "exact")
    must be at least 1; a number graded with a relative
    tolerance must be finite and non-zero (a relative tolerance of zero accepts only zero)."""
    for p in ex.parts:
        if p.name not in answers:      # a screen that solves only some parts
            continue
        x = answers[p.name]
        if p.kind == "exact" and int(round(x)) < 1:
            return f"({p.name}) {p.quantity} would be {int(round(x))}"
        if p.kind == "rel" and (not math.isfinite(float(x)) or float(x) == 0):
            return f"({p.name}) {p.quantity} would be {x!r}"
    return None


def _screen(ex: Exercise, seed: int) -> str | None:
    if ex.screen is not None:
        return ex.screen(seed)
    given = ex.make_params(seed)
    return screen_answers(ex, ex.solve(given))


# The caches below are keyed by the Exercise itself, not its id: an exercise built again (its
# module reloaded and collected anew) is another key, so it is never served the answers of the
# definition it replaces.

@lru_cache(maxsize=4096)
def _resolve(ex: Exercise, seed: int) -> tuple[int, str]:
    """(the seed actually used, a note saying why it moved, or ""): the first seed from ``seed``
    on whose variant passes the exercise's screen. Seed 0 is the chapter's data and never
    moves."""
    if seed == 0:
        return 0, ""
    why = None
    for used in range(seed, seed + SCREEN_MAX_STEPS):
        reason = _screen(ex, used)
        if reason is None:
            if used == seed:
                return seed, ""
            return used, f"seed {seed} -> {used}: {why} at {seed}"
        if why is None:
            why = reason
    raise RuntimeError(f"screen: exercise {ex.id} found no fair variant in seeds {seed}-"
                       f"{seed + SCREEN_MAX_STEPS - 1}; first reason: {why}")


def resolve_seed(exercise_id: str, seed: int = 0) -> tuple[int, str]:
    """The seed whose variant ``params``/``check`` use for ``seed``, and the note when it moved
    (``seed 17 -> 19: no request was retried at 17``)."""
    return _resolve(_exercise(exercise_id), _seed(seed))


# --- whose numbers: a student's seed ---------------------------------------------------------

# Seeds a name can map to: 1 ... SEED_SPAN (never 0, the chapter's data, whose answers the
# chapter prints). A million keeps two students of a class of 200 apart with odds of about 50
# to 1 in favour (and the override file separates any two that meet).
SEED_SPAN = 999_999
STUDENT_ENV = "COMPANION_STUDENT"          # set by companion.course's autograde hook
SEEDS_FILE_ENV = "COMPANION_SEEDS"         # a path: the override file to use
SEEDS_FILE = "companion_seeds.json"        # looked for in the system-wide Jupyter config folders
_TLJH_PREFIX = "jupyter-"                  # TLJH's Unix names, which nbgrader takes as the id
# everything that says who runs a notebook (and so picks its seed): the suite and `make execute`
# clear these, so that stored outputs are seed 0's wherever they are made or compared
IDENTITY_ENV = ("JUPYTERHUB_USER", "NBGRADER_EXECUTION", STUDENT_ENV, SEEDS_FILE_ENV)


def graded_by_nbgrader() -> bool:
    """True while nbgrader runs the notebook (autograde or validate: it sets
    ``NBGRADER_EXECUTION``), where a check cell that is not all right must fail."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))


def student_name(name: str) -> str:
    """The name a seed is keyed by: ``name`` without surrounding spaces, in lower case, and
    without TLJH's ``jupyter-`` prefix (stripped as often as it leads), so the hub user
    ``alice`` and nbgrader's student id ``jupyter-alice`` on a TLJH server are one student."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"student: expected a non-empty name, got {name!r}")
    key = name.strip().lower()
    while key.startswith(_TLJH_PREFIX) and len(key) > len(_TLJH_PREFIX):
        key = key[len(_TLJH_PREFIX):]
    return key


def seed_for_student(name: str) -> int:
    """A student's seed from their name, the same on every machine and every run:
    ``1 + int.from_bytes(sha256(student_name(name).encode("utf-8")).digest()[:8], "big")
    % 999999`` (1 to 999,999; never 0, the chapter's data)."""
    digest = hashlib.sha256(student_name(name).encode("utf-8")).digest()
    return 1 + int.from_bytes(digest[:8], "big") % SEED_SPAN


def _seeds_file():
    """The override file in force: $COMPANION_SEEDS, else the first ``companion_seeds.json``
    in the system-wide Jupyter config folders (``jupyter --paths``, the user's own
    ``~/.jupyter`` left out, so the file a student's kernel reads is the instructor's); None
    when there is none."""
    from pathlib import Path

    named = os.environ.get(SEEDS_FILE_ENV)
    if named:
        if not Path(named).is_file():
            raise FileNotFoundError(f"seeds: ${SEEDS_FILE_ENV} names {named}, which is not a file")
        return Path(named)
    try:
        from jupyter_core.paths import jupyter_config_dir, jupyter_config_path
    except ImportError:                   # no Jupyter here (a plain script, Pyodide)
        return None
    own = Path(jupyter_config_dir()).resolve()
    for folder in jupyter_config_path():
        if Path(folder).resolve() == own:
            continue
        path = Path(folder) / SEEDS_FILE
        if path.is_file():
            return path
    return None


def seed_overrides(path=None) -> dict[str, int]:
    """The instructor's pinned seeds: ``{name: seed}`` from a JSON object such as
    ``{"alice": 7, "bob": 0}``; the key ``"*"`` is every student not named (``{"*": 0}``
    gives the whole class the chapter's data). Names are compared as :func:`student_name`
    gives them. ``path``: the file to read, default the one in force (see ``_seeds_file``);
    {} when there is none."""
    from pathlib import Path

    path = _seeds_file() if path is None else Path(path)
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"seeds: {path} is not valid JSON: {err}") from None
    if not isinstance(data, dict):
        raise ValueError(f"seeds: {path} must hold a JSON object of name -> seed")
    pinned = {}
    for name, seed in data.items():
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seeds: {path}: the seed of {name!r} must be a whole number "
                             f">= 0, got {seed!r}")
        pinned["*" if name == "*" else student_name(name)] = seed
    return pinned


def _whoami() -> tuple[str | None, str]:
    """(the student's name or None, where it came from)."""
    if os.environ.get("NBGRADER_EXECUTION") == "autograde":
        student = os.environ.get(STUDENT_ENV)
        if not student:
            raise RuntimeError(
                f"seed: nbgrader is autograding, but ${STUDENT_ENV} is not set, so the "
                "student's seed is unknown; add the companion's hook to the instructor's "
                "nbgrader_config.py: `from companion.course import configure; configure(c)` "
                "(docs/instructors.md)")
        return student, "the student id nbgrader grades"
    user = os.environ.get("JUPYTERHUB_USER")
    if user:
        return user, "your hub user name"
    return None, ""


def student_seed(verbose: bool = True) -> int:
    """The seed of whoever runs this notebook, with nothing to type.

    Under nbgrader's autograde: the submission's student id (``$COMPANION_STUDENT``); on a
    JupyterHub: the hub user name (``$JUPYTERHUB_USER``); anywhere else (your own JupyterLab,
    the lite site, a script): 0, the chapter's own data. A name's seed is the instructor's
    pinned one (:func:`seed_overrides`) or else :func:`seed_for_student`. With ``verbose``
    a name's seed is printed with where it came from (nothing is printed for seed 0 without
    a name)."""
    name, source = _whoami()
    if name is None:
        return 0
    key = student_name(name)
    pinned = seed_overrides()
    if key in pinned or "*" in pinned:
        seed = pinned.get(key, pinned.get("*"))
        why = f"pinned for {key} by the instructor"
    else:
        seed = seed_for_student(key)
        why = f"from {source}, {key}"
    if verbose:
        print(f"Seed {seed} ({why}).")
    return seed


def params(exercise_id: str, seed: int = 0) -> dict:
    """The given data of an exercise: seed 0 is the chapter's, other seeds a variant.

    A seed whose variant fails the exercise's screen (an empty answer set, a tie the grader would
    break one way, a zero count, an answer on a rounding edge, an optimum at the edge of the
    offered range) moves to the next seed that passes; ``given["seed"]`` is the seed used and
    ``given["seed_note"]`` says why it moved (it is also printed).

    Seed 0 of Exercise 8-1 is the data of 8.2.1: D_w = 15,136,811,008 B and k = 144 KiB.

    >>> from companion import grading
    >>> given = grading.params("8-1", seed=0)
    >>> given["weight_bytes"], given["kv_bytes_per_token"], given["contexts"]
    (15136811008.0, 147456, (2048, 8192))
    """
    ex = _exercise(exercise_id)
    used, note = resolve_seed(exercise_id, seed)
    given = dict(ex.make_params(used))
    given["seed"] = used
    if note:
        given["seed_note"] = note
        print(f"Exercise {ex.id}, {note}; your given data are those of seed {used}.")
    return given


def parts(exercise_id: str) -> list[str]:
    return [p.name for p in _exercise(exercise_id).parts]


def describe(exercise_id: str) -> str:
    """A short listing of an exercise's parts: quantity, unit and points (no answers)."""
    ex = _exercise(exercise_id)
    lines = [f"Exercise {ex.id}: {ex.title} (see {ex.section})"]
    for p in ex.parts:
        unit = f" [{p.unit}]" if p.unit else ""
        lines.append(f"  ({p.name}) {p.quantity}{unit}, {p.points} point(s)")
    lines.append("  A variant is used only if:")
    lines += [f"    - {c}" for c in GENERIC_CONDITIONS + ex.conditions]
    return "\n".join(lines)


@lru_cache(maxsize=512)
def _solved(ex: Exercise, seed: int) -> tuple[dict, dict, dict]:
    """(given, answers, mistakes) of one exercise variant, computed once: ``check`` is called
    once per part, and the solvers can be simulations."""
    given = ex.make_params(_resolve(ex, seed)[0])
    return given, ex.solve(given), ex.mistakes(given)


@lru_cache(maxsize=512)
def _also_accepted(ex: Exercise, seed: int) -> dict:
    return ex.also_accepted(_solved(ex, seed)[0])


# --- reading an answer -----------------------------------------------------------------------

def _read_answer(answer, part: Part):
    """(number or None, message or None) for a student's answer."""
    if part.kind == "bool":
        if isinstance(answer, bool):
            return answer, None
        return None, (f"answer: part ({part.name}) wants True or False for "
                      f"'{part.quantity}', got {type(answer).__name__} {answer!r}")
    if part.kind == "choice":
        if isinstance(answer, (str, numbers.Number)) and answer in part.options:
            return answer, None
        if isinstance(answer, str):
            # a word option in other capitals or with spaces around it ("Memory ") is that option
            same = [o for o in part.options
                    if isinstance(o, str) and o.strip().casefold() == answer.strip().casefold()]
            if len(same) == 1:
                return same[0], None
        return None, (f"answer: part ({part.name}) wants one of {list(part.options)}, "
                      f"got {answer!r}")
    if isinstance(answer, bool) or answer is None:
        return None, (f"answer: part ({part.name}) wants a number in {part.unit or 'the stated unit'}"
                      f" for '{part.quantity}', got {answer!r}")
    if isinstance(answer, (str, bytes)):
        # text is never read as a number, even "288 MiB" or "15 blocks": the unit or the word
        # in it is the student's, not checked, so a number is asked for instead
        unit = part.unit or "the stated unit"
        return None, (f"({part.name}) not yet: {answer!r} is text, not a number. Hint: give "
                      f"'{part.quantity}' as a plain number in {unit} (no quotes, no unit).")
    if hasattr(answer, "__len__") and not hasattr(answer, "item"):
        return None, (f"answer: part ({part.name}) wants a single number, got a "
                      f"{type(answer).__name__} of length {len(answer)}")
    if hasattr(answer, "item"):  # numpy scalar or 0-d array
        try:
            answer = answer.item()
        except ValueError:
            return None, f"answer: part ({part.name}) wants a single number, got an array"
    if not isinstance(answer, numbers.Real):
        return None, (f"answer: part ({part.name}) wants a number, got "
                      f"{type(answer).__name__} {answer!r}")
    x = float(answer)
    if math.isnan(x) or math.isinf(x):
        return None, f"answer: part ({part.name}) got {answer!r}; expected a finite number"
    return x, None


def _close(value: float, expected: float, part: Part) -> bool:
    if part.kind == "exact":
        return float(value).is_integer() and int(value) == int(round(expected))
    if part.kind == "abs":
        return abs(value - expected) <= part.tolerance
    if expected == 0:
        return abs(value) <= part.tolerance
    return abs(value - expected) <= part.tolerance * abs(expected)


# ratio (answer / expected) -> hint, for unit slips that every exercise shares
_GENERIC_SLIPS = [
    (units.MiB / units.MB, "this looks like MB where MiB was asked (or the reverse): "
                           "1 MiB = 1,048,576 bytes, 1 MB = 1,000,000 bytes"),
    (units.GiB / units.GB, "this looks like GB where GiB was asked (or the reverse): "
                           "1 GiB = 2^30 bytes, 1 GB = 10^9 bytes"),
    (1000.0, "off by a factor of 1000: check seconds vs milliseconds, or KB vs MB"),
    (1024.0, "off by a factor of 1024: check KiB vs MiB (or MiB vs GiB)"),
    (100.0, "off by a factor of 100: give a percentage as asked (or a fraction as asked)"),
    (16.0, "off by a factor of 16: check blocks vs tokens (16 tokens per block)"),
    (2.0, "off by a factor of 2: check K and V (the leading 2), or bytes per value"),
]


def _slip_hint(value: float, expected: float, skip=()) -> str | None:
    if expected == 0 or value == 0:
        return None
    ratio = value / expected
    for factor, hint in _GENERIC_SLIPS:
        if factor in skip:
            continue
        for r in (factor, 1 / factor):
            if abs(ratio - r) <= 0.003 * r:
                return hint
    return None


# an answer this close (relative) to the expected one, but outside the part's tolerance, is a
# near miss: a rounded intermediate step or a unit read slightly differently, not a wrong formula
_NEAR_MISS = 0.05
# the decimal/binary pair a byte quantity's unit can be confused with
_UNIT_PAIRS = {"GB": "GB vs GiB", "GiB": "GB vs GiB", "GB/s": "GB vs GiB", "MB": "MB vs MiB",
               "MiB": "MB vs MiB", "B": "KB vs KiB", "KB": "KB vs KiB", "KiB": "KB vs KiB"}


def _near_miss(value: float, expected: float, part: Part) -> bool:
    """Within a few percent of the expected answer (a count: within one or a few percent)."""
    slack = _NEAR_MISS * abs(expected)
    if part.kind == "exact":
        slack = max(slack, 1.0)
    return abs(value - expected) <= slack


def _hint(value, expected, part: Part, mistakes) -> str:
    """The step to look at for a wrong answer: the exercise's own known mistake that matches
    (ignoring any that coincide with the right answer), and a unit slip (MiB vs MB, s vs ms,
    blocks vs tokens, ...) when the ratio shows one; both when both fit, since the two cannot
    be told apart. Otherwise it says how far off the answer is: close (within a few percent)
    points at the rounding and the units, far off at the formula."""
    if part.kind in ("bool", "choice"):
        return next((why for wrong, why in mistakes if value == wrong and wrong != expected),
                    "recheck the comparison this decision rests on")
    expected = float(expected)
    near = Part(part.name, part.quantity, part.unit, "rel", 0.002)
    known = next((why for wrong, why in mistakes
                  if not _close(float(wrong), expected, part) and _close(value, float(wrong), near)),
                 None)
    found = [h for h in (known, _slip_hint(value, expected, part.no_slips)) if h]
    if found:
        return "; or ".join(found)
    if part.kind == "exact" and not float(value).is_integer():
        return "a whole number is expected: check the rounding (floor or ceil?)"
    if _near_miss(value, expected, part):
        if part.kind == "exact":
            return ("close (off by one or a few percent): check the rounding (floor or ceil?) "
                    "and the units of the inputs")
        units_note = f" ({_UNIT_PAIRS[part.unit]})" if part.unit in _UNIT_PAIRS else ""
        return (f"close (within a few percent): check your rounding (keep full precision until "
                f"the final answer) and units{units_note}")
    return "far off: recheck the formula and the inputs you used"


@dataclass(frozen=True)
class CheckResult:
    """Truthy when correct; ``message`` says what to look at (never the expected value);
    ``answered`` is False when the part has no answer yet."""

    ok: bool
    message: str
    answered: bool = True
    exercise: str = ""
    part: str = ""

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return self.message

    _repr_pretty_ = lambda self, p, cycle: p.text(self.message)  # noqa: E731


_NO_KEY = object()


def _entry(answers, key, part: Part):
    """(answer, problem) for entry ``key`` of a student's dict or list: the answer is None when
    the entry is missing (not answered yet); ``problem`` is a message when ``answers`` is not a
    container that could hold it."""
    if answers is None:
        return None, None
    if isinstance(answers, Mapping):
        if key in answers:
            return answers[key], None
        as_text = [k for k in answers if str(k) == str(key)]
        if as_text:
            return None, (f"answer: part ({part.name}) looks for the entry {key!r} and finds "
                          f"{as_text[0]!r} instead: use the keys of the given data ({key!r}, "
                          f"not {as_text[0]!r})")
        return None, None
    try:
        length = None if isinstance(answers, (str, bytes)) else len(answers)
    except TypeError:                     # no len(): a number, a 0-d array, ...
        length = None
    if length is None or not hasattr(answers, "__getitem__"):
        return None, (f"answer: part ({part.name}) wants a dict or list with an entry for "
                      f"{key!r}, got {type(answers).__name__} {reprlib.repr(answers)}")
    if not isinstance(key, numbers.Integral) or isinstance(key, bool):
        raise TypeError(f"key: a list is indexed by a whole number, got {key!r}")
    if -length <= key < length:
        return answers[key], None
    return None, None


def check(exercise_id: str, part: str, answer, seed: int = 0, *, key=_NO_KEY,
          quiet: bool = False) -> CheckResult:
    """Judge ``answer`` for one part of an exercise (same ``seed`` as the given data).

    Returns a CheckResult that is truthy when the answer is within tolerance, so a check cell
    can ``assert check(...)``. Prints its message unless ``quiet``. ``None`` is an answer not
    given yet. With ``key``, ``answer`` is the student's dict or list and the part's answer is
    its entry ``key``; a missing entry is an answer not given yet. Inside ``with checks():`` the
    result is also collected for the block's verdict.

    At a 2K context KV reads first reach the weight reads at batch 51 (8.2.1):

    >>> from companion import grading
    >>> bool(grading.check("8-1", "b-short", 51, quiet=True))
    True
    >>> bool(grading.check("8-1", "b-short", 50, quiet=True))
    False
    """
    ex = _exercise(exercise_id)
    p = ex.part(part)
    s = _seed(seed)
    problem = None
    if key is not _NO_KEY:
        answer, problem = _entry(answer, key, p)
    if problem is None and answer is None:
        unit = f" (in {p.unit})" if p.unit else ""
        where = "" if key is _NO_KEY else f"; there is no entry for {key!r} yet"
        result = CheckResult(False, f"({p.name}) not yet answered: {p.quantity}{unit}{where}.",
                             answered=False)
    else:
        if problem is None:
            answer, problem = _read_answer(answer, p)
        if problem is not None:
            result = CheckResult(False, problem)
        else:
            result = _judge(ex, p, s, answer)
    result = CheckResult(result.ok, result.message, result.answered, ex.id, p.name)
    if _COLLECTING:
        _COLLECTING[-1].append(result)
    if not quiet:
        _show(result.message, _state(result))
    return result


def _matches(value, expected, p: Part) -> bool:
    if p.kind in ("bool", "choice"):
        return value == expected
    return _close(value, float(expected), p)


def _judge(ex: Exercise, p: Part, seed: int, value) -> CheckResult:
    given, expected_all, mistakes = _solved(ex, seed)
    expected = expected_all[p.name]
    if _matches(value, expected, p):
        return CheckResult(True, f"({p.name}) correct: {p.quantity}.")
    for other, note in _also_accepted(ex, seed).get(p.name, []):
        if _matches(value, other, p):
            return CheckResult(True, f"({p.name}) correct: {p.quantity} ({note}).")
    hint = _hint(value, expected, p, mistakes.get(p.name, []))
    unit = f" (in {p.unit})" if p.unit else ""
    return CheckResult(False, f"({p.name}) not yet: {p.quantity}{unit} is off. Hint: {hint}.")


# --- a check cell's verdict ----------------------------------------------------------------------

_COLLECTING: list[list[CheckResult]] = []     # the results of each open ``checks()`` block


class NotYetCorrect(AssertionError):
    """A check cell's verdict under nbgrader when some part has no answer yet or is not yet right.

    An AssertionError, so nbgrader's autograder counts the cell as failed (no points); IPython
    shows only the message (its ``_render_traceback_`` hook), not a traceback into this module,
    and so does the feedback page.
    ``results`` holds the CheckResult of every part the cell checked.
    """

    def __init__(self, message: str, results=()):
        super().__init__(message)
        self.results = tuple(results)

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


def _verdict(results: list[CheckResult]) -> str:
    """One line per exercise: how many parts are correct, which are unanswered, which are off."""
    lines = []
    for eid in dict.fromkeys(r.exercise for r in results):
        mine = [r for r in results if r.exercise == eid]
        unanswered = [f"({r.part})" for r in mine if not r.answered]
        off = [f"({r.part})" for r in mine if r.answered and not r.ok]
        if not unanswered and not off:
            continue
        said = [f"not yet answered: {', '.join(unanswered)}"] if unanswered else []
        said += [f"not yet right: {', '.join(off)}"] if off else []
        good = sum(r.ok for r in mine)
        lines.append(f"Exercise {eid}, {good} of {len(mine)} part{'s' * (len(mine) != 1)} "
                     f"correct; " + "; ".join(said) + ".")
    return "\n".join(lines)


def _all_correct(results: list[CheckResult]) -> str:
    """One line per exercise of a block whose every part is right."""
    lines = []
    for eid in dict.fromkeys(r.exercise for r in results):
        n = sum(r.exercise == eid for r in results)
        lines.append(f"Exercise {eid}: all {n} part{'s' * (n != 1)} of this cell correct."
                     if n > 1 else f"Exercise {eid}: this cell's part is correct.")
    return "\n".join(lines)


# --- how a verdict looks -------------------------------------------------------------------------

# state -> (text colour, background, mark); the words alone carry the verdict (plain text)
_STYLE = {"ok": (*theme.VERDICT_STYLE["ok"], "\u2713"),        # check mark
          "open": (*theme.VERDICT_STYLE["open"], "\u2026"),    # ellipsis: not answered yet
          "off": (*theme.VERDICT_STYLE["off"], "\u2717")}      # ballot x


def _state(result: CheckResult) -> str:
    return "ok" if result.ok else ("off" if result.answered else "open")


def _verdict_html(text: str, state: str) -> str:
    colour, background, mark = _STYLE[state]
    return (f'<div class="companion-verdict companion-verdict-{state}" style="color:{colour};'
            f'background:{background};border-left:4px solid {colour};padding:2px 8px;'
            f'margin:2px 0;white-space:pre-wrap">{mark} {html.escape(text)}</div>')


def _show(text: str, state: str) -> None:
    """Print ``text``, or inside IPython display it as coloured HTML with ``text`` as the
    plain-text form (what a terminal, nbconvert's text and GitHub's view show)."""
    ipython = sys.modules.get("IPython")          # never imported here just for this
    if ipython is None or ipython.get_ipython() is None:
        print(text)
        return
    from IPython.display import display
    display({"text/plain": text, "text/html": _verdict_html(text, state)}, raw=True)


class _CheckBlock:
    def __enter__(self) -> list[CheckResult]:
        self.results: list[CheckResult] = []
        _COLLECTING.append(self.results)
        return self.results

    def __exit__(self, exc_type, exc, tb) -> bool:
        # pop this block's list (by identity: an inner block may have failed to close)
        while _COLLECTING:
            if _COLLECTING.pop() is self.results:
                break
        if exc_type is None:
            if not all(self.results):
                verdict = _verdict(self.results)
                if graded_by_nbgrader():
                    raise NotYetCorrect(verdict, self.results)
                _show(verdict, "off" if any(r.answered for r in self.results if not r) else "open")
                return False
            if self.results:
                _show(_all_correct(self.results), "ok")
            return False
        if issubclass(exc_type, NameError):
            # the kernel restarted, or the answer cell's first line (which defines the answer
            # variables) was deleted
            message = (f"{exc}: run the cells above this one first (Run > Run All Cells); if it "
                       f"is still missing, put back the first line of the answer cell, which "
                       f"defines it")
            if graded_by_nbgrader():
                raise NotYetCorrect(message, self.results) from exc
            _show(message, "open")
            return True                   # shown, not raised: Run All goes on
        return False


def checks() -> _CheckBlock:
    """``with checks():`` around a check cell's ``check`` calls: every part is graded and prints
    its message, then one line names the parts not answered yet (amber) and those not yet right
    (red), or, when all are correct, says so (green). The cell ends normally, so Run All goes
    on; only under nbgrader (:func:`graded_by_nbgrader`) does the block raise
    :class:`NotYetCorrect` with that line, so the cell gets no points. A NameError inside the
    block (the answer cells have not run) becomes a line that says to run them (under nbgrader,
    a NotYetCorrect).
    """
    return _CheckBlock()
