"""The LLM extractor: a model reads each user turn and keeps the memory, in Mem0's two
steps. First each distinct user turn is asked for the facts it states (FACT lines) or what
it asks to forget (FORGET lines); these requests are independent, so they go out at once.
Then each candidate, in transcript order, is shown the memories most like it and the model
decides: ADD, UPDATE <id>, DELETE <id> or NONE. Memory ids are the extractor's own (m1, m2,
...), never the scenario's gold keys; a record's text is the fact as the model wrote it.

The model is reached only through `ask` (requests in, answers out, in order), so this
module is pure: the stage supplies the response cache and the endpoint (docs/model.md)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

from membench.extraction.records import FactRecord, RecordAction
from membench.extraction.similarity import FORGET_WORDS, content_words, lexical
from membench.model.requests import ChatRequest
from membench.scenario.model import Exchange, Scenario

Ask = Callable[[Sequence[ChatRequest]], list[str]]

EXTRACT_SYSTEM = (
    "You read one message a user sent to a coding assistant and write down, for the "
    "assistant's memory, the facts it states about the user, their team or their project. "
    "Reply with one line per fact: FACT: <the fact as a short sentence, keeping every name, "
    "number and value exactly as written>. If the message asks the assistant to forget "
    "something, reply: FORGET: <what to forget>. If the message states no fact (a question, "
    "a request for code), reply: NONE")
UPDATE_SYSTEM = (
    "You keep a coding assistant's memory of facts about the user. You are given the "
    "memories that look related and one new fact. Reply with one line: ADD if the fact is "
    "new; UPDATE <id> if it replaces that memory (the same thing with a new value); NONE if "
    "that memory already says it.")
FORGET_SYSTEM = (
    "You keep a coding assistant's memory of facts about the user. You are given the "
    "memories that look related and something the user asked you to forget. Reply with one "
    "line: DELETE <id> for the memory to forget, or NONE if no memory holds it.")

# Worked examples sent before each request (a small model follows the format from them);
# none of them is about the default story's facts.
EXTRACT_EXAMPLES = (
    ("Message: How do I parse a CSV file with quoted fields?", "NONE"),
    ("Message: I prefer dark mode in every editor.",
     "FACT: The user prefers dark mode in every editor."),
    ("Message: Please forget my home address.", "FORGET: the user's home address"),
    ("Message: Our staging cluster runs Kafka 3.7 now.",
     "FACT: The staging cluster runs Kafka 3.7."),
    ("Message: My cat is called Miso.", "FACT: The user's cat is called Miso."),
)
UPDATE_EXAMPLES = (
    ("Memories:\nm1: The user prefers dark mode.\nm2: The API runs on Go 1.21.\n\n"
     "New fact: The API runs on Go 1.22 now.", "UPDATE m2"),
    ("Memories:\nm1: The user prefers dark mode.\n\nNew fact: The team tracks bugs in Jira.",
     "ADD"),
    ("Memories:\nm3: The team tracks bugs in Jira.\n\nNew fact: Bugs are tracked in Jira.",
     "NONE"),
)
FORGET_EXAMPLES = (
    ("Memories:\nm1: The user lives at 4 Elm Street.\nm2: The API runs on Go 1.22.\n\n"
     "Forget: the user's home address", "DELETE m1"),
    ("Memories:\nm2: The API runs on Go 1.22.\n\nForget: the user's birthday", "NONE"),
)

_CANDIDATE = re.compile(r"^\W*(fact|forget)\s*:\s*(.+?)\s*$", re.IGNORECASE)
_NONE = re.compile(r"^\W*none\b", re.IGNORECASE)
_DECISION = re.compile(r"^\W*(add|update|delete|none)\b\W*(?:id\W*)?(m\d+)?", re.IGNORECASE)


@dataclass(frozen=True)
class LlmExtractSettings:
    """params.yaml `llm_extractor` with the model's seed (docs/model.md)."""
    max_tokens: int  # of one reply
    memories_shown: int  # the memories most like a candidate, shown for its decision
    seed: int


class CandidateKind(str, Enum):
    FACT = "fact"
    FORGET = "forget"


class Decision(str, Enum):
    ADD = "add"
    UPDATE = "update"
    DELETE = "delete"
    NONE = "none"
    UNPARSED = "unparsed"  # the reply named no decision, or a memory it was not shown


@dataclass(frozen=True)
class Candidate:
    exchange: Exchange
    kind: CandidateKind
    text: str  # as the model wrote it


@dataclass(frozen=True)
class LlmStep:
    candidate: Candidate
    decision: Decision
    memory: str | None  # the memory written or removed
    asked: bool  # False when there was nothing to compare with (no request sent)


@dataclass(frozen=True)
class LlmExtraction:
    records: list[FactRecord]
    steps: list[LlmStep]
    turns: int  # distinct user turns read
    unparsed_turns: int  # replies to the first step with no FACT, FORGET or NONE line

    def summary(self) -> dict:
        """Counts for the report: what the model found and decided."""
        decisions = Counter(s.decision.value for s in self.steps)
        return {"turns_read": self.turns, "unparsed_turns": self.unparsed_turns,
                "facts": sum(s.candidate.kind is CandidateKind.FACT for s in self.steps),
                "forget_requests": sum(s.candidate.kind is CandidateKind.FORGET
                                       for s in self.steps),
                "decisions": {d.value: decisions.get(d.value, 0) for d in Decision},
                "records": len(self.records)}


def turn_text(exchange: Exchange) -> str:
    return f"{exchange.speaker}: {exchange.user}" if exchange.speaker else exchange.user


def _request(system: str, examples: Sequence[tuple[str, str]], ask: str,
             settings: LlmExtractSettings) -> ChatRequest:
    shown = [turn for question, answer in examples
             for turn in (("user", question), ("assistant", answer))]
    return ChatRequest((("system", system), *shown, ("user", ask)), settings.max_tokens,
                       settings.seed)


def extract_request(text: str, settings: LlmExtractSettings) -> ChatRequest:
    return _request(EXTRACT_SYSTEM, EXTRACT_EXAMPLES, f"Message: {text}", settings)


def parse_candidates(reply: str) -> list[tuple[CandidateKind, str]] | None:
    """The FACT and FORGET lines of a reply; [] for NONE; None when it holds neither."""
    found = []
    said_none = False
    for line in reply.splitlines():
        if match := _CANDIDATE.match(line):
            found.append((CandidateKind(match.group(1).lower()), match.group(2)))
        elif _NONE.match(line):
            said_none = True
    return found if found or said_none else None


def parse_decision(reply: str, shown: Sequence[str]) -> tuple[Decision, str | None]:
    """The reply's first line that names a decision; UNPARSED when none does, or when an
    UPDATE or DELETE names a memory that was not shown."""
    for line in reply.splitlines():
        match = _DECISION.match(line)
        if not match:
            continue
        decision, memory = Decision(match.group(1).lower()), match.group(2)
        if decision in (Decision.UPDATE, Decision.DELETE):
            memory = memory.lower() if memory else None
            return (decision, memory) if memory in shown else (Decision.UNPARSED, None)
        return decision, None
    return Decision.UNPARSED, None


@dataclass
class _Memory:
    id: str
    text: str
    written: int  # write order: a tie in likeness goes to the newest


class _Memories:
    def __init__(self, shown: int) -> None:
        self.live: dict[str, _Memory] = {}
        self.shown = shown
        self.added = 0
        self.writes = 0

    def related(self, candidate: Candidate) -> list[_Memory]:
        """The `shown` memories most like the candidate (stemmed word overlap), in id order."""
        drop = FORGET_WORDS if candidate.kind is CandidateKind.FORGET else frozenset()
        words = content_words(candidate.text, drop)
        ranked = sorted(self.live.values(), reverse=True,
                        key=lambda m: (lexical(words, content_words(m.text)), m.written))
        return sorted(ranked[:self.shown], key=lambda m: int(m.id[1:]))

    def write(self, memory_id: str | None, text: str) -> str:
        if memory_id is None:
            self.added += 1
            memory_id = f"m{self.added}"
        self.writes += 1
        self.live[memory_id] = _Memory(memory_id, text, self.writes)
        return memory_id


def decision_request(candidate: Candidate, related: Sequence[_Memory],
                     settings: LlmExtractSettings) -> ChatRequest:
    listed = "\n".join(f"{m.id}: {m.text}" for m in related)
    if candidate.kind is CandidateKind.FACT:
        return _request(UPDATE_SYSTEM, UPDATE_EXAMPLES,
                        f"Memories:\n{listed}\n\nNew fact: {candidate.text}", settings)
    return _request(FORGET_SYSTEM, FORGET_EXAMPLES,
                    f"Memories:\n{listed}\n\nForget: {candidate.text}", settings)


def llm_extraction(scenario: Scenario, settings: LlmExtractSettings, ask: Ask
                   ) -> LlmExtraction:
    """Each user turn read by the model; each scenario of a joined benchmark is its own
    memory (as the bench replays it)."""
    texts = list(dict.fromkeys(turn_text(e) for e in scenario.exchanges))
    replies = dict(zip(texts, ask([extract_request(t, settings) for t in texts]), strict=True))
    parsed = {text: parse_candidates(reply) for text, reply in replies.items()}
    records: list[FactRecord] = []
    steps: list[LlmStep] = []
    memories, segment = _Memories(settings.memories_shown), None
    for exchange in scenario.exchanges:
        if scenario.segment_of(exchange.day) != segment:
            segment = scenario.segment_of(exchange.day)
            memories = _Memories(settings.memories_shown)
        for kind, text in parsed[turn_text(exchange)] or ():
            step = _decide(Candidate(exchange, kind, text), memories, settings, ask)
            steps.append(step)
            if step.decision is Decision.DELETE:
                records.append(FactRecord(step.memory, RecordAction.DELETE, None,
                                          exchange.day, exchange.index, text))
            elif step.memory is not None and step.decision is not Decision.NONE:
                records.append(FactRecord(step.memory, RecordAction.SET, text, exchange.day,
                                          exchange.index, text))
    return LlmExtraction(records, steps, len(texts),
                         sum(p is None for p in parsed.values()))


def _decide(candidate: Candidate, memories: _Memories, settings: LlmExtractSettings,
            ask: Ask) -> LlmStep:
    """One candidate against the memory. With nothing to compare, a fact is added and a
    forget request does nothing, without asking. A fact whose reply decides nothing is
    added (Mem0's default: extracted facts are kept); a forget request's removes nothing."""
    related = memories.related(candidate)
    fact = candidate.kind is CandidateKind.FACT
    if not related:
        if fact:
            return LlmStep(candidate, Decision.ADD, memories.write(None, candidate.text), False)
        return LlmStep(candidate, Decision.NONE, None, False)
    [reply] = ask([decision_request(candidate, related, settings)])
    decision, memory = parse_decision(reply, [m.id for m in related])
    if fact and decision is Decision.DELETE:
        decision, memory = Decision.UNPARSED, None  # a fact removes nothing
    if not fact and decision in (Decision.ADD, Decision.UPDATE):
        decision, memory = Decision.UNPARSED, None  # a forget request writes nothing
    if decision is Decision.DELETE:
        del memories.live[memory]
    elif decision is Decision.UPDATE:
        memories.write(memory, candidate.text)
    elif fact and decision in (Decision.ADD, Decision.UNPARSED):
        memory = memories.write(None, candidate.text)
    return LlmStep(candidate, decision, memory, True)
