"""The notebooks' kernels under nbval use Unix sockets, not TCP ports (conftest.py at the
repository's root says why: a kernel lost its ports to another process in a clean-clone run)."""

from __future__ import annotations

import os
import stat

import nbval.kernel


def test_an_nbval_kernel_talks_over_unix_sockets_of_its_own():
    a = nbval.kernel.RunningKernel(":nbval-parent-env", cwd=os.getcwd())
    b = nbval.kernel.RunningKernel(":nbval-parent-env", cwd=os.getcwd())
    try:
        infos = [k.km.get_connection_info() for k in (a, b)]
        assert [i["transport"] for i in infos] == ["ipc", "ipc"]
        assert infos[0]["ip"] != infos[1]["ip"]
        for info in infos:
            assert os.path.isabs(info["ip"]) and len(info["ip"]) < 90  # a socket path: < 108
            for port in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port"):
                assert stat.S_ISSOCK(os.stat(f"{info['ip']}-{info[port]}").st_mode)
        reply = a.kc.execute_interactive("assert 6 * 7 == 42", timeout=30)
        assert reply["content"]["status"] == "ok"
    finally:
        a.stop()
        b.stop()
    assert not os.path.exists(f"{infos[0]['ip']}-{infos[0]['shell_port']}")
