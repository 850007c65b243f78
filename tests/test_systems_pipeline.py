"""The example out-of-tree memory system (examples/membench-example-system), installed by pip
into a directory of its own and found through the `membench.plugins` entry point, runs
through `dvc repro`: the systems stage, then the report."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.slow


def _install(repo_root: Path, site: Path) -> None:
    # pip's own build isolation: it installs the example's build backend (setuptools) from
    # the package index as any user's install would. Built from a copy: the build writes
    # its egg-info beside the sources, and a write into the repository while another test
    # runs a memory system there is that system's "wrote outside its directory".
    source = site.with_name(f"{site.name}-source")
    shutil.copytree(repo_root / "examples/membench-example-system", source)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--disable-pip-version-check", "--target", str(site), str(source)],
                   check=True, capture_output=True, text=True, timeout=300)


def _repro(clone: Path, site: Path | None) -> subprocess.CompletedProcess:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    return subprocess.run(["dvc", "repro"], cwd=clone, env=env, capture_output=True,
                          text=True, timeout=1200, check=False)


def test_the_example_system_runs_through_dvc_repro(built_clone_copy, repo_root, tmp_path):
    clone = built_clone_copy
    params = clone / "params.yaml"
    text = params.read_text()
    assert "  names: [mem0_qdrant] " in text  # the default systems line
    params.write_text(text.replace("  names: [mem0_qdrant] ", "  names: [example_notes] "))
    before = (clone / "reports/report.md").read_text()

    unknown = _repro(clone, None)  # not installed: a params error naming it, nothing written
    assert unknown.returncode != 0
    message = " ".join(unknown.stderr.replace("│", " ").split())  # typer's box wraps lines
    assert "unknown system(s) ['example_notes']" in message
    assert (clone / "reports/report.md").read_text() == before

    site = tmp_path / "site"
    _install(repo_root, site)
    done = _repro(clone, site)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Running stage 'systems'" in done.stdout
    summary = json.loads((clone / "reports/systems.json").read_text())
    [entry] = summary["systems"]
    assert entry["system"] == "example_notes" and entry["ran"]
    # The notebook rewrites its file on an API deletion; the user's turn alone leaves it.
    turn, api = entry["modes"]["forget_turn"], entry["modes"]["forget_api"]
    assert api["outcomes"]["leaked"] == 0 and api["at_rest"]["none"]["facts_held"] == []
    assert turn["at_rest"]["none"]["facts_held"] and turn["outcomes"]["leaked"] > 0
    outcomes = pq.read_table(clone / "data/system_outcomes.parquet")
    assert set(outcomes.column("system").to_pylist()) == {"example_notes"}
    report = (clone / "reports/report.md").read_text()
    assert "## Memory systems, through their own write path" in report
    assert "| `example_notes` | `forget_api`" in report
