"""Large tables streamed: the policies stage writes its outcomes a day and a bounded run of
contexts at a time (bench_days, outcome_tables, StagedOutputs.parquet_streams): the same
rows as the whole table, and the same bytes whenever the contexts fit in one table; the
report folds the users stage's dataset a batch at a time (read_user_batches)."""

from __future__ import annotations

import tomllib
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import test_users as users_story
from outcome_files import write_outcome_files
from params_yaml import PARAMS

from membench.extraction.extractors import EXTRACTORS
from membench.io.answer_tables import reader_items
from membench.io.datasets import (
    METADATA_FILE,
    PART_FILE,
    PARTITIONING,
    partition_dir,
    read_user_batches,
    user_partitions,
)
from membench.io.inputs import read_contexts
from membench.io.outputs import OutputError, staged_outputs
from membench.io.tables import (
    USER_OUTCOMES_FILE_SCHEMA,
    USER_OUTCOMES_SCHEMA,
    outcome_tables,
    outcomes_table,
    partitioned_outcome_tables,
    split_outcomes,
    user_outcome_summary,
    user_outcomes_from_table,
    user_outcomes_table,
)
from membench.io.written_datasets import (
    outcome_partition,
    read_written,
    row_groups,
    written_files,
)
from membench.memory.policies import POLICIES
from membench.plugins import load_plugins
from membench.reporting.users_tables import users_section
from membench.scenario.build import ScenarioShape
from membench.scenario.deployment import build_user_scenarios
from membench.scenario.spec import parse_scenario_spec
from membench.scoring.answers import ReaderItem
from membench.scoring.bench import bench_days, no_tokens, run_bench
from membench.scoring.users import build_deployment, run_deployment, summarize


def test_bench_days_are_run_bench_split_by_day(default_run):
    days = list(bench_days(default_run.scenario, default_run.records, default_run.policies,
                           no_tokens))
    whole = run_bench(default_run.scenario, default_run.records, default_run.policies,
                      no_tokens)
    assert [d.outcomes[0].day for d in days] == list(default_run.scenario.probe_days)
    assert all({r.day for r in d.outcomes} == {d.outcomes[0].day} for d in days)
    assert tuple(r for d in days for r in d.outcomes) == whole.outcomes
    assert tuple(r for d in days for r in d.stored) == whole.stored


@pytest.mark.parametrize("chars_per_table", [1, 5_000, 200_000])
def test_tables_cut_by_context_size_hold_the_same_rows(default_run, chars_per_table):
    rows = default_run.result.outcomes
    tables = list(outcome_tables(iter(rows), chars_per_table))
    assert len(tables) > 1  # the default story's contexts fill several tables at these sizes
    for table in tables[:-1]:  # each cut once its contexts reach the bound, not before
        contexts = table.column("context").to_pylist()
        assert sum(map(len, contexts)) >= chars_per_table > sum(map(len, contexts[:-1]))
    assert pa.concat_tables(tables).equals(outcomes_table(rows))


def test_rows_that_fit_make_one_table_and_no_rows_one_empty_table(default_run):
    rows = default_run.result.outcomes
    assert [t.equals(outcomes_table(rows)) for t in outcome_tables(rows)] == [True]
    (empty,) = outcome_tables(())
    assert empty.num_rows == 0 and empty.schema.equals(outcomes_table(rows).schema)


def test_one_streamed_table_is_the_bytes_of_a_whole_write(default_run, tmp_path):
    table = outcomes_table(default_run.result.outcomes)
    with staged_outputs() as outputs:
        outputs.parquet(tmp_path / "whole.parquet", table)
        written = outputs.parquet_stream(tmp_path / "streamed.parquet", iter([table]))
    assert written == table.num_rows
    assert (tmp_path / "whole.parquet").read_bytes() == (tmp_path / "streamed.parquet").read_bytes()


def test_many_streamed_tables_read_back_as_the_whole_table(default_run, tmp_path):
    rows = default_run.result.outcomes
    path = tmp_path / "outcomes.parquet"
    with staged_outputs() as outputs:
        outputs.parquet_stream(path, outcome_tables(rows, chars_per_table=5_000))
    assert pq.ParquetFile(path).metadata.num_row_groups > 1
    assert pq.read_table(path).equals(outcomes_table(rows))


def test_the_outcomes_and_their_contexts_are_streamed_in_the_same_row_groups(default_run,
                                                                            tmp_path):
    rows = default_run.result.outcomes
    paths = [tmp_path / "outcomes.parquet", tmp_path / "contexts.parquet"]
    with staged_outputs() as outputs:
        written = outputs.parquet_streams(
            paths, map(split_outcomes, outcome_tables(rows, chars_per_table=5_000)))
    assert written == len(rows)
    files = [pq.ParquetFile(path) for path in paths]
    groups = [[f.metadata.row_group(g).num_rows for g in range(f.metadata.num_row_groups)]
              for f in files]
    assert len(groups[0]) > 1 and groups[0] == groups[1]
    expected = split_outcomes(outcomes_table(rows))
    assert [pq.read_table(path).equals(table) for path, table in zip(paths, expected,
                                                                     strict=True)] == [True] * 2


def test_the_policies_datasets_hold_a_partition_per_user_read_back_in_the_order_written(
        default_run, tmp_path):
    """A format-2 story's scenarios are users of their own: their days' rows go to their
    partition, in the order written (here names that sort the other way round), the two
    datasets cut alike; hive readers see the same rows with seed and user."""
    rows = default_run.result.outcomes
    days = list(dict.fromkeys(row.day for row in rows))
    segments = tuple((f"z{len(days) - i}", day, day) for i, day in enumerate(days))
    partition_of = outcome_partition(42, None, segments)
    paths = [tmp_path / "outcomes.parquet", tmp_path / "contexts.parquet"]
    with staged_outputs() as outputs:
        written = outputs.dataset_streams(paths, (
            (partition, split_outcomes(table)) for partition, table
            in partitioned_outcome_tables(rows, partition_of, chars_per_table=5_000)))
    assert written == len(rows)
    order = [partition_dir(42, sid) for sid, _, _ in segments]
    _, files = written_files(paths[0])
    assert [file.parent.relative_to(paths[0]).as_posix() for file in files] == order
    expected = split_outcomes(outcomes_table(rows))
    for path, table in zip(paths, expected, strict=True):
        assert read_written(path).equals(table)
    groups = [[parquet.metadata.row_group(g).num_rows for parquet, g in row_groups(path)]
              for path in paths]
    assert len(groups[0]) > len(days) and groups[0] == groups[1]
    hive = ds.dataset(paths[0], partitioning="hive").to_table()
    assert sorted(set(hive.column("user").to_pylist())) == sorted(s for s, _, _ in segments)
    assert hive.num_rows == len(rows)
    assert read_contexts(paths[1], [len(rows) - 1]) == {len(rows) - 1: rows[-1].context}
    stray = paths[0] / partition_dir(42, "stray")  # not listed; then a listed one gone
    stray.mkdir(parents=True)
    pq.write_table(expected[0].slice(0, 1), stray / PART_FILE)
    with pytest.raises(ValueError, match="is not listed"):
        read_written(paths[0])
    (stray / PART_FILE).rename(paths[0] / order[0] / PART_FILE)
    (paths[0] / order[1] / PART_FILE).unlink()
    with pytest.raises(ValueError, match="is missing"):
        read_written(paths[0])


def test_a_day_s_partition_is_its_scenario_s_else_the_story_s_user():
    assert outcome_partition(7, "u001")(30) == "seed=7/user=u001"
    assert outcome_partition(7, None)(30) == "seed=7/user=user"  # a story naming no one
    of = outcome_partition(7, None, (("conv a/1", 1, 10), ("conv-b", 11, 20)))
    assert [of(1), of(10), of(11), of(21)] == [
        "seed=7/user=conv%20a%2F1", "seed=7/user=conv%20a%2F1", "seed=7/user=conv-b",
        "seed=7/user=user"]


def test_rows_of_a_partition_apart_are_refused_and_leave_nothing(default_run, tmp_path):
    rows = default_run.result.outcomes
    first = rows[0].day
    apart = (lambda day: "seed=1/user=a" if day == first else "seed=1/user=b")
    steps = partitioned_outcome_tables([*rows, rows[0]], apart, chars_per_table=5_000)
    with pytest.raises(ValueError, match="do not come together"), \
            staged_outputs() as outputs:
        outputs.dataset_streams([tmp_path / "outcomes.parquet"],
                                ((partition, (table,)) for partition, table in steps))
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="no table to write"), staged_outputs() as outputs:
        outputs.dataset_streams([tmp_path / "outcomes.parquet"], iter(()))
    assert list(tmp_path.iterdir()) == []


def test_an_error_while_the_rows_are_made_is_its_own_and_leaves_nothing(default_run,
                                                                         tmp_path):
    def failing():
        yield outcomes_table(default_run.result.outcomes[:3])
        raise OSError(28, "No space left on device")  # the policy's disk, not the output's

    with pytest.raises(OSError) as caught, staged_outputs() as outputs:
        outputs.parquet_stream(tmp_path / "outcomes.parquet", failing())
    assert not isinstance(caught.value, OutputError)
    assert list(tmp_path.iterdir()) == []


def test_no_table_at_all_is_an_error_that_leaves_nothing(tmp_path):
    with pytest.raises(ValueError, match="no table to write"), staged_outputs() as outputs:
        outputs.parquet_stream(tmp_path / "outcomes.parquet", iter(()))
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def user_rows():
    """Every row of the hand-made two-user deployment of test_users, every policy there."""
    load_plugins()
    spec = parse_scenario_spec(tomllib.loads(users_story.STORY))
    users = build_user_scenarios(spec, users_story.CORPUS, ScenarioShape(1, 3, 3, (2, 3), 2))
    deployment = build_deployment(users, EXTRACTORS["perfect"])
    policies = [POLICIES[p](PARAMS.policies)
                for p in ("full_transcript", "profile", "fact_log", "last_n_exchanges")]
    return run_deployment(deployment, policies)


@pytest.mark.parametrize("batch_rows", [1, 7, 1 << 20])
def test_the_users_dataset_holds_each_users_rows_and_reads_back_to_the_same_summary(
        user_rows, tmp_path, batch_rows):
    table = user_outcomes_table(user_rows)
    root = tmp_path / "users_outcomes"
    with staged_outputs() as outputs:
        written = outputs.dataset(root, USER_OUTCOMES_FILE_SCHEMA, user_partitions(
            [table.slice(start, 5) for start in range(0, table.num_rows, 5)], 7))
    assert written == len(user_rows)
    names = {r.user for r in user_rows}
    assert len(names) == 2
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*.parquet")) == sorted(
        f"seed=7/user={quote(name, safe='')}/part-0.parquet" for name in names)
    for name in names:  # one user's rows, in the table's order, from its own file
        part = pq.read_table(root / partition_dir(7, name) / PART_FILE)
        assert part.equals(table.filter(pc.equal(table["user"], name)).drop_columns(["user"]))
    batches = list(read_user_batches(root, USER_OUTCOMES_SCHEMA, batch_rows))
    back = pa.Table.from_batches(batches)
    assert back.num_rows == len(user_rows) and back.schema.equals(USER_OUTCOMES_SCHEMA)
    assert sorted(user_outcomes_from_table(back), key=repr) == sorted(user_rows, key=repr)
    assert user_outcome_summary(batches) == summarize(user_rows)
    # read by user, not in the stage's order: the report's section is the same text
    policies = list(dict.fromkeys(r.policy for r in user_rows))
    assert users_section(user_outcome_summary(batches), policies) == users_section(
        summarize(user_rows), policies)
    # pyarrow's own reader sees the same rows, and the partitions as columns
    dataset = ds.dataset(root, format="parquet",
                         partitioning=ds.partitioning(PARTITIONING, flavor="hive"))
    assert dataset.count_rows() == len(user_rows)
    assert set(dataset.to_table(columns=["user"])["user"].to_pylist()) == names
    assert set(dataset.to_table(columns=["seed"])["seed"].to_pylist()) == {7}


def test_a_users_name_that_is_not_a_path_is_percent_encoded(tmp_path):
    rows = [{"mode": "shared", "policy": "profile", "user": "a/b=c d", "form": "literal",
             "day": 1, "fact_key": "k", "changes": 0, "deleted": False, "outcome": "current",
             "cross_user_leak": False, "injected_lines": 1}]
    root = tmp_path / "users"
    with staged_outputs() as outputs:
        outputs.dataset(root, USER_OUTCOMES_FILE_SCHEMA, user_partitions(
            [pa.Table.from_pylist(rows, schema=USER_OUTCOMES_SCHEMA)], 3))
    (part,) = root.rglob("*.parquet")
    assert part.parent.name == "user=a%2Fb%3Dc%20d"
    back = pa.Table.from_batches(read_user_batches(root, USER_OUTCOMES_SCHEMA, 10))
    assert back.to_pylist() == rows
    dataset = ds.dataset(root, format="parquet",
                         partitioning=ds.partitioning(PARTITIONING, flavor="hive"))
    assert dataset.to_table(columns=["user"])["user"].to_pylist() == ["a/b=c d"]


def test_a_users_dataset_replaces_an_earlier_one_whole_or_not_at_all(user_rows, tmp_path):
    table = user_outcomes_table(user_rows)
    root = tmp_path / "users"
    with staged_outputs() as outputs:
        outputs.dataset(root, USER_OUTCOMES_FILE_SCHEMA, user_partitions([table], 1))
    first = sorted(p.relative_to(root) for p in root.rglob("*"))

    def failing():
        yield from user_partitions([table], 2)
        raise OSError(28, "No space left on device")  # the code making the rows

    with pytest.raises(OSError), staged_outputs() as outputs:
        outputs.dataset(root, USER_OUTCOMES_FILE_SCHEMA, failing())
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["users"]  # nothing staged is left
    with staged_outputs() as outputs:
        outputs.dataset(root, USER_OUTCOMES_FILE_SCHEMA, user_partitions([table], 2))
    assert {p.parts[0] for p in (q.relative_to(root) for q in root.rglob("*.parquet"))} == {
        "seed=2"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["users"]


@pytest.mark.parametrize("earlier", ["file", "dataset"])
def test_a_dataset_replaces_a_file_and_a_file_a_dataset_leaving_nothing_aside(
        user_rows, tmp_path, earlier):
    """A single file where the dataset now goes (an earlier release's layout), or a dataset
    where a file now goes: replaced whole, nothing of the old one left beside it."""
    table = user_outcomes_table(user_rows)
    root = tmp_path / "users"
    if earlier == "file":
        root.write_bytes(b"an earlier release's single file")
        with staged_outputs() as outputs:
            outputs.dataset(root, USER_OUTCOMES_FILE_SCHEMA, user_partitions([table], 1))
        assert root.is_dir() and any(root.rglob("*.parquet"))
    else:
        with staged_outputs() as outputs:
            outputs.dataset(root, USER_OUTCOMES_FILE_SCHEMA, user_partitions([table], 1))
        with staged_outputs() as outputs:
            outputs.parquet(root, table)
        assert pq.read_table(root).num_rows == table.num_rows
    assert sorted(p.name for p in tmp_path.iterdir()) == ["users"]


def test_an_empty_users_dataset_is_no_summary_and_a_foreign_one_an_error(tmp_path):
    root = tmp_path / "users"
    with staged_outputs() as outputs:
        outputs.dataset(root, USER_OUTCOMES_FILE_SCHEMA, user_partitions(
            [user_outcomes_table([])], 1))
    assert [p.name for p in root.iterdir()] == [METADATA_FILE]
    (batch,) = read_user_batches(root, USER_OUTCOMES_SCHEMA, 10)
    assert batch.num_rows == 0 and batch.schema.equals(USER_OUTCOMES_SCHEMA)
    assert user_outcome_summary([batch]) is None
    with pytest.raises(FileNotFoundError, match="run the stage that writes it first"):
        next(read_user_batches(tmp_path / "missing", USER_OUTCOMES_SCHEMA, 10))
    stray = root / "seed=1" / "notes.txt"
    stray.parent.mkdir()
    stray.write_text("x")
    with pytest.raises(ValueError, match="not a partition"):
        next(read_user_batches(root, USER_OUTCOMES_SCHEMA, 10))
    stray.unlink()
    pq.write_metadata(pa.schema([pa.field("mode", pa.string())]), root / METADATA_FILE)
    with pytest.raises(ValueError, match="expected schema"):
        next(read_user_batches(root, USER_OUTCOMES_SCHEMA, 10))
    (root / METADATA_FILE).unlink()
    with pytest.raises(ValueError, match="not a dataset membench wrote"):
        next(read_user_batches(root, USER_OUTCOMES_SCHEMA, 10))


@pytest.mark.parametrize("group_rows", [7, 1024])
def test_the_reader_keeps_its_policies_rows_and_only_the_contexts_it_sends(
        default_run, tmp_path, group_rows):
    outcomes, contexts = write_outcome_files(default_run.result.outcomes, tmp_path, group_rows)
    chosen, limit = ("profile", "full_transcript"), 2000
    read = reader_items(outcomes, contexts, chosen, limit)
    assert read.policies == {r.policy for r in default_run.result.outcomes}
    expected = [ReaderItem(r.policy, r.form, r.day, r.fact_key, r.question,
                           r.context if r.injected_tokens <= limit else "",
                           r.injected_tokens, r.outcome)
                for r in default_run.result.outcomes if r.policy in chosen]
    assert read.items == expected
    assert any(not i.context and i.policy == "full_transcript" for i in read.items)
    assert any(i.context and i.policy == "profile" for i in read.items)


def test_contexts_are_read_only_from_the_row_groups_that_hold_the_rows(default_run,
                                                                         tmp_path,
                                                                         monkeypatch):
    rows = default_run.result.outcomes
    _, path = write_outcome_files(rows, tmp_path, 10)
    wanted = [0, 9, 10, 11, 500, len(rows) - 1]
    assert read_contexts(path, reversed(wanted)) == {i: rows[i].context for i in wanted}
    assert read_contexts(path, []) == {}
    read: list[int] = []
    original = pq.ParquetFile.read_row_group

    def counted(self, group, *args, **kwargs):
        read.append(group)
        return original(self, group, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", counted)
    read_contexts(path, wanted)
    assert read == [0, 1, 50, (len(rows) - 1) // 10]
