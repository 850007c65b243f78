"""The backends stage's units: each backend's replay, then each remedy of a server backend
(it cannot fork) on a fresh replay of its own. Wherever they run, the same bytes."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from interrupt_helpers import build_inputs, make_workspace, private_tmp, processes_naming, run_stage

OUTPUTS = ("data/backend_parity.parquet", "data/backend_rankings.parquet",
           "data/backend_at_rest.parquet", "reports/backends.json")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """A server backend (fresh remedies) beside one that forks (remedies in its unit)."""
    path = make_workspace(tmp_path_factory.mktemp("units") / "ws", ["sqlite", "postgres"],
                          ["profile", "fact_log"], [42])
    build_inputs(path)
    return path


def _outputs(workspace: Path) -> dict[str, bytes]:
    return {name: (workspace / name).read_bytes() for name in OUTPUTS}


@pytest.mark.slow
def test_server_remedies_run_as_units_of_their_own_with_the_same_bytes_anywhere(workspace):
    """In process, then on two workers: PostgreSQL's three remedies on each store that
    deleted are units after the backends' own, and every output is the same bytes."""
    tmp = private_tmp()
    try:
        here = run_stage(workspace, "backends", tmp, MEMBENCH_WORKERS="0")
        assert here.returncode == 0, here.stderr
        in_process = _outputs(workspace)
        remedies = re.findall(r"^\s*backend remedies: \d+/\d+ done \((\w+) (\S+) (\w+)\)",
                              here.stderr, re.MULTILINE)
        assert {backend for backend, _, _ in remedies} == {"postgres"}, here.stderr  # sqlite forks
        stores_that_deleted = {store for _, _, store in remedies}
        assert sorted(remedies) == sorted(
            ("postgres", remedy, store) for store in stores_that_deleted
            for remedy in ("vacuum", "vacuum_full", "vacuum_full+checkpoint+wal_switch"))
        on_workers = run_stage(workspace, "backends", tmp, MEMBENCH_WORKERS="2")
        assert on_workers.returncode == 0, on_workers.stderr
        assert ("backend remedies: " in on_workers.stderr and
                "on a local Dask cluster of 2 worker(s)" in on_workers.stderr)
        assert _outputs(workspace) == in_process
        assert processes_naming(str(tmp)) == set()  # every server stopped
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_the_costliest_backend_starts_first_and_results_keep_the_lists_order():
    """Units start by StoreBackend.relative_cost (ties in the list's order), each with its
    cost as its size, and come back in the list's order: the automatic placement then
    times the cheapest backend here, not the costliest."""
    from membench.backends.base import BACKENDS
    from membench.execution.executor import InProcess
    from membench.plugins import load_plugins
    from membench.stages.backends import _costliest_first

    load_plugins("backends")
    names = ["sqlite", "sqlite_vec", "langgraph_memory", "langgraph_sqlite",
             "langgraph_postgres", "lancedb", "postgres"]
    started: list[str] = []
    sizes: list[list[float]] = []

    class Recording(InProcess):
        def map(self, function, shared, units, **options):
            sizes.append(list(options["sizes"]))
            return super().map(function, shared, units, **options)

    def run(shared, name):
        started.append(name)
        return name.upper()

    results = _costliest_first(Recording(lambda line: None), run, None, names,
                               lambda name: name, label="backends", name=str)
    assert results == [name.upper() for name in names]
    costs = {name: BACKENDS[name].relative_cost for name in names}
    assert started == sorted(names, key=lambda name: -costs[name])
    assert started[0] == "lancedb" and started[-1] == "langgraph_memory"
    assert sizes == [[costs[name] for name in started]]
