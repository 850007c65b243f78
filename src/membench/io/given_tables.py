"""Explicit pyarrow schemas of the Parquet files a format-2 run writes in place of format
1's (docs/schemas.md): the same columns first, then the format-2 ones. A format-1 run
keeps the format-1 schemas, so its bytes do not change."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from membench.scenario.model import (
    Deletion,
    Exchange,
    ExchangeKind,
    Fact,
    FactVersion,
    Probe,
    Scenario,
)

_TEXTS = pa.list_(pa.field("item", pa.string(), nullable=False))
TAG_TYPE = pa.struct([pa.field("name", pa.string(), nullable=False),
                      pa.field("value", pa.string(), nullable=False)])
_TAGS = pa.list_(pa.field("item", TAG_TYPE, nullable=False))

EXCHANGES_FORMAT2_COLUMNS = [
    pa.field("turn_id", pa.string()),
    pa.field("speaker", pa.string()),
    pa.field("date", pa.string()),
]

VERSION2_TYPE = pa.struct([
    pa.field("day", pa.int32(), nullable=False),
    pa.field("slot", pa.int32(), nullable=False),
    pa.field("value", pa.string(), nullable=False),
    pa.field("statement", pa.string(), nullable=False),
    pa.field("turns", _TEXTS, nullable=False),
    pa.field("answers", _TEXTS, nullable=False),
])
DELETION2_TYPE = pa.struct([
    pa.field("day", pa.int32(), nullable=False),
    pa.field("slot", pa.int32(), nullable=False),
    pa.field("request", pa.string(), nullable=False),
    pa.field("turn", pa.string(), nullable=False),
])
FACTS_FORMAT2_SCHEMA = pa.schema([
    pa.field("key", pa.string(), nullable=False),
    pa.field("versions", pa.list_(pa.field("item", VERSION2_TYPE, nullable=False)),
             nullable=False),
    pa.field("deletions", pa.list_(pa.field("item", DELETION2_TYPE, nullable=False)),
             nullable=False),
])
PROBES_FORMAT2_COLUMNS = [
    pa.field("id", pa.string(), nullable=False),
    pa.field("scenario", pa.string(), nullable=False),
    pa.field("evidence", _TEXTS, nullable=False),
    pa.field("tags", _TAGS, nullable=False),
]
OUTCOMES_FORMAT2_COLUMNS = [
    pa.field("scenario", pa.string(), nullable=False),
    pa.field("probe_id", pa.string(), nullable=False),
    pa.field("tags", _TAGS, nullable=False),
    pa.field("value_outcome", pa.string()),
    pa.field("evidence_outcome", pa.string(), nullable=False),
]


def extended(schema: pa.Schema, columns: Sequence[pa.Field]) -> pa.Schema:
    return pa.schema(list(schema) + list(columns))


def tags_cell(tags: Sequence[tuple[str, str]]) -> list[dict]:
    return [{"name": name, "value": value} for name, value in tags]


def tags_from_cell(cell: Sequence[dict]) -> tuple[tuple[str, str], ...]:
    return tuple((t["name"], t["value"]) for t in cell)


def format2_exchange_rows(scenario: Scenario) -> list[dict]:
    return [{"turn_id": e.turn_id, "speaker": e.speaker, "date": e.date}
            for e in scenario.exchanges]


def format2_fact_rows(scenario: Scenario) -> list[dict]:
    return [{"key": f.key, "versions": [vars(v) for v in f.versions],
             "deletions": [vars(d) for d in f.deletions]} for f in scenario.facts]


def format2_probe_rows(scenario: Scenario) -> list[dict]:
    return [{"id": p.id, "scenario": p.scenario, "evidence": list(p.evidence),
             "tags": tags_cell(p.tags)} for p in scenario.probes]


def exchange_from_row(r: dict) -> Exchange:
    return Exchange(r["index"], r["day"], r["slot"], ExchangeKind(r["kind"]), r["user"],
                    r["assistant"], r["fact_key"], r["source"], r["turn_id"], r["speaker"],
                    r["date"])


def fact_from_row(r: dict) -> Fact:
    versions = tuple(FactVersion(**{**v, "turns": tuple(v["turns"]),
                                    "answers": tuple(v["answers"])}) for v in r["versions"])
    deletions = tuple(Deletion(**d) for d in r["deletions"])
    final = deletions[-1] if deletions and (deletions[-1].day, deletions[-1].slot) > (
        versions[-1].day, versions[-1].slot) else None
    return Fact(r["key"], "", "", versions, final, deletions)


def probe_from_row(r: dict) -> Probe:
    return Probe(r["day"], r["fact_key"], r["form"], r["question"], r["id"],
                 tuple(r["evidence"]), tags_from_cell(r["tags"]), r["scenario"])
