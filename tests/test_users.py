"""Many users: the cross-user leak on a hand-made two-user deployment whose outcomes are
known by hand, namespaced against shared stores."""

import tomllib

import pytest
from params_yaml import PARAMS

from membench.extraction.extractors import EXTRACTORS
from membench.memory.policies import POLICIES
from membench.plugins import load_plugins
from membench.scenario.build import CorpusText, ScenarioShape
from membench.scenario.deployment import build_user_scenarios
from membench.scenario.spec import parse_scenario_spec
from membench.scoring.users import (
    NAMESPACED,
    SHARED,
    LeakClassifier,
    build_deployment,
    deployment_units,
    run_deployment,
    unit_sizes,
    user_counts,
)

# ana says her region on day 1; ben says his on day 2, then changes it on day 3.
STORY = """
reference_sessions = 3
filler_reply = "Here is the relevant code:"
acknowledgement = "Noted: {value}."
deletion_reply = "Understood, it is forgotten."
distractors = ["How do I paginate a large result set?"]
user = "ana"

[[facts]]
key = "region"
literal = "Which region do we deploy to?"
paraphrase = "Where does prod live?"
versions = [{ day = 1, slot = 1, value = "eu-west-1", statement = "We deploy to eu-west-1." }]

[[users]]
name = "ben"
[[users.facts]]
key = "region"
versions = [
  { day = 2, slot = 1, value = "us-east-2", statement = "We deploy to us-east-2." },
  { day = 3, slot = 1, value = "ap-south-1", statement = "We deploy to ap-south-1 now." },
]
"""
CORPUS = (CorpusText("f.py", tuple(f"x = {j}" for j in range(20))),)


@pytest.fixture(scope="module")
def rows():
    load_plugins()
    spec = parse_scenario_spec(tomllib.loads(STORY))
    users = build_user_scenarios(spec, CORPUS, ScenarioShape(1, 3, 3, (3,), 2))
    deployment = build_deployment(users, EXTRACTORS["perfect"])
    policies = [POLICIES[p](PARAMS.policies) for p in ("full_transcript", "profile")]
    found = run_deployment(deployment, policies)
    return {(r.mode, r.policy, r.user): r for r in found if r.form == "literal"}


def test_namespaced_stores_never_leak_across_users(rows):
    for policy in ("full_transcript", "profile"):
        assert (rows[(NAMESPACED, policy, "ana")].outcome, rows[(NAMESPACED, policy, "ana")]
                .cross_user_leak) == ("current", False)
        ben = rows[(NAMESPACED, policy, "ben")]
        assert ben.cross_user_leak is False and ben.changes == 1
    assert rows[(NAMESPACED, "full_transcript", "ben")].outcome == "conflict"
    assert rows[(NAMESPACED, "profile", "ben")].outcome == "current"


def test_shared_profile_overwrites_ana_with_bens_value(rows):
    # one profile line per key, whoever said it last: ben's current value
    ana = rows[(SHARED, "profile", "ana")]
    assert (ana.outcome, ana.cross_user_leak) == ("missing", True)
    # ben's probe gets the same single line: his own current value, nothing of ana's
    ben = rows[(SHARED, "profile", "ben")]
    assert (ben.outcome, ben.cross_user_leak, ben.injected_lines) == ("current", False, 1)


def test_shared_transcript_holds_everyones_values(rows):
    ana = rows[(SHARED, "full_transcript", "ana")]
    assert (ana.outcome, ana.cross_user_leak) == ("current", True)
    ben = rows[(SHARED, "full_transcript", "ben")]
    assert (ben.outcome, ben.cross_user_leak) == ("conflict", True)


def test_leak_counts_per_mode(rows):
    counts = user_counts(list(rows.values()))
    assert counts["modes"][NAMESPACED]["profile"]["cross_user_leak"] == 0
    assert counts["modes"][SHARED]["full_transcript"]["cross_user_leak"] == 2
    assert counts["by_changes"][NAMESPACED]["full_transcript"]["1"] == \
        {"probes": 1, "conflict": 1, "stale": 0}


def test_classifier_reads_values_per_line():
    spec = parse_scenario_spec(tomllib.loads(STORY))
    classifier = LeakClassifier({"ana": spec.facts, "ben": spec.users[0].facts})
    lines = ("[day 2] ben: We deploy to us-east-2.", "[day 1] ana: We deploy to eu-west-1.")
    assert classifier.classify("ana", "region", 3, lines) == ("current", True)
    assert classifier.classify("ben", "region", 3, lines[:1]) == ("stale", False)
    assert classifier.classify("ana", "region", 3, ()) == ("missing", False)


def _bag_of_words(text: str):
    """A stand-in embedding (no model): hashed word counts, unit length, on the grid."""
    import hashlib

    import numpy as np

    from membench.retrieval.dense import snap_to_grid
    from membench.scenario.text import tokens

    vector = np.zeros(384)
    for word in tokens(text):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % 384] += 1.0
    return snap_to_grid(vector / np.linalg.norm(vector))


def test_dense_policies_run_in_both_modes_and_leak_only_shared():
    from membench.memory.policies import build_policies, embedded_stores, needs_embeddings
    from membench.retrieval.embedding_cache import text_sha256
    from membench.scoring.users import deployment_texts

    load_plugins()
    spec = parse_scenario_spec(tomllib.loads(STORY))
    deployment = build_deployment(
        build_user_scenarios(spec, CORPUS, ScenarioShape(1, 3, 3, (2, 3), 2)),
        EXTRACTORS["perfect"])
    dense = [p for p in build_policies(PARAMS.policies) if needs_embeddings(p)]
    texts = deployment_texts(deployment, embedded_stores(dense))
    assert "ana: Which region do we deploy to?" in texts
    vectors = {text_sha256(t): _bag_of_words(t) for t in texts}  # every text the runs need
    found = run_deployment(deployment, dense, vectors=vectors)
    assert {(r.mode, r.policy) for r in found} == {(m, p.id) for m in (NAMESPACED, SHARED)
                                                   for p in dense}
    assert not any(r.cross_user_leak for r in found if r.mode == NAMESPACED)
    shared = {(r.policy, r.user, r.day, r.form): r for r in found if r.mode == SHARED}
    assert shared[("dense_transcript", "ana", 3, "literal")].cross_user_leak  # ben's region


def test_unit_sizes_are_the_exchanges_each_unit_holds_over_the_probe_days():
    """What the executor scales the first unit's time by (3 days of 3 exchanges a user)."""
    load_plugins()
    spec = parse_scenario_spec(tomllib.loads(STORY))
    users = build_user_scenarios(spec, CORPUS, ScenarioShape(1, 3, 3, (2, 3), 2))
    deployment = build_deployment(users, EXTRACTORS["perfect"])
    units = deployment_units(deployment)
    assert units == [(SHARED, 3), (SHARED, 2), (NAMESPACED, 0), (NAMESPACED, 1)]
    # shared: both users' exchanges up to the day; a user's own: 6 on day 2 plus 9 on day 3
    assert unit_sizes(deployment, units) == [18, 12, 15, 15]
