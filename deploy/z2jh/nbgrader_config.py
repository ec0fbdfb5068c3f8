# The course-wide nbgrader settings in the single-user image (/etc/jupyter/nbgrader_config.py).
# Every pod runs as jovyan, so nbgrader takes each student's id from $JUPYTERHUB_USER.
# The instructor adds ~/.jupyter/nbgrader_config.py (in their persistent home) with
#     c.CourseDirectory.root = "/home/jovyan/course"
c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)
c.CourseDirectory.course_id = "llm-inference"
c.Exchange.root = "/srv/nbgrader/exchange"  # the shared volume of exchange-pvc.yaml
c.ExecutePreprocessor.timeout = 300
