"""`dvc repro` in a temporary clone: the article's rows, caching, byte-identical reruns.
The cold run is the one shared by the test run (tests/pipeline_clone.py); tests that rerun
or edit the pipeline work on their own copy of it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml
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


def _locked_outputs(lock: dict) -> dict[str, str]:
    """Every output dvc.lock names, with its MD5 (a directory's ends in .dir)."""
    return {out["path"]: out["md5"] for stage in lock["stages"].values()
            for out in stage.get("outs", [])}


def test_another_machine_writes_the_committed_bytes(repo_root, built_clone, cold_run):
    """The cold run (every stage, the embedding cache empty, on a faked CPU, kernel and Python
    patch, OpenBLAS forced to another kernel and one thread: tests/scratch_conditions.py)
    wrote every output file with the MD5 the committed dvc.lock holds, made on this machine,
    and the same dvc.lock (a directory's hash covers its files)."""
    assert "texts, 0 cached" in cold_run.output  # every vector computed under the other kernel
    assert "Fake Xeon" in (built_clone / "reports/environment.json").read_text()
    committed = _locked_outputs(yaml.safe_load((repo_root / "dvc.lock").read_text()))
    directories = [path for path, md5 in committed.items() if md5.endswith(".dir")]
    for name in OUTPUTS:  # every output the tests read is locked, alone or in a directory
        assert name in committed or any(name.startswith(d + "/") for d in directories), name
    for name, md5 in committed.items():
        if not md5.endswith(".dir"):
            assert hashlib.md5((built_clone / name).read_bytes()).hexdigest() == md5, name
    assert (built_clone / "dvc.lock").read_bytes() == (repo_root / "dvc.lock").read_bytes()


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


def test_remeasure_reruns_from_scratch_and_finds_nothing_changed(cold_run):
    """The cold run is `membench remeasure --force` (tests/pipeline_clone.py): the real `dvc
    repro --force --no-run-cache` reran every stage; same code and inputs, no metric change."""
    for stage in ("corpus", "scenario", "embed", "policies", "backends", "multiseed", "plots",
                  "report"):
        assert f"Running stage '{stage}'" in cold_run.output
    assert "No metric changed." in cold_run.summary
    assert "No change in packages" in cold_run.summary


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
               "--contexts", str(clone / "data/contexts.parquet"),
               "--params", str(clone / "params.yaml"),
               "--parity", str(out / "parity.parquet"), "--rankings", str(out / "r.parquet"),
               "--at-rest", str(out / "a.parquet"), "--summary", str(out / "s.json"),
               "--costs", str(out / "c.json")]
    try:
        process = subprocess.Popen(command, cwd=clone, stderr=subprocess.PIPE, text=True,
                                   env={**os.environ, "TMPDIR": str(private)})
        seen = ""
        deadline = time.monotonic() + 300
        # a PostgreSQL backend replaying (LanceDB, the costliest, starts first)
        while "postgres: day 10" not in seen and time.monotonic() < deadline:
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
