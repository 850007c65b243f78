"""Stage backends: the policies on real stores (membench.backends), with the forensic
at-rest audit of every file each backend wrote, before and after its remedies.

PostgreSQL backends start their own throwaway server (membench.backends.postgres_server)
and stop it when done; a backend that cannot run here fails the stage with its reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from membench.backends.at_rest import ScanCache
from membench.backends.base import BACKENDS, BackendUnavailableError, Embed, store_failed
from membench.backends.parity import ParityRow, parity_rows
from membench.backends.replay import (
    CostRow,
    FreshRemedy,
    PartialAudit,
    cure_fresh,
    replay_backend,
    scenario_ends,
)
from membench.backends.summary import summary
from membench.cleanup.private_temp import native_temp_inside, private_dir, remove
from membench.commands.common import (
    PARAMS_FILE,
    ContextsFile,
    EmbeddingsFile,
    OutcomesFile,
    ParamsFile,
    RecordsFile,
    ScenarioDir,
    fails_cleanly,
    progress,
)
from membench.commands.parameters import read_params
from membench.execution.executor import Automatic, InProcess, OnDask, executor
from membench.execution.queue import Followed
from membench.io.at_rest import backend_files
from membench.io.backend_tables import (
    at_rest_table,
    memory_index_from_parquet,
    parity_table,
    rankings_table,
)
from membench.io.embedding_files import vectors_from_table
from membench.io.inputs import read_parquet, read_scenario
from membench.io.outputs import staged_outputs
from membench.io.tables import records_from_table
from membench.memory.policies import build_policies
from membench.memory.stores import STORES
from membench.params import ParamsError
from membench.plugins import load_plugins
from membench.retrieval.retrievers import IndexCache
from membench.scenario.model import Scenario

ParityFile = Annotated[Path, typer.Option("--parity", help="Outcome parity (Parquet).")]
RankingsFile = Annotated[Path, typer.Option("--rankings", help="Native rankings (Parquet).")]
AtRestFile = Annotated[Path, typer.Option("--at-rest", help="At-rest audit (Parquet).")]
SummaryFile = Annotated[Path, typer.Option("--summary", help="The report's tables (JSON).")]
CostsFile = Annotated[Path, typer.Option(
    "--costs", help="Remedies' time and bytes (JSON; machine-dependent, not committed).")]

R = TypeVar("R")


def _check(names, stores) -> None:
    unknown = [n for n in names if n not in BACKENDS]
    if unknown:
        raise ParamsError(f"backends.names: unknown backend(s) {unknown}; "
                          f"known: {', '.join(BACKENDS)}")
    unknown = [s for s in stores if s not in STORES]
    if unknown:
        raise ParamsError(f"backends.stores: unknown store(s) {unknown}; "
                          f"known: {', '.join(STORES)}")


@dataclass(frozen=True)
class BackendInputs:
    """What every backend's run reads, sent once to wherever backends run."""

    scenario: Scenario
    records: tuple
    policies: tuple
    stores: tuple[str, ...]
    vectors: dict
    memory: object
    # the at-rest scans' findings, shared by the units of a process (a copy travels empty)
    scans: ScanCache = field(default_factory=ScanCache, compare=False)


@contextmanager
def _backend_workdir(name: str) -> Iterator[Path]:
    """A private directory (0700) for one backend's unit, removed however it ends (the
    stores' files; each server removes its own); its failures said in one line naming it."""
    workdir = private_dir(f"backend-{name}")
    try:
        with native_temp_inside(workdir):
            yield workdir
    except (BackendUnavailableError, ImportError) as error:
        raise ValueError(f"backend {name} cannot run here: {error}") from error
    except Exception as error:
        if not store_failed(BACKENDS[name], error):
            raise
        reason = str(error).strip().partition("\n")[0] or type(error).__name__
        raise ValueError(f"backend {name} failed: {reason}") from error
    finally:
        remove(workdir)


def _embed(inputs: BackendInputs) -> Embed:
    return Embed(IndexCache(None, inputs.vectors).vector,
                 len(next(iter(inputs.vectors.values()))))


def run_one_backend(inputs: BackendInputs, name: str) -> tuple[list[ParityRow], PartialAudit]:
    """One backend replayed, in a private directory of its own; the parity rows at once, so
    that no backend's contexts outlive its run. The remedies of a backend that cannot
    fork are left to units of their own (run_one_remedy)."""
    load_plugins("backends")  # on a worker too: plugin backends register on import
    progress(f"backend {name}: {len(inputs.stores)} stores, {len(inputs.policies)} policies")
    with _backend_workdir(name) as workdir:
        result, partial = replay_backend(
            name, BACKENDS[name], inputs.scenario, inputs.records, inputs.policies,
            inputs.stores, _embed(inputs), IndexCache(None, inputs.vectors), workdir,
            backend_files, inputs.scans, progress)
    return parity_rows(name, result.outcomes, inputs.memory), partial


def run_one_remedy(inputs: BackendInputs, unit: FreshRemedy) -> tuple[list, CostRow]:
    """One remedy of a backend that cannot fork, on a fresh replay of one store."""
    load_plugins("backends")
    progress(f"backend {unit.backend}: {unit.remedy} on {unit.store}, day {unit.end}")
    with _backend_workdir(unit.backend) as workdir:
        return cure_fresh(BACKENDS[unit.backend], inputs.scenario, inputs.records,
                          _embed(inputs), workdir, backend_files, inputs.scans, unit)


def run_unit(inputs: BackendInputs, unit: str | FreshRemedy) -> object:
    """A backend's replay (its name), or one of its remedies (a follow-up of that replay)."""
    if isinstance(unit, FreshRemedy):
        return run_one_remedy(inputs, unit)
    return run_one_backend(inputs, unit)


def unit_name(unit: str | FreshRemedy) -> str:
    if isinstance(unit, FreshRemedy):
        return f"{unit.backend} {unit.remedy} {unit.store}"
    return unit


def remedies_of(inputs: BackendInputs, costs: Mapping[str, float]
                ) -> Callable[[str, tuple], list[tuple[FreshRemedy, float]]]:
    """A backend's fresh remedies, listed once its replay is done (which stores deleted is
    known only then); each sized as one store of its backend's replay of them all."""
    def follow(name: str, run: tuple[list[ParityRow], PartialAudit]) -> list:
        size = costs[name] / max(len(inputs.stores), 1)
        return [(unit, size) for unit in run[1].pending()]
    return follow


def expected_costs(names: Sequence[str], scenario: Scenario) -> dict[str, float]:
    """Each backend's relative cost grown to the story's size (StoreBackend.expected_cost)."""
    return {name: BACKENDS[name].expected_cost(len(scenario.exchanges), len(scenario.probes))
            for name in names}


def costliest_first(units: InProcess | Automatic | OnDask, inputs: BackendInputs,
                    names: Sequence[str], function: Callable[[BackendInputs, str], R] = run_unit
                    ) -> list[Followed]:
    """The backends' replays started by their expected cost on this story, the costliest
    first (ties in the list's order), each with its remedies as follow-ups: they start as
    soon as a worker is free once their backend is done, not after every backend. The
    results come back in the list's order."""
    by_name = expected_costs(names, inputs.scenario)
    costs = [by_name[name] for name in names]
    order = sorted(range(len(names)), key=lambda i: -costs[i])
    done = units.map(function, inputs, [names[i] for i in order], label="backends",
                     name=unit_name, sizes=[costs[i] for i in order],
                     follow=remedies_of(inputs, by_name))
    results: list[Followed] = [None] * len(names)  # type: ignore[list-item]
    for i, result in zip(order, done, strict=True):
        results[i] = result
    return results


@fails_cleanly
def backends(scenario: ScenarioDir, records: RecordsFile, embeddings: EmbeddingsFile,
             outcomes: OutcomesFile, contexts: ContextsFile, parity: ParityFile,
             rankings: RankingsFile, at_rest: AtRestFile, summary_file: SummaryFile,
             costs: CostsFile, params: ParamsFile = PARAMS_FILE) -> None:
    """Replay the scenario into real stores, run the policies on them, audit their files."""
    p = read_params(params)
    load_plugins("backends")
    names, stores = p.backends.names, p.backends.stores
    _check(names, stores)
    built = read_scenario(scenario)
    fact_records = records_from_table(read_parquet(records))
    vectors = vectors_from_table(read_parquet(embeddings), p.embedding.model)
    policies = [policy for policy in build_policies(p.policies)
                if set(policy.stores) <= set(stores)]
    memory = memory_index_from_parquet(outcomes, contexts,
                                       [policy.id for policy in policies])
    parity_out, rankings_out, at_rest_out, costs_out = [], [], [], []
    inputs = BackendInputs(built, tuple(fact_records), tuple(policies), tuple(stores),
                           vectors, memory)
    # Backends are independent units (membench.execution), and the fresh replays of the
    # remedies of those that cannot fork (the servers') follow-ups of their backend's:
    # each on a worker of its own when there are several. The costliest start first
    # (StoreBackend.expected_cost), so the short ones fill in, and the automatic placement
    # times the cheapest.
    with executor("backends", len(names), progress) as units:
        runs = costliest_first(units, inputs, names)
    for run in runs:
        backend_parity, partial = run.result
        fresh = dict(zip(partial.pending(), run.follow_ups, strict=True))
        backend_audit = partial.completed(fresh)
        parity_out += backend_parity
        rankings_out += backend_audit.rankings
        at_rest_out += backend_audit.at_rest
        costs_out += [asdict(c) for c in backend_audit.costs]
    tables = summary({n: BACKENDS[n] for n in names}, stores, [pol.id for pol in policies],
                     parity_out, rankings_out, at_rest_out, built.sessions,
                     scenario_ends(built))
    with staged_outputs() as outputs:
        outputs.parquet(parity, parity_table(parity_out))
        outputs.parquet(rankings, rankings_table(rankings_out))
        outputs.parquet(at_rest, at_rest_table(at_rest_out))
        outputs.json(summary_file, tables)
        outputs.json(costs, costs_out)
    typer.echo(f"backends: {len(parity_out)} probe outcomes on {len(names)} backends", err=True)
