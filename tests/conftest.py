from __future__ import annotations

import os
from pathlib import Path

import pipeline_clone
import pytest

from membench.commands.inmemory import run_in_memory
from membench.extraction.extractors import EXTRACTORS
from membench.params import load_params

ROOT = Path(__file__).resolve().parents[1]

# Where stages run their units, unset, depends on how long the first unit took (a cluster
# for long work: membench.execution.executor.Automatic); on a loaded test machine that
# would vary from run to run. Every stage the suite runs stays in its process unless a
# test asks otherwise (the outputs are the same bytes anywhere: tests/test_execution.py).
os.environ.setdefault("MEMBENCH_WORKERS", "0")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """`python -m pytest` runs on every CPU with pytest-xdist (the `test` extra), as if
    given `-n auto --dist loadgroup`: the end-to-end tests wait on subprocesses, the rest
    spread over the workers. Modules whose module fixture builds a whole pipeline carry an
    xdist_group mark, so one worker builds it. Only the whole suite (no test paths given):
    `pytest tests/test_x.py` runs in one process, as do `-n 0`, `-p no:xdist` and every
    run without xdist installed."""
    if getattr(config, "workerinput", {}).get("membench_loadgroup"):
        config.option.loadgroup = True  # a worker reads it from its own command line only
    if (not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput")
            or config.args_source == pytest.Config.ArgsSource.ARGS
            or config.getoption("numprocesses", None) is not None
            or config.getoption("dist", "no") != "no" or config.getoption("collectonly")
            or config.getoption("usepdb")):
        return
    workers = config.hook.pytest_xdist_auto_num_workers(config=config)
    if workers > 1:
        config.option.numprocesses = workers
        config.option.dist = "loadgroup"
        config.option.tx = ["popen"] * workers


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """Tells each xdist worker that the run groups tests by xdist_group (see above)."""
    node.workerinput["membench_loadgroup"] = node.config.getoption("dist") == "loadgroup"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def default_params():
    return load_params(ROOT / "params.yaml", set(EXTRACTORS))


@pytest.fixture(scope="session")
def default_run(default_params):
    """The default scenario run once in memory (about 3 s), shared by many tests."""
    return run_in_memory(default_params, root=ROOT)


@pytest.fixture(scope="session")
def built_clone(repo_root, tmp_path_factory) -> Path:
    """A clone of the working tree after one cold `dvc repro`, shared by every test (and
    every xdist worker) of the run: read it, never write to it; copy it with
    `built_clone_copy` to change anything."""
    base = tmp_path_factory.getbasetemp()
    # Under xdist each worker's basetemp sits in the run's own directory; alone, the
    # parent would be shared with other runs, so the build stays in this run's basetemp.
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    return pipeline_clone.shared_build(repo_root, shared)


@pytest.fixture(scope="session")
def cold_run(built_clone) -> pipeline_clone.Build:
    """What the built clone's cold run printed and left (tests/pipeline_clone.py)."""
    return pipeline_clone.build_of(built_clone)


@pytest.fixture
def built_clone_copy(built_clone, tmp_path) -> Path:
    """A private copy of the built clone, outputs and .dvc/cache included, for a test that
    changes files or runs dvc in it."""
    return pipeline_clone.copy_clone(built_clone, tmp_path / "clone")


# Fixtures that run the whole pipeline (a cold `dvc repro`, or every stage in process): a
# test that uses one is in the slow tier, whatever its module, so `-m "not slow"` stays an
# edit-test loop of minutes. The full suite runs them all.
WHOLE_PIPELINE_FIXTURES = frozenset({"built_clone", "built_clone_copy", "pipeline"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if WHOLE_PIPELINE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
