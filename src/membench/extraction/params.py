"""The `extract` section's optional tables and the `extraction_sweep` section, validated
as strictly as the rest of params.yaml (membench.params calls these)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from membench.extraction.settings import (
    SIMILARITIES,
    ConsolidationSettings,
    ExtractSettings,
    NoiseSettings,
)
from membench.validation import check_keys


@dataclass(frozen=True)
class SweepParams:
    rates: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)  # x axis: every error class
    seeds: tuple[int, ...] = (1, 2, 3, 4, 5)  # noise seeds per rate (min-max bands)


def fraction_param(name: str, value: Any, error: type[ValueError]) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise error(f"{name}: expected a number from 0 to 1, got {value!r}")
    return float(value)


def _seed(name: str, value: Any, error: type[ValueError]) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise error(f"{name}: expected a whole number of at least 0, got {value!r}")
    return value


def parse_extract_settings(section: dict, error: type[ValueError]) -> ExtractSettings:
    """`extract.consolidation` and `extract.noise`, each optional (defaults apply)."""
    settings = ExtractSettings()
    c = check_keys("extract.consolidation", section.get("consolidation", {}), set(),
                   {"similarity", "update_threshold", "delete_threshold", "noop_threshold"},
                   error)
    similarity = c.get("similarity", settings.consolidation.similarity)
    if similarity not in SIMILARITIES:
        raise error(f"extract.consolidation.similarity: expected one of "
                    f"{', '.join(SIMILARITIES)}, got {similarity!r}")
    defaults = settings.consolidation
    consolidation = ConsolidationSettings(similarity, *(
        fraction_param(f"extract.consolidation.{k}", c.get(k, getattr(defaults, k)), error)
        for k in ("update_threshold", "delete_threshold", "noop_threshold")))
    n = check_keys("extract.noise", section.get("noise", {}), set(),
                   {"seed", "missed_facts", "missed_updates", "false_merges",
                    "missed_deletions"}, error)
    noise = NoiseSettings(_seed("extract.noise.seed", n.get("seed", 0), error), *(
        fraction_param(f"extract.noise.{k}", n.get(k, 0.0), error)
        for k in ("missed_facts", "missed_updates", "false_merges", "missed_deletions")))
    return ExtractSettings(consolidation, noise)


def parse_sweep(value: Any, error: type[ValueError]) -> SweepParams:
    s = check_keys("extraction_sweep", value, {"rates", "seeds"}, set(), error)
    for key in ("rates", "seeds"):
        if not isinstance(s[key], list) or not s[key]:
            raise error(f"extraction_sweep.{key}: expected a non-empty list")
    rates = tuple(fraction_param("extraction_sweep.rates", r, error) for r in s["rates"])
    seeds = tuple(_seed("extraction_sweep.seeds", x, error) for x in s["seeds"])
    if len(set(rates)) != len(rates) or list(rates) != sorted(rates):
        raise error(f"extraction_sweep.rates: expected increasing rates, got {list(rates)}")
    if len(set(seeds)) != len(seeds):
        raise error(f"extraction_sweep.seeds: repeated seed in {list(seeds)}")
    return SweepParams(rates, seeds)
