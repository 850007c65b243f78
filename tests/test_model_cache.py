"""The model's requests, keys and response cache, in memory and on disk (no model needed:
the client and server are tested against a real server in tests/test_model_server.py)."""

from __future__ import annotations

import json

import pytest

from membench.io.model_cache import cache_text, read_cache
from membench.io.model_client import Endpoint, ModelError, completer
from membench.model.cache import CachedResponse, MissingResponses, ResponseCache, answers
from membench.model.requests import CHAT, ChatRequest, request_key

REQUEST = ChatRequest((("system", "Answer briefly."), ("user", "What is my phone number?")),
                      max_tokens=16, seed=0)


def test_a_request_is_temperature_zero_with_its_seed():
    body = REQUEST.body("m")
    assert body["temperature"] == 0.0 and body["seed"] == 0 and body["max_tokens"] == 16
    assert body["messages"][1] == {"role": "user", "content": "What is my phone number?"}


def test_the_key_depends_on_model_kind_and_every_field_of_the_request():
    key = request_key("m", CHAT, REQUEST.body("m"))
    assert len(key) == 64 and key == request_key("m", CHAT, REQUEST.body("m"))
    assert key != request_key("other", CHAT, REQUEST.body("m"))
    assert key != request_key("m", "completion", REQUEST.body("m"))
    longer = ChatRequest(REQUEST.messages, max_tokens=17, seed=0)
    assert key != request_key("m", CHAT, longer.body("m"))


def test_answers_come_from_the_cache_alone_without_a_model():
    cache = ResponseCache()
    key = request_key("m", CHAT, REQUEST.body("m"))
    cache.add(CachedResponse(key, "m", CHAT, REQUEST.body("m"), "555-0199"))
    assert answers([REQUEST, REQUEST], "m", cache, None, "cache.jsonl") == ["555-0199"] * 2


def test_a_missing_answer_without_a_model_names_how_many_and_how_to_fill_them():
    other = ChatRequest((("user", "Where do I live?"),), max_tokens=16, seed=0)
    with pytest.raises(MissingResponses, match=r"2 of 2 model requests .* cache.jsonl .* "
                                               r"model.base_url"):
        answers([REQUEST, other, REQUEST], "m", ResponseCache(), None, "cache.jsonl")


def test_each_distinct_missing_request_is_sent_once_and_joins_the_cache():
    sent: list[dict] = []

    def complete(bodies, keep):
        sent.extend(bodies)
        for i in range(len(bodies)):
            keep(i, f"answer {i}")
        return [f"answer {i}" for i in range(len(bodies))]

    cache = ResponseCache()
    other = ChatRequest((("user", "Where do I live?"),), max_tokens=16, seed=0)
    got = answers([REQUEST, other, REQUEST], "m", cache, complete, "c")
    assert got == ["answer 0", "answer 1", "answer 0"] and len(sent) == 2 and len(cache) == 2
    assert answers([other], "m", cache, None, "c") == ["answer 1"]


def test_an_interrupted_batch_keeps_the_answers_that_arrived():
    cache = ResponseCache()
    other = ChatRequest((("user", "Where do I live?"),), max_tokens=16, seed=0)

    def complete(bodies, keep):
        keep(1, "Lisbon")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        answers([REQUEST, other], "m", cache, complete, "c")
    assert len(cache) == 1 and answers([other], "m", cache, None, "c") == ["Lisbon"]


def test_the_cache_file_round_trips_sorted_by_key(tmp_path):
    cache = ResponseCache()
    for question in ("b?", "a?", "c?"):
        body = ChatRequest((("user", question),), 8, 0).body("m")
        cache.add(CachedResponse(request_key("m", CHAT, body), "m", CHAT, body, question * 2))
    path = tmp_path / "cache.jsonl"
    path.write_text(cache_text(cache), encoding="utf-8")
    keys = [json.loads(line)["key"] for line in path.read_text().splitlines()]
    assert keys == sorted(keys)
    assert cache_text(read_cache(path)) == path.read_text()
    assert len(read_cache(tmp_path / "absent.jsonl")) == 0


def test_an_edited_cache_line_is_an_error_naming_the_line(tmp_path):
    body = REQUEST.body("m")
    row = {"key": request_key("m", CHAT, body), "model": "m", "kind": CHAT, "request": body,
           "response": "x"}
    path = tmp_path / "cache.jsonl"
    edited = {**row, "request": {**body, "max_tokens": 99}}
    path.write_text(json.dumps(row) + "\n" + json.dumps(edited) + "\n")
    with pytest.raises(ValueError, match=r"cache.jsonl:2: the key is not the SHA-256"):
        read_cache(path)
    path.write_text("{not json\n")
    with pytest.raises(ValueError, match=r"cache.jsonl:1: not JSON"):
        read_cache(path)
    path.write_text(json.dumps({**row, "extra": 1}) + "\n")
    with pytest.raises(ValueError, match=r"cache.jsonl:1: a cached response has exactly"):
        read_cache(path)


def test_two_different_answers_to_one_request_are_an_error():
    key = request_key("m", CHAT, REQUEST.body("m"))
    cache = ResponseCache([CachedResponse(key, "m", CHAT, REQUEST.body("m"), "a")])
    with pytest.raises(ValueError, match="two answers"):
        cache.add(CachedResponse(key, "m", CHAT, REQUEST.body("m"), "b"))


def test_an_unreachable_endpoint_fails_after_its_retries_naming_the_address():
    import socket
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    endpoint = Endpoint(f"http://127.0.0.1:{port}/v1", "", retries=2, backoff_seconds=0.01,
                        timeout_seconds=2)
    with pytest.raises(ModelError, match=rf"127.0.0.1:{port}/v1/chat/completions unreachable "
                                         r"after 3 attempts"):
        completer(endpoint, "test")([REQUEST.body("m")])


# The reader's classification: the values the story knows, no judge.
from membench.scenario.model import Deletion, Fact, FactVersion  # noqa: E402
from membench.scoring.answers import (  # noqa: E402
    Answer,
    ReaderItem,
    ReaderSettings,
    answer_summary,
    classify_answer,
    read_answers,
)

PHONE = Fact("phone", "What is my phone number?", "How can you reach me?",
             (FactVersion(3, 1, "555-0101", "My number is 555-0101."),
              FactVersion(9, 1, "555-0199", "New number: 555-0199.")))
PET = Fact("pet", "What is my pet's name?", "Who is my pet?",
           (FactVersion(2, 1, "Rex", "My dog is Rex."),), Deletion(5, 1, "Forget my dog."))


@pytest.mark.parametrize(("fact", "day", "answer", "expected"), [
    (PHONE, 10, "Your number is 555-0199.", Answer.CURRENT),
    (PHONE, 10, "555-0199, formerly 555-0101", Answer.BOTH),
    (PHONE, 10, "It is 555-0101.", Answer.SUPERSEDED),
    (PHONE, 5, "555-0101", Answer.CURRENT),  # before the change, the first value is current
    (PHONE, 10, "I don't know.", Answer.ABSTAINED),
    (PHONE, 10, "It's 555-0000.", Answer.OTHER),
    (PET, 6, "Your dog is Rex.", Answer.DELETED),
    (PET, 6, "The memory does not mention a pet.", Answer.ABSTAINED),
    (PET, 4, "rex", Answer.CURRENT),
])
def test_an_answer_is_classified_by_the_known_values(fact, day, answer, expected):
    assert classify_answer(fact, day, answer) is expected


def test_the_reader_asks_only_its_policies_and_only_contexts_that_fit():
    items = [ReaderItem("profile", "literal", 10, "phone", "What is my phone number?",
                        "phone: 555-0199", 5, "current"),
             ReaderItem("fact_log", "literal", 10, "phone", "What is my phone number?",
                        "555-0101\n555-0199", 9, "conflict"),
             ReaderItem("fact_log", "literal", 10, "phone", "What is my phone number?",
                        "x " * 50, 50, "missing"),
             ReaderItem("full_transcript", "literal", 10, "phone", "?", "...", 1, "current")]
    asked = []

    def answer_all(requests):
        asked.extend(requests)
        return ["555-0199" for _ in requests]

    settings = ReaderSettings(("profile", "fact_log"), max_tokens=16, max_context_tokens=20,
                              seed=0)
    rows = read_answers(items, {"phone": PHONE}, settings, answer_all)
    assert [r.answer_outcome for r in rows] == ["current", "current", "not_asked"]
    assert len(asked) == 2 and "Memory:\nphone: 555-0199" in asked[0].messages[1][1]
    summary = answer_summary(rows)
    assert summary["fact_log"]["conflicts"] == 1
    assert summary["fact_log"]["conflict_current_rate"] == 1.0
    assert summary["profile"]["conflict_current_rate"] is None
