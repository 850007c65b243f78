"""Settings of the configurable extractors (params.yaml `extract`): the consolidating
extractor's thresholds and the noisy one's rates. Their values live only in params.yaml."""

from __future__ import annotations

from dataclasses import dataclass

SIMILARITIES = ("dense", "lexical", "both")  # MiniLM cosine, stemmed word overlap, their mean


@dataclass(frozen=True)
class ConsolidationSettings:
    similarity: str  # one of SIMILARITIES
    update_threshold: float  # at or above: UPDATE the most similar memory, else ADD
    delete_threshold: float  # a forget request at or above: DELETE that memory
    noop_threshold: float  # at or above: the same fact restated, nothing written


@dataclass(frozen=True)
class NoiseSettings:
    seed: int
    missed_facts: float  # a fact's first statement is not extracted
    missed_updates: float  # a change becomes a new memory beside the old one
    false_merges: float  # a new fact overwrites the newest unrelated memory
    missed_deletions: float  # a forget request is not acted on

    @classmethod
    def at_rate(cls, rate: float, seed: int) -> NoiseSettings:
        """Every error class at the same rate (the sweep's x axis)."""
        return cls(seed, rate, rate, rate, rate)


@dataclass(frozen=True)
class ExtractSettings:
    consolidation: ConsolidationSettings
    noise: NoiseSettings
