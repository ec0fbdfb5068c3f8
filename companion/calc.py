"""Every closed-form relation of Chapters 8 and 17, as pure validated functions.

This module is the public face; the formulas live in topic modules under
``companion.formulas`` and are re-exported here, so notebooks and exercises only ever write
``from companion import calc``. Importing it imports no plotting library.
"""

from companion.formulas.core import *  # noqa: F401,F403
from companion.formulas import core as _core

__all__ = list(_core.__all__)
