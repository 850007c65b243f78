"""What an importer produces from one source item: a format-2 scenario (a plain dict in the
agreed layout, docs/importers.md), the questions it dropped and why, and the spellings it
normalised. Pure: no file is read or written here."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from membench.registry import Registry

SCENARIO_ID = re.compile(r"[^A-Za-z0-9_.-]+")


class SourceItemError(ValueError):
    """A source item is not in the layout its importer reads; the message names the item,
    the field and the problem."""


@dataclass(frozen=True)
class Dropped:
    """A source question that became no probe."""

    item: str  # the source item: LoCoMo's sample_id, LongMemEval's question_id, a Letta line
    question: str  # where in the item, e.g. "qa[12]"
    reason: str
    category: str | None = None

    def as_dict(self) -> dict:
        return {"item": self.item, "question": self.question, "reason": self.reason,
                "category": self.category}


@dataclass(frozen=True)
class Normalised:
    """A spelling in the source read as another, unambiguous one (e.g. "D:11:26" as "D11:26")."""

    item: str
    question: str
    found: str
    used: str
    rule: str

    def as_dict(self) -> dict:
        return {"item": self.item, "question": self.question, "found": self.found,
                "used": self.used, "rule": self.rule}


@dataclass
class Converted:
    """One source item converted: its scenario (None when no question was kept)."""

    item: str
    questions: int  # the item's source questions, kept or dropped
    scenario: dict | None = None
    dropped: list[Dropped] = field(default_factory=list)
    normalised: list[Normalised] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Importer:
    """A public benchmark's file layout, and how one of its items becomes a scenario."""

    reads: str  # "json-array" (one top-level array of objects) or "jsonl" (an object a line)
    convert: Callable[[int, Any], Converted]  # (position in the file, item) -> Converted
    description: str


# Every format `membench import` reads, by name: each importer module adds its own
# (IMPORTERS.add("name", Importer(...), order=...)), loaded by membench.plugins.
IMPORTERS: Registry[Importer] = Registry("importer")


def scenario_id(text: str) -> str:
    """A scenario id ([A-Za-z0-9_.-]+) from a source name."""
    return SCENARIO_ID.sub("-", text).strip("-") or "item"


def answer_text(value: Any) -> str | None:
    """A source answer as text (LoCoMo has numbers such as 2022); None when there is none."""
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return ", ".join(v.strip() for v in value)
    return None


def expect(where: str, value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
        raise SourceItemError(f"{where}: expected {what}, got {type(value).__name__}")
    return value


def member(where: str, mapping: dict, key: str, kind: type | tuple[type, ...], what: str) -> Any:
    if key not in mapping:
        raise SourceItemError(f"{where}: missing field {key!r}")
    return expect(f"{where}.{key}", mapping[key], kind, what)


def version(turns: list[str], value: str, answers: list[str]) -> dict:
    return {"turns": turns, "value": value, "answers": answers}


def fact_probe(probe_id: str, question: str, session: int, fact: str, form: str,
               tags: dict[str, str]) -> dict:
    return {"id": probe_id, "question": question, "form": form, "session": session,
            "expects": {"fact": fact}, "tags": tags}


def abstention_probe(probe_id: str, question: str, session: int, evidence: list[str],
                     form: str, tags: dict[str, str]) -> dict:
    probe = {"id": probe_id, "question": question, "form": form, "session": session,
             "expects": {"nothing": True}, "tags": tags}
    if evidence:
        probe["evidence"] = evidence
    return probe


def scenario(sid: str, title: str, source: dict, sessions: list[dict], facts: list[dict],
             probes: list[dict]) -> dict:
    """A format-2 scenario scored by evidence: imported answers are rarely verbatim."""
    return {"format": 2, "id": sid, "title": title, "scoring": "evidence", "source": source,
            "sessions": sessions, "facts": facts, "probes": probes}
