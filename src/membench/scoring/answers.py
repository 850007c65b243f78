"""The reader: a model answers each probe from exactly the context a policy injected, and
its answer is classified by the values the scenario knows, no judge: the current value,
a superseded one, both, a deleted one (a leak that reached the user), an abstention, or
something else (docs/model.md)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

from membench.model.requests import ChatRequest
from membench.scenario.model import Fact
from membench.scenario.text import has
from membench.scoring.rules import Outcome, outcome_by

READER_SYSTEM = (
    "You are an assistant with a memory of the user. Answer the user's question using only "
    "the memory below. Reply with the answer alone, in a few words. If the memory does not "
    "hold the answer, reply: I don't know.")
# What an answer that declines looks like (matched case-insensitively, anywhere).
ABSTAINING = re.compile(
    r"\b(i don'?t know|i do not know|i'?m not sure|not (?:mentioned|provided|specified|"
    r"stated|available|given|known|in the memory)|no (?:information|mention|record|memory)|"
    r"(?:does|did|do)(?: not|n'?t) (?:mention|say|state|include|contain|hold|have)|"
    r"(?:cannot|can'?t|unable to) (?:find|answer|determine|tell|recall|say)|unknown)\b",
    re.IGNORECASE)


class Answer(str, Enum):
    CURRENT = "current"  # the newest value only
    BOTH = "both"  # the newest and a superseded value: the model did not choose
    SUPERSEDED = "superseded"  # a superseded value only
    DELETED = "deleted"  # a value the user asked to forget: the leak reached the user
    ABSTAINED = "abstained"  # declined (right for a deleted fact)
    OTHER = "other"  # none of the known values, no abstention
    NOT_ASKED = "not_asked"  # the context was longer than reader.max_context_tokens


ANSWERS = tuple(Answer)
_FROM_CONTEXT_RULE = {Outcome.CURRENT: Answer.CURRENT, Outcome.CONFLICT: Answer.BOTH,
                      Outcome.STALE: Answer.SUPERSEDED, Outcome.LEAKED: Answer.DELETED}


@dataclass(frozen=True)
class ReaderSettings:
    policies: tuple[str, ...]  # whose contexts the model reads
    max_tokens: int  # of an answer
    max_context_tokens: int  # a longer context is not sent
    seed: int


@dataclass(frozen=True)
class ReaderItem:
    """One probe as a policy answered it: what the outcomes table holds."""
    policy: str
    form: str
    day: int
    fact_key: str
    question: str
    context: str
    injected_tokens: int
    context_outcome: str


@dataclass(frozen=True)
class AnswerRow:
    policy: str
    form: str
    day: int
    fact_key: str
    context_outcome: str
    answer_outcome: str
    answer: str | None  # None when not asked


def reader_request(item: ReaderItem, settings: ReaderSettings) -> ChatRequest:
    memory = item.context if item.context.strip() else "(empty)"
    return ChatRequest((("system", READER_SYSTEM),
                        ("user", f"Memory:\n{memory}\n\nQuestion: {item.question}")),
                       max_tokens=settings.max_tokens, seed=settings.seed)


def classify_answer(fact: Fact, day: int, answer: str) -> Answer:
    """The article's outcome rule applied to the answer instead of the context, with an
    answer's own two classes: abstained and other."""
    spellings = {v.value: (v.value, *v.answers) for v in fact.versions}

    def holds(value: str) -> bool:
        return any(has(answer, spelling) for spelling in spellings.get(value, (value,)))

    found = _FROM_CONTEXT_RULE.get(outcome_by(fact, day, holds))
    if found is not None:
        return found
    return Answer.ABSTAINED if ABSTAINING.search(answer) else Answer.OTHER


def read_answers(items: Sequence[ReaderItem], facts: dict[str, Fact], settings: ReaderSettings,
                 answer_all: Callable[[Sequence[ChatRequest]], list[str]]) -> list[AnswerRow]:
    """Every item of the reader's policies, answered (one batch through `answer_all`: the
    cache, else the model) and classified, in the items' order."""
    chosen = [item for item in items if item.policy in settings.policies]
    asked = [item for item in chosen if item.injected_tokens <= settings.max_context_tokens]
    replies = dict(zip(map(id, asked), answer_all([reader_request(item, settings)
                                                   for item in asked]), strict=True))
    rows = []
    for item in chosen:
        reply = replies.get(id(item))
        if reply is None:
            outcome = Answer.NOT_ASKED
        elif not item.fact_key:  # format 2's abstention probe: nothing to recall
            outcome = Answer.ABSTAINED if ABSTAINING.search(reply) else Answer.OTHER
        else:
            outcome = classify_answer(facts[item.fact_key], item.day, reply)
        rows.append(AnswerRow(item.policy, item.form, item.day, item.fact_key,
                              item.context_outcome, outcome.value, reply))
    return rows


def answer_summary(rows: Sequence[AnswerRow]) -> dict[str, dict[str, float | int | None]]:
    """Per policy: answers by class, and how often a conflict in the context still gave the
    current answer (None where the context held no conflict)."""
    summary: dict[str, dict[str, float | int | None]] = {}
    for policy in sorted({row.policy for row in rows}):
        mine = [row for row in rows if row.policy == policy]
        counts = Counter(row.answer_outcome for row in mine)
        conflicts = [row for row in mine if row.context_outcome == Outcome.CONFLICT.value
                     and row.answer_outcome != Answer.NOT_ASKED.value]
        right = sum(row.answer_outcome == Answer.CURRENT.value for row in conflicts)
        summary[policy] = {**{answer.value: counts.get(answer.value, 0) for answer in ANSWERS},
                           "conflicts": len(conflicts),
                           "conflict_current_rate": (round(right / len(conflicts), 3)
                                                     if conflicts else None)}
    return summary
