"""The consolidating extractor: no gold label read, paraphrased updates merged, similar but
distinct facts kept apart, forget requests acted on; and on arbitrary chat turns (the shape
of an imported conversation: no fact_key, no fact table)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from params_yaml import PARAMS

from membench.extraction.consolidation import Decision, consolidation_steps
from membench.extraction.detection import CandidateKind, classify
from membench.extraction.extractors import RecordAction, extractor_for, perfect_extractor
from membench.extraction.quality import measure
from membench.retrieval.embedding_cache import text_sha256
from membench.scenario.model import Exchange, ExchangeKind, Scenario


def chat(*turns: str) -> Scenario:
    """One turn a day, as an imported conversation holds them: plain turns, no gold."""
    exchanges = tuple(Exchange(i, i + 1, 1, ExchangeKind.FILLER, text, "ok")
                      for i, text in enumerate(turns))
    return Scenario(len(turns), 1, 0, (), exchanges, ())


@pytest.fixture(scope="module")
def vectors_of(minilm_model):
    from membench.retrieval.embedding import embed

    def vectors(scenario: Scenario) -> dict:
        texts = sorted({e.user for e in scenario.exchanges})
        return {text_sha256(t): v for t, v in zip(texts, embed(texts, minilm_model),
                                                  strict=True)}
    return vectors


@pytest.fixture(scope="module")
def minilm_model():
    from membench.retrieval.embedding import DEFAULT_MODEL_ID, load_model

    return load_model(DEFAULT_MODEL_ID)


@pytest.mark.parametrize("text,kind", [
    ("We deploy to eu-west-2 for now.", CandidateKind.FACT),
    ("Always tabs, not spaces.", CandidateKind.FACT),
    ("Dana owns the payments service.", CandidateKind.FACT),
    ("How do I roll back a failed deploy?", None),
    ("Show me the release script.", None),
    ("Please forget my phone number.", CandidateKind.FORGET),
    ("ok", None),
])
def test_candidate_detection_reads_the_words_only(text, kind):
    assert classify(text) is kind


def test_the_real_extractor_never_reads_gold_labels(default_run):
    """Gold keys and the fact table stripped: the same records, keyed by its own ids."""
    scenario = default_run.scenario
    stripped = replace(scenario, facts=(), probes=(),
                       exchanges=tuple(replace(e, fact_key=None) for e in scenario.exchanges))
    settings = replace(PARAMS.extraction, consolidation=replace(PARAMS.extraction.consolidation,
                                                          similarity="lexical"))
    extract = extractor_for("consolidating", settings)
    records = extract(scenario)
    assert records and records == extract(stripped)
    gold = {f.key for f in scenario.facts}
    assert not {r.key for r in records} & gold


def test_a_paraphrased_update_is_merged_and_a_similar_distinct_fact_is_not(vectors_of):
    scenario = chat("I live in Porto.", "My phone number is 555 0100.",
                    "How do I speed up the linter?", "My personal email is dana@example.org.",
                    "I relocated to Madrid last month.", "Please forget my phone number.")
    steps = consolidation_steps(scenario, PARAMS.extraction.consolidation, vectors_of(scenario))
    decisions = [(s.candidate.text, s.decision, s.memory) for s in steps]
    assert decisions == [
        ("I live in Porto.", Decision.ADD, "m1"),
        ("My phone number is 555 0100.", Decision.ADD, "m2"),
        ("My personal email is dana@example.org.", Decision.ADD, "m3"),  # not the phone
        ("I relocated to Madrid last month.", Decision.UPDATE, "m1"),  # same topic, new words
        ("Please forget my phone number.", Decision.DELETE, "m2"),
    ]


def test_on_plain_chat_turns_it_runs_without_any_gold(vectors_of):
    """An imported conversation: questions and chit-chat skipped, no fact table needed."""
    scenario = chat("Hey, how have you been?", "I went to a support group yesterday.",
                    "That sounds great! What was it like?", "My favourite band is Muse.",
                    "Please forget my favourite band.")
    records = extractor_for("consolidating", PARAMS.extraction, vectors_of(scenario))(scenario)
    assert [(r.key, r.action, r.exchange_index) for r in records] == [
        ("m1", RecordAction.SET, 1), ("m2", RecordAction.SET, 3),
        ("m2", RecordAction.DELETE, 4)]
    quality = measure(scenario, records).as_json()
    assert quality["gold"] == 0 and quality["detection_recall"] is None


def test_a_missing_turn_vector_is_a_clear_error():
    from membench.extraction.similarity import MissingTurnVectorError

    scenario = chat("I live in Porto.", "I moved to Madrid.")
    with pytest.raises(MissingTurnVectorError, match="embed_turns"):
        extractor_for("consolidating", PARAMS.extraction, {})(scenario)


def test_quality_of_the_perfect_extractor_is_perfect(default_run):
    q = measure(default_run.scenario, perfect_extractor(default_run.scenario))
    assert (q.detected, q.detected_gold, q.gold) == (26, 26, 26)
    assert (q.updates, q.updates_correct, q.deletions_recalled) == (9, 9, 2)
    assert not q.events
