"""Settings of the configurable extractors (params.yaml `extract`), with the defaults that
params.yaml states: the consolidating extractor's thresholds and the noisy one's rates."""

from __future__ import annotations

from dataclasses import dataclass, field

SIMILARITIES = ("dense", "lexical", "both")  # MiniLM cosine, stemmed word overlap, their mean


@dataclass(frozen=True)
class ConsolidationSettings:
    similarity: str = "dense"
    update_threshold: float = 0.5  # at or above: UPDATE the most similar memory, else ADD
    delete_threshold: float = 0.45  # a forget request at or above: DELETE that memory
    noop_threshold: float = 0.97  # at or above: the same fact restated, nothing written


@dataclass(frozen=True)
class NoiseSettings:
    seed: int = 0
    missed_facts: float = 0.0  # a fact's first statement is not extracted
    missed_updates: float = 0.0  # a change becomes a new memory beside the old one
    false_merges: float = 0.0  # a new fact overwrites the newest unrelated memory
    missed_deletions: float = 0.0  # a forget request is not acted on

    def at_rate(self, rate: float, seed: int) -> NoiseSettings:
        """Every error class at the same rate (the sweep's x axis)."""
        return NoiseSettings(seed, rate, rate, rate, rate)


@dataclass(frozen=True)
class ExtractSettings:
    consolidation: ConsolidationSettings = field(default_factory=ConsolidationSettings)
    noise: NoiseSettings = field(default_factory=NoiseSettings)
