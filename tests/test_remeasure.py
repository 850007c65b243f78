"""`membench remeasure`: the due-check, the params edit, and the change summary, through
the pure functions and through the command in a scratch git repository (the pipeline run
replaced by a stand-in that writes the new files)."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from membench.cli import app
from membench.commands import remeasure as command
from membench.reporting import remeasure as logic

runner = CliRunner()
D = dt.date


@pytest.mark.parametrize("measured,today,due", [
    (D(2026, 12, 2), D(2027, 12, 1), False),
    (D(2026, 12, 2), D(2027, 12, 2), True),
    (D(2026, 12, 2), D(2028, 3, 1), True),
    (D(2026, 12, 2), D(2026, 12, 2), False),
    (D(2024, 2, 29), D(2025, 2, 27), False),
    (D(2024, 2, 29), D(2025, 2, 28), True),
])
def test_due_after_twelve_months(measured, today, due):
    assert logic.is_due(measured, today) is due


def test_set_measured_changes_only_the_date(repo_root):
    text = (repo_root / "params.yaml").read_text()
    edited = logic.set_measured(text, D(2027, 12, 3))
    old = next(line for line in text.splitlines() if "measured:" in line)
    new = next(line for line in edited.splitlines() if "measured:" in line)
    assert new == old.replace(old.split('"')[1], "2027-12-03")
    assert edited.replace(new, old) == text  # comments, quotes, order all kept


def test_set_measured_refuses_a_file_without_the_line():
    with pytest.raises(ValueError, match="measured"):
        logic.set_measured("report:\n  other: 1\n", D(2027, 1, 1))


def test_summary_lists_changed_metrics_with_deltas_and_packages():
    old = logic.flatten({"a": {"x": 1, "y": 2.5}, "b": [3]})
    new = logic.flatten({"a": {"x": 1, "y": 3.0}, "c": 4})
    changes = logic.metric_changes(old, new)
    assert [(c.name, c.old, c.new) for c in changes] == [("a.y", 2.5, 3.0), ("b.0", 3, None),
                                                          ("c", None, 4)]
    env = logic.environment_changes(
        {"Measured": "2026-12-02", "Python": "CPython 3.11.7", "Packages": "dvc 3.67.1, x 1"},
        {"Measured": "2027-12-02", "Python": "CPython 3.11.9", "Packages": "dvc 3.67.1, x 2"})
    assert [(c.name, c.old, c.new) for c in env] == [("Python", "CPython 3.11.7",
                                                      "CPython 3.11.9"), ("package x", "1", "2")]
    text = logic.render_summary("2026-12-02", "2027-12-02", changes, env,
                                {"CPU": "Some CPU, 2 logical CPUs"})
    assert "| `a.y` | 2.5 | 3.0 | +0.5 |" in text
    assert "- CPU: Some CPU, 2 logical CPUs" in text
    assert "| `c` | — | 4 | — |" in text
    assert "| package x | 1 | 2 |" in text


# The command, end to end in a scratch repository.

def _files() -> tuple[str, ...]:
    """The params, the pipeline and every result `remeasure` compares, as dvc.yaml declares."""
    root = Path(__file__).resolve().parents[1]
    metrics, report = logic.tracked_results(yaml.safe_load((root / "dvc.yaml").read_text()))
    return ("params.yaml", "dvc.yaml", *metrics, report)


FILES = _files()


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def repo(repo_root, tmp_path, monkeypatch):
    for name in FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(repo_root / name, tmp_path / name)
    shutil.copytree(repo_root / "data", tmp_path / "data",
                    ignore=lambda d, names: [n for n in names if n not in
                                             ("scenario.toml", "article.toml")])
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "baseline")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def fake_pipeline(monkeypatch, change=None):
    """Stands in for `dvc repro`: rewrites the report's date and, if asked, one metric."""
    calls = []

    def run() -> None:
        calls.append(True)
        params = Path("params.yaml").read_text()
        measured = params.split('measured: "')[1][:10]
        report = Path("reports/report.md").read_text().splitlines()
        report = [f"Measured:  {measured}" if line.startswith("Measured:") else line
                  for line in report]
        Path("reports/report.md").write_text("\n".join(report) + "\n")
        if change:
            path, policy, field, value = change
            data = json.loads(Path(path).read_text())
            data[policy][field] = value
            Path(path).write_text(json.dumps(data))

    monkeypatch.setattr(command, "run_pipeline", run)
    return calls


def test_not_due_runs_nothing(repo, monkeypatch):
    calls = fake_pipeline(monkeypatch)
    before = (repo / "params.yaml").read_text()
    result = runner.invoke(app, ["remeasure", "--today", "2027-06-01", "--summary", "s.md"])
    assert result.exit_code == 0, result.output
    assert "not due" in result.output
    assert not calls and not (repo / "s.md").exists()
    assert (repo / "params.yaml").read_text() == before


def test_check_warns_without_failing(repo, monkeypatch):
    calls = fake_pipeline(monkeypatch)
    due = runner.invoke(app, ["remeasure", "--check", "--today", "2027-12-02"])
    assert due.exit_code == 0 and due.output.startswith("::warning::")
    fresh = runner.invoke(app, ["remeasure", "--check", "--today", "2027-01-02"])
    assert fresh.exit_code == 0 and "::warning::" not in fresh.output
    assert not calls


def test_forced_run_with_nothing_changed(repo, monkeypatch):
    calls = fake_pipeline(monkeypatch)
    out = repo / "github_output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(out))
    result = runner.invoke(app, ["remeasure", "--force", "--today", "2027-01-05",
                                 "--summary", "s.md"])
    assert result.exit_code == 0, result.output
    assert calls == [True]
    assert 'measured: "2027-01-05"' in (repo / "params.yaml").read_text()
    summary = (repo / "s.md").read_text()
    assert "No metric changed." in summary
    assert "No change in packages" in summary
    assert out.read_text() == "remeasured=true\n"


def test_due_run_reports_a_changed_metric(repo, monkeypatch):
    old = json.loads((repo / "reports/summary.json").read_text())["bm25_transcript"]["conflict"]
    fake_pipeline(monkeypatch, ("reports/summary.json", "bm25_transcript", "conflict", old + 2))
    result = runner.invoke(app, ["remeasure", "--today", "2027-12-02", "--summary", "s.md"])
    assert result.exit_code == 0, result.output
    summary = (repo / "s.md").read_text()
    assert "1 metric(s) changed." in summary
    assert (f"| `summary.json:bm25_transcript.conflict` | {old} | {old + 2} | +2 |"
            in summary)


def test_failed_pipeline_restores_params(repo, monkeypatch):
    def broken() -> None:
        raise RuntimeError("`dvc repro --force --no-run-cache` failed with exit status 1")

    monkeypatch.setattr(command, "run_pipeline", broken)
    before = (repo / "params.yaml").read_text()
    result = runner.invoke(app, ["remeasure", "--force", "--summary", "s.md"])
    assert result.exit_code == 1
    assert (repo / "params.yaml").read_text() == before
    assert not (repo / "s.md").exists()


def test_the_rerun_bypasses_the_run_cache(monkeypatch):
    """The command run_pipeline really runs: every stage (--force), none restored from DVC's
    run cache (--no-run-cache); a failing run raises with the command in the message."""
    invoked = []

    def fake_run(args, **kwargs):
        invoked.append(list(args))
        return subprocess.CompletedProcess(args, returncode=len(invoked) - 1)

    monkeypatch.setattr(command.subprocess, "run", fake_run)
    command.run_pipeline()
    assert len(invoked) == 1
    argv = invoked[0]
    assert argv[:2] == ["dvc", "repro"]
    assert "--force" in argv and "--no-run-cache" in argv
    with pytest.raises(RuntimeError, match="--no-run-cache.*exit status 1"):
        command.run_pipeline()


def test_a_metric_file_new_since_the_baseline_counts_as_new(repo, monkeypatch):
    git(repo, "rm", "-q", "reports/multiseed.json")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "older baseline")
    shutil.copy(Path(__file__).parents[1] / "reports/multiseed.json",
                repo / "reports/multiseed.json")
    fake_pipeline(monkeypatch)
    result = runner.invoke(app, ["remeasure", "--force", "--summary", "s.md"])
    assert result.exit_code == 0, result.output
    summary = (repo / "s.md").read_text()
    assert "| `multiseed.json:seeds.0` | — | 42 | — |" in summary


def test_unknown_baseline_revision_is_named(repo, monkeypatch):
    calls = fake_pipeline(monkeypatch)
    result = runner.invoke(app, ["remeasure", "--force", "--baseline", "no-such-rev"])
    assert result.exit_code == 1
    assert "no-such-rev" in result.output
    assert not calls


def test_the_compared_files_come_from_the_pipeline(repo_root):
    pipeline = yaml.safe_load((repo_root / "dvc.yaml").read_text())
    assert logic.tracked_results(pipeline) == (
        ["reports/answers.json", "reports/backends.json", "reports/extraction.json",
         "reports/metrics.json",
         "reports/multiseed.json", "reports/summary.json", "reports/systems.json"],
        "reports/report.md")
    pipeline["stages"]["extra"] = {"cmd": "x",
                                   "metrics": [{"reports/extra.json": {"cache": False}}]}
    assert "reports/extra.json" in logic.tracked_results(pipeline)[0]
    del pipeline["stages"]["report"]
    with pytest.raises(ValueError, match="one Markdown report"):
        logic.tracked_results(pipeline)


def test_a_metric_file_the_pipeline_adds_is_compared(repo, monkeypatch):
    """A metric declared in dvc.yaml is compared without editing the command."""
    pipeline = yaml.safe_load((repo / "dvc.yaml").read_text())
    pipeline["stages"]["report"]["metrics"].append({"reports/extra.json": {"cache": False}})
    (repo / "dvc.yaml").write_text(yaml.safe_dump(pipeline))
    (repo / "reports/extra.json").write_text('{"answer": 41}')
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "extra metric")
    monkeypatch.setattr(command, "run_pipeline",
                        lambda: (repo / "reports/extra.json").write_text('{"answer": 42}'))
    result = runner.invoke(app, ["remeasure", "--force", "--summary", "s.md"])
    assert result.exit_code == 0, result.output
    assert "| `extra.json:answer` | 41 | 42 | +1 |" in (repo / "s.md").read_text()
