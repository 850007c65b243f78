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
        remedies = re.findall(r"^\s*backends: \d+/\d+ done \((\w+) (\S+) (\w+)\)",
                              here.stderr, re.MULTILINE)
        assert {backend for backend, _, _ in remedies} == {"postgres"}, here.stderr  # sqlite forks
        stores_that_deleted = {store for _, _, store in remedies}
        assert sorted(remedies) == sorted(
            ("postgres", remedy, store) for store in stores_that_deleted
            for remedy in ("vacuum", "vacuum_full", "vacuum_full+checkpoint+wal_switch"))
        on_workers = run_stage(workspace, "backends", tmp, MEMBENCH_WORKERS="2")
        assert on_workers.returncode == 0, on_workers.stderr
        assert re.search(r"backends: \d+/\d+ done \(postgres vacuum ", on_workers.stderr)
        assert "on a local Dask cluster of 2 worker(s)" in on_workers.stderr
        assert _outputs(workspace) == in_process
        assert processes_naming(str(tmp)) == set()  # every server stopped
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_the_costliest_backend_starts_first_and_its_remedies_follow_it():
    """Units start by StoreBackend.relative_cost (ties in the list's order), each with its
    cost as its size; a server backend's remedies are listed once its replay is done and
    start before the backends smaller than them; results come back in the list's order,
    each backend's with its remedies'."""
    from types import SimpleNamespace

    from membench.backends.base import BACKENDS
    from membench.backends.replay import FreshRemedy
    from membench.execution.executor import InProcess
    from membench.plugins import load_plugins
    from membench.stages.backends import costliest_first, unit_name

    load_plugins("backends")
    names = ["sqlite", "sqlite_vec", "langgraph_memory", "langgraph_sqlite",
             "langgraph_postgres", "lancedb", "postgres"]
    default_story = SimpleNamespace(exchanges=[None] * 360, probes=[None] * 80)  # sizes only
    inputs = SimpleNamespace(stores=("profile", "fact_log"), scenario=default_story)
    started: list[str] = []
    sizes: list[list[float]] = []

    class Recording(InProcess):
        def map(self, function, shared, units, **options):
            sizes.append(list(options["sizes"]))
            return super().map(function, shared, units, **options)

    class Partial:
        def __init__(self, name):
            self.name = name

        def pending(self):
            return ([FreshRemedy(self.name, 30, store, "vacuum") for store in inputs.stores]
                    if self.name == "postgres" else [])

    def run(shared, unit):
        assert shared is inputs
        started.append(unit_name(unit))
        return unit_name(unit).upper() if isinstance(unit, FreshRemedy) else ([unit], Partial(unit))

    results = costliest_first(Recording(lambda line: None), inputs, names, run)
    assert [result.result[0] for result in results] == [[name] for name in names]
    assert results[names.index("postgres")].follow_ups == ["POSTGRES VACUUM PROFILE",
                                                            "POSTGRES VACUUM FACT_LOG"]
    assert all(result.follow_ups == [] for name, result in zip(names, results, strict=True)
               if name != "postgres")
    costs = {name: BACKENDS[name].relative_cost for name in names}
    by_cost = sorted(names, key=lambda name: -costs[name])
    assert started[0] == "lancedb" and started[-1] == "langgraph_memory"
    assert [name for name in started if name in costs] == by_cost
    remedy_size = costs["postgres"] / len(inputs.stores)
    first_smaller = next(name for name in by_cost if costs[name] < remedy_size)
    assert started.index("postgres vacuum profile") == started.index(first_smaller) - 2
    assert started.index("postgres vacuum fact_log") == started.index(first_smaller) - 1
    assert sizes == [[costs[name] for name in by_cost]]


def test_a_backend_s_cost_grows_with_the_story_and_a_scanning_search_faster():
    """On the default story the expected costs are the relative costs; at a thousand
    sessions (12,000 exchanges, 2,610 probes) LangGraph's in-memory store, whose search
    reads every stored vector, is no longer the cheapest, started last to run alone at the
    end (11 minutes, measured), but among the first; the others grow alike."""
    from types import SimpleNamespace

    from membench.backends.base import BACKENDS
    from membench.plugins import load_plugins
    from membench.stages.backends import expected_costs

    load_plugins("backends")
    names = ["sqlite", "sqlite_vec", "langgraph_memory", "langgraph_sqlite",
             "langgraph_postgres", "postgres"]
    story = SimpleNamespace(exchanges=[None] * 360, probes=[None] * 80)
    assert expected_costs(names, story) == {name: BACKENDS[name].relative_cost
                                            for name in names}
    grown = expected_costs(names, SimpleNamespace(exchanges=[None] * 12_000,
                                                  probes=[None] * 2_610))
    by_cost = sorted(names, key=lambda name: -grown[name])
    assert by_cost.index("langgraph_memory") < by_cost.index("langgraph_sqlite")
    ratios = {name: grown[name] / BACKENDS[name].relative_cost for name in names}
    assert len({round(ratios[name], 9) for name in names if name != "langgraph_memory"}) == 1
    assert ratios["langgraph_memory"] > 10 * ratios["postgres"]
