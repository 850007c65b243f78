"""Plugins: a policy, a retriever and an extractor from their own module reach every run,
and no registry lets a name be registered twice."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import replace
from importlib.metadata import EntryPoint

import pyarrow.parquet as pq
import pytest
from params_yaml import PARAMS

from membench import plugins
from membench.commands.inmemory import run_in_memory
from membench.extraction.extractors import EXTRACTORS, RecordAction, register_extractor
from membench.io.scenario_file import read_scenario_spec
from membench.memory.policies import (
    POLICIES,
    RetrievalPolicy,
    build_policies,
    embedded_stores,
    register_policy,
    tokenized_stores,
)
from membench.memory.stores import STORES, register_store
from membench.registry import Registry
from membench.reporting import plots
from membench.retrieval.retrievers import PLAIN, RETRIEVERS, Bm25, Retriever
from membench.scoring import metrics
from membench.scoring.audit import run_audit
from membench.scoring.multiseed import SeedInputs, counts_for_seed
from membench.scoring.results import ResultsTable
from membench.scoring.summary import raw_table

REGISTRIES = (POLICIES, STORES, RETRIEVERS, EXTRACTORS)

PLUGIN = textwrap.dedent('''
    """A plugin as another package would ship it: one module, no edit elsewhere."""
    from membench.extraction.extractors import RecordAction, perfect_extractor, register_extractor
    from membench.memory.policies import RetrievalPolicy, register_policy
    from membench.retrieval.retrievers import RETRIEVERS, Retriever


    @RETRIEVERS.register("earliest")
    class Earliest(Retriever):
        """The k oldest documents, whatever the question."""

        def search(self, question, k):
            return list(self.corpus.documents[:k])


    register_policy(order=55)(RetrievalPolicy(
        "earliest_transcript", "transcript", "earliest", "earliest {k} exchanges"))


    @register_extractor("perfect_but_deaf_to_deletes")
    def perfect_but_deaf_to_deletes(scenario):
        return [r for r in perfect_extractor(scenario) if r.action is not RecordAction.DELETE]
''')


@pytest.fixture
def isolated_registries(monkeypatch):
    """Whatever a test registers is gone afterwards, so other tests see the built-ins only
    (loaded first, or a built-in imported during the test would vanish with it)."""
    plugins.load_plugins()
    for registry in REGISTRIES:
        monkeypatch.setattr(registry, "_entries", dict(registry._entries))


@pytest.fixture
def plugin_entry_point(isolated_registries, tmp_path, monkeypatch):
    """A module installed under the membench.plugins entry-point group, as a package's
    pyproject would declare it."""
    name = "membench_test_plugin"
    (tmp_path / f"{name}.py").write_text(PLUGIN, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    fake = [EntryPoint(name="test", value=name, group=plugins.ENTRY_POINT_GROUP)]
    monkeypatch.setattr(plugins, "entry_points",
                        lambda group: fake if group == plugins.ENTRY_POINT_GROUP else [])
    yield
    sys.modules.pop(name, None)


def test_a_plugin_policy_takes_its_declared_row(plugin_entry_point):
    plugins.load_plugins()
    ids = [policy.id for policy in build_policies(PARAMS.policies)]
    assert ids.index("earliest_transcript") == ids.index("profile") + 1
    assert ids[-1] == "memory_tool_profile"  # the built-in plugin is loaded too


def test_a_plugin_reaches_the_bench_the_audit_the_seeds_and_every_table(plugin_entry_point, default_params,
                                                            repo_root):
    params = replace(default_params, extractor="perfect_but_deaf_to_deletes")
    run = run_in_memory(params, root=repo_root)  # loads the plugins itself
    earliest = [r for r in run.result.outcomes if r.policy == "earliest_transcript"]
    assert earliest and all(r.retrieved == (0, 1, 2, 3, 4) for r in earliest)
    # The plugin extractor ignores deletes, so the profile now keeps deleted facts.
    assert not any(r.action is RecordAction.DELETE for r in run.records)
    assert {r.outcome for r in run.result.outcomes
            if r.policy == "profile" and r.deleted} == {"leaked"}
    audited = {row.policy for row in run_audit(run.scenario, run.records, run.policies)}
    assert "earliest_transcript" in audited
    spec = read_scenario_spec(repo_root / params.scenario.file)
    counts = counts_for_seed(SeedInputs(spec, tuple(run.corpus.files), params.scenario.shape(),
                                        params.policies, params.extractor), seed=1)
    assert "earliest_transcript" in counts
    # ... and every table the stages write: metrics, the report's raw table, the charts.
    table = ResultsTable(run.result)
    ids = [policy.id for policy in run.policies]
    assert "earliest_transcript" in metrics.summary(table, ids)
    assert "earliest_transcript" in metrics.detailed(table, ids, max(run.scenario.probe_days))
    labels = {policy.id: policy.label for policy in run.policies}
    assert "earliest 5 exchanges" in raw_table(table, labels, max(run.scenario.probe_days))
    for rows in (plots.cost_quality(table, ids), plots.outcome_bars(table, ids),
                 plots.by_day(table, ids)):
        assert "earliest_transcript" in {row["policy"] for row in rows}


def test_the_stages_corpus_lists_follow_what_each_retriever_declares(isolated_registries):
    @RETRIEVERS.register("embedded_bm25")
    class EmbeddedBm25(Bm25):
        needs_vectors = True

    @RETRIEVERS.register("vectors_only")
    class VectorsOnly(Retriever):
        needs_vectors = True

        def search(self, question, k):
            return []

    register_policy(order=1)(RetrievalPolicy("a", "session", "embedded_bm25", "a"))
    register_policy(order=2)(RetrievalPolicy("b", "profile", "vectors_only", "b"))
    policies = build_policies(PARAMS.policies)
    assert EmbeddedBm25.analyzer == PLAIN
    assert "session" in tokenized_stores(policies) and "session" in embedded_stores(policies)
    assert "profile" not in tokenized_stores(policies) and "profile" in embedded_stores(policies)


def test_every_stage_sees_the_built_in_plugins_without_a_lucky_import(repo_root):
    """A fresh interpreter that only reads params, as each stage does, builds every policy."""
    script = ("from pathlib import Path\n"
              "from membench.commands.parameters import read_params\n"
              "from membench.memory.policies import build_policies\n"
              "p = read_params(Path('params.yaml'))\n"
              "print(' '.join(x.id for x in build_policies(p.policies)))\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=repo_root, check=True,
                         capture_output=True, text=True).stdout.split()
    assert out[-1] == "memory_tool_profile"
    assert out[:6] == ["session_buffer", "full_transcript", "last_n_exchanges", "fact_log",
                       "profile", "bm25_transcript"]


@pytest.mark.parametrize("register_again", [
    lambda: register_policy(order=999)(POLICIES["profile"]),
    lambda: register_store("transcript")(lambda memory: []),
    lambda: RETRIEVERS.register("bm25")(Bm25),
    lambda: register_extractor("perfect")(lambda scenario: []),
], ids=["policy", "store", "retriever", "extractor"])
def test_a_name_registered_twice_is_an_error(isolated_registries, register_again):
    before = {registry.kind: dict(registry) for registry in REGISTRIES}
    with pytest.raises(ValueError, match="registered twice"):
        register_again()
    assert {registry.kind: dict(registry) for registry in REGISTRIES} == before


def test_a_registry_iterates_in_declared_order_not_registration_order():
    registry: Registry[str] = Registry("thing")
    registry.add("late", "l", order=30)
    registry.add("b", "b", order=10)
    registry.add("a", "a", order=10)
    assert list(registry) == ["a", "b", "late"]
    with pytest.raises(KeyError, match="unknown thing 'z'; known: a, b, late"):
        registry["z"]


@pytest.mark.slow  # every stage of the pipeline, in process
def test_a_plugin_reaches_every_file_the_stages_write(plugin_entry_point, repo_root, tmp_path,
                                                      monkeypatch):
    """The stage commands themselves, in order, with the plugin installed as a package would
    install it: the fully rendered report, the metrics, the multi-seed counts, the charts and
    the audit all carry its policy, and the report its extractor."""
    from test_cli_stages import FILLER_LINES, STAGES, make_workspace, stage

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(20):
        (corpus / f"module_{i:02}.py").write_text(
            "\n".join(f"value_{i}_{j} = compute({j})" for j in range(80)) + "\n")
    workspace = make_workspace(repo_root, tmp_path / "ws", corpus, multiseed__seeds=[42, 7],
                               extract__extractor="perfect_but_deaf_to_deletes",
                               # short filler and a two-run extraction sweep: the plugin's
                               # reach, not the default story's size, is under test
                               scenario__lines_per_reply=FILLER_LINES,
                               extraction_sweep__seeds=[1], extraction_sweep__rates=[0.0, 0.5],
                               systems__names=[],
                               # its extractor changes the fact log: no committed answers
                               reader__policies=[])
    monkeypatch.chdir(workspace)
    for name in STAGES:
        result = stage(name)
        assert result.exit_code == 0, (name, result.output)
    report = (workspace / "reports/report.md").read_text()
    assert "earliest 5 exchanges" in report and "perfect_but_deaf_to_deletes" in report
    for name in ("reports/summary.json", "reports/metrics.json", "reports/multiseed.json",
                 "reports/plots/cost_quality.json", "reports/plots/outcomes.json",
                 "reports/plots/by_day.json", "reports/plots/outcomes.svg"):
        assert "earliest_transcript" in (workspace / name).read_text(), name
    audit = pq.read_table(workspace / "data/audit.parquet").column("policy").to_pylist()
    assert "earliest_transcript" in audit
