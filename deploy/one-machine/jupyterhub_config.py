"""JupyterHub for a course on one machine: what `make course-check` starts (deploy/README.md).

One hub, one instructor running nbgrader's formgrader in their own server ("one class, one
grader" in nbgrader's JupyterHub guide), students with the assignment list, and nbgrader's
default exchange, a shared folder. Everything lives under $COURSE_WORK:

    home/<user>/            each user's home; the instructor's course is home/<instructor>/course
    exchange/               nbgrader's exchange (production: /srv/nbgrader/exchange)
    etc/jupyter/            the global nbgrader_config.py (production: /etc/jupyter)
    jupyterhub.sqlite, jupyterhub_cookie_secret, jupyterhub-proxy.pid

Choices that fit a CI run on one machine, and what replaces them in production:

* SharedPasswordAuthenticator with the roster in ``allowed_users`` and a random password per
  run. A class uses a real login (TLJH: FirstUseAuthenticator or an OAuth one; Z2JH: the
  university's OAuth/LTI).
* SimpleLocalProcessSpawner: every server runs as the Unix user running the hub, with its own
  HOME. Nothing needs root and nothing is left in /etc/passwd. It isolates nobody, so nbgrader
  cannot take the student's identity from the Unix account as it does on TLJH (real users)
  or Z2JH (jovyan + $JUPYTERHUB_USER); each student's ~/.jupyter/nbgrader_config.py names
  them instead (``CourseDirectory.student_id``), written by ``provision`` below.
* One virtual environment ($COURSE_ENV/venv) serves both the hub and the servers. TLJH keeps
  /opt/tljh/hub and /opt/tljh/user apart; Z2JH puts the servers in their own image.

Settings come from the environment (tools/course_check.py sets them all):
COURSE_WORK, COURSE_ENV, COURSE_ID, COURSE_INSTRUCTOR, COURSE_STUDENTS (comma separated),
COURSE_PASSWORD, COURSE_PORT (the public proxy port), COURSE_HUB_PORT, COURSE_PROXY_API_PORT,
COURSE_SEEDS (optional: the JSON of companion_seeds.json, the instructor's pinned seeds),
and COURSE_CHECK_RUN (a marker every process of this hub inherits, so cleanup can find them).
"""

import json
import os
from pathlib import Path

c = get_config()  # noqa: F821 (provided by JupyterHub when it loads this file)

WORK = Path(os.environ["COURSE_WORK"])
ENV = Path(os.environ["COURSE_ENV"])
COURSE_ID = os.environ.get("COURSE_ID", "llm-inference")
INSTRUCTOR = os.environ.get("COURSE_INSTRUCTOR", "instructor")
STUDENTS = [s for s in os.environ.get("COURSE_STUDENTS", "alice,bob").split(",") if s]
HOMES = WORK / "home"
EXCHANGE = WORK / "exchange"
GLOBAL_CONFIG = WORK / "etc" / "jupyter"
VENV_BIN = ENV / "venv" / "bin"

# --- network: everything on loopback, ports chosen free by the caller ---------------------------
c.JupyterHub.bind_url = f"http://127.0.0.1:{os.environ['COURSE_PORT']}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{os.environ['COURSE_HUB_PORT']}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{os.environ['COURSE_PROXY_API_PORT']}"
c.ConfigurableHTTPProxy.command = [
    str(ENV / "proxy" / "node_modules" / ".bin" / "configurable-http-proxy")]
c.ConfigurableHTTPProxy.pid_file = str(WORK / "jupyterhub-proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{WORK / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(WORK / "jupyterhub_cookie_secret")
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every server it started
c.JupyterHub.cleanup_proxy = True

# --- who may log in ------------------------------------------------------------------------------
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = os.environ["COURSE_PASSWORD"]
c.Authenticator.allowed_users = {INSTRUCTOR, *STUDENTS}
c.JupyterHub.load_groups = {
    "instructors": {"users": [INSTRUCTOR]},
    "students": {"users": STUDENTS},
}

# --- the single-user servers -------------------------------------------------------------------
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = str(HOMES / "{username}")
c.Spawner.cmd = [str(VENV_BIN / "jupyterhub-singleuser")]
c.Spawner.notebook_dir = "~"
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 180  # a loaded 2-core CI runner starts JupyterLab slowly
c.Spawner.http_timeout = 180
if os.geteuid() == 0:  # containers and CI runners often run as root
    c.Spawner.args = ["--ServerApp.allow_root=True"]


def _home(spawner) -> Path:
    return HOMES / spawner.user.name


c.Spawner.environment = {
    "PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin",
    # the global config folder, as /etc/jupyter would be (a user's ~/.jupyter still wins)
    "JUPYTER_CONFIG_PATH": str(GLOBAL_CONFIG),
    "JUPYTER_CONFIG_DIR": lambda spawner: str(_home(spawner) / ".jupyter"),
    "JUPYTER_DATA_DIR": lambda spawner: str(_home(spawner) / ".local" / "share" / "jupyter"),
    "IPYTHONDIR": lambda spawner: str(_home(spawner) / ".ipython"),
    "MPLCONFIGDIR": lambda spawner: str(_home(spawner) / ".config" / "matplotlib"),
    "MPLBACKEND": "Agg",
    "COURSE_CHECK_RUN": os.environ.get("COURSE_CHECK_RUN", ""),
}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def provision(spawner) -> None:
    """What an administrator sets up once per account (TLJH: a user-environment step or a
    skeleton; Z2JH: the image plus a start hook): the home, the instructor's course folder and
    nbgrader config, a student's identity, and which nbgrader extensions each role gets
    (nbgrader's table: students get the assignment list only)."""
    name = spawner.user.name
    home = _home(spawner)
    jupyter_dir = home / ".jupyter"
    groups = {g.name for g in spawner.user.groups}
    if "instructors" in groups:
        course = home / "course"
        (course / "source").mkdir(parents=True, exist_ok=True)
        _write(jupyter_dir / "nbgrader_config.py",
               "c = get_config()\n"
               f"c.CourseDirectory.root = {str(course)!r}\n"
               "c.ExecutePreprocessor.timeout = 300\n"
               "# the answer stub, and each student's own seed when autograding\n"
               "from companion.course import configure\n"
               "configure(c)\n")
        disabled, disabled_lab = [], []
    else:
        _write(jupyter_dir / "nbgrader_config.py",
               "c = get_config()\n"
               f"c.CourseDirectory.student_id = {name!r}\n")
        disabled = ["nbgrader.server_extensions.formgrader",
                    "nbgrader.server_extensions.course_list"]
        disabled_lab = ["@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:course-list",
                        "@jupyter/nbgrader:create-assignment"]
    # what `jupyter server extension disable --user` and `jupyter labextension disable
    # --level=user` write
    _write(jupyter_dir / "jupyter_server_config.json", json.dumps(
        {"ServerApp": {"jpserver_extensions": {ext: False for ext in disabled}}}, indent=1))
    _write(jupyter_dir / "labconfig" / "page_config.json", json.dumps(
        {"disabledExtensions": {ext: True for ext in disabled_lab}}, indent=1))
    # JupyterLab's news and update checks would reach for the internet
    _write(jupyter_dir / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
           / "notification.jupyterlab-settings",
           json.dumps({"fetchNews": "false", "checkForUpdates": False}))


c.Spawner.pre_spawn_hook = provision

# The course-wide nbgrader settings, read by every server (students fetch and submit with them,
# the instructor releases and collects). The exchange must be writable by every account.
EXCHANGE.mkdir(parents=True, exist_ok=True)
os.chmod(EXCHANGE, 0o777)
_write(GLOBAL_CONFIG / "nbgrader_config.py",
       "c = get_config()\n"
       f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
       f"c.Exchange.root = {str(EXCHANGE)!r}\n")
# The instructor's pinned seeds (docs/instructors.md), where every kernel finds them: a
# system-wide Jupyter config folder (production: /etc/jupyter or <user env>/etc/jupyter).
if os.environ.get("COURSE_SEEDS"):
    _write(GLOBAL_CONFIG / "companion_seeds.json", os.environ["COURSE_SEEDS"])
