"""Each stage through the typer app, in a scratch directory: outputs, schemas, failures."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from membench.cli import app
from membench.io import answer_tables, backend_tables, system_tables, tables
from membench.io.datasets import read_user_batches
from membench.io.written_datasets import read_written
from membench.memory.policies import POLICIES

# One worker runs the module: its `pipeline` fixture runs every stage.
pytestmark = pytest.mark.xdist_group("cli_stages")
runner = CliRunner()
DVC_YAML = yaml.safe_load((Path(__file__).parents[1] / "dvc.yaml").read_text())
STAGES = ["corpus", "generate", "scenario", "embed_turns", "extract", "index", "embed",
          "policies", "reader", "extraction", "backends", "multiseed", "users", "systems", "plots",
          "report"]
# Filler replies of 4 lines, not 30, in the pipeline fixture: the embed stage and the
# in-memory rerun embed every filler text, and the encoder's time grows with the tokens.
FILLER_LINES = 4
# Two backends that need no server keep the pipeline fixture fast; tests/test_backends.py
# runs every backend, and the e2e test the default list.
FAST_BACKENDS = ["sqlite", "langgraph_memory"]
OUTPUTS = ["data/corpus.parquet", "data/scenario", "data/fact_records.parquet",
           "data/index.parquet", "data/outcomes.parquet", "data/contexts.parquet",
           "data/stored.parquet", "data/audit.parquet", "data/embeddings.parquet", "data/embedding_cache.parquet",
           "reports/multiseed.json", "reports/plots/cost_quality.json",
           "reports/plots/outcomes.json", "reports/plots/by_day.json",
           "reports/plots/cost_quality.svg", "reports/plots/outcomes.svg",
           "reports/plots/by_day.svg", "reports/report.md", "reports/summary.json",
           "reports/metrics.json", "data/users_outcomes",
           "data/generated/scenario.toml", "data/turn_embeddings.parquet",
           "data/turn_embedding_cache.parquet", "reports/extraction.json",
           "reports/plots/extraction_sweep.json", "reports/plots/extraction_sweep.svg",
           "data/backend_parity.parquet", "data/backend_rankings.parquet",
           "data/backend_at_rest.parquet", "reports/backends.json",
           "data/users_embedding_cache.parquet", "data/system_outcomes.parquet",
           "data/system_users_outcomes.parquet",
           "data/system_at_rest.parquet", "reports/systems.json",
           "data/systems_embedding_cache.parquet", "data/answers.parquet", "reports/answers.json",
           "data/model/reader-responses.jsonl", "data/model/extract-responses.jsonl"]


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def make_workspace(root: Path, target: Path, corpus_dir: Path, **overrides) -> Path:
    (target / "data").mkdir(parents=True)
    for name in ("scenario.toml", "article.toml"):
        shutil.copy(root / "data" / name, target / "data" / name)
    shutil.copy(root / "dvc.yaml", target / "dvc.yaml")  # the charts' definitions
    # The committed response caches: the reader's policies inject no filler, so their
    # contexts, and the model's answers, do not depend on the small corpus. The LLM
    # extractor's do: the corpus's draws change the order of the filler questions, so it
    # is off here (tests/test_pipeline_e2e.py replays it on the default story).
    (target / "data" / "model").mkdir()
    for cache in ("reader-responses.jsonl", "extract-responses.jsonl"):
        shutil.copy(root / "data/model" / cache, target / "data/model")
    shutil.copytree(root / ".dvc" / "plots", target / ".dvc" / "plots")
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["scenario"]["corpus"] = {"source": str(corpus_dir), "glob": "*.py", "exclude": []}
    params["backends"]["names"] = FAST_BACKENDS
    params["llm_extractor"]["run"] = False
    for dotted, value in overrides.items():
        section, key = dotted.split("__")
        params[section][key] = value
    (target / "params.yaml").write_text(yaml.safe_dump(params))
    return target


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory) -> Path:
    """Forty files of numbered lines: fast to read and free of fact values."""
    corpus = tmp_path_factory.mktemp("corpus")
    for i in range(40):
        (corpus / f"module_{i:02}.py").write_text(
            "\n".join(f"value_{i}_{j} = compute({j})" for j in range(80)) + "\n")
    return corpus


def run(*args: str):
    return runner.invoke(app, list(args))


def stage(name: str, *extra: str, **paths: str):
    """The stage's command as dvc.yaml runs it, with some paths replaced (out=...) and
    extra arguments appended."""
    words = shlex.split(DVC_YAML["stages"][name]["cmd"])
    assert words[:2] == ["membench", name]
    for option, path in paths.items():
        flag = "--" + option.replace("_", "-")
        words[words.index(flag) + 1] = path
    return run(*words[1:], *extra)


def test_every_path_of_a_stage_is_passed_by_dvc_yaml():
    """Each out and each data dep of a stage appears in its cmd, so no path lives in code."""
    for name, spec in DVC_YAML["stages"].items():
        words = shlex.split(spec["cmd"])
        outs = [next(iter(o)) if isinstance(o, dict) else o
                for o in spec["outs"] + spec.get("metrics", [])]
        data = [d for d in spec.get("deps", []) if not d.startswith(("stages/", "src/", "${"))]
        for path in outs + data:
            assert path in words or any(path.startswith(w + "/") for w in words), (name, path)


@pytest.fixture(scope="module")
def pipeline(repo_root, small_corpus, tmp_path_factory):
    workspace = make_workspace(repo_root, tmp_path_factory.mktemp("ws"), small_corpus,
                               multiseed__seeds=[42, 7], extraction_sweep__seeds=[1],
                               extraction_sweep__rates=[0.0, 0.5],
                               scenario__lines_per_reply=FILLER_LINES,
                               systems__names=["langgraph_sqlite"])
    cwd = Path.cwd()
    try:
        import os
        os.chdir(workspace)
        results = {name: stage(name) for name in STAGES}
    finally:
        os.chdir(cwd)
    return workspace, results


def test_every_stage_succeeds_and_writes_its_outputs(pipeline):
    workspace, results = pipeline
    for stage, result in results.items():
        assert result.exit_code == 0, (stage, result.output)
    for output in OUTPUTS:
        assert (workspace / output).exists(), output


@pytest.mark.parametrize("path,schema", [
    ("data/scenario/exchanges.parquet", tables.EXCHANGES_SCHEMA),
    ("data/scenario/facts.parquet", tables.FACTS_SCHEMA),
    ("data/scenario/probes.parquet", tables.PROBES_SCHEMA),
    ("data/fact_records.parquet", tables.RECORDS_SCHEMA),
    ("data/index.parquet", tables.INDEX_SCHEMA),
    ("data/outcomes.parquet/_common_metadata", tables.OUTCOMES_FILE_SCHEMA),
    ("data/contexts.parquet/_common_metadata", tables.CONTEXTS_SCHEMA),
    ("data/stored.parquet", tables.STORED_SCHEMA),
    ("data/audit.parquet", tables.AUDIT_SCHEMA),
    ("data/corpus.parquet", tables.CORPUS_SCHEMA),
    ("data/users_outcomes/_common_metadata", tables.USER_OUTCOMES_FILE_SCHEMA),
    ("data/backend_parity.parquet", backend_tables.BACKEND_PARITY_SCHEMA),
    ("data/backend_rankings.parquet", backend_tables.BACKEND_RANKINGS_SCHEMA),
    ("data/backend_at_rest.parquet", backend_tables.BACKEND_AT_REST_SCHEMA),
    ("data/system_outcomes.parquet",
     system_tables.system_outcomes_schema(tables.OUTCOMES_SCHEMA)),
    ("data/system_at_rest.parquet", system_tables.SYSTEM_AT_REST_SCHEMA),
    ("data/answers.parquet", answer_tables.ANSWERS_SCHEMA),
])
def test_parquet_files_have_the_documented_schema(pipeline, path, schema):
    workspace, _ = pipeline
    assert pq.read_schema(workspace / path).equals(schema, check_metadata=False)


def test_the_reader_replays_the_committed_cache_without_a_model(pipeline, repo_root):
    """No model configured: every answer comes from the committed cache, the same answers
    the default pipeline reports, and the cache file is rewritten byte for byte."""
    workspace, _ = pipeline
    cache = "data/model/reader-responses.jsonl"
    assert (workspace / cache).read_bytes() == (repo_root / cache).read_bytes()
    assert json.loads((workspace / "reports/answers.json").read_text()) == \
        json.loads((repo_root / "reports/answers.json").read_text())
    assert "## What the model did with it" in (workspace / "reports/report.md").read_text()


def test_an_extraction_request_missing_from_the_cache_stops_the_stage(pipeline, tmp_path,
                                                                      monkeypatch):
    workspace, _ = pipeline
    params = yaml.safe_load((workspace / "params.yaml").read_text())
    params["llm_extractor"].update(run=True, max_tokens=63)  # requests none has cached
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.chdir(workspace)
    before = (workspace / "data/model/extract-responses.jsonl").read_bytes()
    result = stage("extraction", "--params", str(tmp_path / "params.yaml"),
                   out=str(tmp_path / "extraction.json"))
    assert result.exit_code == 1
    assert "model requests are not in the response cache" in result.output
    assert not (tmp_path / "extraction.json").exists()
    assert (workspace / "data/model/extract-responses.jsonl").read_bytes() == before


def test_a_reader_request_missing_from_the_cache_stops_the_stage(pipeline, tmp_path,
                                                                 monkeypatch):
    workspace, _ = pipeline
    params = yaml.safe_load((workspace / "params.yaml").read_text())
    params["reader"]["max_tokens"] = 7  # other requests: none of them is cached
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.chdir(workspace)
    result = stage("reader", "--params", str(tmp_path / "params.yaml"),
                   out=str(tmp_path / "answers.parquet"), summary=str(tmp_path / "a.json"))
    assert result.exit_code == 1
    assert "model requests are not in the response cache" in result.output
    assert "model.base_url" in result.output
    assert not (tmp_path / "answers.parquet").exists() and not (tmp_path / "a.json").exists()


@pytest.mark.model
def test_a_local_model_fills_the_cache_and_a_run_without_it_replays_it(pipeline, tmp_path,
                                                                        monkeypatch):
    """`model.base_url: local`: the stage starts llama.cpp's server (the `model` extra),
    asks what the cache lacks and adds the answers; the same stage with no model then gives
    the same bytes from the cache alone, and leaves no server behind."""
    workspace, _ = pipeline
    params = yaml.safe_load((workspace / "params.yaml").read_text())
    params["reader"].update(policies=["profile"], max_tokens=6)
    params["model"]["base_url"] = "local"
    (tmp_path / "local.yaml").write_text(yaml.safe_dump(params))
    params["model"]["base_url"] = ""
    (tmp_path / "none.yaml").write_text(yaml.safe_dump(params))
    cache = tmp_path / "cache.jsonl"
    shutil.copy(workspace / "data/model/reader-responses.jsonl", cache)
    before = len(cache.read_text().splitlines())
    monkeypatch.chdir(workspace)
    outputs = {"cache": str(cache), "out": str(tmp_path / "a.parquet"),
               "summary": str(tmp_path / "a.json")}
    filled = stage("reader", "--params", str(tmp_path / "local.yaml"), **outputs)
    assert filled.exit_code == 0, filled.output
    assert len(cache.read_text().splitlines()) > before
    first = {name: (tmp_path / name).read_bytes() for name in ("a.parquet", "a.json",
                                                                "cache.jsonl")}
    replayed = stage("reader", "--params", str(tmp_path / "none.yaml"), **outputs)
    assert replayed.exit_code == 0, replayed.output
    assert {name: (tmp_path / name).read_bytes() for name in first} == first


def test_outcomes_hold_one_row_per_policy_form_probe(pipeline):
    """Read as hive readers do: the one user's partition, its seed and user as columns."""
    workspace, _ = pipeline
    outcomes = pq.read_table(workspace / "data/outcomes.parquet").to_pylist()
    assert len(outcomes) == len(POLICIES) * 80
    assert {r["form"] for r in outcomes} == {"literal", "paraphrase"}
    assert {(r["seed"], r["user"]) for r in outcomes} == {(42, "user")}  # the story names none
    contexts = pq.read_table(workspace / "data/contexts.parquet").to_pylist()
    assert "context" not in outcomes[0] and len(contexts) == len(outcomes)
    full = [c for c in contexts if c["policy"] == "full_transcript" and c["day"] == 30]
    assert full and all(len(c["context"]) > 10_000 for c in full)


def test_stage_outputs_match_the_in_memory_bench(pipeline, default_params):
    """The staged pipeline and `bench` run the same core: identical outcomes."""
    from dataclasses import replace

    from membench.commands.inmemory import run_in_memory
    from membench.params import CorpusParams

    workspace, _ = pipeline
    params = yaml.safe_load((workspace / "params.yaml").read_text())
    c = params["scenario"]["corpus"]
    scenario = replace(default_params.scenario, corpus=CorpusParams(c["source"], c["glob"], ()),
                       lines_per_reply=FILLER_LINES)
    memory = run_in_memory(replace(default_params, scenario=scenario), root=workspace,
                           dense=True)
    outcomes = read_written(workspace / "data/outcomes.parquet")
    contexts = read_written(workspace / "data/contexts.parquet")
    assert contexts.select(tables.CONTEXT_KEYS).equals(outcomes.select(tables.CONTEXT_KEYS))
    staged = tables.result_from_tables(
        outcomes.add_column(tables.OUTCOMES_SCHEMA.get_field_index("context"),
                            tables.OUTCOMES_SCHEMA.field("context"), contexts.column("context")),
        pq.read_table(workspace / "data/stored.parquet"))
    assert staged == memory.result


BAD_PARAMS = [
    ({"scenario__sessions": -3}, "scenario.sessions"),
    ({"policies__retrieval_top_k": 0}, "policies.retrieval_top_k"),
    ({"policies__hybrid_top_k": 0}, "policies.hybrid_top_k"),
    ({"scenario__probe_days": [10, 20, 31]}, "scenario.probe_days"),
    ({"scenario__exchanges_per_session": 0}, "scenario.exchanges_per_session"),
    ({"scenario__sede": 4}, "scenario.sede"),
    ({"policies__window": 20}, "policies.window"),
    ({"extract__extractor": "llm"}, "extract.extractor"),
    ({"report__measured": "yesterday"}, "report.measured"),
    ({"multiseed__seeds": []}, "multiseed.seeds"),
    ({"multiseed__seeds": [1, 1]}, "multiseed.seeds"),
]


@pytest.mark.parametrize("overrides,named", BAD_PARAMS)
@pytest.mark.parametrize("name", STAGES + ["bench"])
def test_invalid_params_stop_every_stage_and_write_nothing(
        repo_root, small_corpus, tmp_path, monkeypatch, overrides, named, name):
    monkeypatch.chdir(make_workspace(repo_root, tmp_path, small_corpus, **overrides))
    result = stage(name) if name != "bench" else run("bench")
    assert result.exit_code != 0
    assert named in result.output
    assert not (tmp_path / "reports").exists()
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["article.toml", "model",
                                                                     "scenario.toml"]
    assert sorted(p.name for p in (tmp_path / "data/model").iterdir()) == [
        "extract-responses.jsonl", "reader-responses.jsonl"]


def test_missing_corpus_is_named(repo_root, tmp_path, monkeypatch):
    monkeypatch.chdir(make_workspace(repo_root, tmp_path, tmp_path / "no-such-dir"))
    result = stage("corpus")
    assert result.exit_code == 1
    assert "scenario.corpus.source" in result.output
    assert not (tmp_path / "data/corpus.parquet").exists()


def test_corpus_too_small_for_a_reply_is_named(repo_root, tmp_path, monkeypatch):
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    (tiny / "short.py").write_text("x = 1\n" * 10)
    monkeypatch.chdir(make_workspace(repo_root, tmp_path / "ws", tiny))
    assert stage("corpus").exit_code == 0
    result = stage("scenario")
    assert result.exit_code == 1
    assert "corpus" in result.output and "30 lines" in result.output
    assert not (tmp_path / "ws/data/scenario").exists()


def test_bad_scenario_file_is_named(repo_root, small_corpus, tmp_path, monkeypatch):
    monkeypatch.chdir(make_workspace(repo_root, tmp_path, small_corpus))
    spec = tmp_path / "data/scenario.toml"
    spec.write_text(spec.read_text().replace('value = "Node 24"', 'value = "Node 26"'))
    assert stage("corpus").exit_code == 0
    result = stage("scenario")
    assert result.exit_code == 1
    assert "does not contain value 'Node 26'" in result.output
    assert not (tmp_path / "data/scenario").exists()


def test_tampered_vocabulary_stops_policies_without_output(pipeline, tmp_path, monkeypatch):
    workspace, _ = pipeline
    monkeypatch.chdir(workspace)
    bad = tmp_path / "o200k_base.tiktoken"
    bad.write_bytes(b"not a vocabulary\n")
    result = stage("policies", "--vocabulary", str(bad), outcomes=str(tmp_path / "o.parquet"),
                   contexts=str(tmp_path / "c.parquet"), stored=str(tmp_path / "s.parquet"),
                   audit=str(tmp_path / "a.parquet"))
    assert result.exit_code == 1
    assert "SHA-256" in result.output
    assert not list(tmp_path.glob("*.parquet"))


def test_report_holds_the_multiseed_table_and_charts(pipeline):
    workspace, _ = pipeline
    report = (workspace / "reports/report.md").read_text()
    assert "## Across seeds" in report and "seeds 42, 7" in report
    assert "### Which findings hold on every seed" in report
    for name in ("cost_quality", "outcomes", "by_day"):
        assert f"](plots/{name}.svg)" in report


def test_report_refuses_a_multiseed_file_for_other_policies(pipeline, tmp_path, monkeypatch):
    import json
    workspace, _ = pipeline
    monkeypatch.chdir(workspace)
    data = json.loads((workspace / "reports/multiseed.json").read_text())
    for entry in data["runs"]:
        del entry["counts"]["profile"]
    stale = tmp_path / "multiseed.json"
    stale.write_text(json.dumps(data))
    result = stage("report", multiseed=str(stale), out=str(tmp_path / "r.md"),
                   metrics=str(tmp_path / "m.json"), summary=str(tmp_path / "s.json"))
    assert result.exit_code == 1
    assert "rerun the multiseed stage" in result.output
    assert not any((tmp_path / n).exists() for n in ("r.md", "m.json", "s.json"))


def test_unknown_embedding_model_says_how_to_install(repo_root, small_corpus, tmp_path,
                                                     monkeypatch):
    monkeypatch.chdir(make_workspace(repo_root, tmp_path, small_corpus))
    params = yaml.safe_load((tmp_path / "params.yaml").read_text())
    params["embedding"]["model"] = "someone/unshipped-model"
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    for name in ("corpus", "scenario", "extract"):
        assert stage(name).exit_code == 0
    result = stage("embed")
    assert result.exit_code == 1
    assert "unshipped-model" in result.output and "pip install" in result.output
    assert not (tmp_path / "data/embeddings.parquet").exists()


def test_policies_without_embeddings_fail_cleanly(pipeline, tmp_path, monkeypatch):
    workspace, _ = pipeline
    monkeypatch.chdir(workspace)
    result = stage("policies", embeddings=str(tmp_path / "none.parquet"),
                   outcomes=str(tmp_path / "o.parquet"), contexts=str(tmp_path / "c.parquet"))
    assert result.exit_code == 1
    assert "none.parquet is missing" in result.output
    assert not (tmp_path / "o.parquet").exists() and not (tmp_path / "c.parquet").exists()


def test_dense_policies_ran_from_cached_vectors(pipeline):
    workspace, _ = pipeline
    outcomes = pq.read_table(workspace / "data/outcomes.parquet").to_pylist()
    dense = [r for r in outcomes if r["policy"] == "dense_transcript"]
    assert len(dense) == 80
    assert all(len(r["retrieved"]) == 5 for r in dense)  # top-k whatever the scores


def test_a_stage_needs_its_paths(pipeline, monkeypatch):
    """No default path in code: a stage run without the paths dvc.yaml passes stops."""
    workspace, _ = pipeline
    monkeypatch.chdir(workspace)
    result = run("index")
    assert result.exit_code == 2
    assert "Missing option" in result.output


def test_users_stage_and_report_section_on_a_generated_deployment(pipeline, tmp_path,
                                                                  monkeypatch):
    """A generated 3-user story through `membench generate`, the users stage and the report:
    cross-user leaks with shared stores, none namespaced; the report and metrics show them."""
    import json

    workspace, results = pipeline
    assert "Many users" not in (workspace / "reports/report.md").read_text()  # one user
    monkeypatch.chdir(workspace)
    params = yaml.safe_load(Path("params.yaml").read_text())
    story = tmp_path / "story.toml"
    params["scenario"]["file"] = str(story)
    params["generate"].update(users=3, facts=4)
    params["users"] = {"dense": False}  # dense in many-users mode: tests/test_users.py
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    flags = ("--params", str(tmp_path / "params.yaml"))
    assert run("generate", "--out", str(story), *flags).exit_code == 0
    scenario = tmp_path / "scenario"  # names its user: the policies stage's partition
    result = stage("scenario", *flags, out=str(scenario))
    assert result.exit_code == 0, result.output
    assert json.loads((scenario / "manifest.json").read_text())["user"] == "u001"
    assert "user" not in json.loads((workspace / "data/scenario/manifest.json").read_text())
    out = tmp_path / "users"
    result = stage("users", *flags, out=str(out), cache=str(tmp_path / "cache.parquet"))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "cache.parquet").is_file()
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet")) == [
        f"seed={params['scenario']['seed']}/user={user}/part-0.parquet"
        for user in ("u001", "u002", "u003")]
    monkeypatch.setenv("MEMBENCH_WORKERS", "2")  # the units on Dask workers: same bytes
    on_workers = tmp_path / "users-on-workers"
    result = stage("users", *flags, out=str(on_workers), cache=str(tmp_path / "c2.parquet"))
    assert result.exit_code == 0, result.output
    assert "on a local Dask cluster of 2 worker(s)" in result.output
    assert tree_bytes(on_workers) == tree_bytes(out)
    rows = tables.user_outcomes_from_table(pa.Table.from_batches(
        read_user_batches(out, tables.USER_OUTCOMES_SCHEMA, 1 << 20)))
    assert {r.user for r in rows} == {"u001", "u002", "u003"}
    leaks = {mode: sum(r.cross_user_leak for r in rows if r.mode == mode)
             for mode in ("namespaced", "shared")}
    assert leaks["namespaced"] == 0 and leaks["shared"] > 0
    report, metrics = workspace / "reports/report.md", tmp_path / "metrics.json"
    result = stage("report", users=str(out), metrics=str(metrics),
                   summary=str(tmp_path / "summary.json"))
    assert result.exit_code == 0, result.output
    assert "## Many users in one deployment" in report.read_text()
    counts = json.loads(metrics.read_text())["multi_user"]["modes"]
    assert sum(c["cross_user_leak"] for c in counts["shared"].values()) == leaks["shared"]
    stage("report")  # the single-user report again, for the other tests


def test_backends_reproduce_the_in_memory_outcomes_and_the_report_shows_them(pipeline):
    workspace, _ = pipeline
    parity = pq.read_table(workspace / "data/backend_parity.parquet").to_pylist()
    assert {r["backend"] for r in parity} == set(FAST_BACKENDS)
    assert parity and all(r["same_outcome"] and r["same_context"] for r in parity)
    report = (workspace / "reports/report.md").read_text()
    assert "## Deleted, but still on disk" in report
    assert "| `sqlite` | `profile` | vacuum | nowhere | nowhere |" in report


@pytest.mark.parametrize("section,value,named", [
    ("names", ["sqlite", "oracle"], "backends.names"),
    ("stores", ["profile", "diary"], "backends.stores"),
    ("names", [], "backends.names"),
])
def test_bad_backends_params_stop_the_stage_and_write_nothing(
        pipeline, tmp_path, monkeypatch, section, value, named):
    workspace, _ = pipeline
    params = yaml.safe_load((workspace / "params.yaml").read_text())
    params["backends"][section] = value
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.chdir(workspace)
    result = stage("backends", "--params", str(tmp_path / "params.yaml"),
                   parity=str(tmp_path / "p.parquet"), summary=str(tmp_path / "s.json"))
    assert result.exit_code != 0 and named in result.output
    assert not (tmp_path / "p.parquet").exists() and not (tmp_path / "s.json").exists()


def test_the_systems_stage_drives_mem0_and_the_report_shows_it(pipeline):
    workspace, _ = pipeline
    summary = json.loads((workspace / "reports/systems.json").read_text())
    [entry] = summary["systems"]
    assert entry["system"] == "langgraph_sqlite" and entry["ran"]
    assert summary["deployment"]["users"] == 2 and set(entry["users"]) == {"forget_turn",
                                                                          "forget_api"}
    users = pq.read_table(workspace / "data/system_users_outcomes.parquet")
    assert set(users.column("user").to_pylist()) == {"u001", "u002"}
    outcomes = pq.read_table(workspace / "data/system_outcomes.parquet")
    probes = pq.read_table(workspace / "data/scenario/probes.parquet").num_rows
    assert outcomes.num_rows == 2 * probes  # both forget modes
    report = (workspace / "reports/report.md").read_text()
    assert "## Memory systems, through their own write path" in report
    assert "| `langgraph_sqlite` | `forget_api` | none |" in report


def test_a_system_not_installed_is_reported_not_run(pipeline, tmp_path, monkeypatch):
    """The stage names the install command and the report says so; nothing else changes."""
    import importlib.util

    from membench.plugins import load_plugins

    load_plugins("systems")
    workspace, _ = pipeline
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "sqlite_vec" else real(name, *a))
    monkeypatch.chdir(workspace)
    summary = tmp_path / "systems.json"
    result = stage("systems", out=str(tmp_path / "o.parquet"),
                   users_out=str(tmp_path / "u.parquet"), at_rest=str(tmp_path / "a.parquet"),
                   summary=str(summary), cache=str(tmp_path / "c.parquet"))
    assert result.exit_code == 0, result.output
    [entry] = json.loads(summary.read_text())["systems"]
    assert not entry["ran"] and "sqlite_vec is not installed: pip install" in entry["reason"]
    assert pq.read_table(tmp_path / "o.parquet").num_rows == 0


def test_an_unknown_system_is_a_params_error(pipeline, tmp_path, monkeypatch):
    workspace, _ = pipeline
    params = yaml.safe_load((workspace / "params.yaml").read_text())
    params["systems"]["names"] = ["mem1"]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.chdir(workspace)
    result = stage("systems", "--params", str(tmp_path / "params.yaml"),
                   out=str(tmp_path / "o.parquet"))
    assert result.exit_code != 0
    assert "systems.names: unknown system(s) ['mem1']" in result.output
    assert not (tmp_path / "o.parquet").exists()


def test_a_system_asking_the_model_without_its_answers_stops_the_stage(pipeline, tmp_path,
                                                                       monkeypatch):
    """mem0 with infer=True and no model: its first request is not in the (empty) cache,
    so the stage stops naming the system and the count, and writes nothing."""
    workspace, _ = pipeline
    params = yaml.safe_load((workspace / "params.yaml").read_text())
    params["systems"]["names"] = ["mem0_qdrant_infer"]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.chdir(workspace)
    outputs = {"out": str(tmp_path / "o.parquet"), "model_cache": str(tmp_path / "m.jsonl")}
    result = stage("systems", "--params", str(tmp_path / "params.yaml"), **outputs)
    assert result.exit_code == 1
    assert "system mem0_qdrant_infer failed in observe" in result.output
    assert "model requests are not in the response cache" in result.output
    assert not (tmp_path / "o.parquet").exists() and not (tmp_path / "m.jsonl").exists()


def test_an_unreachable_dask_scheduler_stops_the_stage_in_one_line(pipeline, tmp_path,
                                                                  monkeypatch):
    """Dask's own configuration names the cluster; nothing is written when it is not there."""
    import socket

    import dask.config

    workspace, _ = pipeline
    monkeypatch.chdir(workspace)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{probe.getsockname()[1]}"  # closed once the block ends
    out = tmp_path / "multiseed.json"
    with dask.config.set({"scheduler-address": address}):
        result = stage("multiseed", out=str(out))
    assert result.exit_code == 1, result.output
    assert result.output.strip().splitlines()[-1].startswith(
        f"membench multiseed: error: cannot reach the Dask scheduler at {address}: ")
    assert not out.exists()
