"""Both GitHub workflows validate offline against check-jsonschema's vendored schema, and
keep the properties the re-measurement relies on."""

from __future__ import annotations

import shutil
import subprocess

import yaml

WORKFLOWS = (".github/workflows/ci.yml", ".github/workflows/remeasure.yml")


def test_workflows_match_the_github_workflow_schema(repo_root):
    tool = shutil.which("check-jsonschema")
    assert tool, "check-jsonschema is in the test extra: pip install -e '.[test]'"
    done = subprocess.run([tool, "--builtin-schema", "vendor.github-workflows", *WORKFLOWS],
                          cwd=repo_root, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_schema_check_can_fail(repo_root, tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text("name: x\non: push\njobs:\n  a:\n    steps: []\n")  # no runs-on
    done = subprocess.run([shutil.which("check-jsonschema"), "--builtin-schema",
                           "vendor.github-workflows", str(broken)],
                          capture_output=True, text=True, check=False)
    assert done.returncode != 0


def test_remeasure_runs_monthly_off_the_hour_with_full_history(repo_root):
    flow = yaml.safe_load((repo_root / WORKFLOWS[1]).read_text())
    triggers = flow[True]  # YAML 1.1 reads the key `on` as True
    assert "workflow_dispatch" in triggers
    minute, _, _, month, _ = triggers["schedule"][0]["cron"].split()
    assert minute not in ("0", "*") and month == "*"
    steps = flow["jobs"]["remeasure"]["steps"]
    assert steps[0]["with"]["fetch-depth"] == 0
    assert any("membench remeasure" in step.get("run", "") for step in steps)
    pr = next(step for step in steps if "create-pull-request" in step.get("uses", ""))
    assert pr["if"] == "steps.remeasure.outputs.remeasured == 'true'"
    assert "dvc.lock" in pr["with"]["add-paths"]


def test_ci_runs_the_readme_test_command_and_the_age_warning(repo_root):
    flow = yaml.safe_load((repo_root / WORKFLOWS[0]).read_text())
    assert set(flow[True]) == {"push", "pull_request"}
    runs = [step.get("run", "") for step in flow["jobs"]["test"]["steps"]]
    assert ".ci/run" in runs
    assert "membench remeasure --check" in runs
    assert "python -m pytest" in (repo_root / ".ci/run").read_text()
