"""What a course on nbgrader needs from the companion: one call in ``nbgrader_config.py``.

In the instructor's (or the course-wide) ``nbgrader_config.py``::

    from companion.course import configure
    configure(c)

It does two things:

* **the answer stub**: ``nbgrader generate_assignment`` empties each answer cell to
  ``# YOUR CODE HERE`` (what ``tools/make_exercises.py`` writes for ``exercises/``) instead of
  nbgrader's ``raise NotImplementedError()``. The first line of every answer cell, which nbgrader
  keeps, already defines the answer variables as empty, so a fresh notebook runs top to bottom
  and each check cell says "not yet answered"; under nbgrader those checks still fail (0 points).
* **the student's seed at autograde**: nbgrader's Execute step is replaced by one that sets
  ``$COMPANION_STUDENT`` to the submission's student id while the notebook runs, so
  ``grading.student_seed()`` in the given-data cell gives the seed of the student whose work is
  graded, not the grader's. Without it an autograded exercise stops at its given-data cell
  with a message naming this function. The same step starts each kernel on Unix sockets in a
  folder of its own (POSIX), so ipykernel does not warn, once per notebook, that TCP traffic is
  unencrypted.
* **a quiet log**: nbgrader's gradebook makes SQLAlchemy warn "Object of type
  <SubmittedAssignment> not in session, add operation along ... will not proceed" on every
  submission it creates (its autoflush, harmless); that one message is filtered, nothing else.

Importing this module imports nothing of nbgrader; ``configure`` does, so call it only where
nbgrader is installed (in its config file).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from contextlib import contextmanager

__all__ = ["configure", "CODE_STUB", "student_execute_class"]

CODE_STUB = "# YOUR CODE HERE"


@contextmanager
def _env(name: str, value: str | None):
    before = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def student_execute_class():
    """nbgrader's Execute preprocessor, with ``$COMPANION_STUDENT`` set to the student id of
    the notebook it runs (the kernel inherits the environment when it starts)."""
    from nbgrader.preprocessors import Execute

    from companion.grading import STUDENT_ENV

    class StudentSeedExecute(Execute):
        def preprocess(self, nb, resources=None, km=None):
            student = ((resources or {}).get("nbgrader") or {}).get("student")
            with _env(STUDENT_ENV, student):
                return super().preprocess(nb, resources, km)

        def create_kernel_manager(self):
            km = super().create_kernel_manager()
            if os.name == "posix" and self.owns_km and not km.has_kernel:
                # short: a Unix socket's path holds at most 107 bytes
                folder = tempfile.mkdtemp(prefix="nbgrader-kernel-")
                km.transport = "ipc"
                km.connection_file = os.path.join(folder, "kernel.json")
                km.ip = os.path.join(folder, "kernel-ipc")
                self._socket_folder = folder
            return km

        async def _async_cleanup_kernel(self):
            try:
                await super()._async_cleanup_kernel()
            finally:
                folder = self.__dict__.pop("_socket_folder", None)
                if folder:
                    shutil.rmtree(folder, ignore_errors=True)

    StudentSeedExecute.__module__ = __name__
    return StudentSeedExecute


def configure(c) -> None:
    """Set the answer stub and the student-seed Execute step on an nbgrader config ``c``."""
    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import Execute

    c.ClearSolutions.code_stub = {"python": CODE_STUB}
    warnings.filterwarnings("ignore", message=r"Object of type <Submitted\w+> not in session, "
                            r"add operation along '\w+\.submissions' will not proceed")
    # what the config already says, else nbgrader's own list (traitlets' Config answers an
    # attribute it does not hold with a placeholder, so look into the dict itself)
    current = dict.get(c.Autograde, "autograde_preprocessors")
    steps = list(current if isinstance(current, (list, tuple))
                 else Autograde.class_traits()["autograde_preprocessors"].default())
    if not any(step is Execute or step == "nbgrader.preprocessors.Execute" for step in steps):
        raise ValueError("configure: nbgrader's autograde steps have no Execute step to "
                         f"replace: {steps}")
    ours = student_execute_class()
    c.Autograde.autograde_preprocessors = [
        ours if step is Execute or step == "nbgrader.preprocessors.Execute" else step
        for step in steps]
