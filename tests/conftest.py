from __future__ import annotations

from pathlib import Path

import pytest

from membench.commands.inmemory import run_in_memory
from membench.extraction.extractors import EXTRACTORS
from membench.params import load_params

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def default_params():
    return load_params(ROOT / "params.yaml", set(EXTRACTORS))


@pytest.fixture(scope="session")
def default_run(default_params):
    """The default scenario run once in memory (about 3 s), shared by many tests."""
    return run_in_memory(default_params, root=ROOT)
