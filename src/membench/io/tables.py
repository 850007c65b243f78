"""Explicit pyarrow schemas for every Parquet file, and conversions to and from the core
model. docs/schemas.md documents the same fields."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

import pyarrow as pa

from membench.extraction.extractors import FactRecord, RecordAction
from membench.io import given_tables as given
from membench.io.datasets import without_partitioning
from membench.scenario.build import CorpusText
from membench.scenario.model import (
    Deletion,
    Exchange,
    ExchangeKind,
    Fact,
    FactVersion,
    Probe,
    ProbeForm,
    Scenario,
)
from membench.scoring.audit import AuditRow
from membench.scoring.bench import BenchResult, OutcomeRow, StoredRow
from membench.scoring.users import UserOutcomeRow, UserOutcomeSummary, counts_of

CORPUS_SCHEMA = pa.schema([
    pa.field("path", pa.string(), nullable=False),
    pa.field("sha256", pa.string(), nullable=False),
    pa.field("text", pa.large_string(), nullable=False),
])

EXCHANGES_SCHEMA = pa.schema([
    pa.field("index", pa.int32(), nullable=False),
    pa.field("day", pa.int32(), nullable=False),
    pa.field("slot", pa.int32(), nullable=False),
    pa.field("kind", pa.string(), nullable=False),
    pa.field("user", pa.string(), nullable=False),
    pa.field("assistant", pa.string(), nullable=False),
    pa.field("fact_key", pa.string()),
    pa.field("source", pa.string()),
])

VERSION_TYPE = pa.struct([
    pa.field("day", pa.int32(), nullable=False),
    pa.field("slot", pa.int32(), nullable=False),
    pa.field("value", pa.string(), nullable=False),
    pa.field("statement", pa.string(), nullable=False),
])

FACTS_SCHEMA = pa.schema([
    pa.field("key", pa.string(), nullable=False),
    pa.field("literal", pa.string(), nullable=False),
    pa.field("paraphrase", pa.string(), nullable=False),
    pa.field("versions", pa.list_(pa.field("item", VERSION_TYPE, nullable=False)), nullable=False),
    pa.field("deleted_day", pa.int32()),
    pa.field("deleted_slot", pa.int32()),
    pa.field("delete_request", pa.string()),
])

PROBES_SCHEMA = pa.schema([
    pa.field("day", pa.int32(), nullable=False),
    pa.field("fact_key", pa.string(), nullable=False),
    pa.field("form", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
])

RECORDS_SCHEMA = pa.schema([
    pa.field("key", pa.string(), nullable=False),
    pa.field("action", pa.string(), nullable=False),
    pa.field("value", pa.string()),
    pa.field("day", pa.int32(), nullable=False),
    pa.field("exchange_index", pa.int32(), nullable=False),
    pa.field("text", pa.string(), nullable=False),
])

INDEX_SCHEMA = pa.schema([
    pa.field("store", pa.string(), nullable=False),
    pa.field("day", pa.int32(), nullable=False),
    pa.field("position", pa.int32(), nullable=False),
    pa.field("source", pa.int32(), nullable=False),
    pa.field("tokens", pa.list_(pa.field("item", pa.string(), nullable=False)), nullable=False),
])

OUTCOMES_SCHEMA = pa.schema([
    pa.field("policy", pa.string(), nullable=False),
    pa.field("form", pa.string(), nullable=False),
    pa.field("day", pa.int32(), nullable=False),
    pa.field("fact_key", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("changed", pa.bool_(), nullable=False),
    pa.field("deleted", pa.bool_(), nullable=False),
    pa.field("outcome", pa.string(), nullable=False),
    pa.field("injected_tokens", pa.int32(), nullable=False),
    pa.field("context", pa.large_string(), nullable=False),
    pa.field("retrieved", pa.list_(pa.field("item", pa.int32(), nullable=False))),
    pa.field("gold_retrieved", pa.bool_()),
])

STORED_SCHEMA = pa.schema([
    pa.field("policy", pa.string(), nullable=False),
    pa.field("day", pa.int32(), nullable=False),
    pa.field("store", pa.string(), nullable=False),
    pa.field("lines", pa.int32(), nullable=False),
    pa.field("tokens", pa.int32(), nullable=False),
])

# Format 2 (membench.io.given_tables): the format-1 columns, then the format-2 ones.
EXCHANGES_FORMAT2_SCHEMA = given.extended(EXCHANGES_SCHEMA, given.EXCHANGES_FORMAT2_COLUMNS)
PROBES_FORMAT2_SCHEMA = given.extended(PROBES_SCHEMA, given.PROBES_FORMAT2_COLUMNS)
OUTCOMES_FORMAT2_SCHEMA = given.extended(OUTCOMES_SCHEMA, given.OUTCOMES_FORMAT2_COLUMNS)

# The policies stage's two files (docs/schemas.md): data/outcomes.parquet is every outcome
# column but `context`, which goes to data/contexts.parquet with the columns that name its
# probe, row for row in the same order and row groups. The summaries never read a context.
CONTEXT_COLUMN = "context"
CONTEXT_KEYS = ["policy", "form", "day", "fact_key"]
CONTEXT_KEYS_FORMAT2 = [*CONTEXT_KEYS, "scenario", "probe_id"]


def _without_context(schema: pa.Schema) -> pa.Schema:
    return schema.remove(schema.get_field_index(CONTEXT_COLUMN))


def _contexts_of(schema: pa.Schema, keys: Sequence[str]) -> pa.Schema:
    return pa.schema([schema.field(name) for name in [*keys, CONTEXT_COLUMN]])


OUTCOMES_FILE_SCHEMA = _without_context(OUTCOMES_SCHEMA)
OUTCOMES_FILE_FORMAT2_SCHEMA = _without_context(OUTCOMES_FORMAT2_SCHEMA)
CONTEXTS_SCHEMA = _contexts_of(OUTCOMES_SCHEMA, CONTEXT_KEYS)
CONTEXTS_FORMAT2_SCHEMA = _contexts_of(OUTCOMES_FORMAT2_SCHEMA, CONTEXT_KEYS_FORMAT2)

AUDIT_SCHEMA = pa.schema([
    pa.field("policy", pa.string(), nullable=False),
    pa.field("day", pa.int32(), nullable=False),
    pa.field("fact_key", pa.string(), nullable=False),
    pa.field("store", pa.string(), nullable=False),
    pa.field("part", pa.string(), nullable=False),
    pa.field("holds", pa.bool_(), nullable=False),
    pa.field("held", pa.list_(pa.field("item", pa.string(), nullable=False)), nullable=False),
])


def _table(schema: pa.Schema, rows: Sequence[dict]) -> pa.Table:
    """Column by column (several times faster than from_pylist on large text cells)."""
    return pa.Table.from_arrays(
        [pa.array([row[field.name] for row in rows], type=field.type) for field in schema],
        schema=schema)


def _rows(table: pa.Table, schema: pa.Schema, name: str) -> list[dict]:
    if not table.schema.equals(schema, check_metadata=False):
        raise ValueError(f"{name} does not have the expected schema: rerun the stage that writes it")
    return table.to_pylist()


def corpus_table(files: Sequence[CorpusText], hashes: Sequence[str]) -> pa.Table:
    return _table(CORPUS_SCHEMA, [{"path": f.path, "sha256": h, "text": "\n".join(f.lines)}
                                  for f, h in zip(files, hashes)])


def corpus_from_table(table: pa.Table) -> list[CorpusText]:
    return [CorpusText(r["path"], tuple(r["text"].split("\n")))
            for r in _rows(table, CORPUS_SCHEMA, "corpus")]


def scenario_tables(scenario: Scenario) -> dict[str, pa.Table]:
    if scenario.scoring is not None:
        return _format2_scenario_tables(scenario)
    exchanges = [{"index": e.index, "day": e.day, "slot": e.slot, "kind": e.kind.value,
                  "user": e.user, "assistant": e.assistant, "fact_key": e.fact_key,
                  "source": e.source} for e in scenario.exchanges]
    facts = [{"key": f.key, "literal": f.literal, "paraphrase": f.paraphrase,
              "versions": [vars(v) for v in f.versions],
              "deleted_day": f.deletion.day if f.deletion else None,
              "deleted_slot": f.deletion.slot if f.deletion else None,
              "delete_request": f.deletion.request if f.deletion else None}
             for f in scenario.facts]
    probes = [{"day": p.day, "fact_key": p.fact_key, "form": p.form.value,
               "question": p.question} for p in scenario.probes]
    return {"exchanges": _table(EXCHANGES_SCHEMA, exchanges),
            "facts": _table(FACTS_SCHEMA, facts),
            "probes": _table(PROBES_SCHEMA, probes)}


def _format2_scenario_tables(scenario: Scenario) -> dict[str, pa.Table]:
    exchanges = [{**vars(e), "kind": e.kind.value} for e in scenario.exchanges]
    probes = [{"day": p.day, "fact_key": p.fact_key, "form": p.form_name,
               "question": p.question, **extra}
              for p, extra in zip(scenario.probes, given.format2_probe_rows(scenario))]
    return {"exchanges": _table(EXCHANGES_FORMAT2_SCHEMA, exchanges),
            "facts": _table(given.FACTS_FORMAT2_SCHEMA, given.format2_fact_rows(scenario)),
            "probes": _table(PROBES_FORMAT2_SCHEMA, probes)}


def _format2_scenario(exchanges: pa.Table, facts: pa.Table, probes: pa.Table, seed: int,
                      manifest: dict) -> Scenario:
    return Scenario(
        manifest["sessions"], manifest["exchanges_per_session"], seed,
        tuple(given.fact_from_row(r)
              for r in _rows(facts, given.FACTS_FORMAT2_SCHEMA, "facts")),
        tuple(given.exchange_from_row(r)
              for r in _rows(exchanges, EXCHANGES_FORMAT2_SCHEMA, "exchanges")),
        tuple(given.probe_from_row(r) for r in _rows(probes, PROBES_FORMAT2_SCHEMA, "probes")),
        scoring=manifest["scoring"],
        segments=tuple((s["id"], s["first_day"], s["last_day"])
                       for s in manifest["scenarios"]))


def scenario_from_tables(exchanges: pa.Table, facts: pa.Table, probes: pa.Table,
                         seed: int, manifest: dict | None = None) -> Scenario:
    """manifest: the scenario stage's, which says whether the tables are format 2."""
    if manifest is not None and manifest.get("scoring"):
        return _format2_scenario(exchanges, facts, probes, seed, manifest)
    exchange_rows = _rows(exchanges, EXCHANGES_SCHEMA, "exchanges")
    fact_objects = tuple(
        Fact(key=r["key"], literal=r["literal"], paraphrase=r["paraphrase"],
             versions=tuple(FactVersion(**v) for v in r["versions"]),
             deletion=Deletion(r["deleted_day"], r["deleted_slot"], r["delete_request"])
             if r["deleted_day"] is not None else None)
        for r in _rows(facts, FACTS_SCHEMA, "facts")
    )
    probe_objects = tuple(Probe(r["day"], r["fact_key"], ProbeForm(r["form"]), r["question"])
                          for r in _rows(probes, PROBES_SCHEMA, "probes"))
    exchange_objects = tuple(
        Exchange(r["index"], r["day"], r["slot"], ExchangeKind(r["kind"]), r["user"],
                 r["assistant"], r["fact_key"], r["source"]) for r in exchange_rows
    )
    sessions = max(e.day for e in exchange_objects)
    per_session = max(e.slot for e in exchange_objects)
    return Scenario(sessions, per_session, seed, fact_objects, exchange_objects, probe_objects)


def records_table(records: Sequence[FactRecord]) -> pa.Table:
    return _table(RECORDS_SCHEMA, [{**vars(r), "action": r.action.value} for r in records])


def records_from_table(table: pa.Table) -> list[FactRecord]:
    return [FactRecord(**{**r, "action": RecordAction(r["action"])})
            for r in _rows(table, RECORDS_SCHEMA, "fact records")]


def index_table(entries: Sequence[tuple[str, int, int, int, list[str]]]) -> pa.Table:
    return _table(INDEX_SCHEMA, [{"store": s, "day": d, "position": p, "source": src,
                                  "tokens": t} for s, d, p, src, t in entries])


def index_from_table(table: pa.Table) -> dict[tuple[str, int], tuple[list[int], list[list[str]]]]:
    corpora: dict[tuple[str, int], tuple[list[int], list[list[str]]]] = {}
    for r in _rows(table, INDEX_SCHEMA, "index"):
        sources, docs = corpora.setdefault((r["store"], r["day"]), ([], []))
        sources.append(r["source"])
        docs.append(r["tokens"])
    return corpora


def outcomes_table(rows: Sequence[OutcomeRow]) -> pa.Table:
    if any(r.probe_id is not None for r in rows):  # format 2
        return _table(OUTCOMES_FORMAT2_SCHEMA, [
            {**vars(r), "retrieved": list(r.retrieved) if r.retrieved is not None else None,
             "tags": given.tags_cell(r.tags)} for r in rows])
    return _table(OUTCOMES_SCHEMA, [
        {**vars(r), "retrieved": list(r.retrieved) if r.retrieved is not None else None}
        for r in rows
    ])


# Characters of context per table outcome_tables makes: a row group's worth of Arrow data
# at a time (a thousand-session story's contexts are gigabytes: whole transcripts).
CONTEXT_CHARS_PER_TABLE = 64 << 20


def outcome_tables(rows: Iterable[OutcomeRow],
                   chars_per_table: int = CONTEXT_CHARS_PER_TABLE) -> Iterator[pa.Table]:
    """The rows as outcome tables in order, a new one each time the contexts reach
    chars_per_table characters (always at least one table, empty for no rows): rows that
    fit in one give outcomes_table's table. The rows' contexts, often one string shared by
    many rows, are copied into Arrow a table at a time."""
    for _, table in partitioned_outcome_tables(rows, lambda day: "", chars_per_table):
        yield table


def partitioned_outcome_tables(rows: Iterable[OutcomeRow], partition_of: Callable[[int], str],
                               chars_per_table: int = CONTEXT_CHARS_PER_TABLE
                               ) -> Iterator[tuple[str, pa.Table]]:
    """outcome_tables, each table with the partition of its rows' day (a new table where
    it changes); no rows: one empty table, in the partition of day 0."""
    chunk: list[OutcomeRow] = []
    chars = 0
    made = False
    partition = None
    for row in rows:
        where = partition_of(row.day)
        if chunk and where != partition:
            yield partition, outcomes_table(chunk)
            made, chunk, chars = True, [], 0
        partition = where
        chunk.append(row)
        chars += len(row.context)
        if chars >= chars_per_table:
            yield partition, outcomes_table(chunk)
            made, chunk, chars = True, [], 0
    if chunk or not made:
        yield (partition_of(0) if partition is None else partition), outcomes_table(chunk)


def split_outcomes(table: pa.Table) -> tuple[pa.Table, pa.Table]:
    """An outcomes_table as the policies stage writes it: (outcomes without `context`,
    the contexts with their probes' keys), row for row."""
    format2 = "probe_id" in table.schema.names
    return (table.drop_columns([CONTEXT_COLUMN]),
            table.select([*(CONTEXT_KEYS_FORMAT2 if format2 else CONTEXT_KEYS), CONTEXT_COLUMN]))


def stored_table(rows: Sequence[StoredRow]) -> pa.Table:
    return _table(STORED_SCHEMA, [vars(r) for r in rows])


def result_from_tables(outcomes: pa.Table, stored: pa.Table) -> BenchResult:
    format2 = "probe_id" in outcomes.schema.names
    schema = OUTCOMES_FORMAT2_SCHEMA if format2 else OUTCOMES_SCHEMA
    return BenchResult(
        tuple(OutcomeRow(**{**r, "retrieved": tuple(r["retrieved"])
                            if r["retrieved"] is not None else None,
                            **({"tags": given.tags_from_cell(r["tags"])} if format2 else {})})
              for r in _rows(outcomes, schema, "outcomes")),
        tuple(StoredRow(**r) for r in _rows(stored, STORED_SCHEMA, "stored")),
    )


def audit_table(rows: Sequence[AuditRow]) -> pa.Table:
    return _table(AUDIT_SCHEMA, [{**vars(r), "holds": r.holds, "held": list(r.held)}
                                 for r in rows])


def audit_from_table(table: pa.Table) -> list[AuditRow]:
    return [AuditRow(r["policy"], r["day"], r["fact_key"], r["store"], r["part"],
                     tuple(r["held"])) for r in _rows(table, AUDIT_SCHEMA, "audit")]


USER_OUTCOMES_SCHEMA = pa.schema([
    pa.field("mode", pa.string(), nullable=False),
    pa.field("policy", pa.string(), nullable=False),
    pa.field("user", pa.string(), nullable=False),
    pa.field("form", pa.string(), nullable=False),
    pa.field("day", pa.int32(), nullable=False),
    pa.field("fact_key", pa.string(), nullable=False),
    pa.field("changes", pa.int32(), nullable=False),
    pa.field("deleted", pa.bool_(), nullable=False),
    pa.field("outcome", pa.string(), nullable=False),
    pa.field("cross_user_leak", pa.bool_(), nullable=False),
    pa.field("injected_lines", pa.int32(), nullable=False),
])


# The users stage's dataset (membench.io.datasets): one partition per seed and user, whose
# files hold every other column.
USER_OUTCOMES_FILE_SCHEMA = without_partitioning(USER_OUTCOMES_SCHEMA)


def user_outcomes_table(rows: Sequence[UserOutcomeRow]) -> pa.Table:
    """Column by column from the rows' attributes (millions of rows: no dict per row)."""
    return pa.Table.from_arrays(
        [pa.array([getattr(r, field.name) for r in rows], type=field.type)
         for field in USER_OUTCOMES_SCHEMA], schema=USER_OUTCOMES_SCHEMA)


def user_outcome_summary(batches: Iterable[pa.Table | pa.RecordBatch]) -> UserOutcomeSummary | None:
    """The report's view of the users stage's table, read a batch at a time (the table may
    hold millions of rows: no row objects, and never the whole table): each batch grouped
    by its columns, the counts added up in order of first appearance, as one grouping of
    the whole table orders them. None for a single-user run."""
    keys = ["mode", "policy", "outcome", "cross_user_leak", "deleted", "changes"]
    tallied: dict[tuple, int] = {}
    users: set[str] = set()
    policies: set[str] = set()
    for batch in batches:
        if not batch.schema.equals(USER_OUTCOMES_SCHEMA, check_metadata=False):
            raise ValueError("user outcomes does not have the expected schema: rerun the "
                             "stage that writes it")
        table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        grouped = table.group_by(keys, use_threads=False).aggregate([([], "count_all")])
        columns = [grouped[name].to_pylist() for name in keys + ["count_all"]]
        for row in zip(*columns, strict=True):
            tallied[tuple(row[:-1])] = tallied.get(tuple(row[:-1]), 0) + row[-1]
        users.update(table["user"].unique().to_pylist())
        policies.update(table["policy"].unique().to_pylist())
    if not tallied:
        return None
    return UserOutcomeSummary(counts_of(tallied), len(users), frozenset(policies))


def user_outcomes_from_table(table: pa.Table) -> list[UserOutcomeRow]:
    return [UserOutcomeRow(**r) for r in _rows(table, USER_OUTCOMES_SCHEMA, "user outcomes")]
