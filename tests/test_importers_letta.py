"""The Letta leaderboard importer on membench's example in its JSONL layout
(imports/examples/letta_bench_gen-example.jsonl): corrections that name the old value are
kept, each question is probed before and after its update."""

from __future__ import annotations

import pytest
from format2_layout import imported

from membench.importers.letta import READ, UPDATE, convert
from membench.importers.model import SourceItemError


@pytest.fixture(scope="module")
def example(repo_root):
    return imported("letta", repo_root / "imports/examples/letta_bench_gen-example.jsonl")


def test_facts_then_updates_and_two_probes_per_question(example):
    scenarios, manifest = example
    s = scenarios["letta-0001"]
    assert [len(x["turns"]) for x in s["sessions"]] == [5, 3]
    assert s["title"] == "Letta leaderboard line 1 (Mara Quill, Tobin Reyes)"
    assert [(p["id"], p["session"], p["tags"]["category"]) for p in s["probes"][:2]] == [
        ("q0-read", 1, READ), ("q0-update", 2, UPDATE)]
    assert manifest["counts"]["probes_by_category"] == {READ: 4, UPDATE: 4}
    assert manifest["counts"]["changed_facts"] == 4


def test_a_correction_naming_the_old_value_is_kept(example):
    s = example[0]["letta-0001"]
    update = s["sessions"][1]["turns"][0]
    assert update == {"id": "C0", "speaker": "user",
                      "text": "Mara Quill learned to sail from her uncle, not Tobin Reyes."}
    assert s["facts"][0]["versions"] == [
        {"turns": ["F2"], "value": "Tobin Reyes", "answers": ["Tobin Reyes"]},
        {"turns": ["C0"], "value": "Her uncle", "answers": ["Her uncle"]}]


def test_a_new_answer_not_word_for_word_in_its_sentence_is_kept(example):
    s = example[0]["letta-0002"]
    assert s["facts"][0]["versions"][1]["value"] == "chili peppers"
    assert "chili peppers" not in s["sessions"][1]["turns"][0]["text"]


def test_quoted_updates_are_unquoted_and_listed(example):
    s = example[0]["letta-0001"]
    assert s["sessions"][1]["turns"][1]["text"] == "Tobin Reyes now works in Bergen as a cartographer."
    assert [n["rule"] for n in example[1]["normalised"]] == ["outer quotes removed"]


def test_a_question_with_a_bad_supporting_index_is_dropped_twice(example):
    assert [(d["item"], d["question"], d["category"]) for d in example[1]["dropped"]] == [
        ("line-2", "question[1]", READ), ("line-2", "question[1]", UPDATE)]
    assert example[1]["dropped"][0]["reason"] == "supporting fact index 7 names none of the 2 facts"


def test_a_question_without_an_update_keeps_its_read_probe():
    converted = convert(7, {"question": ["Who?"], "answer": ["Ann"], "facts": ["Ann did it."],
                            "supporting_fact_indices": [[0]], "contradicting_facts": [],
                            "contradicting_answers": []})
    assert [p["id"] for p in converted.scenario["probes"]] == ["q0-read"]
    assert len(converted.scenario["sessions"]) == 1
    assert [(d.category, d.reason) for d in converted.dropped] == [
        (UPDATE, "no contradicting fact with its answer")]


def test_a_line_missing_a_list_is_an_error_naming_it():
    with pytest.raises(SourceItemError, match=r"^line 3: missing field 'facts'"):
        convert(3, {"question": [], "answer": [], "supporting_fact_indices": [],
                    "contradicting_facts": [], "contradicting_answers": []})
