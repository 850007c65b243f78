import pickle
from dataclasses import replace

import pytest

from membench.io.scenario_file import read_scenario_spec
from membench.scenario.build import (
    CorpusText,
    ScenarioBuildError,
    ScenarioShape,
    build_scenario,
    place_facts,
    stretch_day,
)
from membench.scenario.model import ExchangeKind
from membench.scenario.spec import ScenarioSpecError, parse_scenario_spec
from membench.scenario.text import has

CORPUS = tuple(CorpusText(f"f{i}.py", tuple(f"line {i} {j}" for j in range(60)))
               for i in range(5))


@pytest.fixture(scope="module")
def spec(repo_root):
    return read_scenario_spec(repo_root / "data/scenario.toml")


def shape(**changes):
    values = {"seed": 42, "sessions": 30, "exchanges_per_session": 12, "probe_days": (10, 20, 30),
                  "lines_per_reply": 30}
    values.update(changes)
    return ScenarioShape(**values)


def test_the_fact_table_of_the_article(spec):
    assert len(spec.facts) == 15
    assert sum(len(f.versions) > 1 for f in spec.facts) == 8
    assert sum(f.deletion is not None for f in spec.facts) == 2
    on_call = next(f for f in spec.facts if f.key == "on_call")
    assert [v.day for v in on_call.versions] == [6, 16, 27]
    assert on_call.values() == ("Priya", "Marco", "Priya")


def test_same_seed_same_scenario_other_seed_other_filler(spec):
    a = build_scenario(spec, CORPUS, shape())
    assert a == build_scenario(spec, CORPUS, shape())
    b = build_scenario(spec, CORPUS, shape(seed=7))
    assert [e.user for e in a.exchanges] != [e.user for e in b.exchanges]
    assert [e.fact_key for e in a.exchanges] == [e.fact_key for e in b.exchanges]


def test_exchanges_are_dated_and_filler_quotes_code(spec):
    s = build_scenario(spec, CORPUS, shape())
    node = next(e for e in s.exchanges if e.fact_key == "node_version")
    assert node.line() == "[day 8] user: Services run on Node 20. / assistant: Noted: Node 20."
    filler = next(e for e in s.exchanges if e.kind is ExchangeKind.FILLER)
    reply = filler.assistant.split("\n")
    assert reply[0] == "Here is the relevant code:" and len(reply) == 31
    deletion = next(e for e in s.exchanges if e.kind is ExchangeKind.DELETION)
    assert deletion.user == "Please forget my phone number." and deletion.day == 20


def test_filler_never_contains_a_fact_value(spec):
    poisoned = CORPUS + (CorpusText("bad.py", tuple("Node 20 here" for _ in range(40))),)
    s = build_scenario(spec, poisoned, shape())
    values = [v for f in s.facts for v in f.values()]
    for e in s.exchanges:
        if e.kind is ExchangeKind.FILLER:
            assert not any(has(e.assistant, v) for v in values)


def test_session_count_stretches_the_timeline(spec):
    assert stretch_day(14, 60, 30) == 28
    assert stretch_day(1, 15, 30) == 1
    facts = {f.key: f for f in place_facts(spec, shape(sessions=60))}
    assert [v.day for v in facts["on_call"].versions] == [12, 32, 54]
    assert facts["phone_number"].deleted_at == 40
    s = build_scenario(spec, CORPUS, shape(sessions=60, probe_days=(20, 40, 60)))
    assert len(s.exchanges) == 720


def test_compressed_timeline_keeps_event_order_within_a_day(spec):
    facts = place_facts(spec, shape(sessions=3))
    for fact in facts:
        order = [(v.day, v.slot) for v in fact.versions]
        if fact.deletion:
            order.append((fact.deletion.day, fact.deletion.slot))
        assert order == sorted(order) and len(set(order)) == len(order)


def test_too_many_events_for_a_day_names_the_param(spec):
    with pytest.raises(ScenarioBuildError, match="exchanges_per_session"):
        place_facts(spec, shape(sessions=2, exchanges_per_session=4))


def test_spec_rejects_unknown_fields_and_bad_values():
    base = {"reference_sessions": 30, "filler_reply": "Here:", "acknowledgement": "Noted: {value}.",
            "deletion_reply": "Done.", "distractors": ["Why?"],
            "facts": [{"key": "a", "literal": "q?", "paraphrase": "p?",
                       "versions": [{"day": 1, "slot": 1, "statement": "It is X1.",
                                     "value": "X1"}]}]}
    parse_scenario_spec(base)
    with pytest.raises(ScenarioSpecError, match="unknown key.*scenario.extra"):
        parse_scenario_spec({**base, "extra": 1})
    bad_day = {**base, "facts": [{**base["facts"][0], "versions": [
        {"day": 31, "slot": 1, "statement": "It is X1.", "value": "X1"}]}]}
    with pytest.raises(ScenarioSpecError, match="reference_sessions"):
        parse_scenario_spec(bad_day)
    with pytest.raises(ScenarioSpecError, match="distractors"):
        parse_scenario_spec({**base, "distractors": ["Is it X1?"]})


def _through_by_filter(scenario, day):
    first = scenario.first_day(day)
    return tuple(e for e in scenario.exchanges if first <= e.day <= day)


def test_exchanges_through_is_each_days_filter_in_or_out_of_day_order(spec):
    s = build_scenario(spec, CORPUS, shape())
    joined = replace(s, segments=(("a", 1, 12), ("b", 13, 30)))
    shuffled = replace(s, exchanges=s.exchanges[::-1])  # out of day order: no bisection
    for scenario in (s, joined, shuffled):
        before = pickle.dumps(scenario)
        for day in range(0, 32):
            assert scenario.exchanges_through(day) == _through_by_filter(scenario, day)
        assert pickle.dumps(scenario) == before  # the days' cache does not travel
        assert pickle.loads(before).exchanges_through(30) == _through_by_filter(scenario, 30)
