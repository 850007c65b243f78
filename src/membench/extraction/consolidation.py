"""The consolidating extractor: extract, then update (Mem0's shape, LangMem's
consolidation). Each candidate turn is compared with the memories kept so far; by the
thresholds of params.yaml it becomes ADD (a new memory), UPDATE (overwrites the most
similar memory), DELETE (a forget request removes the most similar memory) or NOOP.
Memory keys are the extractor's own ids (m1, m2, ...), never the scenario's gold keys."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from fractions import Fraction

import numpy as np

from membench.extraction.detection import Candidate, CandidateKind, detect
from membench.extraction.extractors import (
    EXTRACTORS,
    ConfigurableExtractor,
    FactRecord,
    RecordAction,
)
from membench.extraction.settings import ConsolidationSettings
from membench.extraction.similarity import FORGET_WORDS, TurnVectors, content_words, lexical
from membench.scenario.model import Scenario


class Decision(str, Enum):
    ADD = "add"
    UPDATE = "update"
    DELETE = "delete"
    NOOP = "noop"


@dataclass(frozen=True)
class Step:
    """What consolidation did with one candidate, for the report and the tests."""
    candidate: Candidate
    decision: Decision
    memory: str | None  # the memory written or removed; the nearest one for a NOOP
    score: Fraction  # similarity to the nearest memory (0 when there was none)


@dataclass
class _Memory:
    id: str
    text: str


class Consolidator:
    def __init__(self, settings: ConsolidationSettings,
                 vectors: Mapping[str, np.ndarray] | None = None) -> None:
        self.settings = settings
        self.vectors = TurnVectors(vectors)
        self.update_at = Fraction(str(settings.update_threshold))
        self.delete_at = Fraction(str(settings.delete_threshold))
        self.noop_at = Fraction(str(settings.noop_threshold))

    def similarity(self, candidate: Candidate, memory: _Memory) -> Fraction:
        drop = FORGET_WORDS if candidate.kind is CandidateKind.FORGET else frozenset()
        mode = self.settings.similarity
        scores = []
        if mode in ("lexical", "both"):
            scores.append(lexical(content_words(candidate.text, drop), content_words(memory.text)))
        if mode in ("dense", "both"):
            scores.append(self.vectors.cosine(candidate.text, memory.text))
        return sum(scores, Fraction(0)) / len(scores)

    def nearest(self, candidate: Candidate, memories: list[_Memory]
                ) -> tuple[_Memory | None, Fraction]:
        """The most similar memory; ties go to the newest written (last in the list)."""
        best, best_score = None, Fraction(-2)
        for memory in memories:
            score = self.similarity(candidate, memory)
            if score >= best_score:
                best, best_score = memory, score
        return best, (best_score if best else Fraction(0))

    def run(self, candidates: list[Candidate]) -> list[Step]:
        memories: list[_Memory] = []  # live memories, least recently written first
        steps = []
        for candidate in candidates:
            nearest, score = self.nearest(candidate, memories)
            if candidate.kind is CandidateKind.FORGET:
                if nearest is not None and score >= self.delete_at:
                    memories.remove(nearest)
                    steps.append(Step(candidate, Decision.DELETE, nearest.id, score))
                else:
                    steps.append(Step(candidate, Decision.NOOP, nearest and nearest.id, score))
            elif nearest is not None and score >= self.noop_at:
                steps.append(Step(candidate, Decision.NOOP, nearest.id, score))
            elif nearest is not None and score >= self.update_at:
                memories.remove(nearest)
                memories.append(_Memory(nearest.id, candidate.text))
                steps.append(Step(candidate, Decision.UPDATE, nearest.id, score))
            else:
                memory = _Memory(f"m{sum(s.decision is Decision.ADD for s in steps) + 1}",
                                 candidate.text)
                memories.append(memory)
                steps.append(Step(candidate, Decision.ADD, memory.id, score))
        return steps


def records_from_steps(steps: list[Step]) -> list[FactRecord]:
    records = []
    for step in steps:
        c = step.candidate
        if step.decision is Decision.DELETE:
            records.append(FactRecord(step.memory, RecordAction.DELETE, None, c.day,
                                      c.exchange_index, c.text))
        elif step.decision in (Decision.ADD, Decision.UPDATE):
            records.append(FactRecord(step.memory, RecordAction.SET, c.text, c.day,
                                      c.exchange_index, c.text))
    return records


def consolidation_steps(scenario: Scenario, settings: ConsolidationSettings,
                        vectors: Mapping[str, np.ndarray] | None = None) -> list[Step]:
    return Consolidator(settings, vectors).run(detect(scenario.exchanges))


def consolidating_extractor(scenario: Scenario, settings: ConsolidationSettings,
                            vectors: Mapping[str, np.ndarray] | None = None) -> list[FactRecord]:
    return records_from_steps(consolidation_steps(scenario, settings, vectors))


EXTRACTORS.add("consolidating", ConfigurableExtractor(
    lambda scenario, settings, vectors: consolidating_extractor(
        scenario, settings.consolidation, vectors),
    reads_vectors=lambda settings: settings.consolidation.similarity != "lexical"))
