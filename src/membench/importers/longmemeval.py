"""LongMemEval (`longmemeval_s.json`, `_m`, `_oracle`; xiaowu0162/LongMemEval): one scenario
per question, since every question comes with its own haystack of dated sessions.

The haystack is replayed in date order (`haystack_dates`; the oracle file is not sorted);
the evidence is every turn marked `has_answer` in the sessions `answer_session_ids` names,
as LongMemEval's own turn-level recall counts it. A knowledge-update question is a changed
fact: one version per evidence session, the last one holding the answer. A question whose
id ends in `_abs` is an abstention probe."""

from __future__ import annotations

import re
from typing import Any

from membench.importers.model import (
    IMPORTERS,
    Converted,
    Dropped,
    Importer,
    SourceItemError,
    abstention_probe,
    answer_text,
    expect,
    fact_probe,
    member,
    scenario,
    scenario_id,
    version,
)

KNOWLEDGE_UPDATE = "knowledge-update"
ABSTENTION_SUFFIX = "_abs"
# the earlier versions of a knowledge update: LongMemEval gives only the current answer
EARLIER_VALUE = "(an earlier value; LongMemEval gives only the current answer)"
DATE = re.compile(r"\s*(\d{4})/(\d{1,2})/(\d{1,2})\s*(?:\([A-Za-z]+\))?\s*(?:(\d{1,2}):(\d{2}))?\s*")


def longmemeval_date(text: Any) -> str | None:
    """"2023/05/20 (Sat) 02:21" -> "2023-05-20T02:21"; None when not in that form."""
    match = DATE.fullmatch(text) if isinstance(text, str) else None
    if not match:
        return None
    year, month, day, hour, minute = match.groups()
    date = f"{int(year):04d}-{int(month):02d}-{int(day):02d}"
    return date if hour is None else f"{date}T{int(hour):02d}:{int(minute):02d}"


def convert(index: int, item: Any) -> Converted:
    where = f"item {index}"
    expect(where, item, dict, "a question object")
    qid = member(where, item, "question_id", str, "the question's id")
    where = f"item {index} ({qid})"
    qtype = member(where, item, "question_type", str, "the question type")
    question = member(where, item, "question", str, "the question's text")
    ids = member(where, item, "haystack_session_ids", list, "a list of session ids")
    dates = member(where, item, "haystack_dates", list, "a list of dates")
    haystack = member(where, item, "haystack_sessions", list, "a list of sessions")
    answer_ids = member(where, item, "answer_session_ids", list, "a list of session ids")
    if not len(ids) == len(dates) == len(haystack):
        raise SourceItemError(f"{where}: haystack_session_ids ({len(ids)}), haystack_dates "
                              f"({len(dates)}) and haystack_sessions ({len(haystack)}) differ "
                              "in length")
    abstention = qid.endswith(ABSTENTION_SUFFIX)
    category = "abstention" if abstention else qtype
    result = Converted(item=qid, questions=1)
    parsed = [longmemeval_date(d) for d in dates]
    order = list(range(len(haystack)))
    if all(parsed):
        order.sort(key=lambda i: parsed[i])  # stable: equal dates keep the file's order
    elif haystack:
        result.notes.append(f"{qid}: a haystack date is not in LongMemEval's form; "
                            "sessions kept in the file's order, undated")
    wanted = {a for a in answer_ids if isinstance(a, str)}
    seen: dict[str, int] = {}
    sessions: list[dict] = []
    evidence: list[tuple[int, str]] = []  # (session number, turn id)
    for i in order:
        sid = expect(f"{where}.haystack_session_ids[{i}]", ids[i], str, "a session id")
        raw = expect(f"{where}.haystack_sessions[{i}]", haystack[i], list, "a list of turns")
        if not raw:
            result.notes.append(f"{qid}: session {sid} has no turns; left out")
            continue
        seen[sid] = seen.get(sid, 0) + 1
        prefix = sid if seen[sid] == 1 else f"{sid}@{seen[sid]}"
        number = len(sessions) + 1
        turns = []
        for k, turn in enumerate(raw, start=1):
            at = f"{where}.haystack_sessions[{i}][{k - 1}]"
            expect(at, turn, dict, "a turn object")
            tid = f"{prefix}:{k}"
            turns.append({"id": tid, "speaker": member(at, turn, "role", str, "a role"),
                          "text": member(at, turn, "content", str, "the turn's text")})
            if sid in wanted and turn.get("has_answer") is True:
                evidence.append((number, tid))
        session: dict[str, Any] = {"number": number, "turns": turns}
        if all(parsed):
            session["date"] = parsed[i]
        sessions.append(session)
    for missing in sorted(wanted - set(seen)):
        result.notes.append(f"{qid}: answer session {missing} is not in the haystack")
    answer = answer_text(item.get("answer"))
    turns = [tid for _, tid in evidence]
    last, tags = len(sessions), {"category": category, "question_type": qtype}
    drop = None
    if not sessions:
        drop = "the haystack has no turns"
    elif not abstention and not turns:
        drop = "no turn marked has_answer in its answer sessions"
    elif not abstention and answer is None:
        drop = "no answer"
    if drop:
        result.dropped.append(Dropped(qid, "question", drop, category))
        return result
    facts = []
    if abstention:
        probe = abstention_probe(qid, question, last, turns, "question", tags)
    else:
        key = f"q-{qid}"
        groups = [[t for n, t in evidence if n == s] for s in sorted({n for n, _ in evidence})]
        if qtype != KNOWLEDGE_UPDATE:
            groups = [turns]
        versions = [version(g, EARLIER_VALUE, []) for g in groups[:-1]]
        versions.append(version(groups[-1], answer, [answer]))
        facts.append({"key": key, "versions": versions})
        probe = fact_probe(qid, question, last, key, "question", tags)
    result.scenario = scenario(
        scenario_id(f"longmemeval-{qid}"), f"LongMemEval {qid} ({category})",
        {"format": "longmemeval", "question_id": qid, "item": index}, sessions, facts, [probe])
    return result


LONGMEMEVAL = Importer(reads="json-array", convert=convert,
                       description="LongMemEval longmemeval_s/_m/_oracle JSON: one scenario "
                                   "per question")

IMPORTERS.add("longmemeval", LONGMEMEVAL, order=2)
