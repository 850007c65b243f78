"""No network at run time (issue 25): third-party telemetry off by default, and a fresh
clone's `dvc repro` with networking blocked writes the same bytes as the session's built
clone. Blocked twice: a network namespace with only loopback (as root, `unshare --net`), and
a sitecustomize socket guard in every Python process (dvc, each stage, their workers) that
refuses and records any connection or name lookup that is not a unix socket or loopback, so
an attempt that a library would swallow still fails the test."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from pipeline_clone import OUTPUTS, fresh_clone
from typer.testing import CliRunner

from membench.cli import TELEMETRY_OFF, app

# Variables that turn telemetry or tracing on or off: scrubbed from the offline run, so it
# proves the defaults (the repository's .dvc/config and membench's own), not the caller's.
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


def _keep_environment(monkeypatch) -> None:
    """monkeypatch restores only what it saw: each variable recorded, then removed."""
    for name in TELEMETRY_OFF:
        monkeypatch.setenv(name, "recorded")
        monkeypatch.delenv(name)


def test_membench_turns_third_party_telemetry_off_by_default(monkeypatch):
    _keep_environment(monkeypatch)
    result = CliRunner().invoke(app, ["corpus", "--help"])
    assert result.exit_code == 0, result.output
    assert {name: os.environ.get(name) for name in TELEMETRY_OFF} == TELEMETRY_OFF
    assert TELEMETRY_OFF["DVC_NO_ANALYTICS"]


def test_a_users_own_telemetry_setting_is_kept(monkeypatch):
    _keep_environment(monkeypatch)
    chosen = {name: "" for name in TELEMETRY_OFF}  # set, even empty: the user's choice
    for name, value in chosen.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(app, ["corpus", "--help"])
    assert result.exit_code == 0, result.output
    assert {name: os.environ.get(name) for name in TELEMETRY_OFF} == chosen


def test_the_repository_turns_dvc_analytics_and_update_checks_off(repo_root):
    """For `dvc` run directly (not through membench), .dvc/config does it."""
    config = (repo_root / ".dvc/config").read_text()
    assert "analytics = false" in config and "check_update = false" in config


def _network_namespace() -> list[str]:
    """The command prefix that runs a command without network (only loopback, up), or []
    where this process may not make a namespace: the socket guard alone then blocks."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return []
    probe = subprocess.run(["unshare", "--net", "ip", "link", "set", "lo", "up"],
                           capture_output=True, check=False)
    if probe.returncode != 0:
        return []
    return ["unshare", "--net", "sh", "-c", 'ip link set lo up && exec "$@"', "offline"]


@pytest.fixture(scope="module")
def offline_run(repo_root, tmp_path_factory):
    """A fresh clone's `dvc repro` (no cache: the embedding model runs on every text) with
    no network and no telemetry variable from the caller: (clone, its result, the network
    attempts recorded, what it left in its own TMPDIR)."""
    where = tmp_path_factory.mktemp("offline")
    clone = fresh_clone(repo_root, where / "clone")
    guard = where / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(GUARD)
    attempts = where / "network-attempts.log"
    attempts.touch()
    private = Path(tempfile.mkdtemp(prefix="mbo-", dir="/tmp"))  # short: the servers' sockets
    private.chmod(0o755)  # the servers run as `nobody` when the tests run as root
    env = {name: value for name, value in os.environ.items() if name not in TELEMETRY_VARIABLES}
    env.update(PYTHONPATH=os.pathsep.join(filter(None, [str(guard), env.get("PYTHONPATH")])),
               MEMBENCH_NET_GUARD_LOG=str(attempts), TMPDIR=str(private))
    try:
        done = subprocess.run([*_network_namespace(), "dvc", "repro"], cwd=clone, env=env,
                              capture_output=True, text=True, timeout=2400, check=False)
        left = sorted(path.name for path in private.iterdir())
    finally:
        shutil.rmtree(private, ignore_errors=True)
    return clone, done, attempts.read_text(), left


@pytest.mark.slow
def test_a_fresh_clone_runs_offline_to_the_same_bytes(offline_run, built_clone):
    """Every output has the bytes of the session's built clone (made with the network up),
    `git status` stays clean (dvc.lock included), and no process tried the network."""
    clone, done, attempts, _ = offline_run
    assert done.returncode == 0, done.stdout + done.stderr
    assert attempts == "", "network attempts:\n" + attempts
    for name in OUTPUTS:
        assert (clone / name).read_bytes() == (built_clone / name).read_bytes(), name
    status = subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True,
                            text=True, check=True).stdout
    assert status == ""


@pytest.mark.slow
def test_a_normal_dvc_repro_leaves_nothing_in_the_temp_directory(offline_run):
    """The issue's "done when": a whole normal run leaves nothing of its own in TMPDIR."""
    _, done, _, left = offline_run
    assert done.returncode == 0, done.stdout + done.stderr
    assert left == []
