"""`dvc repro` on a format-2 scenario in a temporary clone: the pipeline runs a given
conversation end to end and the report fits its story."""

from __future__ import annotations

import os
import shutil
import subprocess

import pyarrow.parquet as pq
import pytest
import yaml

pytestmark = pytest.mark.slow


def test_dvc_repro_runs_a_format2_scenario(repo_root, tmp_path):
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"],
                            cwd=repo_root, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        if (repo_root / name).is_file() and not name.startswith(("data/scenario/", "reports/")):
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(repo_root / name, tmp_path / name)
    params = yaml.safe_load((tmp_path / "params.yaml").read_text())
    params["scenario"]["file"] = "tests/fixtures/format2/story.json"
    params["multiseed"]["seeds"] = [42]
    params["reader"]["policies"] = []  # another story: the committed answers are not its own
    params["llm_extractor"]["run"] = False  # nor the LLM extractor's
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    (tmp_path / "dvc.lock").unlink()
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    for command in (["git", "init", "-q"], ["dvc", "repro"]):
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
    outcomes = pq.read_table(tmp_path / "data/outcomes.parquet")  # a partition per scenario
    assert "evidence_outcome" in outcomes.schema.names
    assert outcomes.column("user").to_pylist() == outcomes.column("scenario").to_pylist()
    rows = {(r["policy"], r["probe_id"]): r["outcome"] for r in outcomes.to_pylist()}
    assert rows[("profile", "city-4")] == "current"
    assert rows[("bm25_transcript", "city-4")] == "stale"
    report = (tmp_path / "reports/report.md").read_text(encoding="utf-8")
    assert "Probes:     4 per policy (2 literal, 1 paraphrase, 1 adversarial)" in report
    assert "## What this run can and cannot say" in report
    assert "rest on gold extraction" in report
    assert "Beside the article" not in report and "node_version" not in report
    assert 'bm25_transcript, day 4, literal, `city`: "Which city does Ana live in?" -> stale' \
        in report
    assert "Tag `category`" in report
