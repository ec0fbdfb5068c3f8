"""No stored output that nbval compares holds a float with more significant digits than
``companion.display`` rounds figures to.

A full-precision float in a stored output is the last-bit result of one CPU's SIMD kernels or
BLAS; on another CPU strict nbval fails on it (issue 11). Every executed notebook
(notebooks/, solutions/, exercises/, dashboards/) is scanned: stream text, error values and
every mimetype nbval compares (text/plain, text/html, JSON mimetypes including plotly figures,
whose numbers may also sit in base64 typed arrays). Cells tagged ``nbval-ignore-output`` or
``nbval-skip`` are not compared, so they are not scanned. PNG/JPEG and widget views are never
compared by nbval.
"""

from __future__ import annotations

import base64
import json
import math
import re
import struct
from pathlib import Path

import pytest

from companion.display import SIGNIFICANT_DIGITS

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("notebooks", "solutions", "exercises", "dashboards")
NOTEBOOKS = sorted(p for d in FOLDERS for p in (ROOT / d).rglob("*.ipynb")
                   if ".ipynb_checkpoints" not in p.parts)
NOT_COMPARED_TAGS = {"nbval-ignore-output", "nbval-skip"}
NOT_COMPARED_MIMES = {"image/png", "image/jpeg", "application/vnd.jupyter.widget-view+json"}

# a decimal number with a point or an exponent, not part of a word, a version or a date
DECIMAL = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+(?=[eE]))(?:[eE][-+]?\d+)?"
                     r"(?![\w]|\.\d)")
TYPED = {"f4": "<f", "f8": "<d"}


def significant_digits(literal: str) -> int:
    """Significant digits of a decimal literal ("0.0300" -> 1, "6.953500000000042" -> 16)."""
    mantissa = re.split("[eE]", literal.lstrip("+-"))[0].replace(".", "")
    return len(mantissa.strip("0"))


def float_digits(x: float) -> int:
    """Significant digits of the shortest repr of ``x`` (what JSON and Python print)."""
    return 0 if not math.isfinite(x) or x == 0 else significant_digits(repr(x))


def long_floats_in_text(text: str, allowed: int = SIGNIFICANT_DIGITS) -> list[str]:
    return [m.group(0) for m in DECIMAL.finditer(text) if significant_digits(m.group(0)) > allowed]


def long_floats(value, allowed: int = SIGNIFICANT_DIGITS) -> list[str]:
    """Every float (JSON number, typed-array element, decimal in a string) in ``value`` with
    more than ``allowed`` significant digits."""
    found: list[str] = []
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return found
    if isinstance(value, float):
        if float_digits(value) > allowed:
            found.append(repr(value))
    elif isinstance(value, str):
        found += long_floats_in_text(value, allowed)
    elif isinstance(value, list):
        if value and all(isinstance(v, str) for v in value):  # split text lines
            found += long_floats_in_text("".join(value), allowed)
        else:
            for v in value:
                found += long_floats(v, allowed)
    elif isinstance(value, dict):
        if value.get("dtype") in TYPED and isinstance(value.get("bdata"), str):
            raw = base64.b64decode(value["bdata"])
            fmt = TYPED[value["dtype"]]
            for (x,) in struct.iter_unpack(fmt, raw):
                # a float32 element is judged by the float32 nearest to its shortest decimal
                if value["dtype"] == "f4":
                    short = next(f"{x:.{d}g}" for d in range(1, 10)
                                 if struct.unpack("<f", struct.pack("<f", float(f"{x:.{d}g}")))[0] == x)
                    if significant_digits(short) > allowed:
                        found.append(f"f4 {short}")
                elif float_digits(x) > allowed:
                    found.append(f"f8 {x!r}")
        else:
            for v in value.values():
                found += long_floats(v, allowed)
    return found


def compared_outputs(nb: dict):
    """(where, value) for every part of a stored output that strict nbval compares."""
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        if NOT_COMPARED_TAGS & set(cell.get("metadata", {}).get("tags", [])):
            continue
        for j, output in enumerate(cell.get("outputs", [])):
            where = f"cell {i} output {j}"
            kind = output.get("output_type")
            if kind == "stream":
                yield f"{where} {output.get('name')}", output.get("text", "")
            elif kind == "error":
                yield f"{where} error", [output.get("ename", ""), output.get("evalue", "")]
            for mime, value in output.get("data", {}).items():
                if mime not in NOT_COMPARED_MIMES:
                    yield f"{where} {mime}", value


def notebook_long_floats(nb: dict) -> list[str]:
    problems = []
    for where, value in compared_outputs(nb):
        found = long_floats(value)
        if found:
            problems.append(f"{where}: {len(found)} float(s) with more than "
                            f"{SIGNIFICANT_DIGITS} significant digits, e.g. {found[:3]}")
    return problems


def test_there_are_notebooks_to_scan():
    assert len(NOTEBOOKS) > 20
    assert {p.relative_to(ROOT).parts[0] for p in NOTEBOOKS} == set(FOLDERS)


@pytest.mark.parametrize("ipynb", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_stored_outputs_hold_no_full_precision_float(ipynb):
    problems = notebook_long_floats(json.loads(ipynb.read_text()))
    assert not problems, (
        "\n".join(problems[:10]) + "\nFigures: build them with companion.plots (the rounding "
        "renderer of companion.display); text: format the number (f'{x:.4g}') or print "
        "companion.display.round_floats(obj); then `make execute ARGS=<the .py>`.")


# --- the scanner itself catches what it must ---------------------------------------------------

def _typed(values, dtype="f8") -> dict:
    fmt = TYPED[dtype]
    return {"dtype": dtype, "bdata": base64.b64encode(
        b"".join(struct.pack(fmt, v) for v in values)).decode("ascii")}


@pytest.mark.parametrize("value", [
    "total 6.953500000000042 s",
    ["VBox(children=(FloatSlider(value=6.953500000000042, ", "description='x')"],
    {"data": [{"x": [1.0, 2.0, 0.30000000000000004]}]},
    {"data": [{"y": _typed([1.5, 14.378503799438477])}]},
    {"data": [{"y": _typed([14.378503799438477], "f4")}]},
    "1.2345678e-05 s",
    {"layout": {"annotations": [{"text": "ridge 6.02113450 FLOP/B"}]}},
])
def test_scanner_flags_long_floats(value):
    assert long_floats(value)


@pytest.mark.parametrize("value", [
    "KV per token 147,456 B; 16381470720 B; 0.3 s; 6.9535 s; 1.23457e-05; -0.000123457",
    "numpy 2.4.6, plotly 7.1.0, jupyterlab 4.6.6 on 2026.05.09",
    {"data": [{"x": [1, 2, 3], "y": [0.1, 123456.0, 1e+22, float("nan")]}]},
    {"data": [{"y": _typed([1.5, 14.3785, 0.1])}]},
    {"data": [{"y": _typed([0.1, 14.3785], "f4")}]},
    {"data": [{"y": {"dtype": "i4", "bdata": base64.b64encode(b"\xff" * 16).decode()}}]},
    "cell id cell-012 and hex 0x7f3a9c2b10 and a uuid 3f2a9c1b-0d4e-4a5b-9c6d-7e8f9a0b1c2d",
    [True, None, 7],
])
def test_scanner_passes_rounded_numbers_integers_and_versions(value):
    assert not long_floats(value), long_floats(value)


def test_scanner_skips_what_nbval_does_not_compare():
    long = "6.953500000000042"
    nb = {"cells": [
        {"cell_type": "code", "metadata": {"tags": ["nbval-ignore-output"]},
         "outputs": [{"output_type": "stream", "name": "stdout", "text": long}]},
        {"cell_type": "code", "metadata": {},
         "outputs": [{"output_type": "display_data", "metadata": {},
                      "data": {"image/png": long,
                               "application/vnd.jupyter.widget-view+json": {"x": 0.1 + 0.2}}}]},
    ]}
    assert not notebook_long_floats(nb)
    nb["cells"][0]["metadata"]["tags"] = []
    nb["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [
        {"output_type": "error", "ename": "ValueError", "evalue": f"x: {long}", "traceback": []}]})
    assert len(notebook_long_floats(nb)) == 2
