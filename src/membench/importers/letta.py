"""Letta's memory leaderboard (`letta_bench_gen_*.jsonl`, letta-ai/letta-leaderboard): one
scenario per line, a group of people.

Session 1 states the line's `facts` (one user turn each); session 2 states every
`contradicting_facts` sentence. Each question is one fact with two versions: the
supporting facts with `answer`, then its contradicting fact with `contradicting_answer`.
It is probed twice, as the leaderboard's read and update benchmarks ask it: after
session 1 (expecting `answer`) and after session 2 (expecting the new answer). A
correction that names the old value ("X, not Y") is kept like any other: evidence
scoring looks at which turns are injected, never at the words."""

from __future__ import annotations

from typing import Any

from membench.importers.model import (
    IMPORTERS,
    Converted,
    Dropped,
    Importer,
    Normalised,
    answer_text,
    expect,
    fact_probe,
    member,
    scenario,
    version,
)

READ, UPDATE = "core_memory_read", "core_memory_update"  # the leaderboard's benchmark names
LISTS = ("question", "answer", "supporting_fact_indices", "contradicting_facts",
         "contradicting_answers")


def _unquoted(text: str) -> str:
    """Some contradicting facts are wrapped in a literal pair of double quotes."""
    stripped = text.strip()
    if len(stripped) >= 2 and stripped[0] == stripped[-1] == '"' and '"' not in stripped[1:-1]:
        return stripped[1:-1].strip()
    return stripped


def _supporting(raw: Any, facts: int) -> tuple[list[int], str | None]:
    if not isinstance(raw, list) or not raw:
        return [], f"supporting_fact_indices {raw!r} is not a non-empty list"
    indices = []
    for value in raw:
        index = int(value) if isinstance(value, str) and value.strip().isdigit() else value
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < facts:
            return [], f"supporting fact index {value!r} names none of the {facts} facts"
        indices.append(index)
    return sorted(set(indices)), None


def convert(line: int, item: Any) -> Converted:
    where = f"line {line}"
    expect(where, item, dict, "a JSON object")
    lists = {key: member(where, item, key, list, "a list") for key in LISTS}
    facts = member(where, item, "facts", list, "a list of sentences")
    label = f"line-{line}"
    turns = [{"id": f"F{i}", "speaker": "user",
              "text": expect(f"{where}.facts[{i}]", text, str, "a sentence")}
             for i, text in enumerate(facts)]
    questions = lists["question"]
    result = Converted(item=label, questions=len(questions))
    updates, keys, probes = [], [], []
    for q, question in enumerate(questions):
        at = f"question[{q}]"
        item_of = {key: (values[q] if q < len(values) else None) for key, values in lists.items()}
        answer = answer_text(item_of["answer"])
        support, drop = _supporting(item_of["supporting_fact_indices"], len(facts))
        if not isinstance(question, str) or not question.strip():
            drop = "the question is not text"
        elif answer is None:
            drop = "no answer"
        if drop:
            result.dropped.extend(Dropped(label, at, drop, c) for c in (READ, UPDATE))
            continue
        key = f"q{q}"
        versions = [version([f"F{i}" for i in support], answer, [answer])]
        probes.append(fact_probe(f"{key}-read", question, 1, key, "question", {"category": READ}))
        sentence, new = item_of["contradicting_facts"], answer_text(item_of["contradicting_answers"])
        if not isinstance(sentence, str) or not sentence.strip() or new is None:
            result.dropped.append(Dropped(label, at, "no contradicting fact with its answer", UPDATE))
        else:
            text = _unquoted(sentence)
            if text != sentence:
                result.normalised.append(Normalised(label, f"contradicting_facts[{q}]", sentence,
                                                    text, "outer quotes removed"))
            updates.append({"id": f"C{q}", "speaker": "user", "text": text})
            versions.append(version([f"C{q}"], new, [new]))
            probes.append(fact_probe(f"{key}-update", question, 2, key, "question",
                                     {"category": UPDATE}))
        keys.append({"key": key, "versions": versions})
    if probes:
        sessions = [{"number": 1, "turns": turns}]
        if updates:
            sessions.append({"number": 2, "turns": updates})
        names = [n for n in item.get("name", []) if isinstance(n, str)] \
            if isinstance(item.get("name"), list) else []
        title = f"Letta leaderboard line {line}" + (f" ({', '.join(names)})" if names else "")
        result.scenario = scenario(f"letta-{line:04d}", title,
                                   {"format": "letta", "line": line}, sessions, keys, probes)
    return result


LETTA = Importer(reads="jsonl", convert=convert,
                 description="Letta memory leaderboard letta_bench_gen_*.jsonl: one scenario "
                             "per line")

IMPORTERS.add("letta", LETTA, order=3)
