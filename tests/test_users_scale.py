"""The many-users run at scale: same outcomes as before the scale work, wider value spaces
for hundreds of facts per user, and the BM25 top-k that no longer sorts every document.

The digests were measured with the code before the change (commit 6a9962f): the
generated scenario file's bytes, and every row of a whole multi-user run.
"""

from __future__ import annotations

import hashlib
import tomllib
from fractions import Fraction

import numpy as np
import pytest
from bench_digest import LATER_POLICIES
from hypothesis import given
from hypothesis import strategies as st
from params_yaml import PARAMS

from membench.extraction.extractors import EXTRACTORS
from membench.io.scenario_file import scenario_toml
from membench.memory.policies import build_policies, without_embeddings
from membench.plugins import load_plugins
from membench.retrieval.bm25 import Bm25Index, on_score_grid
from membench.scenario.build import CorpusText, ScenarioShape
from membench.scenario.deployment import build_user_scenarios
from membench.scenario.generate import GenerateSettings, generate_scenario
from membench.scenario.spec import parse_scenario_spec
from membench.scenario.text import ValueFinder, tokens
from membench.scoring.users import LeakClassifier, build_deployment, run_deployment

CORPUS = tuple(CorpusText(f"f{i}.py", tuple(f"x{i} = compute({j}, 'the service')"
                                             for j in range(60))) for i in range(6))


def _toml(**settings) -> str:
    return scenario_toml(generate_scenario(GenerateSettings(**settings)), "c")


@pytest.mark.parametrize("settings,digest", [
    ({"facts": 20, "changes": (0, 1, 2, 3), "deleted_share": Fraction(1, 10), "sessions": 30,
      "users": 1, "seed": 42},
     "ced2987f64c7677766b332ea4841029ddcfb848702adc3602b872af66cf02914"),
    ({"facts": 5, "changes": (0, 1, 2, 3, 4), "deleted_share": Fraction(1, 5), "sessions": 10,
      "users": 100, "seed": 42}, "28e6d60c4022335af14793a1cd59850c90cc9fc8c07bcb16a2ca3a17072c02a7"),
    ({"facts": 200, "changes": (0, 1, 2), "deleted_share": Fraction(1, 10), "sessions": 300,
      "users": 3, "seed": 5}, "fca59776f14cde5af46059f681eec86cf702dc369d6727ec4ed65e8306452edd"),
])
def test_generated_files_keep_their_bytes(settings, digest):
    assert hashlib.sha256(_toml(**settings).encode()).hexdigest() == digest


def _rows_digest(facts, users, sessions, days):
    load_plugins()
    text = _toml(facts=facts, changes=(0, 1, 2, 3, 4), deleted_share=Fraction(1, 5),
                 sessions=sessions, users=users, seed=3)
    spec = parse_scenario_spec(tomllib.loads(text))
    deployment = build_deployment(
        build_user_scenarios(spec, CORPUS, ScenarioShape(1, sessions, 12, days, 3)),
        EXTRACTORS["perfect"])
    policies = [p for p in without_embeddings(build_policies(PARAMS.policies))
                if p.id not in LATER_POLICIES]  # registered after the digests were taken
    rows = run_deployment(deployment, policies)
    h = hashlib.sha256()
    for r in rows:
        h.update(repr(tuple(getattr(r, f) for f in r.__dataclass_fields__)).encode())
    return len(rows), h.hexdigest()


@pytest.mark.parametrize("shape,expected", [
    ((12, 4, 20, (7, 14, 20)),
     (6144, "9bd0dc843185aa159ecfdab7212b231e1f40882ea16f12227d11a470dd72b114")),
    ((30, 3, 30, (10, 30)),
     (7344, "ce67cb81ee80f8df9e13b1414d3f0c6347bfe79792dd523618fe75d4ea325c41")),
])
def test_users_run_outcomes_equal_before(shape, expected):
    assert _rows_digest(*shape) == expected


def test_hundreds_of_facts_per_user_draw_from_wider_spaces():
    """500 facts x 6 users need more regions than the first space holds (1,064): every
    value is still one fact's, one user's and one version's."""
    data = generate_scenario(GenerateSettings(500, (0, 1, 2, 3, 4), Fraction(1, 5), 1000, 6, 42))
    spec = parse_scenario_spec(tomllib.loads(scenario_toml(data, "c")))
    values = [v for facts in [spec.facts] + [u.facts for u in spec.users]
              for f in facts for v in f.values()]
    assert len(values) == 9_000
    regions = [v for facts in [spec.facts] + [u.facts for u in spec.users] for f in facts
               if f.key.startswith("region_") for v in f.values()]
    assert any(int(v.rsplit("-", 1)[1]) > 19 for v in regions)  # from the wider space
    finder = ValueFinder(values)
    assert all(finder.found(value) == {i} for i, value in enumerate(values))
    assert all(tokens(v) for v in values)


def _sorted_top_k(scores: np.ndarray, k: int) -> list[int]:
    """What top_k did before: sort every document, take k, keep those above zero."""
    order = np.argsort(-on_score_grid(scores), kind="stable")
    return [int(i) for i in order[:k] if scores[i] > 0]


@given(st.lists(st.sampled_from([0.0, 1e-9, 2.0 ** -21, 2.0 ** -20, 0.5, 1.0, 1.0 + 4e-15,
                                 2.5, -1.0, -2.0 ** -22]), min_size=1, max_size=40),
       st.integers(1, 45))
def test_top_k_selects_what_a_full_sort_gives(scores, k):
    index = Bm25Index(["a"])
    index._scores_of = lambda words: np.array(scores)  # what top_k ranks
    assert index.top_k("q", k) == _sorted_top_k(np.array(scores), k)
    assert index.top_k("q", 1) == _sorted_top_k(np.array(scores), 1)  # from the kept list


def test_an_injection_starting_with_a_store_is_classified_as_its_lines():
    from membench.scenario.model import Fact, FactVersion

    def fact(key, *values):
        return Fact(key, "q", "p", tuple(FactVersion(d, 1, v, v)
                                         for d, v in enumerate(values, 1)))
    classifier = LeakClassifier({"ana": [fact("region", "eu-west-1", "eu-west-2")],
                                 "ben": [fact("region", "us-east-1")]})
    store = ("ana: eu-west-1", "ben: us-east-1")
    lines = store + ("ana: eu-west-2",)
    assert classifier.classify("ana", "region", 2, lines, [store]) == \
        classifier.classify("ana", "region", 2, lines) == ("conflict", True)
    assert classifier.classify("ben", "region", 2, lines[1:], [store]) == ("current", True)


def test_a_rare_first_word_splits_the_ranking_with_the_same_result(monkeypatch):
    """Queries that start with a user's name, over a store every user writes to: the
    split ranking (shared part without the name, the name's documents apart) equals the
    full sort of the whole query's scores, for every k."""
    import random

    from membench.retrieval import bm25

    monkeypatch.setattr(bm25, "SPLIT_MIN_SIZE", 10)
    split = []
    monkeypatch.setattr(Bm25Index, "_split_best", lambda self, *a, _f=Bm25Index._split_best:
                        split.append(1) or _f(self, *a))
    rng = random.Random(1)
    vocabulary = ["the", "a", "region", "billing", "api", "node", "port", "which", "x", "y"]
    for _ in range(60):
        users = [f"u{i}" for i in range(rng.randint(8, 30))]
        index = Bm25Index([f"{rng.choice(users)}: " + " ".join(
            rng.choice(vocabulary) for _ in range(rng.randint(0, 8)))
            for _ in range(rng.randint(20, 300))])
        for _ in range(10):
            user = rng.choice(users)
            query = f"{user}: " + " ".join(rng.choice(vocabulary + ["unknown"])
                                           for _ in range(rng.randint(1, 6)))
            for k in (1, 3, 5, 12):
                assert index.top_k(query, k) == _sorted_top_k(index.scores(query), k)
    assert len(split) > 100
