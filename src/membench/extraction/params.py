"""The params of the configurable extractors (`extract.consolidation`, `extract.noise`) and
of the error-rate sweep (`extraction_sweep`): their schema, which membench.params validates
and turns into the settings the extraction code receives."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field, field_validator

from membench.extraction.settings import SIMILARITIES
from membench.validation import Section, unique

Share = Annotated[float, Field(ge=0, le=1)]  # a rate or threshold from 0 to 1
Seed = Annotated[int, Field(ge=0)]


@dataclass(frozen=True)
class SweepParams:
    rates: tuple[float, ...]  # x axis: every error class at this rate
    seeds: tuple[int, ...]  # noise seeds per rate (min-max bands)


class ConsolidationSection(Section):
    """`extract.consolidation`: how the consolidating extractor compares a turn with the
    memories it has, and when it updates, deletes or does nothing."""

    similarity: str = Field(description="`dense` (MiniLM cosine), `lexical` (stemmed word "
                                        "overlap) or `both` (their mean)")
    update_threshold: Share = Field(description="at or above: UPDATE the most similar "
                                                "memory, else ADD")
    delete_threshold: Share = Field(description="a forget request at or above: DELETE the "
                                                "most similar memory")
    noop_threshold: Share = Field(description="at or above: the same fact restated, "
                                              "nothing written")

    @field_validator("similarity")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in SIMILARITIES:
            raise ValueError(f"expected one of {', '.join(SIMILARITIES)}, got {value!r}")
        return value


class NoiseSection(Section):
    """`extract.noise`: the noisy extractor is the perfect one with seeded errors, each
    class at its own rate."""

    seed: Seed = Field(description="picks which facts the errors hit")
    missed_facts: Share = Field(description="a fact's first statement is not extracted")
    missed_updates: Share = Field(description="a change becomes a new memory beside the old")
    false_merges: Share = Field(description="a new fact overwrites the newest unrelated memory")
    missed_deletions: Share = Field(description="a forget request is not acted on")


class SweepSection(Section):
    """`extraction_sweep`: the extraction stage runs the noisy extractor at each rate (every
    error class at once), for each seed."""

    rates: list[Share] = Field(min_length=1, description="the error rates swept, increasing")
    seeds: list[Seed] = Field(min_length=1, description="noise seeds at each rate "
                                                        "(min-max bands)")

    @field_validator("rates")
    @classmethod
    def _increasing(cls, rates: list[float]) -> list[float]:
        if any(a >= b for a, b in zip(rates, rates[1:])):
            raise ValueError(f"expected increasing rates, got {rates}")
        return rates

    @field_validator("seeds")
    @classmethod
    def _distinct(cls, seeds: list[int]) -> list[int]:
        unique(seeds, "seed")
        return seeds
