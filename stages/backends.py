"""Stage backends: the policies on real stores (membench.backends), with the forensic
at-rest audit of every file each backend wrote, before and after its remedies.

PostgreSQL backends start their own throwaway server (membench.backends.postgres_server)
and stop it when done; a backend that cannot run here fails the stage with its reason.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from membench.backends.at_rest import ScanCache
from membench.backends.base import BACKENDS, BackendUnavailableError, Embed, store_failed
from membench.backends.parity import ParityRow, parity_rows
from membench.backends.replay import BackendAudit, run_backend, scenario_ends
from membench.backends.summary import summary
from membench.cleanup.private_temp import native_temp_inside, private_dir, remove
from membench.commands.common import (
    PARAMS_FILE,
    EmbeddingsFile,
    OutcomesFile,
    ParamsFile,
    RecordsFile,
    ScenarioDir,
    fails_cleanly,
    progress,
)
from membench.commands.parameters import read_params
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

ParityFile = Annotated[Path, typer.Option("--parity", help="Outcome parity (Parquet).")]
RankingsFile = Annotated[Path, typer.Option("--rankings", help="Native rankings (Parquet).")]
AtRestFile = Annotated[Path, typer.Option("--at-rest", help="At-rest audit (Parquet).")]
SummaryFile = Annotated[Path, typer.Option("--summary", help="The report's tables (JSON).")]
CostsFile = Annotated[Path, typer.Option(
    "--costs", help="Remedies' time and bytes (JSON; machine-dependent, not committed).")]


WORKERS = 2  # backends run at once


def _check(names, stores) -> None:
    unknown = [n for n in names if n not in BACKENDS]
    if unknown:
        raise ParamsError(f"backends.names: unknown backend(s) {unknown}; "
                          f"known: {', '.join(BACKENDS)}")
    unknown = [s for s in stores if s not in STORES]
    if unknown:
        raise ParamsError(f"backends.stores: unknown store(s) {unknown}; "
                          f"known: {', '.join(STORES)}")


@fails_cleanly
def backends(scenario: ScenarioDir, records: RecordsFile, embeddings: EmbeddingsFile,
             outcomes: OutcomesFile, parity: ParityFile, rankings: RankingsFile,
             at_rest: AtRestFile, summary_file: SummaryFile, costs: CostsFile,
             params: ParamsFile = PARAMS_FILE) -> None:
    """Replay the scenario into real stores, run the policies on them, audit their files."""
    p = read_params(params)
    load_plugins("backends")
    names, stores = p.backends.names, p.backends.stores
    _check(names, stores)
    built = read_scenario(scenario)
    fact_records = records_from_table(read_parquet(records))
    vectors = vectors_from_table(read_parquet(embeddings), p.embedding.model)
    indexes = IndexCache(None, vectors)
    embed = Embed(indexes.vector, len(next(iter(vectors.values()))))
    policies = [policy for policy in build_policies(p.policies)
                if set(policy.stores) <= set(stores)]
    memory = memory_index_from_parquet(outcomes, [policy.id for policy in policies])
    parity_out, rankings_out, at_rest_out, costs_out = [], [], [], []
    cache = ScanCache()  # one file is scanned once per needle in the whole stage run
    stopping = threading.Event()

    def said(message: str) -> None:
        """Progress, and where a running backend stops once the stage is interrupted."""
        if stopping.is_set():
            raise RuntimeError("the backends stage was interrupted")
        progress(message)

    def run(name: str, workdir: Path) -> tuple[list[ParityRow], BackendAudit]:
        """The parity rows at once, so that no backend's contexts outlive its run."""
        said(f"backend {name}: {len(stores)} stores, {len(policies)} policies")
        try:
            backend_run = run_backend(name, BACKENDS[name], built, fact_records, policies,
                                      stores, embed, IndexCache(None, vectors), workdir,
                                      backend_files, cache, said)
        except (BackendUnavailableError, ImportError) as error:
            raise ValueError(f"backend {name} cannot run here: {error}") from error
        except Exception as error:
            if not store_failed(BACKENDS[name], error):
                raise
            reason = str(error).strip().partition("\n")[0] or type(error).__name__
            raise ValueError(f"backend {name} failed: {reason}") from error
        return parity_rows(name, backend_run.result.outcomes, memory), backend_run.audit()

    workdir = private_dir("backends")  # 0700; removed however the stage ends
    try:
        # Backends are independent: two at a time overlap one's waits (a server's round
        # trips, the disk) with the other's work. Started from the end of the list (the
        # default one ends with the longest: LanceDB and the servers), so the short ones
        # fill in; results are taken in the list's order.
        with native_temp_inside(workdir), ThreadPoolExecutor(max_workers=WORKERS) as pool:
            started = {name: pool.submit(run, name, workdir) for name in reversed(names)}
            try:
                runs = [started[name].result() for name in names]
            except BaseException:
                stopping.set()  # the running ones stop at their next probe day
                for future in started.values():
                    future.cancel()  # those not started yet
                raise
    finally:
        remove(workdir)  # the stores' files; each server removed its own directory
    for backend_parity, backend_audit in runs:
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
