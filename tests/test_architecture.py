"""The package's structure, measured (issue 14): one home for each thing.

The measurements are in tests/architecture.py (``python tests/architecture.py`` prints them
for any checkout); each test here holds one property at its target and says what to do.
"""

from __future__ import annotations

import pytest

from companion import chapters
from tests import architecture as arch

MAX_LINES = 1000


def test_no_import_cycles():
    assert arch.modules_in_cycles() == [], (
        "modules that import each other at import time: move the shared code to a module "
        "both import")


def test_no_import_cycles_even_through_imports_inside_functions():
    assert arch.modules_in_cycles(deferred=True) == [], (
        "an import inside a function still ties the two modules together: move the shared "
        "code to a module both import")


def test_specs_model_from_hf_config_is_the_models_function_itself():
    from companion import models, specs
    assert specs.model_from_hf_config is models.model_from_hf_config


def test_no_private_name_is_imported_from_another_module():
    found = arch.private_imports()
    assert not found, ("make the name public where it is shared (and list it in __all__), or "
                       "move the code that needs it: " + "; ".join(found))


def test_no_module_is_over_a_thousand_lines():
    too_long = [(n, m) for n, m in arch.largest_modules(n=10) if n > MAX_LINES]
    assert not too_long, f"split these modules by topic: {too_long}"


def test_facades_list_what_readers_use_and_what_was_promised():
    problems = arch.facade_problems()
    assert not problems, "; ".join(problems)


def test_a_facade_exports_at_run_time_what_its_source_lists():
    import ast
    import importlib
    for f, rel in arch.FACADE_FILES.items():
        listed, _, _ = arch.facade_listing(ast.parse((arch.ROOT / rel).read_text()), rel)
        module = importlib.import_module(f"companion.{f}")
        assert sorted(module.__all__) == sorted(listed), f
        # an eager façade's dir() also shows its ``from __future__ import annotations``
        public = {n for n in dir(module) if not n.startswith("_")} - {"annotations"}
        submodules = {n for n in public if (arch.ROOT / "companion" / f / f"{n}.py").exists()}
        assert public - submodules == set(module.__all__), f


_LAZY = """
from __future__ import annotations
from typing import TYPE_CHECKING
from companion.lazy import attach
if TYPE_CHECKING:
    from companion.formulas.core import (kv_bytes, ridge_point)
    from companion.formulas.batching import ttft_s
__all__, __getattr__, __dir__ = attach(__name__, {
    "companion.formulas.core": ("kv_bytes", "ttft_s"),
    "companion.formulas.batching": ("ridge_point",),
})
"""


def test_the_facade_check_reads_a_lazy_facade_and_sees_its_lists_disagree():
    import ast
    listed, imported, problems = arch.facade_listing(ast.parse(_LAZY), "x.py")
    assert problems == []
    assert listed == {"kv_bytes": "companion.formulas.core", "ttft_s": "companion.formulas.core",
                      "ridge_point": "companion.formulas.batching"}
    assert imported["ttft_s"] == "companion.formulas.batching"
    # a statement that is neither an import nor the lazy table is refused
    _, _, problems = arch.facade_listing(ast.parse(_LAZY + "x = 1\n"), "x.py")
    assert problems == ["x.py:12: a statement other than imports"]


def test_every_promised_name_exists_where_it_was_promised():
    import importlib
    for module, names in arch.PROMISED.items():
        m = importlib.import_module(f"companion.{module}")
        assert [n for n in names if not hasattr(m, n)] == [], module


def test_reader_names_sees_only_the_facade_binding():
    import ast
    tree = ast.parse("from companion import calc\nfrom companion.sim import speculative as sim\n"
                     "x = calc.kv_bytes(m, 1) + sim.greedy_example()\n"
                     "from companion.plots import roofline_figure\n")
    reads = arch.facade_reads(tree)
    assert reads["calc"] == {"kv_bytes"} and reads["sim"] == set()
    assert reads["plots"] == {"roofline_figure"}


def test_chapter_inputs_are_typed_only_in_companion_chapters():
    found = arch.repeated_inputs()
    assert not found, ("import these from companion.chapters (or derive them), or mark a "
                       f"coincidence with '# {arch.IGNORE_MARK}': " + "; ".join(found))


def test_every_chapter_input_has_its_section_and_phrase():
    items = chapters.inputs()
    assert len(items) > 150
    for item in items:
        assert item.sections or item.exercises, f"{item.name}: no section in {item.where!r}"
        assert item.quote or item.assumed, f"{item.name}: no chapter phrase"


# the scan must see the values it exists for; a few the issue names, in base and display units
@pytest.mark.parametrize("value, name", [
    (6144.0, "ch8.SHARED_PREFIX_TOKENS"), (0.02626, "ch8.ROUND_B1_S"), (26.26, "ch8.ROUND_B1_S"),
    (94.8, "ch8.PREFILL_ROUND_S"), (503.8e12, "ch8.RTX_PRO_6000_PEAK_FLOPS_PER_S"),
    (989e12, "ch17.H100_PEAK_FLOPS_PER_S"), (3.35e12, "ch17.H100_BW_BYTES_PER_S")])
def test_the_scan_knows_the_distinctive_inputs(value, name):
    assert name in arch.input_targets()[value]


@pytest.mark.parametrize("value", [16, 2048, 0.5, 6e-3, 1024, 100])
def test_common_values_are_not_distinctive(value):
    assert not arch.distinctive(value)


def test_the_scan_finds_a_typed_input(tmp_path):
    (tmp_path / "companion").mkdir()
    (tmp_path / "companion" / "x.py").write_text(
        "A = 6144\nB = 26.26 * ms\nC = 12 * GiB  # not a chapter input\nD = 2048\n")
    found = arch.repeated_inputs(tmp_path)
    assert [f.split()[0] for f in found] == ["companion/x.py:1", "companion/x.py:2"]
