"""Scenario format 2: a conversation given turn by turn (or sessions generated as in format
1), facts whose versions point at the turns that state them, and explicit probes.

Parsed from the JSON document (already loaded) into a Format2Spec and validated strictly,
as params are: an unknown key, a dangling turn id or an out-of-order version stops the run
with a message naming the place. The JSON Schema shipped beside this module
(format2.schema.json) states the same structure; the cross-references (turn ids exist,
versions in conversation order, probe sessions) are checked here only.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from membench.scenario.spec import ScenarioSpecError
from membench.scenario.text import tokens
from membench.validation import check_keys

SCORING_MODES = ("value", "evidence")
SCENARIO_ID = re.compile(r"[A-Za-z0-9_.-]+")
# The JSON Schema's date pattern (a date, or a date and time); fromisoformat then checks
# that the numbers name a real day.
ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
                      r"([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?(Z|[+-][0-9]{2}:[0-9]{2})?)?")


@dataclass(frozen=True)
class Turn:
    id: str
    speaker: str
    text: str


@dataclass(frozen=True)
class SessionSpec:
    number: int
    date: str | None
    turns: tuple[Turn, ...] | None  # None: generated (filler), as format 1's sessions


@dataclass(frozen=True)
class VersionSpec:
    turns: tuple[str, ...]
    value: str
    answers: tuple[str, ...]


@dataclass(frozen=True)
class FactSpec:
    key: str
    versions: tuple[VersionSpec, ...]
    deletions: tuple[str, ...]  # turn ids


@dataclass(frozen=True)
class ProbeSpec:
    id: str
    question: str
    form: str
    session: int
    fact: str | None  # None: an abstention probe (expects nothing)
    evidence: tuple[str, ...]
    tags: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class FillerSpec:
    questions: tuple[str, ...]
    reply: str


@dataclass(frozen=True)
class Format2Spec:
    id: str
    title: str | None
    scoring: str
    sessions: tuple[SessionSpec, ...]
    facts: tuple[FactSpec, ...]
    probes: tuple[ProbeSpec, ...]
    filler: FillerSpec | None

    def turn_positions(self) -> dict[str, tuple[int, int]]:
        """turn id -> (session number, position in the whole conversation)."""
        out, position = {}, 0
        for session in self.sessions:
            for turn in session.turns or ():
                out[turn.id] = (session.number, position)
                position += 1
        return out


def _fields(where: str, table: Any, required: set[str], optional: set[str] = frozenset()) -> dict:
    return check_keys(where, table, required, optional, ScenarioSpecError)


def _text(where: str, value: Any, *, empty: bool = False) -> str:
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise ScenarioSpecError(f"{where}: expected {'' if empty else 'non-empty '}text, "
                                f"got {value!r}")
    return value


def _list(where: str, value: Any, *, empty: bool = True) -> list:
    if not isinstance(value, list) or (not empty and not value):
        raise ScenarioSpecError(f"{where}: expected a {'' if empty else 'non-empty '}list")
    return value


def _whole(where: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ScenarioSpecError(f"{where}: expected a whole number >= 1, got {value!r}")
    return value


def _date(where: str, value: Any) -> str:
    text = _text(where, value)
    try:
        if not ISO_DATE.fullmatch(text):
            raise ValueError(text)
        (dt.date if len(text) == 10 else dt.datetime).fromisoformat(text)
    except ValueError:
        raise ScenarioSpecError(f"{where}: expected an ISO date or datetime, got {text!r}") \
            from None
    return text


def _session(where: str, table: Any, number: int) -> SessionSpec:
    table = _fields(where, table, {"number"}, {"date", "turns"})
    if _whole(f"{where}.number", table["number"]) != number:
        raise ScenarioSpecError(f"{where}.number: expected {number} (sessions are numbered "
                                f"1..n in order), got {table['number']}")
    turns = None
    if "turns" in table:
        turns = []
        for i, raw in enumerate(_list(f"{where}.turns", table["turns"])):
            t = _fields(f"{where}.turns[{i}]", raw, {"id", "speaker", "text"})
            turns.append(Turn(_text(f"{where}.turns[{i}].id", t["id"]),
                              _text(f"{where}.turns[{i}].speaker", t["speaker"]),
                              _text(f"{where}.turns[{i}].text", t["text"], empty=True)))
        turns = tuple(turns)
    date = _date(f"{where}.date", table["date"]) if "date" in table else None
    return SessionSpec(number, date, turns)


def _turn_refs(where: str, value: Any, known: dict[str, tuple[int, int]], *,
               empty: bool) -> tuple[str, ...]:
    refs = tuple(_text(f"{where}[{i}]", ref)
                 for i, ref in enumerate(_list(where, value, empty=empty)))
    for i, ref in enumerate(refs):
        if ref not in known:
            raise ScenarioSpecError(f"{where}[{i}]: no turn has id {ref!r}")
    repeated = sorted({ref for ref in refs if refs.count(ref) > 1})
    if repeated:
        raise ScenarioSpecError(f"{where}: repeated turn id(s) {', '.join(repeated)}")
    return refs


def _version(where: str, table: Any, known: dict, scoring: str) -> VersionSpec:
    table = _fields(where, table, {"turns", "value"}, {"answers"})
    turns = _turn_refs(f"{where}.turns", table["turns"], known, empty=False)
    value = _text(f"{where}.value", table["value"])
    answers = tuple(_text(f"{where}.answers[{i}]", a)
                    for i, a in enumerate(_list(f"{where}.answers", table.get("answers", []))))
    if scoring == "value":
        for i, spelling in enumerate(answers or (value,)):
            if not tokens(spelling):
                place = f"{where}.answers[{i}]" if answers else f"{where}.value"
                raise ScenarioSpecError(f"{place}: {spelling!r} has no letters or digits to "
                                        "match (value scoring)")
    return VersionSpec(turns, value, answers)


def _fact(where: str, table: Any, known: dict, scoring: str) -> FactSpec:
    table = _fields(where, table, {"key", "versions"}, {"deletions"})
    key = _text(f"{where}.key", table["key"])
    versions = tuple(_version(f"{where}.versions[{i}]", v, known, scoring)
                     for i, v in enumerate(_list(f"{where}.versions", table["versions"],
                                                 empty=False)))
    deletions = []
    for i, raw in enumerate(_list(f"{where}.deletions", table.get("deletions", []))):
        d = _fields(f"{where}.deletions[{i}]", raw, {"turn"})
        deletions.extend(_turn_refs(f"{where}.deletions[{i}].turn", [d["turn"]], known,
                                    empty=False))
    _check_order(where, versions, tuple(deletions), known)
    return FactSpec(key, versions, tuple(deletions))


def _check_order(where: str, versions: tuple[VersionSpec, ...], deletions: tuple[str, ...],
                 known: dict) -> None:
    """Versions (at their last turn) and deletions in conversation order, starting with a
    version, never deleting a fact already deleted."""
    events = sorted([(max(known[t][1] for t in v.turns), "version", f"versions[{i}]")
                     for i, v in enumerate(versions)]
                    + [(known[t][1], "deletion", f"deletions[{i}]")
                       for i, t in enumerate(deletions)])
    for kind, listed in (("version", versions), ("deletion", deletions)):
        order = [e for e in events if e[1] == kind]
        if [e[2] for e in order] != [f"{kind}s[{i}]" for i in range(len(listed))]:
            raise ScenarioSpecError(f"{where}.{kind}s: must be in conversation (turn) order")
    positions = [e[0] for e in events]
    if len(set(positions)) != len(positions):
        raise ScenarioSpecError(f"{where}: two of its versions or deletions end on the same "
                                "turn")
    if events[0][1] != "version":
        raise ScenarioSpecError(f"{where}.{events[0][2]}: deletes a fact not yet stated")
    for before, after in zip(events, events[1:]):
        if before[1] == after[1] == "deletion":
            raise ScenarioSpecError(f"{where}.{after[2]}: deletes a fact already deleted")


def _probe(where: str, table: Any, facts: dict[str, FactSpec], known: dict,
           sessions: int) -> ProbeSpec:
    table = _fields(where, table, {"id", "question", "form", "session", "expects"},
                    {"evidence", "tags"})
    session = _whole(f"{where}.session", table["session"])
    if session > sessions:
        raise ScenarioSpecError(f"{where}.session: {session} is past the last session "
                                f"({sessions})")
    expects = table["expects"]
    if isinstance(expects, dict) and "nothing" in expects:
        _fields(f"{where}.expects", expects, {"nothing"})
        if expects["nothing"] is not True:
            raise ScenarioSpecError(f"{where}.expects.nothing: expected true")
        fact = None
    else:
        fact = _text(f"{where}.expects.fact",
                     _fields(f"{where}.expects", expects, {"fact"})["fact"])
        if fact not in facts:
            raise ScenarioSpecError(f"{where}.expects.fact: no fact has key {fact!r}")
        first = max(known[t][0] for t in facts[fact].versions[0].turns)
        if session < first:
            raise ScenarioSpecError(f"{where}.session: {session} is before session {first}, "
                                    f"where fact {fact!r} is first stated")
    evidence = _turn_refs(f"{where}.evidence", table.get("evidence", []), known, empty=True)
    if evidence and fact is not None:
        raise ScenarioSpecError(f"{where}.evidence: only an abstention probe lists evidence "
                                "(a fact probe's evidence is its fact's version turns)")
    tags = table.get("tags", {})
    if not isinstance(tags, dict):
        raise ScenarioSpecError(f"{where}.tags: expected a mapping of text to text")
    for name, value in tags.items():
        _text(f"{where}.tags.{name}", value, empty=True)
    return ProbeSpec(_text(f"{where}.id", table["id"]),
                     _text(f"{where}.question", table["question"]),
                     _text(f"{where}.form", table["form"]), session, fact, evidence,
                     tuple(sorted(tags.items())))


def _unique(where: str, names: list[str], what: str) -> None:
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ScenarioSpecError(f"{where}: duplicate {what}(s) {', '.join(repeated)}")


def parse_format2(data: Any) -> Format2Spec:
    data = _fields("scenario", data, {"format", "id", "sessions", "facts", "probes"},
                   {"title", "scoring", "source", "filler"})
    if data["format"] != 2 or isinstance(data["format"], bool):
        raise ScenarioSpecError(f"format: expected 2, got {data['format']!r}")
    sid = _text("id", data["id"])
    if not SCENARIO_ID.fullmatch(sid):
        raise ScenarioSpecError(f"id: {sid!r} may hold only letters, digits, '_', '.', '-'")
    title = _text("title", data["title"]) if "title" in data else None
    scoring = data.get("scoring", "value")
    if scoring not in SCORING_MODES:
        raise ScenarioSpecError(f"scoring: expected one of {', '.join(SCORING_MODES)}, "
                                f"got {scoring!r}")
    if "source" in data and not isinstance(data["source"], dict):
        raise ScenarioSpecError("source: expected a mapping (free metadata)")
    sessions = tuple(_session(f"sessions[{i}]", s, i + 1) for i, s in
                     enumerate(_list("sessions", data["sessions"], empty=False)))
    _unique("sessions", [t.id for s in sessions for t in s.turns or ()], "turn id")
    spec_sessions = sessions
    filler = None
    if "filler" in data:
        f = _fields("filler", data["filler"], {"questions", "reply"})
        filler = FillerSpec(tuple(_text(f"filler.questions[{i}]", q) for i, q in
                                  enumerate(_list("filler.questions", f["questions"],
                                                  empty=False))),
                            _text("filler.reply", f["reply"]))
    known = Format2Spec(sid, title, scoring, spec_sessions, (), (), None).turn_positions()
    facts = tuple(_fact(f"facts[{i}]", f, known, scoring)
                  for i, f in enumerate(_list("facts", data["facts"])))
    _unique("facts", [f.key for f in facts], "key")
    by_key = {f.key: f for f in facts}
    probes = tuple(_probe(f"probes[{i}]", p, by_key, known, len(sessions))
                   for i, p in enumerate(_list("probes", data["probes"], empty=False)))
    _unique("probes", [p.id for p in probes], "id")
    return Format2Spec(sid, title, scoring, sessions, facts, probes, filler)
