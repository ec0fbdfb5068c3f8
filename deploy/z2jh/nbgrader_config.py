# The course-wide nbgrader settings in the single-user image (/etc/jupyter/nbgrader_config.py).
# Every pod runs as jovyan, so nbgrader takes each student's id from $JUPYTERHUB_USER.
# The instructor adds ~/.jupyter/nbgrader_config.py (in their persistent home) with
#     c.CourseDirectory.root = "/home/jovyan/course"
c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)
c.CourseDirectory.course_id = "llm-inference"
c.Exchange.root = "/srv/nbgrader/exchange"  # the shared volume of exchange-pvc.yaml
c.ExecutePreprocessor.timeout = 300
# The answer stub that raises nothing ("# YOUR CODE HERE"), and at autograde each submission's
# own seed (companion.grading.student_seed; docs/instructors.md). Pinned seeds, if any: a
# companion_seeds.json beside this file.
from companion.course import configure  # noqa: E402

configure(c)  # noqa: F821
