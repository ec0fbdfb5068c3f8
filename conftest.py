"""The notebooks' kernels (nbval, make test's both passes) talk to pytest over Unix sockets.

Over TCP, jupyter_client picks a kernel's five ports by binding port 0 and closing the socket;
the kernel binds them about a second later. In between, any other process may take one: the
other worker's kernel picking its own, or any outgoing connection, which draws from the same
ephemeral range. The kernel then dies with "ZMQError: Address already in use" and nbval
reports "Kernel died before replying to kernel_info" for every cell of that notebook (a
clean-clone run here, pass 2, 17_09_measuring; three workers starting kernels back to back
lost 2 of 739 kernels so). Unix sockets in a folder of their own have no such shared range.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid

_SOCKETS: list[str] = []


def unix_socket_kernel_manager(folder: str):
    """A jupyter_client KernelManager class whose kernels use the ipc transport, each with its
    connection file and sockets under ``folder`` and a name of its own."""
    from jupyter_client import KernelManager

    class UnixSocketKernelManager(KernelManager):
        def __init__(self, **kwargs):
            name = os.path.join(folder, uuid.uuid4().hex[:16])
            kwargs.setdefault("transport", "ipc")
            kwargs.setdefault("connection_file", name + ".json")
            kwargs.setdefault("ip", name + "-ipc")  # socket files: <ip>-1 ... <ip>-5
            super().__init__(**kwargs)

    return UnixSocketKernelManager


def pytest_configure(config):
    # stored outputs are the chapter's data (seed 0): whoever runs the suite (a hub user, an
    # nbgrader run) must not move a kernel to their own seed (companion.grading.student_seed)
    for var in ("JUPYTERHUB_USER", "NBGRADER_EXECUTION", "COMPANION_STUDENT", "COMPANION_SEEDS"):
        os.environ.pop(var, None)
    if not config.pluginmanager.has_plugin("nbval"):
        return
    import nbval.kernel

    # short: a Unix socket's path holds at most 107 bytes, which a deep checkout's .state
    # could pass
    folder = tempfile.mkdtemp(prefix="nbval-")
    _SOCKETS.append(folder)
    nbval.kernel.KernelManager = unix_socket_kernel_manager(folder)


def pytest_unconfigure(config):
    while _SOCKETS:
        shutil.rmtree(_SOCKETS.pop(), ignore_errors=True)
