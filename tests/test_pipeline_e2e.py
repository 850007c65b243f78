"""`dvc repro` in a temporary clone: the article's rows, caching, byte-identical reruns.
The cold run is the one shared by the test run (tests/pipeline_clone.py); tests that rerun
or edit the pipeline work on their own copy of it."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from interrupt_helpers import processes_naming
from pipeline_clone import COMMITTED, OUTPUTS, sh

pytestmark = pytest.mark.slow


def digests(root: Path) -> dict[str, str]:
    return {name: hashlib.sha256((root / name).read_bytes()).hexdigest() for name in OUTPUTS}


@pytest.fixture(scope="module")
def first_run(built_clone):
    """The outputs of the run's one cold `dvc repro` (tests/pipeline_clone.py)."""
    return digests(built_clone)


@pytest.fixture
def clone(built_clone_copy):
    """A private copy of the built clone, for a test that reruns or edits it."""
    return built_clone_copy


def test_metrics_hold_the_articles_timeline_rows(built_clone, first_run):
    metrics = json.loads((built_clone / "reports/metrics.json").read_text())
    for form in ("literal", "paraphrase"):
        for policy in ("full_transcript", "fact_log"):
            m = metrics[policy][form]
            assert (m["current"], m["conflict"], m["stale"], m["missing"], m["leaked"]) == \
                (25, 12, 0, 0, 3)
        for policy in ("profile", "profile_bm25_unextracted"):
            m = metrics[policy][form]
            assert (m["current"], m["conflict"], m["stale"], m["missing"], m["leaked"]) == \
                (37, 0, 0, 0, 0)
        assert metrics["session_buffer"][form]["current"] == 1
        assert metrics["session_buffer"][form]["missing"] == 36
    report = (built_clone / "reports/report.md").read_text()
    assert "Every outcome count matches the article's" in report


def test_no_change_rerun_uses_the_cache(clone, first_run):
    output = sh(clone, "dvc", "repro")
    for stage in ("scenario", "embed_turns", "extract", "index", "embed", "policies",
                  "extraction", "multiseed", "plots", "report"):
        assert f"Stage '{stage}' didn't change, skipping" in output
    assert digests(clone) == first_run


# Another machine, simulated: a sitecustomize module that every Python process of the
# run (dvc and each stage) imports first. It fakes the platform description and blocks
# torch, so the rerun also proves that no stage imports it.
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


def test_another_machine_writes_the_same_bytes(clone, first_run, tmp_path):
    """Every stage again, the embedding cache gone, on a faked CPU, kernel and Python patch,
    OpenBLAS forced to another kernel and one thread: the same bytes as the cold run, and
    `git status` stays clean (dvc.lock included)."""
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "sitecustomize.py").write_text(FAKE_MACHINE)
    (clone / "data/embedding_cache.parquet").unlink()
    env = {"PYTHONPATH": str(fake),
           "OPENBLAS_CORETYPE": OTHER_BLAS_KERNEL.get(platform.machine(), "Sandybridge"),
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    output = sh(clone, "dvc", "repro", "--force", env=env)
    assert "texts, 0 cached" in output  # every vector computed again under the other kernel
    assert "Fake Xeon" in (clone / "reports/environment.json").read_text()
    assert digests(clone) == first_run
    assert _stdout(clone, "git", "status", "--porcelain") == ""


def test_a_fresh_run_leaves_git_status_clean(built_clone, first_run):
    """dvc.lock and reports/ in git are what the pipeline writes on any machine."""
    assert _stdout(built_clone, "git", "status", "--porcelain") == ""


def test_committed_report_matches_a_fresh_run(repo_root, built_clone, first_run):
    """reports/ in git is what the pipeline writes: regenerate and commit after changes."""
    for name in COMMITTED:
        assert (repo_root / name).read_bytes() == (built_clone / name).read_bytes(), name
    assert "OS:" not in (repo_root / "reports/report.md").read_text()


def test_exp_show_metrics_are_the_flat_summary(built_clone, first_run):
    """Only summary.json is a DVC metric: six legible numbers per policy."""
    shown = json.loads(_stdout(built_clone, "dvc", "metrics", "show", "--json"))
    files = next(iter(shown.values()))["data"]
    assert list(files) == ["reports/summary.json"]
    summary = files["reports/summary.json"]["data"]
    assert summary["profile"]["current_only"] == 74
    assert summary["full_transcript"]["conflict"] == 24
    assert summary["session_buffer"]["stale_or_missing"] == 72


def test_dvc_plots_show_renders_the_three_plots(built_clone, first_run, tmp_path):
    sh(built_clone, "dvc", "plots", "show", "-o", str(tmp_path / "plots"))
    html = (tmp_path / "plots/index.html").read_text()
    for name in ("cost_quality.json", "outcomes.json", "by_day.json"):
        assert name in html
    assert '"type": "log"' in html or '"type":"log"' in html


def _stdout(cwd: Path, *args: str) -> str:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
                          check=True)
    return done.stdout


def test_remeasure_reruns_from_scratch_and_finds_nothing_changed(clone, first_run):
    """On its own copy of the built clone: it dates params.yaml. The real `dvc repro --force
    --no-run-cache` reruns every stage; same code and inputs give no metric change."""
    assert _stdout(clone, "git", "status", "--porcelain") == ""  # committed = this run
    output = sh(clone, "membench", "remeasure", "--today", "2027-12-02", "--summary", "s.md")
    for stage in ("corpus", "scenario", "policies", "multiseed", "plots", "report"):
        assert f"Running stage '{stage}'" in output
    assert 'measured: "2027-12-02"' in (clone / "params.yaml").read_text()
    summary = (clone / "s.md").read_text()
    assert "No metric changed." in summary
    assert "No change in packages" in summary
    assert "2027-12-02" in (clone / "reports/report.md").read_text()




def test_sigterm_stops_the_backends_stage_and_leaves_nothing(clone, first_run, tmp_path):
    """A SIGTERM ends a stage as Ctrl-C does: its servers stopped, its temporary stores and
    partial outputs removed, exit code 143. Its own temporary directory (TMPDIR), so other
    processes' files do not count; short, for the servers' unix sockets."""
    private = Path(tempfile.mkdtemp(prefix="mb-"))
    private.chmod(0o755)  # the servers run as `nobody` when the tests run as root
    out = tmp_path / "out"
    command = [sys.executable, "-m", "membench.cli", "backends",
               "--scenario", str(clone / "data/scenario"),
               "--records", str(clone / "data/fact_records.parquet"),
               "--embeddings", str(clone / "data/embeddings.parquet"),
               "--outcomes", str(clone / "data/outcomes.parquet"),
               "--params", str(clone / "params.yaml"),
               "--parity", str(out / "parity.parquet"), "--rankings", str(out / "r.parquet"),
               "--at-rest", str(out / "a.parquet"), "--summary", str(out / "s.json"),
               "--costs", str(out / "c.json")]
    try:
        process = subprocess.Popen(command, cwd=clone, stderr=subprocess.PIPE, text=True,
                                   env={**os.environ, "TMPDIR": str(private)})
        seen = ""
        deadline = time.monotonic() + 300
        while "day 10" not in seen and time.monotonic() < deadline:  # servers up, replaying
            line = process.stderr.readline()
            assert line, f"the stage ended before the signal: {seen}"
            seen += line
        assert processes_naming(str(private)), "no server was running under its TMPDIR"
        process.send_signal(signal.SIGTERM)
        _, rest = process.communicate(timeout=300)
        assert process.returncode == 128 + signal.SIGTERM, seen + rest
        assert not out.exists() or not any(out.iterdir())
        assert list(private.iterdir()) == []
        assert processes_naming(str(private)) == set()
    finally:
        shutil.rmtree(private, ignore_errors=True)
