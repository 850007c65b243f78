"""Clones of the working tree for the end-to-end tests, and ONE cold pipeline run per test run.

A cold run takes minutes, so it happens once: tests that only read the default pipeline's
outputs read the shared built clone (never write to it), and tests that change a clone work
on a copy of it, whose .dvc/cache makes their `dvc repro` restore what they did not change.
Under pytest-xdist the first worker to ask builds it under a file lock in the run's shared
temporary directory; the others wait and reuse it.

The one run is the scheduled re-measurement's (`membench remeasure --force`, a `dvc repro
--force --no-run-cache` of a fresh clone: every stage, the embedding model on every text), on
another machine, simulated, with the network blocked (tests/scratch_conditions.py), so the
tests of those three read one run instead of making three."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import scratch_conditions
import yaml
from filelock import FileLock

OUTPUTS = ["data/corpus.parquet", "data/scenario/exchanges.parquet", "data/scenario/facts.parquet",
           "data/scenario/probes.parquet", "data/scenario/manifest.json",
           "data/fact_records.parquet", "data/index.parquet",
           *(f"data/{name}.parquet/{part}" for name in ("outcomes", "contexts")
             for part in ("_common_metadata", "seed=42/user=user/part-0.parquet")),
           "data/stored.parquet", "data/audit.parquet", "data/embeddings.parquet",
           "reports/report.md",
           "reports/metrics.json", "reports/summary.json", "reports/multiseed.json",
           "reports/plots/cost_quality.json",
           "reports/plots/outcomes.json", "reports/plots/by_day.json",
           "reports/plots/cost_quality.svg", "reports/plots/outcomes.svg",
           "reports/plots/by_day.svg", "data/turn_embeddings.parquet", "reports/extraction.json",
           "reports/plots/extraction_sweep.json", "reports/plots/extraction_sweep.svg",
           "data/backend_parity.parquet", "data/backend_rankings.parquet",
           "data/backend_at_rest.parquet", "reports/backends.json",
           "data/system_outcomes.parquet", "data/system_users_outcomes.parquet",
           "data/system_at_rest.parquet", "reports/systems.json", "data/answers.parquet",
           "reports/answers.json"]
COMMITTED = [name for name in OUTPUTS if name.startswith("reports/")]
GIT = ("git", "-c", "user.name=t", "-c", "user.email=t@t")


def sh(cwd: Path, *args: str, env: dict[str, str] | None = None, timeout: int = 1200) -> str:
    """Runs a command and returns its stdout and stderr; a failure shows both."""
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", **(env or {})}
    # 20 minutes: a `dvc repro` includes the backends stage, whose PostgreSQL servers and
    # scans take minutes on a shared 2-core machine.
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def fresh_clone(repo_root: Path, target: Path) -> Path:
    """The working tree as a fresh repository: tracked and untracked, not ignored, files,
    committed; no pipeline output but what git tracks (reports/)."""
    target.mkdir(parents=True, exist_ok=True)
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"],
                            cwd=repo_root, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = repo_root / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    for name in OUTPUTS:  # a clean clone holds what git tracks (reports/), no cached outputs
        if name not in COMMITTED:
            (target / name).unlink(missing_ok=True)
    sh(target, "git", "init", "-q")
    sh(target, "git", "add", "-A")
    sh(target, *GIT, "commit", "-qm", "clone")
    return target


@dataclass(frozen=True)
class Build:
    """What the one cold run printed and left: its output (dvc's and every stage's), the
    network attempts the guard refused, and the names it left in its own TMPDIR."""
    output: str
    summary: str  # the re-measurement's Markdown summary
    network_attempts: str
    left_in_tmp: list[str]


def _cold_run(clone: Path, record: Path) -> None:
    """The re-measurement of the fresh clone under the scratch conditions, recorded in
    `record` (a directory): output, network-attempts.log, tmp-left."""
    record.mkdir()
    # Short, for the servers' unix sockets; 0755: they run as `nobody` when tests run as root.
    private = Path(tempfile.mkdtemp(prefix="mbo-", dir="/tmp"))
    private.chmod(0o755)
    env, _ = scratch_conditions.environment(record, private)
    measured = yaml.safe_load((clone / "params.yaml").read_text())["report"]["measured"]
    command = [*scratch_conditions.network_namespace(), "membench", "remeasure", "--force",
               "--today", measured, "--summary", str(record / "summary.md")]
    try:
        # An hour: every test that reads the build fails with it, and a cold run took over
        # 20 minutes on a 2-core machine shared by several test runs.
        done = subprocess.run(command, cwd=clone, env=env, capture_output=True, text=True,
                              timeout=3600, check=False)
        (record / "tmp-left").write_text("\n".join(sorted(p.name for p in private.iterdir())))
    finally:
        shutil.rmtree(private, ignore_errors=True)
    (record / "output").write_text(done.stdout + done.stderr)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}"


def shared_build(repo_root: Path, shared_dir: Path) -> Path:
    """The clone after the one cold run, built by whichever process asks first.

    shared_dir is common to every xdist worker of the run (the parent of a worker's
    basetemp). A failed build is recorded, so the other workers fail at once with its
    message instead of building again."""
    built = shared_dir / "pipeline-clone"
    done, failed = shared_dir / "pipeline-clone.done", shared_dir / "pipeline-clone.failed"
    with FileLock(str(shared_dir / "pipeline-clone.lock")):
        if failed.exists():
            raise AssertionError(f"the shared cold pipeline run failed:\n{failed.read_text()}")
        if not done.exists():
            shutil.rmtree(built, ignore_errors=True)
            shutil.rmtree(_record(built), ignore_errors=True)
            try:
                _cold_run(fresh_clone(repo_root, built), _record(built))
            except BaseException as error:
                failed.write_text(str(error) or repr(error))
                raise
            done.touch()
    return built


def _record(built: Path) -> Path:
    return built.parent / f"{built.name}.record"


def build_of(built: Path) -> Build:
    """What the cold run that made `built` printed and left."""
    record = _record(built)
    left = (record / "tmp-left").read_text()
    return Build((record / "output").read_text(), (record / "summary.md").read_text(),
                 (record / "network-attempts.log").read_text(), left.split("\n") if left else [])


def copy_clone(source: Path, target: Path) -> Path:
    """A private copy of a clone, its git history and .dvc/cache included: real bytes, no
    hard links, so writing to it never touches the source. Not .dvc/tmp nor git's lock
    files: dvc's locks and state and git's index.lock come and go while other workers read
    the source, and dvc and git rebuild them."""
    def transient(folder: str, names: list[str]) -> list[str]:
        if Path(folder) == source / ".dvc":
            return ["tmp"]
        if Path(folder) == source / ".git":
            return [name for name in names if name.endswith(".lock")]
        return []

    shutil.copytree(source, target, symlinks=True, ignore=transient)
    return target
