"""The model client, cache and reader against a real OpenAI-compatible server: llama.cpp's
(the `model` extra) with SmolLM2-135M-Instruct, started and stopped by the fixture through
the code membench runs (membench.io.model_server), never a mock of HTTP. Without the
extra, these tests fail naming the install command: they are never skipped."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from membench.commands.model_calls import model_answers
from membench.extraction.llm import LlmExtractSettings, llm_extraction
from membench.io.model_cache import read_cache
from membench.io.model_client import Endpoint, ModelError, completer
from membench.io.model_server import LocalModelServer, local_model_file
from membench.model.cache import ResponseCache, answers
from membench.model.requests import ChatRequest
from membench.params import ModelParams
from membench.scenario.model import Exchange, ExchangeKind, Fact, FactVersion, Scenario
from membench.scoring.answers import (
    ANSWERS,
    ReaderItem,
    ReaderSettings,
    classify_answer,
    read_answers,
)

pytestmark = pytest.mark.model
MODEL = "SmolLM2-135M-Instruct"
PHONE = Fact("phone", "What is my phone number?", "How can you reach me?",
             (FactVersion(3, 1, "555-0101", "My phone number is 555-0101."),
              FactVersion(9, 1, "555-0199", "My new phone number is 555-0199.")))
CONTEXT = ("[day 3] user: my phone number is 555-0101\n"
           "[day 9] user: my new phone number is 555-0199")


@pytest.fixture(scope="module")
def server():
    with LocalModelServer(MODEL, key_env="MEMBENCH_TEST_MODEL_KEY") as running:
        yield running


def ask_request(question: str, context: str = CONTEXT) -> ChatRequest:
    return ChatRequest((("system", "Answer from the context only, in a few words."),
                        ("user", f"Context:\n{context}\n\nQuestion: {question}")),
                       max_tokens=24, seed=0)


def test_the_client_gets_an_answer_and_the_reader_classifies_it(server):
    items = [ReaderItem("fact_log", "literal", 10, "phone", "What is my phone number?",
                        CONTEXT, 30, "conflict")]
    cache = ResponseCache()
    settings = ReaderSettings(("fact_log",), max_tokens=24, max_context_tokens=100, seed=0)
    complete = completer(server.endpoint, "test")
    rows = read_answers(items, {"phone": PHONE}, settings,
                        lambda requests: answers(requests, MODEL, cache, complete, "c"))
    assert len(cache) == 1 and rows[0].answer
    assert rows[0].answer_outcome in {a.value for a in ANSWERS}
    assert classify_answer(PHONE, 10, rows[0].answer).value == rows[0].answer_outcome
    # the same request again: from the cache, with the model gone
    replayed = read_answers(items, {"phone": PHONE}, settings,
                            lambda requests: answers(requests, MODEL, cache, None, "c"))
    assert replayed == rows


def test_concurrent_requests_come_back_in_order(server):
    questions = [f"Repeat the number {n} and nothing else." for n in range(4)]
    texts = completer(server.endpoint, "test")([ask_request(q, "").body(MODEL) for q in questions])
    assert len(texts) == 4 and all(isinstance(text, str) for text in texts)


def test_a_request_without_the_run_s_key_is_refused_and_the_error_shows_no_key(server,
                                                                                 monkeypatch):
    monkeypatch.setenv("WRONG_KEY", "not-the-key")
    wrong = Endpoint(server.endpoint.base_url, "WRONG_KEY", retries=0)
    with pytest.raises(ModelError, match=r"HTTP 401 \(check the key in \$WRONG_KEY\)") as error:
        completer(wrong, "test")([ask_request("?").body(MODEL)])
    assert os.environ["MEMBENCH_TEST_MODEL_KEY"] not in str(error.value)
    keyless = Endpoint(server.endpoint.base_url, "", retries=0)
    with pytest.raises(ModelError, match="HTTP 401"):
        completer(keyless, "test")([ask_request("?").body(MODEL)])


def test_the_server_is_its_owner_s_only(server):
    """Loopback only, its key on no command line, its directory private."""
    pid = server._process.pid
    port = int(server.endpoint.base_url.rsplit(":", 1)[1].split("/")[0])
    listening = [line.split()[1] for line in Path("/proc/net/tcp").read_text().splitlines()[1:]
                 if line.split()[3] == "0A"]  # LISTEN
    assert f"0100007F:{port:04X}" in listening  # 127.0.0.1
    assert not [address for address in listening if address.endswith(f":{port:04X}")
                and address != f"0100007F:{port:04X}"]
    key = os.environ["MEMBENCH_TEST_MODEL_KEY"]
    assert key.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
    assert stat.S_IMODE(server.root.stat().st_mode) == 0o700
    assert key not in (server.root / "server.log").read_text(errors="replace")


def test_closing_stops_the_server_and_removes_its_directory():
    running = LocalModelServer(MODEL, key_env="MEMBENCH_TEST_MODEL_KEY_2")
    pid, root = running._process.pid, running.root
    running.close()
    assert not root.exists() and "MEMBENCH_TEST_MODEL_KEY_2" not in os.environ
    assert not Path(f"/proc/{pid}").exists() or \
        Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def test_an_unknown_local_model_is_an_error_naming_the_known_ones():
    with pytest.raises(ModelError, match=f"no local model named 'gpt-x' .*{MODEL}"):
        local_model_file("gpt-x")


def _params(server) -> ModelParams:
    e = server.endpoint
    return ModelParams(e.base_url, MODEL, e.key_env, seed=0, concurrency=2,
                       timeout_seconds=e.timeout_seconds, retries=e.retries)


def test_the_llm_extractor_reads_turns_and_a_run_without_the_model_replays_it(server, tmp_path):
    story = Scenario(3, 1, 0, (), tuple(
        Exchange(i, i + 1, 1, ExchangeKind.FILLER, text, "ok") for i, text in enumerate(
            ("My phone number is 555-0101.", "How do I sort a list in Python?",
             "My new phone number is 555-0199.", "Please forget my phone number."))), ())
    settings = LlmExtractSettings(max_tokens=48, memories_shown=10, seed=0)
    cache, where = ResponseCache(), tmp_path / "cache.jsonl"
    with model_answers(_params(server), cache, where, "test") as ask:
        extraction = llm_extraction(story, settings, ask)
    summary = extraction.summary()
    assert summary["turns_read"] == 4 and len(cache) >= 4
    assert all(r.key.startswith("m") for r in extraction.records)
    offline = replace(_params(server), base_url="")
    with model_answers(offline, cache, where, "test") as ask:
        assert llm_extraction(story, settings, ask) == extraction


def test_an_interrupted_run_keeps_every_answer_it_received(server, tmp_path):
    """The stage fails after the model answered: its cache file holds those answers, so
    the rerun asks only what is still missing."""
    cache, where = ResponseCache(), tmp_path / "model" / "cache.jsonl"
    with pytest.raises(KeyboardInterrupt), \
            model_answers(_params(server), cache, where, "test") as ask:
        ask([ask_request("Say yes.", ""), ask_request("Say no.", "")])
        raise KeyboardInterrupt
    assert len(read_cache(where)) == 2 and not list(where.parent.glob(".*tmp"))


@pytest.mark.slow  # mem0's ~8,600-token prompt: minutes on 2 busy cores
@pytest.mark.parametrize("name", ["mem0_qdrant_infer", "langmem_sqlite"])
def test_a_system_writing_through_the_model_replays_from_the_cache(server, default_params,
                                                                   default_run, tmp_path,
                                                                   name):
    """mem0 with `infer=True` (its own extraction prompt) and LangMem's memory manager (its
    tool calls): each exchange asks the real server through the cache; the same run with no
    model then replays them, with the same outcomes and the same at-rest rows."""
    from membench.commands.system_units import fork_in
    from membench.commands.systems_run import deployment_users
    from membench.io.at_rest import backend_files
    from membench.plugins import load_plugins
    from membench.systems.base import FORGET_API, SYSTEMS
    from membench.systems.run import run_system

    load_plugins("systems")
    p = default_params
    # one exchange, one fact: mem0's extraction prompt alone is ~8,600 tokens (tens of
    # seconds a call on 2 busy cores)
    p = replace(p, systems=replace(p.systems, users=2, sessions=1, lines_per_reply=2),
                generate=replace(p.generate, facts=1, changes=(0,), sessions=1),
                scenario=replace(p.scenario, exchanges_per_session=1, probe_days=(30,)))
    story = deployment_users(p, default_run.corpus.files)[0].scenario
    assert len(story.exchanges) == 1
    patient = replace(_params(server), timeout_seconds=900, retries=0)

    def run(model: ModelParams, cache: ResponseCache, label: str):
        directory = tmp_path / label
        directory.mkdir()
        with model_answers(model, cache, tmp_path / "cache.jsonl", "test") as ask:
            system = SYSTEMS[name].with_model(ask, 0)
            done = run_system(system, story, FORGET_API, p.policies,
                              lambda texts: np.stack([_unit(t) for t in texts]),
                              lambda texts: [len("\n".join(t).split()) for t in texts], directory,
                              backend_files, fork_in(tmp_path))
        return done.result.outcomes, done.at_rest

    cache = ResponseCache()
    first = run(patient, cache, "live")
    assert len(cache) >= 1  # the exchange went to the model
    assert run(replace(patient, base_url=""), cache, "replayed") == first


def _unit(text: str) -> np.ndarray:
    """A vector from the text's hash: mem0's retrieval needs vectors, not the encoder."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    vector = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
    return vector / np.linalg.norm(vector)
