"""Registers the configurable built-in extractors beside `perfect`."""

from __future__ import annotations

from membench.extraction.consolidation import consolidating_extractor
from membench.extraction.extractors import EXTRACTORS, ConfigurableExtractor
from membench.extraction.noisy import noisy_extractor

EXTRACTORS.add("consolidating", ConfigurableExtractor(
    lambda scenario, settings, vectors: consolidating_extractor(
        scenario, settings.consolidation, vectors),
    reads_vectors=lambda settings: settings.consolidation.similarity != "lexical"))
EXTRACTORS.add("noisy", ConfigurableExtractor(
    lambda scenario, settings, vectors: noisy_extractor(scenario, settings.noise)))
