"""Interrupted at any moment, a membench command leaves nothing behind: no server, no
temporary directory, no partial output (membench.cleanup). Real processes and signals:
the fast tests drive membench.cleanup from small scripts; the slow ones run the backends
and multiseed stages (tests/interrupt_helpers.py) and signal or kill them mid-run."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from interrupt_helpers import (
    build_inputs,
    children,
    make_workspace,
    private_tmp,
    processes_naming,
    run_stage,
    stage_command,
    stage_env,
)

from membench.cleanup.private_temp import OWNER_FILE, private_dir, remove, sweep_stale


def _python(script: str, tmp: Path, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)],
                            env={**os.environ, "TMPDIR": str(tmp)}, text=True, **popen)


def _gone(pid: int) -> bool:
    """No such process, or a zombie (killed, not yet reaped by its new parent)."""
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] in b"ZX"
    except OSError:
        return True


def _wait_until(condition, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.fixture
def tmp():
    path = private_tmp()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_private_dir_is_0700_with_its_owner_and_removed_on_remove(tmp, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp))
    path = private_dir("probe")
    assert path.parent == tmp and path.name.startswith("membench-probe-")
    assert path.stat().st_mode & 0o777 == 0o700
    assert (path / OWNER_FILE).read_text().split()[0] == str(os.getpid())
    assert sweep_stale(tmp) == []  # its owner, this process, is alive
    remove(path)
    assert list(tmp.iterdir()) == []


# Clean-up code interrupted by a second signal was how temporary stores were left behind.
SLOW_CLEANUP = """
    import sys, time
    from pathlib import Path
    from membench.cleanup import interrupts
    interrupts.install()
    try:
        print("ready", flush=True)
        time.sleep(60)
    finally:
        with interrupts.deferred():
            time.sleep(1.5)  # the cleanup, which a second signal must not cut short
            Path(sys.argv[1]).write_text("cleaned")
"""


@pytest.mark.parametrize("first,second", [(signal.SIGTERM, signal.SIGTERM),
                                          (signal.SIGINT, signal.SIGTERM),
                                          (signal.SIGINT, signal.SIGINT)])
def test_a_second_signal_does_not_cut_the_cleanup_the_first_started(tmp, first, second):
    marker = tmp / "marker"
    process = subprocess.Popen([sys.executable, "-c", textwrap.dedent(SLOW_CLEANUP),
                                str(marker)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdout.readline() == "ready\n"
    process.send_signal(first)
    time.sleep(0.4)
    process.send_signal(second)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + first
    assert marker.read_text() == "cleaned"
    assert err.strip().count("\n") == 0, err  # one line, no traceback
    assert f"interrupted by {signal.Signals(first).name}" in err


def test_a_signal_inside_a_deferred_section_takes_effect_when_it_ends(tmp):
    script = """
        import sys, time
        from pathlib import Path
        from membench.cleanup import interrupts
        interrupts.install()
        with interrupts.deferred():
            print("ready", flush=True)
            time.sleep(1.0)
            Path(sys.argv[1]).write_text("renamed")
        Path(sys.argv[1]).write_text("went on")
    """
    marker = tmp / "marker"
    process = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script), str(marker)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout.readline() == "ready\n"
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 143 and marker.read_text() == "renamed", err


# The interpreter resets the signals it handles to their defaults before it frees its
# modules: a second signal then killed a process whose cleanup was done (-15, not 143).
SLOW_FINALIZATION = """
    import os, time
    from membench.cleanup import interrupts

    class FreedLate:
        def __del__(self, write=os.write, sleep=time.sleep):
            write(1, b"finalizing\\n")
            sleep(1.5)

    kept = FreedLate()  # freed with __main__'s globals, after signal handling is finalized
    interrupts.install()
    print("ready", flush=True)
    time.sleep(60)
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_second_signal_while_the_interpreter_finalizes_does_not_kill_it(tmp, signum):
    process = subprocess.Popen([sys.executable, "-c", textwrap.dedent(SLOW_FINALIZATION)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout.readline() == "ready\n"
    process.send_signal(signum)
    assert process.stdout.readline() == "finalizing\n"
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signum, err


KILLED_OWNER = """
    import os, signal, sys
    from membench.cleanup import private_temp
    path = private_temp.private_dir("victim")
    (path / "store").mkdir()
    (path / "store" / "rows").write_bytes(b"x" * 100_000)
    if sys.argv[1] == "reaper-too":
        os.kill(private_temp._reaper.pid, signal.SIGKILL)
        private_temp._reaper.wait()
    print(path, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _killed_owner(tmp: Path, mode: str) -> Path:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(KILLED_OWNER), mode],
                          env={**os.environ, "TMPDIR": str(tmp)}, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr
    return Path(done.stdout.strip())


def test_the_reaper_removes_the_directories_of_a_process_killed_by_sigkill(tmp):
    path = _killed_owner(tmp, "reaper-alive")
    assert _wait_until(lambda: not path.exists(), 30), list(tmp.iterdir())


def test_a_later_run_sweeps_a_dead_run_s_directories_and_keeps_the_rest(tmp):
    """The owner and its reaper both killed: the next command's sweep removes the
    directory; one without an owner file (not membench's) and a live run's stay."""
    path = _killed_owner(tmp, "reaper-too")
    time.sleep(0.5)
    assert path.exists()
    stranger = tmp / "membench-stranger"
    stranger.mkdir()
    live = _python("""
        from membench.cleanup import private_temp
        print(private_temp.private_dir("live"), flush=True)
        input()
    """, tmp, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        living = Path(live.stdout.readline().strip())
        assert sweep_stale(tmp) == [path]
        assert not path.exists() and stranger.is_dir() and living.is_dir()
    finally:
        live.communicate("\n", timeout=60)
    assert not living.exists()  # removed by its own run at exit


# The slow tier: the stages themselves, on a workspace built once for the module.

@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    target = make_workspace(tmp_path_factory.mktemp("interrupts") / "ws",
                            backends=["postgres", "langgraph_postgres"],
                            stores=["profile", "fact_log", "transcript"], seeds=[42, 7, 11])
    build_inputs(target)
    return target


BACKENDS_OUTPUTS = ("data/backend_parity.parquet", "data/backend_rankings.parquet",
                    "data/backend_at_rest.parquet", "reports/backends.json",
                    "reports/backend_costs.json")


def _no_outputs(workspace: Path) -> bool:
    partial = [p for p in (workspace / "data").rglob(".*.partial")]
    partial += [p for p in (workspace / "reports").rglob(".*.partial")] \
        if (workspace / "reports").exists() else []
    return not partial and not any((workspace / name).exists() for name in BACKENDS_OUTPUTS)


def _backends_replaying(workspace: Path, tmp: Path) -> tuple[subprocess.Popen, str]:
    """The backends stage, its own session (so its group can be signalled), once both
    servers are up and replaying."""
    process = subprocess.Popen(stage_command("backends"), cwd=workspace,
                               env=stage_env(workspace, tmp), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    seen = ""
    deadline = time.monotonic() + 600
    while seen.count("day 10") < 1 and time.monotonic() < deadline:
        line = process.stderr.readline()
        assert line, f"the stage ended before the signal: {seen}"
        seen += line
    assert processes_naming(str(tmp)), "no server was running under its TMPDIR"
    return process, seen


@pytest.mark.slow
@pytest.mark.parametrize("signum,to_group", [(signal.SIGTERM, False), (signal.SIGINT, True)])
def test_two_signals_during_the_backends_stage_leave_nothing(workspace, tmp, signum,
                                                             to_group):
    """The second signal 0.5 s after the first, while the first's cleanup runs: no server,
    nothing in TMPDIR, no output, and one line saying why it stopped."""
    process, seen = _backends_replaying(workspace, tmp)
    send = (lambda: os.killpg(process.pid, signum)) if to_group else \
        (lambda: process.send_signal(signum))
    send()
    time.sleep(0.5)
    send()
    _, rest = process.communicate(timeout=600)
    assert process.returncode == 128 + signum, seen + rest
    # one line says why; before it, at most the progress lines printed before the signal
    # was handled (a busy machine prints one more "day" line now and then)
    lines = rest.strip().splitlines()
    assert "interrupted by" in lines[-1], rest
    assert all(line.strip().startswith("backend ") for line in lines[:-1]), rest
    assert list(tmp.iterdir()) == []
    assert processes_naming(str(tmp)) == set()
    assert _no_outputs(workspace)


@pytest.mark.slow
def test_sigkill_to_the_backends_stage_leaves_no_server_and_then_nothing(workspace, tmp):
    """No handler sees SIGKILL: the reaper kills the servers and removes the directories."""
    process, _ = _backends_replaying(workspace, tmp)
    servers = processes_naming(str(tmp))
    process.kill()
    process.wait()
    assert _wait_until(lambda: all(_gone(pid) for pid in servers), 30), servers
    assert _wait_until(lambda: not list(tmp.iterdir()), 120), list(tmp.iterdir())
    assert _no_outputs(workspace)


@pytest.mark.slow
def test_a_rerun_removes_what_a_run_killed_with_its_reaper_left(workspace, tmp, tmp_path):
    """Stage and reaper both SIGKILLed (a container's OOM killer, `kill -9` of everything):
    the servers keep running, until the next membench command's sweep."""
    process, _ = _backends_replaying(workspace, tmp)
    reapers = [pid for pid, command in children(process.pid) if "cleanup.reaper" in command]
    assert len(reapers) == 1, children(process.pid)
    os.kill(reapers[0], signal.SIGKILL)
    process.kill()
    process.wait()
    servers = processes_naming(str(tmp))
    assert servers and list(tmp.iterdir())  # left behind
    done = subprocess.run([sys.executable, "-m", "membench.cli", "corpus", "--out",
                           str(tmp_path / "corpus.parquet")], cwd=workspace,
                          env=stage_env(workspace, tmp), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert all(_gone(pid) for pid in servers)
    assert list(tmp.iterdir()) == []


@pytest.mark.slow
def test_a_normal_multiseed_run_leaves_nothing_in_the_temp_directory(workspace, tmp):
    """Its Dask workers' memory-tool directories and the cluster's own included."""
    done = run_stage(workspace, "multiseed", tmp, MEMBENCH_WORKERS="2")
    assert done.returncode == 0, done.stderr
    assert _wait_until(lambda: not list(tmp.iterdir()), 60), list(tmp.rglob("*"))


@pytest.mark.slow
def test_multiseed_writes_the_same_bytes_in_process_and_on_one_worker(workspace, tmp):
    output = workspace / "reports" / "multiseed.json"
    written = []
    for workers in ("0", "1"):
        done = run_stage(workspace, "multiseed", tmp, MEMBENCH_WORKERS=workers)
        assert done.returncode == 0, done.stderr
        written.append(output.read_bytes())
    assert "on a local Dask cluster of 1 worker(s)" in done.stderr
    assert written[0] == written[1]


def _holds(root: Path, pattern: str) -> bool:
    """Whether a path under root matches. The stage makes and removes directories while
    the walk runs: one gone mid-walk means "not yet", not an error."""
    try:
        return any(root.rglob(pattern))
    except FileNotFoundError:
        return False


def _multiseed_workers(workspace: Path, tmp: Path) -> tuple[subprocess.Popen, list[int]]:
    """The stage on a private cluster of two workers, once both run a seed."""
    process = subprocess.Popen(stage_command("multiseed"), cwd=workspace,
                               env={**stage_env(workspace, tmp), "MEMBENCH_WORKERS": "2"},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    workers: list[int] = []

    def started() -> bool:
        workers[:] = [pid for pid, command in children(process.pid) if "spawn_main" in command]
        return len(workers) == 2
    assert _wait_until(started, 120), children(process.pid)
    assert _wait_until(lambda: _holds(tmp, "membench-memories-*"), 120), list(tmp.rglob("*"))
    return process, workers


@pytest.mark.slow
def test_a_multiseed_worker_killed_is_replaced_and_the_output_is_the_same(workspace, tmp):
    output = workspace / "reports" / "multiseed.json"
    done = run_stage(workspace, "multiseed", tmp, MEMBENCH_WORKERS="0")
    assert done.returncode == 0, done.stderr
    expected = output.read_bytes()
    output.unlink()
    process, workers = _multiseed_workers(workspace, tmp)
    os.kill(workers[0], signal.SIGKILL)
    _, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    assert output.read_bytes() == expected
    assert _wait_until(lambda: all(_gone(pid) for pid in workers), 30)
    assert _wait_until(lambda: not list(tmp.iterdir()), 60), list(tmp.rglob("*"))


@pytest.mark.slow
def test_sigterm_stops_the_stage_and_its_dask_workers_leaving_nothing(workspace, tmp):
    output = workspace / "reports" / "multiseed.json"
    output.unlink(missing_ok=True)
    process, workers = _multiseed_workers(workspace, tmp)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM, err
    assert "membench: interrupted by SIGTERM" in err
    assert _wait_until(lambda: all(_gone(pid) for pid in workers), 30), workers
    assert _wait_until(lambda: not list(tmp.iterdir()), 60), list(tmp.rglob("*"))
    assert not output.exists() and not list(output.parent.glob(".*.partial"))


@pytest.mark.slow
def test_the_multiseed_stage_killed_takes_its_workers_along(workspace, tmp):
    process, workers = _multiseed_workers(workspace, tmp)
    process.kill()
    process.wait()
    assert _wait_until(lambda: all(_gone(pid) for pid in workers), 30), workers
    assert _wait_until(lambda: not list(tmp.iterdir()), 60), list(tmp.rglob("*"))


STAGED_WRITER = """
import sys, time
from pathlib import Path
from membench.io.outputs import staged_outputs

def write(temporary):
    temporary.write_text("half")
    print("writing", flush=True)
    time.sleep(120)

with staged_outputs() as outputs:
    outputs._write(Path(sys.argv[1]), write)
"""


def test_sigkill_while_an_output_is_written_leaves_no_partial_file(tmp_path):
    """The staged output's temporary is the reaper's to remove once the writer is killed."""
    output = tmp_path / "out" / "table.json"
    writer = subprocess.Popen([sys.executable, "-c", STAGED_WRITER, str(output)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "writing"
        partial = output.with_name(f".{output.name}.partial")
        assert partial.is_file()
        writer.kill()
        writer.wait(timeout=30)
        deadline = time.monotonic() + 60
        while partial.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not partial.exists() and not output.exists()
    finally:
        if writer.poll() is None:
            writer.kill()
