"""Fault injection (issue 25): a full disk, a read-only output directory, a corrupt DVC cache
entry, a server that refuses to start, and signals at random points of `dvc repro`. For
each: a clear error, nothing lost from the committed results, and a rerun that succeeds
once the fault is gone. What each fault yields is in docs/faults.md.

The disk faults run one cheap stage (`membench corpus`, about a second) on a small tmpfs,
mounted as root (skipped otherwise, with the reason); the server fault runs the backends
stage on the cheap workspace of tests/interrupt_helpers.py; the DVC faults work on a copy of
the session's one built clone (tests/conftest.py), so they are in the slow tier."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from interrupt_helpers import build_inputs, make_workspace, processes_naming, stage_command
from pipeline_clone import OUTPUTS

ROOT = Path(__file__).resolve().parents[1]
CORPUS = [sys.executable, "-m", "membench.cli", "corpus", "--params", str(ROOT / "params.yaml")]


def _can_mount() -> str | None:
    """None when this process may mount a tmpfs, else why not."""
    if os.geteuid() != 0:
        return "mounting a small tmpfs needs root"
    probe = Path(tempfile.mkdtemp(prefix="mb-mount-"))
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return f"mount -t tmpfs is not permitted here: {done.stderr.strip()}"
        subprocess.run(["umount", str(probe)], check=True)
        return None
    finally:
        probe.rmdir()


MOUNT_REFUSED = _can_mount()
needs_mount = pytest.mark.skipif(MOUNT_REFUSED is not None, reason=str(MOUNT_REFUSED))


@contextmanager
def small_tmpfs(path: Path, size: str) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
                   check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def remount(path: Path, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(path)], check=True)


def run_corpus(out: Path, tmp: Path) -> subprocess.CompletedProcess:
    """The corpus stage as dvc.yaml runs it (the repository's params and shipped corpus),
    writing `out`, with a TMPDIR of its own."""
    return subprocess.run([*CORPUS, "--out", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, check=False,
                          env={**os.environ, "TMPDIR": str(tmp)})


@pytest.fixture(scope="module")
def corpus_bytes(tmp_path_factory) -> bytes:
    """What the corpus stage writes with room to spare: the reference for every rerun."""
    where = tmp_path_factory.mktemp("reference")
    (where / "tmp").mkdir()
    done = run_corpus(where / "corpus.parquet", where / "tmp")
    assert done.returncode == 0, done.stderr
    return (where / "corpus.parquet").read_bytes()


def one_line_error(done: subprocess.CompletedProcess) -> str:
    """A failed stage's stderr: exactly one line, no traceback."""
    assert done.returncode != 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


PREVIOUS = b"the previous run's corpus snapshot"


@needs_mount
def test_a_full_disk_fails_in_one_line_naming_the_file_and_keeps_the_previous_output(
        tmp_path, corpus_bytes):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with small_tmpfs(tmp_path / "disk", "64k") as disk:
        out = disk / "corpus.parquet"
        out.write_bytes(PREVIOUS)
        line = one_line_error(run_corpus(out, tmp))
        assert "No space left on device" in line and str(out) in line, line
        assert out.read_bytes() == PREVIOUS  # staged: the old file is only ever replaced whole
        assert sorted(p.name for p in disk.iterdir()) == ["corpus.parquet"]  # no .partial
        remount(disk, "size=16m")  # the fault gone
        done = run_corpus(out, tmp)
        assert done.returncode == 0, done.stderr
        assert out.read_bytes() == corpus_bytes
    assert list(tmp.iterdir()) == []


def test_a_read_only_output_directory_fails_in_one_line_and_keeps_the_previous_output(
        tmp_path, corpus_bytes):
    """As root, permissions do not stop a write: the directory is a read-only mount."""
    if os.geteuid() == 0 and MOUNT_REFUSED is not None:
        pytest.skip(f"root ignores directory modes and {MOUNT_REFUSED}")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    outputs = tmp_path / "outputs"
    with (small_tmpfs(outputs, "16m") if os.geteuid() == 0 else _nothing(outputs)) as outputs:
        out = outputs / "corpus.parquet"
        out.write_bytes(PREVIOUS)
        if os.geteuid() == 0:
            remount(outputs, "ro")
        else:
            outputs.chmod(0o555)
        line = one_line_error(run_corpus(out, tmp))
        assert str(out) in line, line
        assert "Read-only file system" in line or "Permission denied" in line, line
        assert out.read_bytes() == PREVIOUS
        assert sorted(p.name for p in outputs.iterdir()) == ["corpus.parquet"]
        if os.geteuid() == 0:
            remount(outputs, "rw")
        else:
            outputs.chmod(0o755)
        done = run_corpus(out, tmp)
        assert done.returncode == 0, done.stderr
        assert out.read_bytes() == corpus_bytes
    assert list(tmp.iterdir()) == []


@contextmanager
def _nothing(path: Path) -> Iterator[Path]:
    path.mkdir()
    yield path


def test_a_corrupt_input_fails_in_one_line_naming_the_file(tmp_path, corpus_bytes):
    """What a stage meets when DVC checks out a corrupt cache entry (see the DVC tests
    below): eight flipped bytes in its Parquet input. One line naming the file, no output;
    the intact input then gives the stage's normal result."""
    corrupt = bytearray(corpus_bytes)
    for i in range(len(corrupt) // 2, len(corrupt) // 2 + 8):
        corrupt[i] ^= 0xFF
    snapshot = tmp_path / "corpus.parquet"
    snapshot.write_bytes(bytes(corrupt))
    command = [sys.executable, "-m", "membench.cli", "scenario", "--corpus", str(snapshot),
               "--out", str(tmp_path / "scenario"), "--params", str(ROOT / "params.yaml")]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          check=False)
    line = one_line_error(done)
    assert str(snapshot) in line and "corrupt" in line, line
    assert not (tmp_path / "scenario").exists()
    snapshot.write_bytes(corpus_bytes)
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "scenario/facts.parquet").is_file()


# ---- a server that refuses to start -------------------------------------------------------

@pytest.fixture(scope="module")
def postgres_workspace(tmp_path_factory) -> Path:
    """The backends stage's inputs, made cheaply (tests/interrupt_helpers.py), for the
    PostgreSQL backend alone."""
    workspace = make_workspace(tmp_path_factory.mktemp("pg") / "ws", ["postgres"],
                               ["profile", "fact_log"], [42, 1])
    build_inputs(workspace)
    return workspace


def run_backends(workspace: Path, tmp: Path) -> subprocess.CompletedProcess:
    return subprocess.run(stage_command("backends"), cwd=workspace, capture_output=True,
                          text=True, timeout=900, check=False,
                          env={**os.environ, "TMPDIR": str(tmp), "DVC_NO_ANALYTICS": "1",
                               "PYTHONPATH": os.pathsep.join(filter(None, [
                                   str(workspace / "fake"), os.environ.get("PYTHONPATH")]))})


def _outputs_of_backends(workspace: Path) -> list[Path]:
    return [workspace / name for name in ("data/backend_parity.parquet",
                                           "data/backend_rankings.parquet",
                                           "data/backend_at_rest.parquet",
                                           "reports/backends.json")]


@pytest.mark.slow
def test_a_server_that_refuses_to_start_fails_the_stage_naming_why(postgres_workspace):
    """A TMPDIR so deep that the server's unix socket path passes the kernel's 107 bytes:
    PostgreSQL refuses to start. The stage exits non-zero with the server's own reason,
    leaves no server and nothing in its TMPDIR, writes no output; with a short TMPDIR the
    same command succeeds."""
    short = Path(tempfile.mkdtemp(prefix="mbf-", dir="/tmp"))
    short.chmod(0o755)  # the servers run as `nobody` when the tests run as root
    deep = short / ("d" * 100)
    deep.mkdir()
    deep.chmod(0o755)
    try:
        done = run_backends(postgres_workspace, deep)
        assert done.returncode not in (0, None), done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        assert "PostgreSQL" in done.stderr and "too long" in done.stderr, done.stderr
        assert processes_naming(str(short)) == set()
        assert list(deep.iterdir()) == []
        assert not any(path.exists() for path in _outputs_of_backends(postgres_workspace))
        deep.rmdir()
        done = run_backends(postgres_workspace, short)  # the fault gone
        assert done.returncode == 0, done.stderr
        assert all(path.is_file() for path in _outputs_of_backends(postgres_workspace))
        assert list(short.iterdir()) == []
    finally:
        shutil.rmtree(short, ignore_errors=True)


@pytest.mark.slow
def test_a_server_killed_mid_run_fails_the_stage_in_one_line_naming_the_backend(
        postgres_workspace):
    """The PostgreSQL server killed (SIGKILL, as the OOM killer would) while the stage
    replays into it: the stage ends non-zero with one error line naming the backend, no
    traceback, no output, nothing left in its TMPDIR and no process of its own running."""
    private = Path(tempfile.mkdtemp(prefix="mbk-", dir="/tmp"))
    private.chmod(0o755)  # the servers run as `nobody` when the tests run as root
    try:
        for path in _outputs_of_backends(postgres_workspace):  # an earlier test's run
            path.unlink(missing_ok=True)
        process = subprocess.Popen(
            stage_command("backends"), cwd=postgres_workspace, stderr=subprocess.PIPE,
            text=True, env={**os.environ, "TMPDIR": str(private), "DVC_NO_ANALYTICS": "1"})
        seen = ""
        deadline = time.monotonic() + 300
        while "day 10" not in seen and time.monotonic() < deadline:  # server up, replaying
            line = process.stderr.readline()
            assert line, f"the stage ended before the server was killed: {seen}"
            seen += line
        servers = {pid for pid in processes_naming(str(private))
                   if b"postgres" in Path(f"/proc/{pid}/cmdline").read_bytes()}
        assert servers, "no server was running under the stage's TMPDIR"
        for pid in servers:
            os.kill(pid, signal.SIGKILL)
        _, rest = process.communicate(timeout=300)
        assert process.returncode == 1, seen + rest
        assert "Traceback" not in rest, rest
        last = rest.strip().splitlines()[-1]
        assert last.startswith("membench backends: error: backend postgres failed"), rest
        assert not any(path.exists() for path in _outputs_of_backends(postgres_workspace))
        deadline = time.monotonic() + 30  # the server's children end after their postmaster
        while processes_naming(str(private)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert processes_naming(str(private)) == set()
        assert list(private.iterdir()) == []
    finally:
        shutil.rmtree(private, ignore_errors=True)


# ---- DVC: a corrupt cache entry, signals at random points ---------------------------------

def dvc(clone: Path, *args: str, env: dict[str, str] | None = None,
        timeout: int = 1200) -> subprocess.CompletedProcess:
    return subprocess.run(["dvc", *args], cwd=clone, capture_output=True, text=True,
                          timeout=timeout, check=False,
                          env={**os.environ, "DVC_NO_ANALYTICS": "1", **(env or {})})


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cache_object(clone: Path, output: str) -> Path:
    """The .dvc/cache object of an output (DVC 3 addresses it by the file's md5)."""
    md5 = hashlib.md5((clone / output).read_bytes()).hexdigest()
    path = clone / ".dvc/cache/files/md5" / md5[:2] / md5[2:]
    assert path.is_file(), f"no cache object for {output}"
    return path


def flip_bytes(path: Path) -> None:
    """Flips a few bytes in the middle: same size, same mtime, other content."""
    stat = path.stat()
    path.chmod(0o644)
    data = bytearray(path.read_bytes())
    for i in range(len(data) // 2, len(data) // 2 + 8):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


@pytest.mark.slow
def test_a_corrupt_cache_entry_never_comes_back_from_dvc_repro(built_clone, built_clone_copy):
    """Eight flipped bytes (size and mtime kept, as bit rot does) in the cache object of
    data/scenario/facts.parquet, its workspace file deleted: `dvc repro` recomputes the
    same bytes and writes the object again. Then the same fault and `dvc checkout`, which
    in DVC 3 may hand back the corrupt bytes without hashing them (its state database
    vouches for the object): `dvc repro --force scenario`, the documented remedy, restores
    the same bytes."""
    clone, output, stage = built_clone_copy, "data/scenario/facts.parquet", "scenario"
    reference = digest(built_clone / output)

    flip_bytes(cache_object(clone, output))
    (clone / output).unlink()
    repro = dvc(clone, "repro")
    assert repro.returncode == 0, repro.stdout + repro.stderr
    assert digest(clone / output) == reference
    assert digest(cache_object(clone, output)) == reference  # the cache holds it again
    assert "data/scenario" not in dvc(clone, "status").stdout  # neither out nor dep changed

    flip_bytes(cache_object(clone, output))
    (clone / output).unlink()
    dvc(clone, "checkout", output)  # exit 0, the corrupt bytes or none: DVC's choice
    repro = dvc(clone, "repro", "--force", stage)
    assert repro.returncode == 0, repro.stdout + repro.stderr
    assert digest(clone / output) == reference
    assert "data/scenario" not in dvc(clone, "status").stdout  # neither out nor dep changed
    assert _git_status(clone) == ""


def _git_status(clone: Path) -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True,
                          text=True, check=True).stdout


SEED = 25  # the number: the same random points on every run


@pytest.mark.slow
def test_signals_at_random_points_of_dvc_repro_lose_nothing(built_clone, built_clone_copy):
    """One trial (the seed picks the moment and the signal): `dvc repro --force` of a warm
    clone, its process group sent SIGTERM or SIGINT a seeded random time after a seeded
    random stage started, never the last (a CI runner's cancel), then a second signal a
    second later: exit non-zero, no process naming its TMPDIR, its TMPDIR empty,
    every output either absent or whole (the committed bytes, never a partial file); then
    a plain `dvc repro` succeeds and every output and dvc.lock are the committed bytes."""
    clone = built_clone_copy
    reference = {name: digest(built_clone / name) for name in OUTPUTS}
    stages = len(yaml.safe_load((clone / "dvc.yaml").read_text())["stages"])
    rng = random.Random(SEED)
    for trial in range(1):  # each about as long as the run itself (memory systems included)
        # The moment is counted in the run's own stages, not in seconds: a fixed delay can
        # fall after the run has ended on a fast machine, and timing an uninterrupted run
        # first cost a whole `dvc repro --force`.
        after_stage = rng.randrange(1, stages)  # the n-th "Running stage" line, not the last
        delay = rng.uniform(0.0, 1.0)
        signum = rng.choice([signal.SIGTERM, signal.SIGINT])
        tmp = Path(tempfile.mkdtemp(prefix="mbs-", dir="/tmp"))
        tmp.chmod(0o755)  # the servers run as `nobody` when the tests run as root
        try:
            process = subprocess.Popen(
                ["dvc", "repro", "--force"], cwd=clone, start_new_session=True,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                env={**os.environ, "DVC_NO_ANALYTICS": "1", "TMPDIR": str(tmp)})
            seen = ""
            while seen.count("Running stage '") < after_stage:
                line = process.stdout.readline()
                assert line, f"the run ended before stage {after_stage}:\n{seen}"
                seen += line
            time.sleep(delay)
            for _ in range(2):  # a second signal a second later, while any of it runs
                _signal_group(process.pid, signum)
                time.sleep(1.0)
            output, _ = process.communicate(timeout=300)
            output = seen + output
            where = (f"trial {trial}: {signal.Signals(signum).name} {delay:.1f} s after "
                     f"stage {after_stage} started\n")
            assert process.returncode != 0, where + output
            _wait_for_no_process(str(tmp), where)
            _wait_for_empty(tmp, where + output)
            for name, expected in reference.items():
                path = clone / name
                assert not path.exists() or digest(path) == expected, where + name
            rerun = dvc(clone, "repro", env={"TMPDIR": str(tmp)})
            if any(f"dvc.lock' {damage}" in rerun.stderr
                   for damage in ("validation failed", "is invalid")):
                # DVC writes dvc.lock in place (open "w+", then dump): a signal inside that
                # write leaves it truncated (a schema error, or YAML cut mid-key). Its documented recovery (docs/reproducibility.md):
                # the committed dvc.lock back, then `dvc repro`. Nothing else may be damaged.
                subprocess.run(["git", "checkout", "--", "dvc.lock"], cwd=clone, check=True)
                rerun = dvc(clone, "repro", env={"TMPDIR": str(tmp)})
            assert rerun.returncode == 0, where + rerun.stdout + rerun.stderr
            assert {name: digest(clone / name) for name in OUTPUTS} == reference, where
            assert _git_status(clone) == "", where
            assert list(tmp.iterdir()) == [], where
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def _signal_group(pgid: int, signum: int) -> None:
    """To the whole process group, as a CI runner cancels a job; none left is fine."""
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        pass


def _wait_for_no_process(text: str, where: str, seconds: float = 120.0) -> None:
    """A server stopping after its stage was killed gets a few seconds to go."""
    deadline = time.monotonic() + seconds
    while processes_naming(text) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert processes_naming(text) == set(), where + "a process still names the TMPDIR"


def _start_repro_until(clone: Path, tmp: Path, marker: str, *args: str) -> tuple[
        subprocess.Popen, str]:
    """`dvc repro` in a session of its own (a CI runner's job), read until `marker`."""
    process = subprocess.Popen(
        ["dvc", "repro", *args], cwd=clone, start_new_session=True, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "DVC_NO_ANALYTICS": "1", "TMPDIR": str(tmp)})
    seen = ""
    while marker not in seen:
        line = process.stdout.readline()
        assert line, f"dvc repro ended before {marker!r}:\n{seen}"
        seen += line
    return process, seen


@pytest.mark.slow
def test_signals_to_dvc_repro_during_the_backends_stage_leave_nothing(built_clone,
                                                                       built_clone_copy):
    """The issue's "done when": two SIGTERMs a second apart to `dvc repro`'s process group
    while the backends stage replays into its PostgreSQL servers, then SIGKILL to the
    group at the same point; after each no `postgres` process (or any other) names the
    run's TMPDIR and it is empty, every output absent or whole; then a rerun succeeds
    with every output and dvc.lock as committed, leaving nothing in TMPDIR either."""
    clone = built_clone_copy
    reference = {name: digest(built_clone / name) for name in OUTPUTS}
    tmp = Path(tempfile.mkdtemp(prefix="mbk-", dir="/tmp"))
    tmp.chmod(0o755)  # the servers run as `nobody` when the tests run as root
    try:
        for signals in ([signal.SIGTERM, signal.SIGTERM], [signal.SIGKILL]):
            # a PostgreSQL backend replaying (LanceDB, the costliest, starts first)
            process, seen = _start_repro_until(clone, tmp, "postgres: day 10", "--force",
                                               "--single-item", "backends")
            where = f"{[s.name for s in signals]}:\n"
            assert processes_naming(str(tmp)), where + "no server was running under TMPDIR"
            for signum in signals:
                _signal_group(process.pid, signum)
                time.sleep(1.0)
            output, _ = process.communicate(timeout=300)
            assert process.returncode != 0, where + seen + output
            _wait_for_no_process(str(tmp), where)
            _wait_for_empty(tmp, where + seen + output)
            for name, expected in reference.items():
                path = clone / name
                assert not path.exists() or digest(path) == expected, where + name
        rerun = dvc(clone, "repro", env={"TMPDIR": str(tmp)})
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        assert {name: digest(clone / name) for name in OUTPUTS} == reference
        assert _git_status(clone) == ""
        assert list(tmp.iterdir()) == []
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _wait_for_empty(tmp: Path, where: str, seconds: float = 120.0) -> None:
    """After SIGKILL, the reaper stops the killed stage's servers and removes its
    directories: about 15 s on a loaded 2-core machine."""
    deadline = time.monotonic() + seconds
    while any(tmp.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = sorted(p.name for p in tmp.iterdir())
    assert left == [], f"left in TMPDIR after {seconds:.0f} s: {left}\n{where}"
