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
# # Lecture dashboard: which configuration serves the batch, and where it sits on the roofline
#
# Two explorers of the companion on one page, for a lecture or a lab session: served with
# Voila (`make dashboard`), code hidden, nothing fetched from the internet. Each control
# recomputes the chapter's numbers with the `companion` package; the **chapter's setting**
# button puts the chapter's values back.
#
# **1. Chapter 8, section 8.6.3 (Figure 8-35).** Sixteen long requests (8192-token prompts
# sharing a 6144-token prefix, 256 output tokens each) under the chapter's four serving
# schemes, A to D.
# Each scheme is a point on the memory x deadline plane: its KV + auxiliary memory against
# the budget, and the time until the whole batch completes against the 7 s deadline. Only a
# scheme inside both limits returns qualifying results. (Exercise 8-9's scheme E, a
# context-lookup draft, is left for the students to place.)
#
# **2. Chapter 17, section 2 (the roofline).** Decode at batch 1, batched decode (weights
# only, then with each sequence's KV) and prefill placed on a card's roofline. Decode is far
# left of the ridge (memory bound) until the batch grows; prefill sits on the flat compute
# roof.

# %% [markdown]
# ## Schemes A-D on the memory x deadline plane (8.6.3)

# %% tags=["nbval-ignore-output"]
from companion import widgets

schemes = widgets.SchemePanel()
schemes.show()

# %% [markdown]
# ## The roofline (17 §2)

# %% tags=["nbval-ignore-output"]
roofline = widgets.RooflinePanel()
roofline.show()
