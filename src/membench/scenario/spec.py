"""The scenario text file's schema: facts, statements, probes and distractor questions.

Days and slots in the file are on the story's reference timeline; the builder
stretches them to the session count in params. Validation is strict so that a
typo in the file stops the run instead of silently changing the story.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from membench.scenario.model import Deletion, Fact, FactVersion
from membench.scenario.text import ValueFinder, has_words, tokens
from membench.validation import check_keys


class ScenarioSpecError(ValueError):
    """The scenario file does not describe a valid story."""


@dataclass(frozen=True)
class ScenarioSpec:
    reference_sessions: int
    filler_reply: str
    acknowledgement: str  # formatted with {value}
    deletion_reply: str
    facts: tuple[Fact, ...]
    distractors: tuple[str, ...]
    # A deployment of several users (optional, see docs/generate.md): `user` names the one
    # whose story `facts` tell; `users` the others, each with the same keys, other values.
    user: str | None = None
    users: tuple[UserFacts, ...] = ()


@dataclass(frozen=True)
class UserFacts:
    name: str
    facts: tuple[Fact, ...]  # the same keys, in the same order, as the spec's facts


def _fields(where: str, table: Any, required: set[str], optional: set[str] = frozenset()) -> dict:
    return check_keys(where, table, required, optional, ScenarioSpecError)


def _text(where: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ScenarioSpecError(f"{where}: expected non-empty text")
    return value


def _day_slot(where: str, table: dict, reference_sessions: int) -> tuple[int, int]:
    day, slot = table["day"], table["slot"]
    for name, number in (("day", day), ("slot", slot)):
        if not isinstance(number, int) or isinstance(number, bool) or number < 1:
            raise ScenarioSpecError(f"{where}.{name}: expected a whole number >= 1, got {number!r}")
    if day > reference_sessions:
        raise ScenarioSpecError(
            f"{where}.day: {day} is past reference_sessions = {reference_sessions}"
        )
    return day, slot


def _version(where: str, table: Any, reference_sessions: int) -> FactVersion:
    table = _fields(where, table, {"day", "slot", "statement", "value"})
    day, slot = _day_slot(where, table, reference_sessions)
    statement = _text(f"{where}.statement", table["statement"])
    value = _text(f"{where}.value", table["value"])
    if not tokens(value):
        raise ScenarioSpecError(f"{where}.value: {value!r} has no letters or digits to match")
    if not has_words(statement, value):
        raise ScenarioSpecError(f"{where}: statement {statement!r} does not contain value {value!r}")
    return FactVersion(day=day, slot=slot, value=value, statement=statement)


def _fact(where: str, table: Any, reference_sessions: int, questions: Fact | None = None
          ) -> Fact:
    """questions: for another user's fact, the main fact whose probe questions it shares."""
    if questions is not None:
        table = _fields(where, table, {"key", "versions"}, {"deletion"})
        table = {**table, "literal": questions.literal, "paraphrase": questions.paraphrase}
    table = _fields(where, table, {"key", "literal", "paraphrase", "versions"}, {"deletion"})
    versions = table["versions"]
    if not isinstance(versions, list) or not versions:
        raise ScenarioSpecError(f"{where}.versions: expected at least one version")
    parsed = tuple(
        _version(f"{where}.versions[{i}]", v, reference_sessions) for i, v in enumerate(versions)
    )
    order = [(v.day, v.slot) for v in parsed]
    if order != sorted(order) or len(set(order)) != len(order):
        raise ScenarioSpecError(f"{where}.versions: must be in strictly increasing (day, slot) order")
    deletion = None
    if "deletion" in table:
        d = _fields(f"{where}.deletion", table["deletion"], {"day", "slot", "request"})
        day, slot = _day_slot(f"{where}.deletion", d, reference_sessions)
        if (day, slot) <= order[-1]:
            raise ScenarioSpecError(f"{where}.deletion: must come after the last version")
        request = _text(f"{where}.deletion.request", d["request"])
        for version in parsed:
            if has_words(request, version.value):
                raise ScenarioSpecError(
                    f"{where}.deletion.request: repeats the value {version.value!r} it deletes"
                )
        deletion = Deletion(day=day, slot=slot, request=request)
    return Fact(
        key=_text(f"{where}.key", table["key"]),
        literal=_text(f"{where}.literal", table["literal"]),
        paraphrase=_text(f"{where}.paraphrase", table["paraphrase"]),
        versions=parsed,
        deletion=deletion,
    )


def parse_scenario_spec(data: Any) -> ScenarioSpec:
    data = _fields(
        "scenario",
        data,
        {"reference_sessions", "filler_reply", "acknowledgement", "deletion_reply", "facts",
         "distractors"},
        {"user", "users"},
    )
    reference = data["reference_sessions"]
    if not isinstance(reference, int) or isinstance(reference, bool) or reference < 1:
        raise ScenarioSpecError("reference_sessions: expected a whole number >= 1")
    acknowledgement = _text("acknowledgement", data["acknowledgement"])
    if "{value}" not in acknowledgement:
        raise ScenarioSpecError("acknowledgement: must contain {value}")
    facts_raw = data["facts"]
    if not isinstance(facts_raw, list) or not facts_raw:
        raise ScenarioSpecError("facts: expected at least one [[facts]] table")
    facts = tuple(_fact(f"facts[{i}]", f, reference) for i, f in enumerate(facts_raw))
    keys = [fact.key for fact in facts]
    duplicates = sorted({key for key in keys if keys.count(key) > 1})
    if duplicates:
        raise ScenarioSpecError(f"facts: duplicate key(s) {', '.join(duplicates)}")
    distractors = data["distractors"]
    if not isinstance(distractors, list) or not distractors:
        raise ScenarioSpecError("distractors: expected a non-empty list of questions")
    distractors = tuple(_text(f"distractors[{i}]", q) for i, q in enumerate(distractors))
    deletion_reply = _text("deletion_reply", data["deletion_reply"])
    for fact in facts:
        for value in fact.values():
            for name, text in [("filler_reply", data["filler_reply"]),
                               ("deletion_reply", deletion_reply)]:
                if has_words(text, value):
                    raise ScenarioSpecError(f"{name}: contains the fact value {value!r}")
            for i, question in enumerate(distractors):
                if has_words(question, value):
                    raise ScenarioSpecError(f"distractors[{i}]: contains the fact value {value!r}")
    spec = ScenarioSpec(
        reference_sessions=reference,
        filler_reply=_text("filler_reply", data["filler_reply"]),
        acknowledgement=acknowledgement,
        deletion_reply=deletion_reply,
        facts=facts,
        distractors=distractors,
    )
    if "user" not in data and "users" not in data:
        return spec
    return _with_users(spec, data)


def _with_users(spec: ScenarioSpec, data: dict) -> ScenarioSpec:
    """The optional deployment: other users with the same fact keys and their own values."""
    user = _text("user", data.get("user"))
    raw = data.get("users", [])
    if not isinstance(raw, list):
        raise ScenarioSpecError("users: expected a list of [[users]] tables")
    names = [user]
    others = []
    for i, entry in enumerate(raw):
        entry = _fields(f"users[{i}]", entry, {"name", "facts"})
        name = _text(f"users[{i}].name", entry["name"])
        if name in names:
            raise ScenarioSpecError(f"users[{i}].name: {name!r} is not unique")
        names.append(name)
        facts_raw = entry["facts"]
        if not isinstance(facts_raw, list) or [
                f.get("key") if isinstance(f, dict) else None for f in facts_raw
        ] != [f.key for f in spec.facts]:
            raise ScenarioSpecError(
                f"users[{i}].facts: expected the keys of [[facts]], in the same order")
        others.append(UserFacts(name, tuple(
            _fact(f"users[{i}].facts[{j}]", f, spec.reference_sessions, spec.facts[j])
            for j, f in enumerate(facts_raw))))
    finder = ValueFinder(v for other in others for f in other.facts for v in f.values())
    for where, text in [("filler_reply", spec.filler_reply),
                        ("deletion_reply", spec.deletion_reply),
                        *((f"distractors[{i}]", q) for i, q in enumerate(spec.distractors))]:
        for number in sorted(finder.found(text))[:1]:
            raise ScenarioSpecError(f"{where}: contains the fact value {finder.values[number]!r}")
    return replace(spec, user=user, users=tuple(others))

