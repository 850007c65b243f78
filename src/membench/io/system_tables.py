"""The systems stage's tables: each system's outcomes (the policies' outcome columns, the
system and its forget mode in place of the policy) and its at-rest audit."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from membench.io.tables import outcomes_table
from membench.systems.run import SystemAtRestRow, SystemRun

NAMES = pa.list_(pa.field("item", pa.string(), nullable=False))
SYSTEM_COLUMNS = [pa.field("system", pa.string(), nullable=False),
                  pa.field("mode", pa.string(), nullable=False)]
SYSTEM_AT_REST_SCHEMA = pa.schema([
    pa.field("story", pa.string(), nullable=False),
    *SYSTEM_COLUMNS,
    pa.field("remedy", pa.string(), nullable=False),
    pa.field("user", pa.string(), nullable=False),
    pa.field("fact_key", pa.string(), nullable=False),
    pa.field("places", NAMES, nullable=False),
    pa.field("files", NAMES, nullable=False),
])


def system_outcomes_schema(policy_outcomes: pa.Schema) -> pa.Schema:
    """A policy outcome schema with system and mode in place of its policy column."""
    rest = [f for f in policy_outcomes if f.name != "policy"]
    return pa.schema([*SYSTEM_COLUMNS, *rest])


def system_outcomes_table(runs: Sequence[SystemRun], empty: pa.Schema) -> pa.Table:
    """Every run's outcome rows; `empty` is the schema when no system ran."""
    parts = []
    for run in runs:
        table = outcomes_table(run.result.outcomes).drop_columns(["policy"])
        table = table.add_column(0, SYSTEM_COLUMNS[1], pa.array([run.mode] * len(table)))
        parts.append(table.add_column(0, SYSTEM_COLUMNS[0], pa.array([run.system] * len(table))))
    if not parts:
        return system_outcomes_schema(empty).empty_table()
    schema = system_outcomes_schema(outcomes_table(runs[0].result.outcomes).schema)
    return pa.concat_tables([t.cast(schema) for t in parts])


STORY, DEPLOYMENT = "scenario", "deployment"  # the `story` column's values


def system_at_rest_table(scenario_rows: Sequence[SystemAtRestRow],
                         deployment_rows: Sequence[SystemAtRestRow] = ()) -> pa.Table:
    """The scenario's rows, then the generated deployment's."""
    rows = [(STORY, r) for r in scenario_rows] + [(DEPLOYMENT, r) for r in deployment_rows]
    columns = [pa.array([story for story, _ in rows], type=pa.string())]
    columns += [pa.array([getattr(r, f.name) for _, r in rows], type=f.type)
                for f in SYSTEM_AT_REST_SCHEMA if f.name != "story"]
    return pa.Table.from_arrays(columns, schema=SYSTEM_AT_REST_SCHEMA)
