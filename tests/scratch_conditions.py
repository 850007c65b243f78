"""The conditions of the test run's one cold pipeline run (tests/pipeline_clone.py): another
machine, simulated, with the network blocked.

Another machine: a sitecustomize module that every Python process of the run (dvc, each
stage, their workers) imports first fakes the platform description and blocks torch (so the
run also proves that no stage imports it), and OpenBLAS is forced to another kernel and one
thread. No network: a network namespace with only loopback (as root, `unshare --net`), and
in the same sitecustomize a socket guard that refuses and records any connection or name
lookup that is not a unix socket or loopback, so an attempt that a library would swallow
still fails the tests. Telemetry variables are scrubbed from the run's environment, so it
proves the defaults (the repository's .dvc/config and membench's own), not the caller's."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

from membench.cli import TELEMETRY_OFF

# Variables that turn telemetry or tracing on or off, scrubbed from the run's environment.
TELEMETRY_VARIABLES = (*TELEMETRY_OFF, "ITERATIVE_DO_NOT_TRACK", "DISABLE_TELEMETRY",
                       "HF_HUB_OFFLINE", "LANGSMITH_TRACING", "LANGSMITH_TRACING_V2",
                       "LANGCHAIN_TRACING", "LANGCHAIN_TRACING_V2", "DVC_STUDIO_TOKEN")

GUARD = '''
import ipaddress, os, socket, sys

_LOG = os.environ.get("MEMBENCH_NET_GUARD_LOG", "")
_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", ""}


def _refuse(what):
    with open(_LOG, "a") as log:
        log.write(f"{os.getpid()} {' '.join(sys.argv)[:200]}: {what}\\n")
    raise OSError(101, f"network blocked by the test: {what}")


def _is_local(host):
    if host is None or str(host) in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def _check(family, address):
    if family != getattr(socket, "AF_UNIX", None) and not _is_local(
            address[0] if isinstance(address, tuple) else address):
        _refuse(f"connect {address!r}")


_connect, _connect_ex = socket.socket.connect, socket.socket.connect_ex
_sendto, _getaddrinfo = socket.socket.sendto, socket.getaddrinfo


def connect(self, address):
    _check(self.family, address)
    return _connect(self, address)


def connect_ex(self, address):
    _check(self.family, address)
    return _connect_ex(self, address)


def sendto(self, data, *args):
    _check(self.family, args[-1])
    return _sendto(self, data, *args)


def getaddrinfo(host, *args, **kwargs):
    if not _is_local(host.decode() if isinstance(host, bytes) else host):
        _refuse(f"getaddrinfo {host!r}")
    return _getaddrinfo(host, *args, **kwargs)


socket.socket.connect, socket.socket.connect_ex, socket.socket.sendto = connect, connect_ex, sendto
socket.getaddrinfo = getaddrinfo
'''

FAKE_MACHINE = """
import importlib.abc, importlib.machinery, platform, sys

platform.platform = lambda *args, **kwargs: "Linux-9.9.9-fake-x86_64-with-glibc9.99"
platform.release = lambda: "9.9.9-fake"
platform.version = lambda: "#1 SMP fake"
platform.python_version = lambda: "3.11.99"
platform.processor = lambda: "Fake CPU"

# Found, so a library may probe for torch (LanceDB's lazy import does), but never run.
class _Refused(importlib.abc.Loader):
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        raise ImportError(f"{module.__name__} imported during the pipeline run")

class _NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("torch", "sentence_transformers", "transformers"):
            return importlib.machinery.ModuleSpec(name, _Refused())

sys.meta_path.insert(0, _NoTorch())
import membench.io.environment
membench.io.environment.cpu_description = lambda: "Fake Xeon with AVX-512, 96 logical CPUs"
"""
# An OpenBLAS kernel other than the one this CPU picks by itself.
OTHER_BLAS_KERNEL = {"x86_64": "Sandybridge", "aarch64": "ARMV8", "arm64": "ARMV8"}


def network_namespace() -> list[str]:
    """The command prefix that runs a command without network (only loopback, up), or []
    where this process may not make a namespace: the socket guard alone then blocks."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return []
    probe = subprocess.run(["unshare", "--net", "ip", "link", "set", "lo", "up"],
                           capture_output=True, check=False)
    if probe.returncode != 0:
        return []
    return ["unshare", "--net", "sh", "-c", 'ip link set lo up && exec "$@"', "offline"]


def environment(where: Path, private_tmp: Path) -> tuple[dict[str, str], Path]:
    """The run's environment (the sitecustomize written under `where`, TMPDIR private_tmp),
    and the file the guard records network attempts in."""
    site = where / "sitecustomize"
    site.mkdir()
    (site / "sitecustomize.py").write_text(GUARD + FAKE_MACHINE)
    attempts = where / "network-attempts.log"
    attempts.touch()
    env = {name: value for name, value in os.environ.items() if name not in TELEMETRY_VARIABLES}
    env.update(PYTHONPATH=os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")])),
               MEMBENCH_NET_GUARD_LOG=str(attempts), TMPDIR=str(private_tmp),
               OPENBLAS_CORETYPE=OTHER_BLAS_KERNEL.get(platform.machine(), "Sandybridge"),
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    return env, attempts
