"""The optional import pipeline (imports/dvc.yaml): its deps cover what its command imports,
its params are valid, and in a clone `dvc repro imports/dvc.yaml` writes what the CLI
writes while the default pipeline never runs it."""

from __future__ import annotations

import pytest
import yaml
from pipeline_clone import fresh_clone, sh
from test_stage_deps import closure, covered, package_deps, stage_module

from membench.importers.model import IMPORTERS
from membench.params import load_import_params
from membench.plugins import load_plugins

load_plugins("importers")


@pytest.fixture(scope="module")
def stage(repo_root) -> dict:
    return yaml.safe_load((repo_root / "imports/dvc.yaml").read_text())["stages"]["import"]


def test_the_import_stage_depends_on_exactly_the_modules_it_imports(stage):
    files = closure(stage_module(stage["cmd"]))
    deps = package_deps(stage)
    assert "src/membench/importers/locomo.py" in files
    assert not sorted(p for p in files if not covered(p, deps))
    assert not [d for d in deps if not any(covered(p, [d]) for p in files)]


def test_the_default_import_params_name_a_shipped_example(stage, repo_root):
    chosen = load_import_params(repo_root / "imports/params.yaml", set(IMPORTERS))
    assert (repo_root / chosen.source).is_file()
    assert stage["wdir"] == ".." and "${import.source}" in stage["deps"]
    assert stage["outs"] == ["data/imported"]


@pytest.fixture
def clone(repo_root, tmp_path):
    """The working tree as a fresh repository; the import needs no pipeline output."""
    return fresh_clone(repo_root, tmp_path / "clone")


@pytest.mark.slow
def test_dvc_runs_the_import_only_when_asked(clone):
    sh(clone, "membench", "import", "locomo", "imports/examples/locomo10-example.json",
       "--out", "expected")
    # `dvc repro` runs dvc.yaml's stages and what they read: the import is not among them
    upstream = sh(clone, "dvc", "dag", "--mermaid", "report")
    assert "imports/dvc.yaml:import" not in upstream and "scenario" in upstream
    sh(clone, "dvc", "repro", "imports/dvc.yaml")
    imported = sorted(p.name for p in (clone / "data/imported").iterdir())
    assert imported == ["locomo-ex-1.json", "locomo-ex-2.json", "manifest.json"]
    for name in imported:
        assert (clone / "data/imported" / name).read_bytes() == \
            (clone / "expected" / name).read_bytes()
    params = clone / "params.yaml"
    params.write_text(params.read_text().replace("file: data/scenario.toml",
                                                 "file: data/imported"))
    assert "imports/dvc.yaml:import" in sh(clone, "dvc", "dag", "--mermaid", "report")
