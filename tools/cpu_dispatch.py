#!/usr/bin/env python
"""The environment of `make test`'s second notebook pass: another CPU's numeric code paths.

NumPy picks SIMD kernels at run time among the targets its build dispatches to and the CPU
has (``numpy.show_runtime()``: baseline / found / not_found); OpenBLAS picks a kernel set
per CPU as well. The second pass takes the widest SIMD tier NumPy found away
(``NPY_DISABLE_CPU_FEATURES``: X86_V3 on an AVX2 machine, X86_V4 and every AVX512_* on an
AVX-512 one), runs OpenBLAS with its plain SSE3 kernels (``OPENBLAS_CORETYPE=Prescott``) and
Python with another string-hash seed. Stored outputs must not notice.

How NumPy reacts (numpy 2.4): a dispatched target the CPU does not have may be named (it is
ignored silently); an unknown name only raises an ImportWarning; naming a baseline target
makes ``import numpy`` fail with RuntimeError ("cannot disable CPU feature ... part of the
baseline"), so the baseline is never named here.

usage: python tools/cpu_dispatch.py   prints NAME=VALUE lines (stdout) and what it took away
(stderr). Run it with NPY_DISABLE_CPU_FEATURES unset, or it sees the reduced set.
"""

from __future__ import annotations

import os
import platform
import sys

# x86 dispatch targets by vector width: every name of the widest tier found goes together
# (numpy 2.4 groups targets into X86_V2/V3/V4 levels; older releases name the extensions)
_X86_512 = ("X86_V4", "AVX512")          # a name equal to or starting with one of these
_X86_256 = ("X86_V3", "AVX", "F16C", "FMA3", "AVX2", "AVX_VNNI")
HASH_SEED_SECOND_PASS = "1"               # the Makefile pins 0 for everything else


def simd_targets():
    """(baseline, dispatched, found): NumPy's baseline targets, the targets its build can
    dispatch to (lowest first) and those of them this CPU has."""
    try:
        from numpy._core._multiarray_umath import (__cpu_baseline__, __cpu_dispatch__,
                                                    __cpu_features__)
    except ImportError:  # numpy 1.x
        from numpy.core._multiarray_umath import (__cpu_baseline__, __cpu_dispatch__,
                                                   __cpu_features__)
    dispatched = list(__cpu_dispatch__)
    return list(__cpu_baseline__), dispatched, [t for t in dispatched if __cpu_features__.get(t)]


def _tier(name: str) -> int:
    if name.startswith(_X86_512):
        return 2
    if name in _X86_256:
        return 1
    return 0


def widest_tier(dispatched: list[str], found: list[str]) -> list[str]:
    """The dispatched targets to disable so that NumPy falls back from the widest tier it
    found: on x86 every target of that width and above; elsewhere the highest target found
    and every one after it. Empty when nothing above the baseline was found."""
    if not found:
        return []
    top = max(_tier(t) for t in found)
    if top > 0:
        return [t for t in dispatched if _tier(t) >= top]
    return dispatched[dispatched.index(found[-1]):]


def openblas_kernels() -> list[dict]:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    return [i for i in threadpool_info() if i.get("internal_api") == "openblas"]


def second_pass_env() -> tuple[dict, list[str]]:
    """(variables to set, sentences saying what they change)."""
    if "NPY_DISABLE_CPU_FEATURES" in os.environ:
        raise SystemExit("cpu_dispatch.py: unset NPY_DISABLE_CPU_FEATURES first (it would "
                         "hide the targets this CPU has)")
    baseline, dispatched, found = simd_targets()
    drop = widest_tier(dispatched, found)
    env, said = {}, []
    if drop:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(drop)
        kept = [t for t in found if t not in drop]
        said.append(f"NumPy without {' '.join(t for t in drop if t in found)} (found "
                    f"{' '.join(found)}; keeps {' '.join(baseline + kept)})")
    else:
        said.append(f"NumPy unchanged: this build found no SIMD target above its baseline "
                    f"({' '.join(baseline) or 'none'}) on this CPU, nothing to take away")
    blas = openblas_kernels()
    if blas and platform.machine().lower() in ("x86_64", "amd64"):
        env["OPENBLAS_CORETYPE"] = "Prescott"
        said.append(f"OpenBLAS with Prescott (SSE3) kernels instead of "
                    f"{blas[0].get('architecture')}")
    env["PYTHONHASHSEED"] = HASH_SEED_SECOND_PASS
    said.append(f"PYTHONHASHSEED={HASH_SEED_SECOND_PASS}")
    return env, said


def main() -> int:
    env, said = second_pass_env()
    for name, value in env.items():
        print(f"{name}={value}")
    print("second pass: " + "; ".join(said), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
