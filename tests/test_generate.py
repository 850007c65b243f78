"""The story generator: deterministic by seed, the asked shape, a valid scenario file."""

import tomllib
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from membench.io.scenario_file import scenario_toml
from membench.scenario.build import CorpusText, ScenarioShape, build_scenario
from membench.scenario.generate import GenerateError, GenerateSettings, generate_scenario
from membench.scenario.model import ProbeForm
from membench.scenario.spec import ScenarioSpecError, parse_scenario_spec
from membench.scenario.text import ValueFinder, has, tokens

CORPUS = tuple(CorpusText(f"f{i}.py", tuple(f"x = {i} + {j}" for j in range(40)))
               for i in range(4))


def settings(**changes):
    values = {"facts": 40, "changes": (0, 1, 3), "deleted_share": Fraction(1, 4),
              "sessions": 30, "users": 1, "seed": 7}
    values.update(changes)
    return GenerateSettings(**values)


def spec_of(data):
    return parse_scenario_spec(tomllib.loads(scenario_toml(data)))


def test_same_seed_same_story_other_seed_other_story():
    assert scenario_toml(generate_scenario(settings())) == \
        scenario_toml(generate_scenario(settings()))
    assert generate_scenario(settings())["facts"] != generate_scenario(settings(seed=8))["facts"]


def test_facts_changes_and_deleted_share():
    spec = spec_of(generate_scenario(settings()))
    assert len(spec.facts) == 40 and len({f.key for f in spec.facts}) == 40
    assert [len(f.versions) - 1 for f in spec.facts] == [(0, 1, 3)[i % 3] for i in range(40)]
    assert sum(f.deletion is not None for f in spec.facts) == 10
    for fact in spec.facts:
        values = fact.values()
        assert len(set(values)) == len(values)
        days = [v.day for v in fact.versions] + ([fact.deleted_at] if fact.deletion else [])
        assert days == sorted(set(days)) and max(days) <= 30
    domains = {f.key.split("_")[0] for f in spec.facts}
    assert len(domains) >= 6  # the domains take turns


def test_probes_literal_and_paraphrase_for_every_stated_fact():
    spec = spec_of(generate_scenario(settings(facts=12)))
    built = build_scenario(spec, CORPUS, ScenarioShape(1, 30, 12, (10, 30), 2))
    for day in (10, 30):
        stated = [f for f in spec.facts if f.versions[0].day <= day]
        probes = [p for p in built.probes if p.day == day]
        assert len(probes) == 2 * len(stated)
    fact = spec.facts[0]
    literal = next(p for p in built.probes if p.fact_key == fact.key
                   and p.form is ProbeForm.LITERAL)
    paraphrase = next(p for p in built.probes if p.fact_key == fact.key
                      and p.form is ProbeForm.PARAPHRASE)
    statement = set(tokens(fact.versions[0].statement))
    assert len(set(tokens(literal.question)) & statement) > \
        len(set(tokens(paraphrase.question)) & statement)


def test_users_share_keys_and_timeline_never_values():
    data = generate_scenario(settings(facts=10, users=4))
    spec = spec_of(data)
    assert spec.user == "u001" and [u.name for u in spec.users] == ["u002", "u003", "u004"]
    stories = [spec.facts] + [u.facts for u in spec.users]
    for facts in stories[1:]:
        assert [f.key for f in facts] == [f.key for f in spec.facts]
        assert [[v.day for v in f.versions] for f in facts] == \
            [[v.day for v in f.versions] for f in spec.facts]
    values = [v for facts in stories for f in facts for v in f.values()]
    finder = ValueFinder(values)
    # one value per fact, user and version, and none inside another
    assert all(finder.found(value) == {i} for i, value in enumerate(values))


def test_more_facts_than_the_templates_hold_is_an_error():
    with pytest.raises(GenerateError, match="at most"):
        generate_scenario(settings(facts=100_000))
    with pytest.raises(GenerateError, match="sessions"):
        generate_scenario(settings(facts=3, sessions=2))


def test_another_users_keys_must_match():
    data = generate_scenario(settings(facts=3, users=2))
    data["users"][0]["facts"] = data["users"][0]["facts"][:2]
    with pytest.raises(ScenarioSpecError, match="keys of"):
        spec_of(data)


@given(st.text(alphabet="ab1 -_.\n", max_size=40),
       st.lists(st.text(alphabet="ab1 -", min_size=1, max_size=6), min_size=1, max_size=4))
def test_value_finder_matches_has(text, candidates):
    values = [v for v in candidates if tokens(v)]
    finder = ValueFinder(values)
    assert finder.found(text) == {i for i, v in enumerate(values) if has(text, v)}


@pytest.mark.parametrize("change,message", [
    ({"bogus": 1}, "generate.bogus"),
    ({"deleted_share": 1.5}, "generate.deleted_share"),
    ({"changes": []}, "generate.changes"),
    ({"users": 0}, "generate.users"),
])
def test_generate_params_are_validated(change, message):
    from membench.params import ParamsError, generate_settings

    section = {"facts": 5, "changes": [0, 2], "deleted_share": 0.2, "sessions": 30,
               "users": 2, "seed": 1}
    assert generate_settings(section).deleted_share == Fraction(1, 5)
    with pytest.raises(ParamsError, match=message):
        generate_settings({**section, **change})
