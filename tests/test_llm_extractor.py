"""The LLM extractor's logic without a model: its replies parsed, its decisions applied to
the memory, and, given the answers a perfect model would give (read from the gold labels by
this test), the records it writes score perfectly with the extraction-quality machinery.
The real model answers in tests/test_model_server.py and the extraction stage's tests."""

from __future__ import annotations

import re

import pytest

from membench.extraction.llm import (
    Decision,
    LlmExtractSettings,
    llm_extraction,
    parse_candidates,
    parse_decision,
)
from membench.extraction.quality import measure
from membench.extraction.records import RecordAction
from membench.model.requests import ChatRequest
from membench.scenario.model import Exchange, ExchangeKind, Scenario

SETTINGS = LlmExtractSettings(max_tokens=64, memories_shown=10, seed=0)


@pytest.mark.parametrize("reply,expected", [
    ("NONE", []),
    ("FACT: The user lives in Lisbon.", [("fact", "The user lives in Lisbon.")]),
    ("fact: a\n- FACT: b\nsomething else", [("fact", "a"), ("fact", "b")]),
    ("FORGET: the user's phone number", [("forget", "the user's phone number")]),
    ("Sure! Here is some code.", None),
    ("NONESUCH: x", None),
])
def test_extraction_replies_are_parsed_line_by_line(reply, expected):
    got = parse_candidates(reply)
    assert (None if got is None else [(k.value, t) for k, t in got]) == expected


@pytest.mark.parametrize("reply,expected", [
    ("ADD", (Decision.ADD, None)),
    ("UPDATE m2", (Decision.UPDATE, "m2")),
    ("update [M2] because it changed", (Decision.UPDATE, "m2")),
    ("DELETE m1", (Decision.DELETE, "m1")),
    ("NONE", (Decision.NONE, None)),
    ("UPDATE m9", (Decision.UNPARSED, None)),  # a memory it was not shown
    ("UPDATE", (Decision.UNPARSED, None)),
    ("I think so.\nADD", (Decision.ADD, None)),
    ("Maybe.", (Decision.UNPARSED, None)),
])
def test_decisions_name_a_shown_memory_or_are_unparsed(reply, expected):
    assert parse_decision(reply, ["m1", "m2"]) == expected


def _last(request: ChatRequest) -> str:
    return request.messages[-1][1]


def gold_model(scenario: Scenario):
    """The replies of a model that extracts and decides as the gold labels say: each fact
    turn restated, each forget request named, each change an UPDATE of its fact's memory."""
    key_of = {e.user: e.fact_key for e in scenario.exchanges if e.fact_key}
    kind_of = {e.user: e.kind for e in scenario.exchanges}

    def reply(request: ChatRequest) -> str:
        text = _last(request)
        if text.startswith("Message: "):
            turn = text.removeprefix("Message: ")
            if kind_of[turn] is ExchangeKind.STATEMENT:
                return f"FACT: {turn}"
            return f"FORGET: {turn}" if kind_of[turn] is ExchangeKind.DELETION else "NONE"
        listed, asked = text.split("\n\n")
        candidate = asked.split(": ", 1)[1]
        for line in listed.splitlines()[1:]:
            memory, memory_text = line.split(": ", 1)
            if key_of[memory_text] == key_of[candidate]:
                return f"{'DELETE' if asked.startswith('Forget') else 'UPDATE'} {memory}"
        return "NONE" if asked.startswith("Forget") else "ADD"

    return lambda requests: [reply(r) for r in requests]


def test_a_model_that_answers_as_the_gold_says_extracts_perfectly(default_run):
    scenario = default_run.scenario
    extraction = llm_extraction(scenario, SETTINGS, gold_model(scenario))
    quality = measure(scenario, extraction.records).as_json()
    assert quality["detection_precision"] == quality["detection_recall"] == 1.0
    assert quality["update_accuracy"] == quality["deletion_recall"] == 1.0
    assert quality["false_merges"] == quality["false_deletions"] == 0
    summary = extraction.summary()
    assert summary["turns_read"] == len({e.user for e in scenario.exchanges})
    assert summary["decisions"]["delete"] == sum(e.kind is ExchangeKind.DELETION
                                                 for e in scenario.exchanges)


def turns(*texts: str) -> Scenario:
    exchanges = tuple(Exchange(i, i + 1, 1, ExchangeKind.FILLER, text, "ok")
                      for i, text in enumerate(texts))
    return Scenario(len(texts), 1, 0, (), exchanges, ())


def scripted(replies: dict[str, str], asked: list[ChatRequest]):
    """Replies by the request's last message (a regex), recording every request."""
    def ask(requests):
        asked.extend(requests)
        return [next(r for pattern, r in replies.items() if re.search(pattern, _last(q)))
                for q in requests]
    return ask


def test_decisions_write_update_and_delete_the_extractors_own_memories():
    scenario = turns("I use vim.", "Now I use emacs.", "How do I sort a list?",
                     "Forget my editor.", "I use vim.")
    asked: list[ChatRequest] = []
    ask = scripted({r"^Message: I use vim": "FACT: The user uses vim.",
                    r"^Message: Now I use emacs": "FACT: The user uses emacs.",
                    r"^Message: Forget": "FORGET: the user's editor",
                    r"^Message: ": "NONE",
                    r"New fact: The user uses emacs": "UPDATE m1",
                    r"Forget: the user's editor": "DELETE m1",
                    r"New fact: The user uses vim": "ADD"}, asked)
    extraction = llm_extraction(scenario, SETTINGS, ask)
    assert [(r.key, r.action, r.value, r.day) for r in extraction.records] == [
        ("m1", RecordAction.SET, "The user uses vim.", 1),
        ("m1", RecordAction.SET, "The user uses emacs.", 2),
        ("m1", RecordAction.DELETE, None, 4),
        ("m2", RecordAction.SET, "The user uses vim.", 5)]
    # the first fact had nothing to compare with, and the last found an empty memory:
    # neither asked; each distinct turn read once, in one batch
    assert [s.asked for s in extraction.steps] == [False, True, True, False]
    assert sum(_last(q).startswith("Message: ") for q in asked) == 4
    assert extraction.summary()["decisions"] == {"add": 2, "update": 1, "delete": 1,
                                                 "none": 0, "unparsed": 0}


def test_a_reply_that_decides_nothing_keeps_the_fact_and_removes_nothing():
    scenario = turns("I use vim.", "I like tea.", "Forget my editor.")
    ask = scripted({r"^Message: I use": "FACT: The user uses vim.",
                    r"^Message: I like": "FACT: The user likes tea.",
                    r"^Message: Forget": "FORGET: the editor",
                    r"New fact|Forget:": "Let me think about it."}, [])
    extraction = llm_extraction(scenario, SETTINGS, ask)
    assert [(r.key, r.action) for r in extraction.records] == [
        ("m1", RecordAction.SET), ("m2", RecordAction.SET)]
    assert [s.decision for s in extraction.steps] == [Decision.ADD, Decision.UNPARSED,
                                                      Decision.UNPARSED]


def test_only_the_most_alike_memories_are_shown():
    scenario = turns(*(f"My server number {n} runs Linux." for n in range(5)),
                     "My laptop runs macOS.")
    asked: list[ChatRequest] = []
    ask = scripted({r"^Message: My server number (\d)": "FACT: server runs Linux",
                    r"^Message: My laptop": "FACT: The laptop runs macOS.",
                    r"New fact": "ADD"}, asked)
    llm_extraction(scenario, LlmExtractSettings(64, 2, 0), ask)
    last = _last(asked[-1])
    assert last.count("\nm") == 2 and "macOS" in last.split("\n\n")[1]
