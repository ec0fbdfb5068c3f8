"""companion.where: a section's notebook, formulas, simulator, explorers, figures, ledger
entries, exercises and inputs, read off the code; and README.md's generated table."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import companion
from companion import ledger, plots, widgets
from companion.sections import cited_sections, section_key, section_table, sections, where
from companion.serves import served_sections
from tools.make_section_table import BEGIN, END, with_table

ROOT = Path(__file__).resolve().parents[1]


def test_8_3_4_lists_its_homes():
    w = companion.where("8.3.4")
    assert w.notebooks == ("notebooks/ch08_inference_optimization/08_3_kv_cache.py",)
    # as a notebook reads them: through the façade where it lists them, else from their home
    assert {"formulas.kv_management.prefix_recompute_s",
            "formulas.kv_management.retention_break_even_hit_prob",
            "calc.prefix_retention", "calc.cache_replay_hits"} <= set(w.formulas)
    assert {"sim.kv_scenarios.replay_prefix_cache", "sim.kvcache.PrefixCache"} <= set(w.simulator)
    assert w.explorers == ("widgets.RetentionPanel",)
    assert "plots.retention_bars_figure" in w.figures
    assert w.exercises == ("8-4",)
    assert "chapters.ch08.RETENTION_HIT_PROB" in w.inputs
    # every ledger entry of the section, and only those
    assert set(w.ledger) == {e.id for e in ledger.entries() if e.section == "8.3.4"}
    assert len(w.ledger) >= 20


def test_a_chapter_17_section_by_either_name():
    assert where("17 §4") == where("17.4") == where("§4")
    w = where("17.4")
    assert w.notebooks == ("notebooks/ch17_performance/17_04_kv_sizing.py",)
    assert {"calc.kv_by_context", "calc.tp_kv_capacity"} <= set(w.formulas)
    assert w.explorers == ("widgets.KVSizingPanel",)
    assert w.exercises == ("17-1", "17-2")


@pytest.mark.parametrize("section, notebook, in_sim, exercise", [
    ("8.2.2", "08_2_batching_and_scheduling", "sim.scenarios.chapter_schedules", "8-2"),
    ("17.3", "17_03_prefill_vs_decode", "sim.scenarios.hol_scenario", "17-11"),
    ("17.6", "17_06_batching_strategies", "sim.batching_trace_requests", "17-11"),
    ("17.11", "17_11_interview_questions", "sim.scenarios.itl_tail_trace", "17-10"),
])
def test_sections_reach_their_simulator_and_exercises(section, notebook, in_sim, exercise):
    w = where(section)
    assert [Path(n).stem for n in w.notebooks] == [notebook]
    assert in_sim in w.simulator
    assert exercise in w.exercises


def test_a_section_includes_its_subsections():
    whole, part = where("8.3"), where("8.3.4")
    for kind in ("formulas", "simulator", "explorers", "figures", "ledger", "exercises"):
        assert set(getattr(part, kind)) <= set(getattr(whole, kind)), kind


def test_every_notebook_section_is_known_and_nothing_is_empty():
    known = sections()
    assert {"8.1", "8.6.3", "17.1", "17.10", "17.11"} <= set(known)
    for s in known:
        w = where(s)
        assert w.notebooks, f"{s}: no notebook"


@pytest.mark.parametrize("text, expected", [
    ("8.3.4", {"8.3.4"}), ("8.2.2-8.2.4", {"8.2.2", "8.2.3", "8.2.4"}),
    ("8.4.2, 8.4.4", {"8.4.2", "8.4.4"}), ("17 §3 and §6", {"17.3", "17.6"}),
    ("§6-§8", {"17.6", "17.7", "17.8"}), ("17 §5 and the interview questions", {"17.5", "17.11"})])
def test_exercise_section_fields(text, expected):
    assert cited_sections(text) == expected


def test_where_reads_the_serves_mark_not_the_docstring():
    from companion.formulas import core, kv_management
    from companion.serves import served_sections, serves
    # kv_bytes_per_token's docstring cites no 8.3.4; its mark decides
    assert "8.3.4" not in served_sections(core.kv_bytes_per_token)
    assert "calc.kv_bytes_per_token" not in where("8.3.4").formulas
    assert "calc.prefix_retention" in where("8.3.4").formulas
    assert "8.3.4" in served_sections(kv_management.prefix_retention)

    @serves("17 §9", "8.3.4", "17.9")
    def marked():
        """Cites 8.6.3 in prose, which counts for nothing."""
    assert served_sections(marked) == ("17.9", "8.3.4")
    with pytest.raises(ValueError, match="section"):
        serves()
    with pytest.raises(ValueError, match="section"):
        serves("8.x")


@pytest.mark.parametrize("bad, error", [("8.x", ValueError), ("9.1", ValueError),
                                        (834, TypeError), ("8.9.9", ValueError)])
def test_bad_sections_are_named(bad, error):
    with pytest.raises(error, match="section"):
        where(bad)


def test_section_keys():
    assert section_key(" 17 § 4 ") == "17.4"
    assert section_key("8.3") == "8.3"


def test_readme_holds_the_current_section_table():
    readme = (ROOT / "README.md").read_text()
    assert BEGIN in readme and END in readme
    assert with_table(readme, section_table()) == readme, (
        "README.md's section table is stale: run `python tools/make_section_table.py`")


# --- the explorer modules, one per notebook ------------------------------------------------------

NOTEBOOKS = {p.stem: p for folder in ("ch08_inference_optimization", "ch17_performance")
             for p in (ROOT / "notebooks" / folder).glob("[01]*.py")}
SECTION_MODULES = sorted(p.stem for p in (ROOT / "companion" / "explorers").glob("ch*.py"))


def _notebook_section(stem: str) -> str:
    """"08_3_kv_cache" -> "8.3", "17_09_measuring" -> "17.9" (the file name, as where() reads
    it)."""
    chapter, number = stem.split("_")[:2]
    return section_key(f"{int(chapter)}.{int(number)}")


@pytest.mark.parametrize("stem", SECTION_MODULES)
def test_a_section_module_is_named_after_its_notebook_and_states_its_section(stem):
    notebook = stem.removeprefix("ch")
    assert notebook in NOTEBOOKS, f"{stem}: no notebook {notebook}.py to be named after"
    module = importlib.import_module(f"companion.explorers.{stem}")
    assert module.SECTION == _notebook_section(notebook)
    for name in module.__all__:
        for mark in served_sections(getattr(module, name)):
            assert mark == module.SECTION or mark.startswith(module.SECTION + "."), (
                f"{stem}.{name} serves {mark}: move it to that section's module")


def test_each_panel_and_figure_lives_with_the_first_notebook_that_uses_it():
    used_by = {}
    for stem in sorted(NOTEBOOKS):
        if _notebook_section(stem).endswith(".0"):   # an overview draws what a section owns
            continue
        for name in re.findall(r"\b(?:widgets|plots)\.(\w+)", NOTEBOOKS[stem].read_text()):
            used_by.setdefault(name, stem)
    misplaced = []
    for name in set(widgets.__all__) | set(plots.__all__):
        home = getattr(widgets if name in widgets.__all__ else plots, name)
        module = getattr(home, "__module__", "").rpartition(".")[2]
        if module in SECTION_MODULES and name in used_by and module != "ch" + used_by[name]:
            misplaced.append(f"{name} ({module}, first drawn in {used_by[name]})")
    assert not misplaced, "; ".join(sorted(misplaced))
