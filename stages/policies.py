"""Stage policies: runs every policy at every probe and classifies what it injects."""

from __future__ import annotations

from collections.abc import Iterator

import typer

from membench.commands.common import (
    PARAMS_FILE,
    AuditFile,
    ContextsFile,
    EmbeddingsFile,
    IndexFile,
    OutcomesFile,
    ParamsFile,
    RecordsFile,
    ScenarioDir,
    StoredFile,
    VocabularyFile,
    fails_cleanly,
    progress,
)
from membench.commands.parameters import read_params
from membench.io.embedding_files import vectors_from_table
from membench.io.inputs import read_json, read_parquet, read_scenario
from membench.io.outputs import staged_outputs
from membench.io.tables import (
    audit_table,
    index_from_table,
    partitioned_outcome_tables,
    records_from_table,
    split_outcomes,
    stored_table,
)
from membench.io.vocabulary import load_token_counter
from membench.io.written_datasets import outcome_partition
from membench.memory.policies import build_policies
from membench.retrieval.retrievers import IndexCache
from membench.scoring.audit import audit_days, run_audit
from membench.scoring.bench import OutcomeRow, StoredRow, bench_days


@fails_cleanly
def policies(scenario: ScenarioDir, records: RecordsFile, index: IndexFile,
             embeddings: EmbeddingsFile, outcomes: OutcomesFile, contexts: ContextsFile,
             stored: StoredFile, audit: AuditFile, params: ParamsFile = PARAMS_FILE,
             vocabulary: VocabularyFile = None) -> None:
    """Run every policy at every probe day and classify each probe."""
    p = read_params(params)
    counter = load_token_counter(vocabulary)
    built = read_scenario(scenario)
    fact_records = records_from_table(read_parquet(records))
    indexes = IndexCache(index_from_table(read_parquet(index)),
                         vectors_from_table(read_parquet(embeddings), p.embedding.model))
    policy_list = build_policies(p.policies)
    stored_rows: list[StoredRow] = []

    def outcome_rows() -> Iterator[OutcomeRow]:
        """Each day's rows written as they come: one day's contexts held, not every day's."""
        for day in bench_days(built, fact_records, policy_list, counter.count_lines, indexes,
                              progress=progress):
            stored_rows.extend(day.stored)
            yield from day.outcomes

    user = read_json(scenario / "manifest.json").get("user")
    partition_of = outcome_partition(built.seed, user, built.segments)
    with staged_outputs() as outputs:
        written = outputs.dataset_streams(
            [outcomes, contexts],
            ((partition, split_outcomes(table)) for partition, table
             in partitioned_outcome_tables(outcome_rows(), partition_of)))
        progress(f"deletion audit on days {', '.join(map(str, audit_days(built)))}")
        audit_rows = run_audit(built, fact_records, policy_list, indexes)
        outputs.parquet(stored, stored_table(stored_rows))
        outputs.parquet(audit, audit_table(audit_rows))
    typer.echo(f"policies: {written} probe outcomes", err=True)
