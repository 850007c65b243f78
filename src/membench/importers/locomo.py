"""LoCoMo (`locomo10.json`, snap-research/locomo): one scenario per conversation.

Each conversation's `session_N` turn lists are replayed in order (dated from
`session_N_date_time`); every question whose evidence turns exist becomes a probe asked
at the end of the last session: categories 1-4 expect a fact whose one version is stated
by the evidence turns, category 5 (adversarial) expects nothing. Category numbers are
named as LoCoMo's own evaluation code uses them (docs/importers.md)."""

from __future__ import annotations

import re
from typing import Any

from membench.importers.model import (
    IMPORTERS,
    Converted,
    Dropped,
    Importer,
    Normalised,
    abstention_probe,
    answer_text,
    expect,
    fact_probe,
    member,
    scenario,
    scenario_id,
    version,
)

# snap-research/locomo task_eval/evaluation.py scores category 1 as multi-answer F1,
# 3 on the first ';' part, 5 as refusal; evaluation_stats.py prints [4, 1, 2, 3, 5] in the
# paper's column order: single-hop, multi-hop, temporal, open-domain, adversarial.
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ADVERSARIAL = 5
SESSION = re.compile(r"session_(\d+)")
DATE = re.compile(r"\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+)\.?,?"
                  r"\s+(\d{4})\s*", re.IGNORECASE)
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
EVIDENCE = re.compile(r"[Dd]\s*:?\s*0*(\d+)\s*:\s*0*(\d+)")
SEPARATORS = re.compile(r"[;,\s]+")


def locomo_date(text: str) -> str | None:
    """"1:56 pm on 8 May, 2023" -> "2023-05-08T13:56"; None when not in that form."""
    match = DATE.fullmatch(text)
    if not match:
        return None
    hour, minute, half, day, month, year = match.groups()
    if month[:3].lower() not in MONTHS or not 1 <= int(hour) <= 12:
        return None
    hour24 = int(hour) % 12 + (12 if half.lower() == "p" else 0)
    return (f"{int(year):04d}-{MONTHS.index(month[:3].lower()) + 1:02d}-{int(day):02d}"
            f"T{hour24:02d}:{int(minute):02d}")


def turn_text(turn: dict) -> str:
    """The turn's text; a shared image adds its caption as LoCoMo's own code shows it
    ("[shares <caption>]", task_eval/evaluation_stats.py)."""
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        return f"{turn['text']} [shares {caption.strip()}]"
    return turn["text"]


class _Conversation:
    """The replayed sessions and where each turn id sits."""

    def __init__(self, where: str, label: str, conversation: dict) -> None:
        self.sessions: list[dict] = []
        self.position: dict[str, int] = {}  # turn id -> order in the conversation
        self.ambiguous: set[str] = set()  # dia_ids given to several turns
        self.notes: list[str] = []
        numbers = sorted(int(m.group(1)) for key in conversation
                         if (m := SESSION.fullmatch(key)) and isinstance(conversation[key], list))
        for n in numbers:
            raw = conversation[f"session_{n}"]
            if not raw:
                self.notes.append(f"{label}: session_{n} has no turns; left out")
                continue
            turns = [self._turn(f"{where}.session_{n}[{i}]", t) for i, t in enumerate(raw)]
            session: dict[str, Any] = {"number": len(self.sessions) + 1, "turns": turns}
            stamp = conversation.get(f"session_{n}_date_time")
            if isinstance(stamp, str):
                date = locomo_date(stamp)
                if date:
                    session["date"] = date
                else:
                    self.notes.append(f"{label}: session_{n}_date_time {stamp!r} not understood; "
                                      "session left undated")
            self.sessions.append(session)

    def _turn(self, where: str, turn: Any) -> dict:
        expect(where, turn, dict, "a turn object")
        dia = member(where, turn, "dia_id", str, "a turn id").strip()
        speaker = member(where, turn, "speaker", str, "a speaker name")
        member(where, turn, "text", str, "the turn's text")
        tid = dia
        if dia in self.position:  # a repeated id: keep both turns, refuse it as evidence
            self.ambiguous.add(dia)
            tid = f"{dia}#{sum(k.split('#')[0] == dia for k in self.position) + 1}"
        self.position[tid] = len(self.position)
        return {"id": tid, "speaker": speaker, "text": turn_text(turn)}


def _evidence(conv: _Conversation, raw: list, label: str, question: str
              ) -> tuple[list[str], list[Normalised], str | None]:
    """The evidence turn ids in conversation order, the normalisations applied, or the
    reason the question cannot be kept."""
    ids: list[str] = []
    fixes: list[Normalised] = []
    for entry in raw:
        if not isinstance(entry, str):
            return [], fixes, f"evidence entry {entry!r} is not a turn id"
        if entry in conv.position:
            parts = [entry]
        else:
            parts = [p for p in SEPARATORS.split(entry.replace("(", "").replace(")", "")) if p]
        for part in parts:
            if part in conv.ambiguous:
                return [], fixes, f"evidence id {part!r} names several turns"
            if part in conv.position:
                ids.append(part)
                if part != entry:
                    fixes.append(Normalised(label, question, entry, part, "split several ids"))
                continue
            match = EVIDENCE.fullmatch(part)
            canonical = f"D{int(match.group(1))}:{int(match.group(2))}" if match else None
            if canonical not in conv.position:
                return [], fixes, f"evidence id {entry!r} names no turn of the conversation"
            if canonical in conv.ambiguous:
                return [], fixes, f"evidence id {canonical!r} names several turns"
            ids.append(canonical)
            fixes.append(Normalised(label, question, entry, canonical, "respelt as D<session>:<turn>"))
    return sorted(set(ids), key=conv.position.__getitem__), fixes, None


def convert(index: int, item: Any) -> Converted:
    where = f"item {index}"
    expect(where, item, dict, "a conversation object")
    sample = item.get("sample_id")
    label = sample.strip() if isinstance(sample, str) and sample.strip() else f"item-{index}"
    where = f"item {index} ({label})"
    conversation = member(where, item, "conversation", dict, "an object")
    qa = member(where, item, "qa", list, "a list of questions")
    conv = _Conversation(f"{where}.conversation", label, conversation)
    result = Converted(item=label, questions=len(qa), notes=list(conv.notes))
    last = len(conv.sessions)
    facts, probes = [], []
    for q, entry in enumerate(qa):
        at = f"qa[{q}]"
        expect(f"{where}.{at}", entry, dict, "a question object")
        question = member(f"{where}.{at}", entry, "question", str, "the question's text")
        number = entry.get("category")
        if isinstance(number, str) and number.strip().isdigit():
            number = int(number)  # "4" read as 4
        category = CATEGORIES.get(number) if isinstance(number, int) else None
        raw = entry.get("evidence", [])
        drop = None
        if category is None:
            drop = f"unknown category {number!r} (LoCoMo has 1-5)"
        elif not last:
            drop = "the conversation has no turns"
        elif not isinstance(raw, list):
            drop = f"evidence {raw!r} is not a list of turn ids"
        if drop:
            result.dropped.append(Dropped(label, at, drop, category))
            continue
        evidence, fixes, drop = _evidence(conv, raw, label, at)
        answer = answer_text(entry.get("answer"))
        if not drop and number != ADVERSARIAL:
            if not evidence:
                drop = "no evidence turns"
            elif answer is None:
                drop = "no answer"
        if drop:
            result.dropped.append(Dropped(label, at, drop, category))
            continue
        result.normalised.extend(fixes)
        pid, tags = f"{label}-q{q:04d}", {"category": category}
        if number == ADVERSARIAL:
            probes.append(abstention_probe(pid, question, last, evidence, "question", tags))
            continue
        key = f"q-{label}-{q:04d}"
        facts.append({"key": key, "versions": [version(evidence, answer, [answer])]})
        probes.append(fact_probe(pid, question, last, key, "question", tags))
    if probes:
        speakers = [conversation.get(k) for k in ("speaker_a", "speaker_b")]
        names = " and ".join(s for s in speakers if isinstance(s, str) and s)
        result.scenario = scenario(
            scenario_id(f"locomo-{label}"), f"LoCoMo {label}" + (f" ({names})" if names else ""),
            {"format": "locomo", "sample_id": label, "item": index}, conv.sessions, facts, probes)
    return result


LOCOMO = Importer(reads="json-array", convert=convert,
                  description="LoCoMo locomo10.json: one scenario per conversation")

IMPORTERS.add("locomo", LOCOMO, order=1)
