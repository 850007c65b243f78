"""The summaries' stages (plots, report) read the policies stage's outcomes without the
bulk of the contexts: every other column whole, a context only where the report shows it
(membench.io.inputs.read_outcomes)."""

from __future__ import annotations

from dataclasses import replace

import pyarrow.parquet as pq
import pytest

from membench.io.inputs import read_outcomes
from membench.io.tables import outcomes_table, result_from_tables, stored_table


@pytest.fixture
def written(default_run, tmp_path):
    path = tmp_path / "outcomes.parquet"
    pq.write_table(outcomes_table(default_run.result.outcomes), path)
    return path


@pytest.mark.parametrize("group_rows", [7, 1024])
def test_contexts_are_kept_only_for_the_traced_outcomes(default_run, tmp_path, group_rows):
    written = tmp_path / "outcomes.parquet"  # row groups cut anywhere
    pq.write_table(outcomes_table(default_run.result.outcomes), written,
                   row_group_size=group_rows)
    table = read_outcomes(written, frozenset({"stale"}))
    assert table.schema.equals(pq.read_schema(written))
    rows = result_from_tables(table, stored_table(default_run.result.stored)).outcomes
    expected = default_run.result.outcomes
    assert len(rows) == len(expected)
    for row, want in zip(rows, expected, strict=True):
        assert row == (want if want.outcome == "stale" else replace(want, context=""))
    assert any(want.outcome == "stale" and want.context for want in expected)


def test_no_context_at_all_when_none_is_asked_for(written):
    table = read_outcomes(written)
    assert set(table.column("context").to_pylist()) == {""}
    assert table.drop_columns(["context"]).equals(
        pq.read_table(written).drop_columns(["context"]))


def test_a_missing_file_is_the_usual_one_line_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="run the stage that writes it first"):
        read_outcomes(tmp_path / "nothing.parquet")

