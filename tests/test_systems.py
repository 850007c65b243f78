"""Memory systems through their own write path: the real mem0 (mem0ai, offline, infer=False)
on the default story, with vectors made from each text's hash (no model), in both forget
modes; and a system that breaks its contract fails naming itself."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from backend_helpers import _vector

from membench.commands.system_units import fork_in
from membench.io.at_rest import backend_files
from membench.io.system_tables import system_at_rest_table, system_outcomes_table
from membench.io.tables import OUTCOMES_SCHEMA
from membench.plugins import load_plugins
from membench.reporting.systems_tables import systems_section
from membench.systems.base import (
    FORGET_API,
    FORGET_TURN,
    SYSTEMS,
    MemorySystem,
    SystemUnavailable,
    Turn,
)
from membench.systems.run import SystemFailed, forget_requests, run_system, turns_of
from membench.systems.summary import not_run, ran, summary

load_plugins("systems")


def embed(texts) -> np.ndarray:
    return np.stack([_vector(t) for t in texts]).astype(np.float32)


def count_tokens(texts):  # each text as its lines (membench.scoring.bench.CountTokens)
    return [len("\n".join(lines).split()) for lines in texts]


def run(name: str, mode: str, scenario, settings, root: Path):
    directory = root / f"{name}-{mode}"
    directory.mkdir()
    return run_system(SYSTEMS[name], scenario, mode, settings, embed, count_tokens, directory,
                      backend_files, fork_in(root))


@pytest.fixture(scope="module")
def mem0_runs(default_run, default_params, tmp_path_factory):
    root = tmp_path_factory.mktemp("systems")
    return {mode: run("mem0_faiss", mode, default_run.scenario, default_params.policies, root)
            for mode in (FORGET_TURN, FORGET_API)}


def deleted_probes(run):
    return [r for r in run.result.outcomes if r.deleted]


def test_every_probe_is_scored_once_per_mode(mem0_runs, default_run):
    for run in mem0_runs.values():
        assert len(run.result.outcomes) == len(default_run.scenario.probes)
        assert {r.policy for r in run.result.outcomes} == {"mem0_faiss"}
        assert all(r.context for r in run.result.outcomes)  # mem0 always finds something


def test_an_api_deletion_keeps_deleted_values_out_of_the_context(mem0_runs):
    outcomes = Counter(r.outcome for r in deleted_probes(mem0_runs[FORGET_API]))
    assert outcomes["leaked"] == 0 and outcomes["clean"] > 0


def test_without_the_api_every_deleted_value_stays_in_the_vector_store(mem0_runs, default_run):
    deleted = {f.key for f in default_run.scenario.facts if f.deleted_at is not None}
    rows = [r for r in mem0_runs[FORGET_TURN].at_rest if r.remedy == "none"]
    assert {r.fact_key for r in rows} == deleted
    assert all("vector store" in r.places for r in rows)


def test_mem0_s_history_database_keeps_what_its_api_deleted(mem0_runs):
    """mem0 #6512: `delete` removes the memory, its history rows keep the text."""
    rows = [r for r in mem0_runs[FORGET_API].at_rest if r.remedy == "none"]
    assert rows and all(r.places == ("history database",) for r in rows)
    assert all(r.files == ("history.db",) for r in rows)


def test_each_remedy_is_audited(mem0_runs):
    for run in mem0_runs.values():
        assert {r.remedy for r in run.at_rest} == {"none", "delete_all", "reset"}


def test_two_runs_give_the_same_rows_and_bytes(mem0_runs, default_run, default_params,
                                                tmp_path):
    again = run("mem0_faiss", FORGET_API, default_run.scenario, default_params.policies,
                tmp_path)
    first = mem0_runs[FORGET_API]
    assert again == first
    assert system_outcomes_table([again], OUTCOMES_SCHEMA).equals(
        system_outcomes_table([first], OUTCOMES_SCHEMA))
    assert system_at_rest_table(again.at_rest).equals(system_at_rest_table(first.at_rest))


def test_qdrant_and_faiss_agree_on_what_the_deletion_leaves(mem0_runs, default_run,
                                                            default_params, tmp_path):
    qdrant = run("mem0_qdrant", FORGET_API, default_run.scenario, default_params.policies,
                 tmp_path)
    assert Counter(r.outcome for r in deleted_probes(qdrant))["leaked"] == 0
    assert {r.fact_key for r in qdrant.at_rest if r.remedy == "none" and r.places} == \
        {r.fact_key for r in mem0_runs[FORGET_API].at_rest if r.remedy == "none" and r.places}


def test_the_report_section_shows_each_mode_and_remedy(mem0_runs, default_run):
    deleted = sum(f.deleted_at is not None for f in default_run.scenario.facts)
    entry = ran(SYSTEMS["mem0_faiss"], list(mem0_runs.values()))
    text = "\n\n".join(systems_section(summary([entry], deleted)))
    assert "## Memory systems" in text
    for mode in (FORGET_TURN, FORGET_API):
        assert f"| `mem0_faiss` | `{mode}`" in text
    counts = entry["modes"][FORGET_API]
    assert sum(counts["outcomes"].values()) == counts["probes"] == len(default_run.scenario.probes)


def test_a_system_not_installed_is_reported_with_its_install_command():
    text = "\n".join(systems_section(summary([not_run(SYSTEMS["mem0_qdrant"],
                                                      "mem0 is not installed")], 2)))
    assert "`mem0_qdrant`" in text and "was not run: mem0 is not installed" in text
    assert SYSTEMS["mem0_qdrant"].install in text


def test_every_turn_is_told_and_every_deletion_found(default_run):
    scenario = default_run.scenario
    turns = [t for e in scenario.exchanges for t in turns_of(scenario, e)]
    assert len(turns) == 2 * len(scenario.exchanges)
    assert {t.role for t in turns} == {"user", "assistant"}
    requests = [r for rs in forget_requests(scenario).values() for r in rs]
    assert sorted(r.fact_key for r in requests) == sorted(
        f.key for f in scenario.facts if f.deleted_at is not None)


class _Broken(MemorySystem):
    id, label, install = "broken", "a system that breaks its contract", "nothing"

    def __init__(self, directory, embed, fail_in: str = "") -> None:
        super().__init__(directory, embed)

    def observe(self, turn: Turn) -> None:
        if turn.day == 3:
            raise OSError("disk on fire")

    def context(self, user_id, question, k):
        return "not a list"

    def forget(self, request) -> None:
        pass


class _NonText(_Broken):
    def observe(self, turn: Turn) -> None:
        pass


@pytest.mark.parametrize("system,message", [
    (_Broken, "system broken failed in observe: OSError: disk on fire"),
    (_NonText, "system broken: context() returned str, not a list of texts"),
])
def test_a_system_that_breaks_its_contract_is_named(system, message, default_run,
                                                     default_params, tmp_path):
    (tmp_path / "s").mkdir()
    with pytest.raises(SystemFailed, match=message.replace("(", r"\(").replace(")", r"\)")):
        run_system(system, default_run.scenario, FORGET_TURN, default_params.policies, embed,
                   count_tokens, tmp_path / "s", backend_files, fork_in(tmp_path))


def test_an_unknown_mode_is_refused(default_run, default_params, tmp_path):
    with pytest.raises(ValueError, match="unknown forget mode 'later'"):
        run_system(_NonText, default_run.scenario, "later", default_params.policies, embed,
                   count_tokens, tmp_path, backend_files, fork_in(tmp_path))


def test_check_installed_names_the_install_command(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "faiss" else real(name, *a))
    with pytest.raises(SystemUnavailable, match=r"faiss is not installed: pip install"):
        SYSTEMS["mem0_faiss"].check_installed()


def test_token_counts_are_the_counter_s(mem0_runs):
    for run in mem0_runs.values():
        assert all(r.injected_tokens == len(r.context.split()) for r in run.result.outcomes)


def test_bench_drives_the_systems_on_an_imported_locomo_scenario(repo_root, tmp_path,
                                                                 monkeypatch):
    """`membench bench --systems` on a LoCoMo-layout file imported by `membench import`:
    each conversation is its own user of one system instance."""
    import yaml
    from typer.testing import CliRunner

    from membench.cli import app

    imported = tmp_path / "imported"
    done = CliRunner().invoke(app, ["import", "locomo", str(
        repo_root / "imports/examples/locomo10-example.json"), "--out", str(imported)])
    assert done.exit_code == 0, done.output
    params = yaml.safe_load((repo_root / "params.yaml").read_text())
    params["scenario"]["file"] = str(imported)
    params["systems"]["names"] = ["mem0_qdrant", "mem0_faiss"]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.chdir(repo_root)  # the corpus path in params is relative to the repository
    result = CliRunner().invoke(app, ["bench", "--params", str(tmp_path / "params.yaml"),
                                      "--systems", "--quiet"])
    assert result.exit_code == 0, result.output
    table = result.output.split("memory systems, through their own write path:", 1)[1]
    for name in ("mem0_qdrant", "mem0_faiss"):
        for mode in (FORGET_TURN, FORGET_API):
            assert f"{name} ({mode})" in table
    rows = [line for line in table.splitlines() if line.startswith("mem0_")]
    assert len({line.split()[0] + line.split()[1] for line in rows}) == 4


def test_no_system_to_run_builds_no_deployment(default_run, default_params):
    """The 100-user overlay (systems.names: []) has 5 events a fact, more than the
    deployment's 10 days hold: with no system to drive, it is not built."""
    from dataclasses import replace

    from membench.commands.systems_run import deployment_users

    too_big = replace(default_params, generate=replace(
        default_params.generate, changes=(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)))
    with pytest.raises(ValueError, match="cannot hold a fact"):
        deployment_users(too_big, default_run.corpus.files)
    nothing = replace(too_big, systems=replace(too_big.systems, names=()))
    assert deployment_users(nothing, default_run.corpus.files) == []


def test_one_instance_for_several_users_keeps_each_user_s_values_apart(
        default_run, default_params, tmp_path):
    """The generated deployment: mem0 partitions by user_id, so no context holds another
    user's value; each user's deleted facts are audited as that user's."""
    from membench.commands.systems_run import deployment_users
    from membench.systems.deployment import run_system_deployment

    users = deployment_users(default_params, default_run.corpus.files)
    assert [u.name for u in users] == ["u001", "u002"]
    (tmp_path / "s").mkdir()
    run = run_system_deployment(SYSTEMS["mem0_qdrant"], users, FORGET_API,
                                default_params.policies, embed, tmp_path / "s", backend_files,
                                fork_in(tmp_path))
    assert len(run.rows) == sum(len(u.scenario.probes) for u in users)
    assert {r.user for r in run.rows} == {"u001", "u002"}
    assert not any(r.cross_user_leak for r in run.rows)
    assert Counter(r.outcome for r in run.rows if r.deleted)["leaked"] == 0
    deleted = {(u.name, f.key) for u in users for f in u.scenario.facts
               if f.deleted_at is not None}
    assert {(r.user, r.fact_key) for r in run.at_rest if r.remedy == "none"} == deleted


def test_a_langgraph_store_as_long_term_memory(default_run, default_params, tmp_path):
    """LangGraph's SqliteStore, one namespace per user, written per turn: its API deletion
    keeps deleted values out of the context; VACUUM is audited as its remedy."""
    runs = {mode: run("langgraph_sqlite", mode, default_run.scenario, default_params.policies,
                      tmp_path) for mode in (FORGET_TURN, FORGET_API)}
    assert Counter(r.outcome for r in deleted_probes(runs[FORGET_API]))["leaked"] == 0
    for result in runs.values():
        assert len(result.result.outcomes) == len(default_run.scenario.probes)
        assert {r.remedy for r in result.at_rest} == {"none", "vacuum"}
    held = [r for r in runs[FORGET_TURN].at_rest if r.remedy == "none"]
    assert held and all(r.places == ("store database",) for r in held)


class _Litterer(_NonText):
    """Keeps nothing, but writes a file where its class attribute says."""

    id = "litterer"
    where = "cwd"

    def observe(self, turn: Turn) -> None:
        target = {"cwd": Path.cwd(), "beside": self.directory.parent}[self.where]
        (target / "litter.txt").write_text("kept")

    def context(self, user_id, question, k):
        return []


@pytest.mark.parametrize("where", ["cwd", "beside"])
def test_a_system_writing_outside_its_directory_is_named(where, default_run, default_params,
                                                         tmp_path, monkeypatch):
    """Writes into the working directory, or next to its own directory, stop the run with
    the system and the path named."""
    from dataclasses import replace

    from membench.commands.systems_run import run_named_systems
    from membench.retrieval.embedding_cache import EmbeddingCache

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_Litterer, "where", where)
    SYSTEMS.add(_Litterer.id, _Litterer)
    try:
        p = replace(default_params, systems=replace(default_params.systems,
                                                    names=(_Litterer.id,)))
        cache = EmbeddingCache()
        texts = list(dict.fromkeys(t for t in (
            [turn.text for e in default_run.scenario.exchanges
             for turn in turns_of(default_run.scenario, e)]
            + [q.question for q in default_run.scenario.probes])))
        for text, vector in zip(texts, embed(texts), strict=True):
            cache.put(p.embedding.model, text, vector)
        with pytest.raises(ValueError, match=r"system litterer wrote outside its directory: "
                                             r".*litter\.txt"):
            run_named_systems(p, default_run.scenario, count_tokens, cache, lambda _: None)
    finally:
        SYSTEMS._entries.pop(_Litterer.id)


def test_a_system_given_whole_exchanges_writes_each_before_it_is_read(tmp_path):
    """WritesExchanges: a user turn waits for its reply; a lone turn is written before the
    next, and before any read, forget, remedy or close."""
    from membench.systems.base import Forget, WritesExchanges

    class Notes(MemorySystem):
        id, label, install = "notes", "notes", "-"

        def __init__(self, directory, embed):
            super().__init__(directory, embed)
            self.written: list[list[str]] = []

        def observe(self, turn):
            raise AssertionError("the mixin observes")

        def context(self, user_id, question, k):
            return [str(len(self.written))]

        def forget(self, request):
            pass

    class Exchanges(WritesExchanges, Notes):  # as mem0_qdrant_infer and langmem_sqlite
        def write_exchange(self, turns):
            self.written.append([t.role for t in turns])

    system = Exchanges(tmp_path, embed)
    for role in ("user", "assistant", "user", "user"):
        system.observe(Turn("u", 1, role, "text", 0))
    assert system.written == [["user", "assistant"], ["user"]]
    assert system.context("u", "?", 1) == ["3"]  # the waiting turn first
    system.observe(Turn("u", 2, "user", "forget it", 1))
    system.forget(Forget("u", "k", ("v",)))
    assert system.written[-1] == ["user"] and len(system.written) == 4
    system.close()
    assert len(system.written) == 4


@pytest.mark.slow
def test_systems_on_two_workers_give_the_runs_of_one_process(default_run, default_params,
                                                             monkeypatch):
    """Each system in each mode, on the story and on the deployment, is a unit of the
    executor: two Dask workers give the same runs, in the same order, as the stage's own
    process (membench.commands.system_units)."""
    from dataclasses import replace

    from membench.commands.systems_run import deployment_users, run_named_systems
    from membench.retrieval.embedding_cache import EmbeddingCache
    from membench.systems.run import system_texts

    p = replace(default_params, systems=replace(
        default_params.systems, names=("mem0_faiss", "langgraph_sqlite")))
    users = deployment_users(p, default_run.corpus.files)
    texts = list(dict.fromkeys(system_texts(default_run.scenario) + [
        text for user in users for text in system_texts(user.scenario)]))
    cache = EmbeddingCache()
    for text, vector in zip(texts, embed(texts), strict=True):
        cache.put(p.embedding.model, text, vector)
    runs = {}
    for workers in ("0", "2"):
        monkeypatch.setenv("MEMBENCH_WORKERS", workers)
        runs[workers] = run_named_systems(p, default_run.scenario, count_tokens, cache,
                                          lambda _: None, users)
    assert [(r.system, r.mode) for r in runs["0"].runs] == [
        (name, mode) for name in p.systems.names for mode in (FORGET_TURN, FORGET_API)]
    assert len(runs["0"].deployment) == 4
    assert runs["2"] == runs["0"]


class _Noting(_NonText):
    """Embeds, once, a note it makes up: a text no turn or probe holds (as a system's model
    extracting a memory would)."""

    id = "noting"
    note = "a note that no turn of the story holds"

    def observe(self, turn: Turn) -> None:
        if not getattr(self, "noted", False):
            self.noted = True
            self.embed([self.note])

    def context(self, user_id, question, k):
        return []


def _quiet(_: str) -> None:
    pass


def test_a_text_a_system_makes_up_is_embedded_as_it_runs_and_joins_the_stage_s_cache(
        default_run, default_params, monkeypatch):
    """On a worker the unit's cache is a copy: the unit gives back what it embedded, the
    real encoder's vector, and the stage's own cache (which it writes) gets it."""
    import pickle
    from dataclasses import replace

    from membench.commands.system_units import SystemsInputs, SystemUnit, run_system_unit
    from membench.commands.systems_run import run_named_systems
    from membench.retrieval import embedding
    from membench.retrieval.embedding_cache import EmbeddingCache, text_sha256
    from membench.systems.run import system_texts

    model = default_params.embedding.model
    texts = list(dict.fromkeys(system_texts(default_run.scenario)))
    SYSTEMS.add(_Noting.id, _Noting)
    try:
        cache = EmbeddingCache()
        for text, vector in zip(texts, embed(texts), strict=True):
            cache.put(model, text, vector)
        inputs = SystemsInputs(default_run.scenario, (), default_params.policies, model, 8,
                               cache, count_tokens, _quiet)
        copy = pickle.loads(pickle.dumps(inputs))  # what a worker unpickles
        result = run_system_unit(copy, SystemUnit(_Noting.id, FORGET_TURN, False))
        [(text, vector)] = result.embedded
        expected = embedding.embed([_Noting.note], embedding.load_model(model))[0]
        assert text == _Noting.note
        np.testing.assert_array_equal(vector, expected)
        assert (model, text_sha256(_Noting.note)) not in cache

        monkeypatch.setenv("MEMBENCH_WORKERS", "0")
        p = replace(default_params, systems=replace(default_params.systems,
                                                    names=(_Noting.id,)))
        run_named_systems(p, default_run.scenario, count_tokens, cache, _quiet)
        np.testing.assert_array_equal(cache.embed(model, [_Noting.note], None)[0], expected)
    finally:
        SYSTEMS._entries.pop(_Noting.id)
