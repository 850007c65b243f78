"""What makes the backends stage fast must not change what it finds: SQLite without
fsync waits writes the same bytes, a fork continues from its base's very state and a
remedy on it finds what it finds on a fresh replay, LanceDB's reads write nothing, the
scanner's zero-tail skip misses nothing. And the replay on format 2: several documents
from one turn, a joined benchmark's scenarios on databases of their own. Real stores."""

from __future__ import annotations

import dataclasses
import json
import struct
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from backend_helpers import EMBED, SECRET_VALUE, remember_and_forget, where
from outcome_files import write_outcome_files
from params_yaml import PARAMS

from membench.backends.at_rest import ScanCache
from membench.backends.base import BACKENDS, NO_REMEDY, BackendUnavailableError
from membench.backends.parity import memory_index, parity_rows
from membench.backends.replay import run_backend
from membench.backends.scanner import VECTOR_PIECE, Needle, scan, value_needles
from membench.backends.sqlite_files import connect
from membench.backends.summary import summary
from membench.extraction.extractors import EXTRACTORS
from membench.io.datasets import PART_FILE
from membench.io.at_rest import backend_files, tree_bytes
from membench.io.backend_tables import memory_index_from_parquet
from membench.io.tables import outcomes_table
from membench.memory.policies import build_policies, without_embeddings
from membench.memory.stores import STORES, Memory
from membench.plugins import load_plugins
from membench.reporting.backends_tables import backends_section
from membench.retrieval.retrievers import IndexCache
from membench.scenario.build import ScenarioShape
from membench.scenario.format2 import parse_format2
from membench.scenario.given import build_given
from membench.scoring.bench import run_bench

load_plugins("backends")

FIXTURE = Path(__file__).parent / "fixtures" / "format2" / "story.json"
SHAPE = ScenarioShape(seed=42, sessions=30, exchanges_per_session=3, probe_days=(30,),
                      lines_per_reply=4)


def _open(name: str, directory: Path, remedy: str = NO_REMEDY):
    try:
        return BACKENDS[name](directory, EMBED, remedy)
    except ImportError as error:  # the `stores` extra is not installed
        pytest.skip(f"{name} needs the `stores` extra: {error}")
    except BackendUnavailableError as error:  # installed but unable to run: a real failure
        pytest.fail(f"{name} cannot run here: {error}")


def _wal_frames(wal: bytes) -> list[tuple[bytes, bytes]]:
    """(page number, page image) of each WAL frame: salts and checksums left out, as
    SQLite draws the salts at random on every run."""
    size = struct.unpack(">I", wal[8:12])[0]
    return [(wal[o:o + 4], wal[o + 24:o + 24 + size]) for o in range(32, len(wal), 24 + size)]


@pytest.mark.parametrize("name", ["sqlite", "sqlite_vec"])
def test_synchronous_off_writes_the_same_database_and_wal_frames(name, tmp_path):
    files = {}
    for synchronous in ("FULL", "OFF"):
        backend = _open(name, tmp_path / synchronous)
        backend.connection.execute(f"PRAGMA synchronous={synchronous}")
        remember_and_forget(backend, 30)
        backend.settle()
        files[synchronous] = tree_bytes(tmp_path / synchronous)
        backend.close()
    full, off = files["FULL"], files["OFF"]
    assert full["store.db"] == off["store.db"]
    assert _wal_frames(full["store.db-wal"]) == _wal_frames(off["store.db-wal"])
    assert len(full["store.db-wal"]) == len(off["store.db-wal"])


def test_synchronous_off_writes_the_same_rollback_journal_database(tmp_path):
    """LangGraph's SqliteStore keeps SQLite's rollback journal (deleted at each commit)."""
    databases = []
    for synchronous in ("FULL", "OFF"):
        connection = connect(tmp_path / f"{synchronous}.db")
        connection.execute(f"PRAGMA synchronous={synchronous}")
        connection.execute("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)")
        for i in range(50):
            connection.execute("INSERT INTO t VALUES (?, ?)", (i, f"row {i} " * 60))
        for i in range(0, 50, 3):
            connection.execute("DELETE FROM t WHERE k = ?", (i,))
        connection.close()
        databases.append((tmp_path / f"{synchronous}.db").read_bytes())
    assert databases[0] == databases[1]


@pytest.mark.parametrize(("name", "remedies"), [
    ("sqlite", ["secure_delete", "secure_delete+optimize+vacuum"]),
    ("sqlite_vec", ["vacuum"]),
    ("langgraph_sqlite", ["secure_delete", "secure_delete+vacuum"]),
    ("lancedb", ["optimize", "optimize+cleanup_old_versions"]),
])
def test_a_fork_is_its_base_s_state_and_a_remedy_on_it_finds_what_a_fresh_one_does(
        name, remedies, tmp_path):
    cls = BACKENDS[name]
    base = _open(name, tmp_path / "base", remedies[0])
    try:
        remember_and_forget(base)
        for remedy in remedies:
            assert cls.opening(remedy) == cls.opening(remedies[0])
            before = tree_bytes(base.files_root())
            fork = base.fork(tmp_path / f"fork-{remedy}", remedy)
            try:
                copied = tree_bytes(fork.files_root())
                assert {f: b for f, b in copied.items() if not f.endswith("-shm")} == {
                    f: b for f, b in before.items() if not f.endswith("-shm")}
                fork.apply_remedy()
                on_fork = where(fork)
            finally:
                fork.close()
            fresh = _open(name, tmp_path / f"fresh-{remedy}", remedy)
            try:
                remember_and_forget(fresh)
                fresh.apply_remedy()
                assert on_fork == where(fresh)
            finally:
                fresh.close()
    finally:
        base.close()


def test_lancedb_reads_and_searches_write_nothing(tmp_path):
    backend = _open("lancedb", tmp_path / "lance")
    assert not type(backend).reads_write
    remember_and_forget(backend)
    before = tree_bytes(backend.files_root())
    backend.documents()
    backend.vector_search("what is my phone number", 3)
    backend.settle()
    assert tree_bytes(backend.files_root()) == before


@pytest.mark.parametrize("name", list(BACKENDS))
def test_an_empty_store_lists_and_finds_nothing(name, tmp_path):
    """A joined benchmark's next scenario starts on empty databases (and a scenario may
    state no fact at all): every search on them answers with nothing."""
    backend = _open(name, tmp_path / name)
    try:
        assert backend.documents() == []
        if backend.semantic is not None:
            assert backend.vector_search("what is my phone number", 3) == []
        if backend.lexical is not None:
            assert backend.lexical_search("what is my phone number", 3) == []
    finally:
        backend.close()


@pytest.mark.parametrize("zeros", [0, 1, 4000])
def test_the_zero_tail_skip_finds_a_needle_that_ends_in_zeros_at_the_edge(zeros):
    needle = Needle("k", "value", b"\x07" + b"\0" * 10)  # its own zeros run into the tail
    blob = b"x" * 100 + needle.data + b"\0" * zeros
    assert [h.offset for h in scan(blob, [needle])] == [100]
    only_zeros = Needle("k", "vector", b"\0" * (2 * VECTOR_PIECE))
    assert scan(b"\x01" + b"\0" * (2 * VECTOR_PIECE + zeros), [only_zeros])


def test_the_scan_cache_answers_each_needle_as_a_new_scan_would():
    cache = ScanCache()
    first, second = value_needles("a", SECRET_VALUE), value_needles("b", "555-0101")
    blob = b"\0" * 50 + SECRET_VALUE.encode() + b" and 555-0101 " + b"\0" * 5000
    assert cache.scan(blob, tuple(first)) == scan(blob, first)
    assert cache.scan(blob, tuple(first + second)) == scan(blob, first + second)
    assert cache.scan(blob + b"!", tuple(second)) == scan(blob + b"!", second)


def _joined_story_with_two_facts_in_one_turn():
    """The hand-made story twice (alpha, beta), and a second fact stated in the turns
    that state the cat: the profile then holds two lines from one exchange."""
    specs = []
    for sid in ("alpha", "beta"):
        data = json.loads(FIXTURE.read_text(encoding="utf-8"))
        data["id"] = sid
        data["facts"].append({"key": "pet", "versions": [
            {"turns": ["S1:3", "S2:1"], "value": "a pet cat", "answers": ["a cat"]}]})
        specs.append(parse_format2(data))
    scenario = build_given(specs, [], SHAPE, joined=True)
    return scenario, EXTRACTORS["perfect"](scenario)


def test_a_joined_benchmark_on_sqlite_equals_memory_and_audits_each_scenario(tmp_path):
    scenario, records = _joined_story_with_two_facts_in_one_turn()
    policies = [p for p in without_embeddings(build_policies(PARAMS.policies))
                if set(p.stores) <= {"profile", "fact_log", "transcript", "transcript_redacted"}]
    stores = ["profile", "fact_log", "transcript", "transcript_redacted"]
    run = run_backend("sqlite", BACKENDS["sqlite"], scenario, records, policies, stores,
                      EMBED, IndexCache(), tmp_path, backend_files)
    memory = run_bench(scenario, records, policies, lambda texts: [0] * len(texts))
    assert [(r.probe_id, r.outcome, r.context) for r in run.result.outcomes] == [
        (r.probe_id, r.outcome, r.context) for r in memory.outcomes]
    profile = STORES["profile"].build(Memory(scenario, records, 4, IndexCache()))
    sources = [d.source for d in profile]
    assert len(set(sources)) < len(sources)  # two lines from one exchange, both kept
    # Each scenario on its own databases: its start is no mass deletion, so only the
    # stores that delete (profile, transcript_redacted) get remedies, at each one's end.
    cured = {(r.day, r.store) for r in run.at_rest if r.remedy != NO_REMEDY}
    assert cured == {(day, store) for day in (4, 8)
                     for store in ("profile", "transcript_redacted")}
    for row in run.at_rest:
        assert row.fact_key == ("alpha/phone" if row.day <= 4 else "beta/phone")
    ends = [r for r in run.at_rest if r.remedy == NO_REMEDY and r.store == "profile"
            and r.form == "value"]
    assert [r.day for r in ends] == [2, 4, 6, 8]


def _on_langgraph_memory(scenario, tmp_path):
    """The policies over profile and transcript on LangGraph's InMemoryStore (no files)."""
    policies = [p for p in without_embeddings(build_policies(PARAMS.policies))
                if set(p.stores) <= {"profile", "transcript"}]
    run = run_backend("langgraph_memory", BACKENDS["langgraph_memory"], scenario,
                      EXTRACTORS["perfect"](scenario), policies, ["profile", "transcript"],
                      EMBED, IndexCache(), tmp_path, backend_files)
    return run, policies


def test_the_report_says_the_audit_does_not_apply_when_nothing_is_deleted(tmp_path):
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    del data["facts"][2]["deletions"]  # the phone number is never forgotten
    scenario = build_given((parse_format2(data),), [], SHAPE)
    run, policies = _on_langgraph_memory(scenario, tmp_path)
    assert run.at_rest == () and run.costs == ()
    parity = parity_rows("langgraph_memory", run.result.outcomes,
                         memory_index(run.result.outcomes))
    tables = summary({"langgraph_memory": BACKENDS["langgraph_memory"]},
                     ["profile", "transcript"], [p.id for p in policies], parity,
                     run.rankings, run.at_rest, scenario.sessions)
    text = "\n".join(backends_section(tables))
    assert "does not apply to this run" in text and "| Remedy |" not in text


def test_parity_tells_a_context_that_differs_by_one_character(tmp_path):
    scenario = build_given((parse_format2(json.loads(FIXTURE.read_text(encoding="utf-8"))),),
                           [], SHAPE)
    run, policies = _on_langgraph_memory(scenario, tmp_path)
    memory = memory_index(run.result.outcomes)
    changed = run.result.outcomes[0]
    changed = dataclasses.replace(changed, context=changed.context + " ",
                                  outcome="leaked" if changed.outcome != "leaked" else "current")
    rows = parity_rows("langgraph_memory", [changed, *run.result.outcomes[1:]], memory)
    assert not rows[0].same_context and not rows[0].same_outcome
    assert all(r.same_context and r.same_outcome for r in rows[1:])
    assert len(memory_index(run.result.outcomes, [policies[0].id])) < len(memory)


@pytest.mark.parametrize("story", ["default", "format2"])
def test_the_parity_index_read_a_row_group_at_a_time_equals_the_one_of_the_rows(story, tmp_path,
                                                                     default_run):
    if story == "default":
        rows = default_run.result.outcomes
    else:
        scenario = build_given(
            (parse_format2(json.loads(FIXTURE.read_text(encoding="utf-8"))),), [], SHAPE)
        policies = without_embeddings(build_policies(PARAMS.policies))
        rows = run_bench(scenario, EXTRACTORS["perfect"](scenario), policies,
                         lambda texts: [0] * len(texts), IndexCache()).outcomes
    some = sorted({r.policy for r in rows})[::2]
    # many row groups (read one at a time) in a partition per day, then one in one
    for group_rows, per_day in ((7, True), (None, False)):
        outcomes, contexts = write_outcome_files(rows, tmp_path / str(group_rows), group_rows,
                                                 per_day)
        assert memory_index_from_parquet(outcomes, contexts, some) == memory_index(rows, some)
    assert len(memory_index(rows, some)) < len(rows)
    (part,) = outcomes.rglob(PART_FILE)
    pq.write_table(outcomes_table(rows), part)  # the older columns: contexts inside
    with pytest.raises(ValueError, match="expected schema"):
        memory_index_from_parquet(outcomes, contexts, some)
    outcomes, contexts = write_outcome_files(rows, tmp_path / "short")
    (part,) = contexts.rglob(PART_FILE)
    pq.write_table(pq.read_table(part).slice(1), part)
    with pytest.raises(ValueError, match="rerun the policies stage"):
        memory_index_from_parquet(outcomes, contexts, some)
