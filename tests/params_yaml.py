"""params.yaml's settings, for tests that build policies, extractors or stories directly:
the values live only in params.yaml, so a test that needs "the defaults" reads them here."""

from __future__ import annotations

from pathlib import Path

from membench.extraction.extractors import EXTRACTORS
from membench.params import load_params

PARAMS = load_params(Path(__file__).resolve().parents[1] / "params.yaml", set(EXTRACTORS))
