"""``python -m companion.measure OUT.json [--fast] [--label TEXT] [--threads N]``: measure and
save."""

from __future__ import annotations

import time

from companion.measure.analysis import compare_measurements, comparison_text, save_measurement
from companion.measure.probes import measure


def main(argv=None) -> int:
    """python -m companion.measure OUT.json [--fast] [--label TEXT] [--threads N]: measure and
    save (``--threads`` limits every CPU probe, BLAS included, as ``measure(threads=N)``)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m companion.measure",
                                     description="Measure this machine and save it as JSON.")
    parser.add_argument("out", help="JSON file to write")
    parser.add_argument("--fast", action="store_true", help="small sizes (a few seconds)")
    parser.add_argument("--label", default="", help="a name for this machine")
    parser.add_argument("--threads", type=int, default=None,
                        help="limit every CPU probe (the BLAS too) to N threads")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    m = measure(fast=args.fast, label=args.label, threads=args.threads)
    path = save_measurement(m, args.out)
    print(comparison_text(compare_measurements([m])))
    print(f"saved {path} after {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
