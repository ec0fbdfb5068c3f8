"""Run a command while holding an exclusive lock on a file: with_lock.py LOCKFILE CMD [ARG...].

Two test files build the lite site at once on a fresh clone (make lite from each): without
the lock both create .state/lite-tools and pip-install into it together. The command re-checks
what it still has to do once it holds the lock (the Makefile's recipe does)."""
import fcntl
import subprocess
import sys

if len(sys.argv) < 3:
    sys.exit(__doc__.splitlines()[0])
with open(sys.argv[1], "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    sys.exit(subprocess.call(sys.argv[2:]))
