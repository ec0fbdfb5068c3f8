# The course-wide nbgrader settings on a TLJH server, read by every user's server:
# install as /opt/tljh/user/etc/jupyter/nbgrader_config.py (install-user-env.sh does).
# The instructor adds their own ~/.jupyter/nbgrader_config.py with CourseDirectory.root.
c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)
c.CourseDirectory.course_id = "llm-inference"
c.Exchange.root = "/srv/nbgrader/exchange"  # nbgrader's default, spelled out
# Autograde re-runs each notebook; a few exercises run the companion's simulators.
c.ExecutePreprocessor.timeout = 300
# The answer stub that raises nothing ("# YOUR CODE HERE"), and at autograde each submission's
# own seed (companion.grading.student_seed; docs/instructors.md). Pinned seeds, if any: a
# companion_seeds.json beside this file.
from companion.course import configure  # noqa: E402

configure(c)  # noqa: F821
