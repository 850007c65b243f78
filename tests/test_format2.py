"""Scenario format 2 on a hand-made story (tests/fixtures/format2/story.json): the strict
validator and its JSON Schema, given turns replayed in order, every evidence outcome on a
known probe with the real policies, "X, not Y" corrections, benchmarks of several
scenarios, and the scenario stage refusing a bad file."""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from params_yaml import PARAMS

from membench.extraction.extractors import EXTRACTORS
from membench.io.scenario_file import read_scenario_source
from membench.io.tables import (
    outcomes_table,
    result_from_tables,
    scenario_from_tables,
    scenario_tables,
    stored_table,
)
from membench.memory.policies import build_policies, without_embeddings
from membench.memory.stores import Memory
from membench.reporting.given_sections import given_sections
from membench.retrieval.retrievers import IndexCache
from membench.scenario.build import CorpusText, ScenarioShape
from membench.scenario.format2 import parse_format2
from membench.scenario.given import build_given
from membench.scenario.given_manifest import format2_manifest
from membench.scenario.sources import GivenSource
from membench.scenario.spec import ScenarioSpecError
from membench.scoring.bench import run_bench
from membench.scoring.evidence import EvidenceScorer, holds_line
from membench.scoring.results import ResultsTable

FIXTURE = Path(__file__).parent / "fixtures" / "format2" / "story.json"
SHAPE = ScenarioShape(seed=42, sessions=30, exchanges_per_session=3, probe_days=(30,),
                      lines_per_reply=4)
SCHEMA = json.loads(resources.files("membench.scenario").joinpath("format2.schema.json")
                    .read_text(encoding="utf-8"))


def story() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def build(data: dict, corpus=()):
    return build_given((parse_format2(data),), list(corpus), SHAPE)


def bench(data: dict):
    scenario = build(data)
    records = EXTRACTORS["perfect"](scenario)
    policies = without_embeddings(build_policies(PARAMS.policies))
    result = run_bench(scenario, records, policies,
                       lambda texts: [len("\n".join(lines)) for lines in texts])
    return scenario, {(r.policy, r.probe_id): r for r in result.outcomes}, result


def test_given_turns_are_replayed_in_order_with_their_dates():
    scenario = build(story())
    assert [e.turn_id for e in scenario.exchanges][:5] == ["S1:1", "S1:2", "S1:3", "S1:4",
                                                          "S2:1"]
    assert scenario.exchanges[0].line() == "[day 1, 2024-03-01] Ana: I live in Lisbon these days."
    assert scenario.exchanges[4].line() == "[day 2, 2024-03-08] Ana: Her name is Miso, after the soup."
    assert scenario.probe_days == (2, 4) and scenario.scoring == "evidence"


def test_the_perfect_extractor_builds_records_from_version_and_deletion_turns():
    records = EXTRACTORS["perfect"](build(story()))
    assert [(r.key, r.action.value, r.exchange_index) for r in records] == [
        ("city", "set", 0), ("phone", "set", 3), ("cat_name", "set", 4),
        ("phone", "delete", 5), ("city", "set", 7)]
    # a version stated over two turns is one record, made when its last turn is said
    assert records[2].text == "Ana: I adopted a cat last week. / Ana: Her name is Miso, after the soup."


@pytest.mark.parametrize(("policy", "probe", "outcome"), [
    ("profile", "city-4", "current"),
    ("full_transcript", "city-4", "conflict"),
    ("bm25_transcript", "city-4", "stale"),
    ("session_buffer", "cat-2", "partial"),
    ("session_buffer", "city-4", "missing"),
    ("full_transcript", "phone-4", "leaked"),
    ("profile", "phone-4", "clean"),
    ("full_transcript", "dog-4", "premise"),
    ("session_buffer", "dog-4", "no_premise"),
])
def test_each_evidence_outcome_happens_on_a_known_probe(policy, probe, outcome):
    _, rows, _ = bench(story())
    assert rows[(policy, probe)].outcome == outcome
    assert rows[(policy, probe)].evidence_outcome == outcome


def test_evidence_outcomes_from_hand_made_contexts():
    scenario = build(story())
    records = EXTRACTORS["perfect"](scenario)
    scorer = EvidenceScorer(scenario, records)
    line = {e.turn_id: e.line() for e in scenario.exchanges}
    city, cat = scenario.fact("city"), scenario.fact("cat_name")
    assert scorer.evidence_outcome(city, 4, line["S3:1"]) == "current"
    assert scorer.evidence_outcome(city, 4, f"{line['S1:1']}\n{line['S3:1']}") == "conflict"
    assert scorer.evidence_outcome(city, 4, line["S1:1"]) == "stale"
    assert scorer.evidence_outcome(city, 4, "") == "missing"
    assert scorer.evidence_outcome(cat, 2, line["S1:3"]) == "partial"
    assert scorer.evidence_outcome(cat, 2, f"{line['S1:3']}\n{line['S2:1']}") == "current"
    # a record made from the turns is their evidence: the profile's line for the cat
    assert scorer.evidence_outcome(cat, 2, records[2].line()) == "current"
    # before the correction, Lisbon is current
    assert scorer.evidence_outcome(city, 2, line["S1:1"]) == "current"


def test_a_line_counts_only_whole():
    assert holds_line("a\n[day 1] Ana: Yes\nb", "[day 1] Ana: Yes")
    assert not holds_line("[day 1] Ana: Yes, I did", "[day 1] Ana: Yes")
    assert not holds_line("x[day 1] Ana: Yes", "[day 1] Ana: Yes")
    assert holds_line("     1\t[day 1] Ana: Yes", "[day 1] Ana: Yes")  # a memory-tool view


def test_an_x_not_y_correction_is_no_conflict_for_the_profile_under_evidence_scoring():
    _, rows, result = bench(story())
    profile = [r for r in result.outcomes if r.policy == "profile"]
    assert sum(r.outcome == "conflict" for r in profile) == 0
    # the value rule sees "Porto, not Lisbon" as both values: the one current line conflicts
    assert rows[("profile", "city-4")].value_outcome == "conflict"
    data = story()
    data["scoring"] = "value"
    _, value_rows, _ = bench(data)
    assert value_rows[("profile", "city-4")].outcome == "conflict"
    assert value_rows[("profile", "city-4")].evidence_outcome == "current"


def test_evidence_scoring_does_not_need_the_answer_word_for_word():
    data = story()
    data["facts"][0]["versions"][1]["answers"] = ["Oporto"]  # not in the turn
    _, rows, _ = bench(data)
    assert rows[("profile", "city-4")].evidence_outcome == "current"
    # by value, the only spelling found is the old one the correction names
    assert rows[("profile", "city-4")].value_outcome == "stale"


def test_a_fact_restated_after_its_deletion_is_live_again():
    data = story()
    data["sessions"][3]["turns"].append(
        {"id": "S4:2", "speaker": "Ana", "text": "New number: 555-0199."})
    data["facts"][2]["versions"].append({"turns": ["S4:2"], "value": "555-0199"})
    _, rows, _ = bench(data)
    assert rows[("profile", "phone-4")].outcome == "current"
    assert rows[("full_transcript", "phone-4")].outcome == "conflict"
    assert rows[("profile", "phone-4")].deleted is False


def _broken(path: str, value) -> dict:
    data = story()
    *parents, last = path.split(".")
    node = data
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    if value is KeyError:
        del node[int(last) if last.isdigit() else last]
    else:
        node[int(last) if last.isdigit() else last] = value
    return data


# (mutation, message fragment): structural errors the JSON Schema rejects too
STRUCTURAL = [
    (("colour", "red"), "unknown key(s) scenario.colour"),
    (("format", 3), "format: expected 2"),
    (("probes", KeyError), "missing key(s) scenario.probes"),
    (("id", "has space"), "id: 'has space' may hold only"),
    (("scoring", "exact"), "scoring: expected one of value, evidence"),
    (("sessions.0.turns.0.text", KeyError), "sessions[0].turns[0]: missing key(s)"),
    (("sessions.1.date", "8 March 2024"), "sessions[1].date: expected an ISO date"),
    (("facts.0.versions.0.turns", []), "facts[0].versions[0].turns: expected a non-empty list"),
    (("probes.0.expects", {"fact": "city", "nothing": True}), "probes[0].expects: unknown key"),
    (("probes.0.expects", {"nothing": False}), "probes[0].expects.nothing: expected true"),
    (("probes.0.tags", {"category": 3}), "probes[0].tags.category: expected text"),
    (("probes.0.session", 0), "probes[0].session: expected a whole number >= 1"),
]
# errors in the cross-references, which only the validator checks
REFERENCES = [
    (("facts.0.versions.0.turns", ["S9:9"]), "facts[0].versions[0].turns[0]: no turn has id 'S9:9'"),
    (("sessions.1.turns.0.id", "S1:1"), "sessions: duplicate turn id(s) S1:1"),
    (("sessions.1.number", 3), "sessions[1].number: expected 2"),
    (("sessions.1.date", "2024-02-30"), "sessions[1].date: expected an ISO date"),
    (("facts.0.versions", [{"turns": ["S3:1"], "value": "Porto"},
                           {"turns": ["S1:1"], "value": "Lisbon"}]),
     "facts[0].versions: must be in conversation (turn) order"),
    (("facts.2.deletions", [{"turn": "S1:2"}]), "facts[2].deletions[0]: deletes a fact not yet"),
    (("facts.2.deletions", [{"turn": "S2:2"}, {"turn": "S3:2"}]),
     "facts[2].deletions[1]: deletes a fact already deleted"),
    (("probes.0.session", 5), "probes[0].session: 5 is past the last session (4)"),
    (("probes.1.session", 1), "probes[1].session: 1 is before session 2"),
    (("probes.0.expects", {"fact": "weather"}), "probes[0].expects.fact: no fact has key"),
    (("probes.0.evidence", ["S1:1"]), "probes[0].evidence: only an abstention probe"),
    (("probes.1.id", "city-4"), "probes: duplicate id(s) city-4"),
]


@pytest.mark.parametrize(("mutation", "message"), STRUCTURAL + REFERENCES)
def test_the_validator_names_the_problem(mutation, message):
    with pytest.raises(ScenarioSpecError) as error:
        parse_format2(_broken(*mutation))
    assert message in str(error.value)


def test_the_schema_and_the_validator_agree():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    schema = jsonschema.Draft202012Validator(SCHEMA)
    assert not list(schema.iter_errors(story()))  # valid for both
    parse_format2(story())
    for mutation, _ in STRUCTURAL:
        assert list(schema.iter_errors(_broken(*mutation))), mutation
    for mutation, _ in REFERENCES:  # structure fine: the validator's checks go further
        assert not list(schema.iter_errors(_broken(*mutation))), mutation


def test_sessions_without_turns_are_generated_from_the_filler_block():
    data = story()
    data["sessions"].insert(3, {"number": 4})
    data["sessions"][4]["number"] = 5
    for probe in data["probes"]:
        probe["session"] = min(probe["session"], 5)
    empty = build(data)
    assert not [e for e in empty.exchanges if e.day == 4]  # no filler block: an empty day
    data["filler"] = {"questions": ["How do I sort a list?"], "reply": "Here is code:"}
    corpus = [CorpusText("m.py", tuple(f"x_{i} = {i}" for i in range(20)))]
    filled = build(data, corpus)
    generated = [e for e in filled.exchanges if e.day == 4]
    assert len(generated) == SHAPE.exchanges_per_session
    assert all(e.kind.value == "filler" and e.source.startswith("m.py:") for e in generated)


def _benchmark(tmp_path: Path) -> Path:
    for sid in ("alpha", "beta"):
        data = story()
        data["id"] = sid
        if sid == "beta":  # beta never corrects the city
            data["sessions"][2]["turns"][0]["text"] = "The weather was fine."
            del data["facts"][0]["versions"][1]
        (tmp_path / f"{sid}.json").write_text(json.dumps(data), encoding="utf-8")
    (tmp_path / "manifest.json").write_text("{}", encoding="utf-8")
    return tmp_path


def test_a_benchmark_directory_runs_as_one_with_separate_memories(tmp_path):
    source = read_scenario_source(_benchmark(tmp_path))
    assert isinstance(source, GivenSource) and source.joined
    scenario = build_given(source.specs, [], SHAPE, joined=True)
    assert scenario.segments == (("alpha", 1, 4), ("beta", 5, 8))
    assert scenario.fact("beta/city").versions[0].day == 5
    records = EXTRACTORS["perfect"](scenario)
    memory = Memory(scenario, records, 8, IndexCache())
    assert {e.day for e in memory.exchanges} == {5, 6, 7, 8}
    assert all(r.key.startswith("beta/") for r in memory.records)
    policies = without_embeddings(build_policies(PARAMS.policies))
    result = run_bench(scenario, records, policies, lambda texts: [1] * len(texts))
    rows = {(r.policy, r.probe_id): r.outcome for r in result.outcomes}
    assert rows[("full_transcript", "alpha/city-4")] == "conflict"
    assert rows[("full_transcript", "beta/city-4")] == "current"
    table = ResultsTable(result)
    text = "\n\n".join(given_sections(table, [p.id for p in policies],
                                      format2_manifest(source, scenario), "perfect"))
    assert "## Outcomes by policy (every scenario summed)" in text
    assert "### `alpha`" in text and "### `beta`" in text
    summed = next(line for line in text.splitlines() if line.startswith("| `full_transcript`"))
    # summed: conflict on alpha's city, current on beta's and on both cats
    assert summed.split(" | ")[1:3] == ["3", "1"]


def test_format2_tables_round_trip(tmp_path):
    scenario = build(story())
    manifest = format2_manifest(GivenSource((parse_format2(story()),), False), scenario)
    manifest.update(sessions=scenario.sessions,
                    exchanges_per_session=scenario.exchanges_per_session)
    tables = scenario_tables(scenario)
    assert "turn_id" in tables["exchanges"].schema.names
    again = scenario_from_tables(tables["exchanges"], tables["facts"], tables["probes"],
                                 seed=42, manifest=manifest)
    assert again == scenario
    _, _, result = bench(story())
    table = outcomes_table(result.outcomes)
    assert "evidence_outcome" in table.schema.names
    assert result_from_tables(table, stored_table(result.stored)).outcomes == result.outcomes


def test_the_scenario_stage_refuses_a_bad_file_and_writes_nothing(tmp_path, monkeypatch):
    from test_cli_stages import make_workspace, run

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "m.py").write_text("\n".join(f"x_{i} = {i}" for i in range(60)) + "\n")
    bad = copy.deepcopy(story())
    bad["probes"][0]["expects"] = {"fact": "weather"}
    work = make_workspace(Path(__file__).parents[1], tmp_path / "w", corpus,
                          scenario__file="data/bad.json")
    (work / "data" / "bad.json").write_text(json.dumps(bad), encoding="utf-8")
    monkeypatch.chdir(work)
    assert run("corpus", "--out", "data/corpus.parquet").exit_code == 0
    result = run("scenario", "--corpus", "data/corpus.parquet", "--out", "data/scenario")
    assert result.exit_code == 1
    assert "data/bad.json" in result.output and "no fact has key 'weather'" in result.output
    assert not (work / "data" / "scenario").exists()


CUSTOM_STORY = '''
reference_sessions = 10
filler_reply = "Here is the code:"
acknowledgement = "Noted: {value}."
deletion_reply = "Forgotten."
distractors = ["How do I sort a list?", "Why is my loop slow?"]

[[facts]]
key = "editor"
literal = "Which editor do I use?"
paraphrase = "What do I type code in?"
versions = [
  {day = 2, slot = 1, statement = "I use the Vim editor for everything.", value = "Vim"},
  {day = 8, slot = 1, statement = "Switched to Helix now.", value = "Helix"},
]

[[facts]]
key = "shell"
literal = "Which shell do I use?"
paraphrase = "What runs my terminal commands?"
versions = [{day = 1, slot = 2, statement = "My shell is fish.", value = "fish"}]
'''


def test_a_custom_story_gets_no_article_comparison_and_its_own_stale_trace(
        tmp_path, default_params, repo_root):
    import tomllib
    from dataclasses import replace

    from membench.commands.inmemory import run_in_memory
    from membench.reporting.report import ReportInputs, render_report
    from membench.reporting.story import is_article_story

    (tmp_path / "story.toml").write_text(CUSTOM_STORY, encoding="utf-8")
    p = default_params
    params = replace(p, scenario=replace(p.scenario, file=str(tmp_path / "story.toml"),
                                         sessions=10, probe_days=(5, 10)))
    run = run_in_memory(params, root=repo_root)
    article = tomllib.loads((repo_root / "data/article.toml").read_text(encoding="utf-8"))
    s = run.scenario
    assert not is_article_story(s.facts, article, False)
    text = render_report(ReportInputs(
        header=[("Measured", "test")],
        manifest={"sessions": s.sessions, "exchanges": len(s.exchanges), "facts": 2,
                  "probe_days": [5, 10], "seed": 42},
        labels={policy.id: policy.label for policy in run.policies}, result=run.result,
        exchanges=s.exchanges, article=article, trace_fact="node_version",
        article_story=False, facts=s.facts))
    assert "Beside the article" not in text and "node_version" not in text
    assert 'bm25_transcript, day 10, literal, `editor`: "Which editor do I use?" -> stale' \
        in text
    assert "  [day 2] user: I use the Vim editor for everything." in text
    assert "**Redaction.** Does not apply to this run: no probe on a deleted fact." in text
    assert "8 per policy (4 literal, 4 paraphrase): 8 on live facts (2 of them changed), " \
        "0 on deleted facts" in text


def test_the_default_story_is_the_articles(default_run, repo_root):
    import tomllib

    from membench.reporting.story import is_article_story

    article = tomllib.loads((repo_root / "data/article.toml").read_text(encoding="utf-8"))
    assert is_article_story(default_run.scenario.facts, article, False)
    assert not is_article_story(default_run.scenario.facts, article, True)


def test_a_fully_given_scenario_ignores_the_seed():
    from membench.scenario.sources import seed_matters

    given = GivenSource((parse_format2(story()),), False)
    assert not seed_matters(given)
    data = story()
    data["sessions"].append({"number": 5})
    data["filler"] = {"questions": ["How do I sort a list?"], "reply": "Here:"}
    assert seed_matters(GivenSource((parse_format2(data),), False))
