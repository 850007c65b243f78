"""The summaries' stages (plots, report) read the policies stage's outcomes, which hold no
context: the contexts file is read only where the report shows one
(membench.io.inputs.read_outcomes)."""

from __future__ import annotations

import shutil
from dataclasses import replace

import pyarrow.parquet as pq
import pytest
from outcome_files import write_outcome_files

from membench.io.datasets import PART_FILE
from membench.io.inputs import read_outcomes
from membench.io.tables import (
    CONTEXT_KEYS,
    OUTCOMES_FILE_SCHEMA,
    OUTCOMES_SCHEMA,
    outcomes_table,
    result_from_tables,
    split_outcomes,
    stored_table,
)
from membench.io.written_datasets import read_written


@pytest.mark.parametrize(("group_rows", "user_per_day"), [(7, False), (1024, False), (7, True)])
def test_contexts_are_kept_only_for_the_traced_outcomes(default_run, tmp_path, group_rows,
                                                        user_per_day):
    outcomes, contexts = write_outcome_files(  # row groups cut anywhere, partitions by day
        default_run.result.outcomes, tmp_path, group_rows, user_per_day)
    table = read_outcomes(outcomes, contexts, frozenset({"stale"}))
    assert table.schema.equals(OUTCOMES_SCHEMA)
    rows = result_from_tables(table, stored_table(default_run.result.stored)).outcomes
    expected = default_run.result.outcomes
    assert len(rows) == len(expected)
    for row, want in zip(rows, expected, strict=True):
        assert row == (want if want.outcome == "stale" else replace(want, context=""))
    assert any(want.outcome == "stale" and want.context for want in expected)


def test_no_context_at_all_when_none_is_asked_for(default_run, tmp_path):
    outcomes, contexts = write_outcome_files(default_run.result.outcomes, tmp_path)
    shutil.rmtree(contexts)  # not opened
    table = read_outcomes(outcomes)
    assert set(table.column("context").to_pylist()) == {""}
    assert table.drop_columns(["context"]).equals(read_written(outcomes))


def test_the_outcomes_file_holds_no_context_and_the_contexts_go_row_for_row(default_run):
    full = outcomes_table(default_run.result.outcomes)
    outcomes, contexts = split_outcomes(full)
    assert outcomes.schema.equals(OUTCOMES_FILE_SCHEMA)
    assert "context" not in outcomes.schema.names
    assert contexts.select(CONTEXT_KEYS).equals(full.select(CONTEXT_KEYS))
    assert contexts.column("context").equals(full.column("context"))


def test_outcomes_in_an_older_layout_are_refused(default_run, tmp_path):
    old = tmp_path / "outcomes.parquet"  # one file, contexts inside
    pq.write_table(outcomes_table(default_run.result.outcomes), old)
    with pytest.raises(ValueError, match="single file, written by an older membench"):
        read_outcomes(old)
    old.unlink()  # a dataset whose files hold the contexts
    write_outcome_files(default_run.result.outcomes, tmp_path)
    (part,) = old.rglob(PART_FILE)
    pq.write_table(outcomes_table(default_run.result.outcomes), part)
    with pytest.raises(ValueError, match="does not have the expected schema"):
        read_outcomes(old)


def test_a_missing_file_is_the_usual_one_line_error(default_run, tmp_path):
    with pytest.raises(FileNotFoundError, match="run the stage that writes it first"):
        read_outcomes(tmp_path / "nothing.parquet")
    outcomes, contexts = write_outcome_files(default_run.result.outcomes, tmp_path)
    shutil.rmtree(contexts)
    with pytest.raises(FileNotFoundError, match="contexts.parquet is missing"):
        read_outcomes(outcomes, contexts, frozenset({"stale"}))


def test_a_contexts_file_shorter_than_the_outcomes_is_refused(default_run, tmp_path):
    rows = default_run.result.outcomes
    outcomes, _ = write_outcome_files(rows, tmp_path)
    short = tmp_path / "short"
    short.mkdir()
    _, contexts = write_outcome_files(rows[:10], short)
    with pytest.raises(ValueError, match="rerun the policies stage"):
        read_outcomes(outcomes, contexts, frozenset({"stale", "current"}))
