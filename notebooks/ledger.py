# ---
# jupyter:
#   jupytext:
#     notebook_metadata_filter: -jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The ledger: every printed number, re-derived
#
# Both chapters are worked arithmetic. This notebook lists each number they print that
# follows from inputs they state (a table cell, a worked example's result, a footnote's byte
# count) next to the value the `companion` package recomputes from those inputs.
#
# How to read a row:
#
# - **chapter** is the number as printed, in the chapter's own unit (Chapter 8 mixes binary
#   MiB/GiB for KV and memory budgets with decimal GB for bandwidth-side volumes; Chapter 17
#   writes "KB" for KiB in per-token sizes). A number the chapter writes with an exponent
#   (`3.35e12` bytes per second) is shown in the matching SI unit (3.35 TB/s), digits kept.
# - **companion** is the recomputation in the same unit, one digit finer than the chapter.
# - **verdict**: ✓ when the recomputation rounds to the printed number; **≈** when it agrees
#   only under a looser rounding that the entry declares (two significant figures, a rounded
#   intermediate, an efficiency the chapter does not state), and the note says which and why;
#   **✗ erratum** when the chapter's arithmetic cannot give its own number, and the note works
#   it out both ways.
# - **note** holds every remark; together they are the companion's errata sheet.
#
# Nothing in these tables is typed in: every value is computed when the notebook runs, and the
# test suite fails if an entry disagrees with the chapter without a note, or if a "≈" row
# loses its reason.

# %%
from collections import Counter

from IPython.display import HTML

from companion import ledger

entries = ledger.entries()
by_chapter = Counter(e.section.split(".")[0] for e in entries)
by_status = Counter(e.status for e in entries)
print(f"{len(entries)} numbers re-derived: {by_chapter['8']} from Chapter 8, "
      f"{by_chapter['17']} from Chapter 17")
print(f"agree at the printed rounding: {by_status['agrees']}")
print(f"agree only under a declared looser rounding (≈, with the reason): {by_status['≈']}")
print(f"disagree (errata, noted): {by_status['disagrees']}")
print(f"computed by a simulator rather than a closed form: "
      f"{sum(e.source == 'sim' for e in entries)}")

# %% [markdown]
# ## Chapter 8, "Inference Optimization"

# %%
HTML(ledger.html_table("8"))

# %% [markdown]
# ## Chapter 17, "LLM Inference Performance"

# %%
HTML(ledger.html_table("17"))

# %% [markdown]
# ## Errata
#
# The rows where the chapter's own arithmetic does not give its printed number, gathered from
# the tables above. Each note shows both readings and says which one the chapter used; the
# companion keeps the formula and reports the slip rather than bending the formula to the
# printed value.

# %%
HTML(ledger.html_table(ids=[e.id for e in ledger.disagreements()]))
