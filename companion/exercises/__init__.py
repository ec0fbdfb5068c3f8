"""Exercise definitions (given data by seed, expected answers, hints), one module per exercise.

``ex8_4`` holds exercise 8-4, named like ``solutions/ex8_4.py`` and ``exercises/ex8_4.py``. Each
exercise module defines ``exercises() -> list[companion.grading.Exercise]``;
``companion.grading.exercises()`` collects them. The other modules hold what several exercises
share: ``variants`` (per-student variants, display units), ``common_ch08`` and ``common_ch17``.
"""
