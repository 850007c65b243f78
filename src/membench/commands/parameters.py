"""Reading params.yaml as a command does: the plugins its names may refer to first."""

from __future__ import annotations

from pathlib import Path

from membench.extraction.extractors import EXTRACTORS
from membench.io.inputs import read_parquet
from membench.io.tables import corpus_from_table
from membench.params import Params, load_params
from membench.plugins import CORE_KINDS, load_plugins
from membench.scenario.build import CorpusText


def read_params(path: Path) -> Params:
    """Loads the core plugins first: params name an extractor, and the stage builds
    policies from their stores and retrievers."""
    load_plugins(*CORE_KINDS)
    return load_params(path, set(EXTRACTORS))


def read_parameters_and_corpus(params: Path, corpus: Path) -> tuple[Params, list[CorpusText]]:
    return read_params(params), corpus_from_table(read_parquet(corpus))
