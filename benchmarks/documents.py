"""Realistic filler exchanges for embedding benchmarks: a question plus stdlib code."""

from __future__ import annotations

import random
import sysconfig
from pathlib import Path

QUESTIONS = [
    "Why does this function return None sometimes?",
    "Can you review this code before I merge it?",
    "Is there a race condition in this block?",
    "How would you make this faster?",
    "What does this part actually do?",
    "Could this leak file handles?",
    "How should I test this?",
    "Is this still the idiomatic way to write it?",
    "Why is the linter complaining here?",
    "Can you add type hints to this?",
]
LINES_PER_SNIPPET = 30
EXCLUDED_DIRS = {"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__"}


def stdlib_sources() -> list[Path]:
    """Python files of the standard library, sorted, without third-party or test code."""
    root = Path(sysconfig.get_paths()["stdlib"])
    return sorted(
        path
        for path in root.rglob("*.py")
        if not EXCLUDED_DIRS.intersection(path.relative_to(root).parts[:-1])
    )


def build_documents(count: int = 360, seed: int = 0) -> list[str]:
    """`count` exchanges: a random question and 30 consecutive lines of a random stdlib file."""
    rng = random.Random(seed)
    sources = stdlib_sources()
    documents: list[str] = []
    while len(documents) < count:
        path = rng.choice(sources)
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        if len(lines) < LINES_PER_SNIPPET:
            continue
        start = rng.randrange(len(lines) - LINES_PER_SNIPPET + 1)
        snippet = "\n".join(lines[start : start + LINES_PER_SNIPPET])
        documents.append(f"{rng.choice(QUESTIONS)}\n\n{snippet}")
    return documents


def default_embed_texts(root: Path = Path(".")) -> list[str]:
    """Every text the embed stage embeds for the params at root, by the stage's own code.

    Needs the stages before embed to have run (`dvc repro extract`).
    """
    from membench.core.indexing import embedding_texts
    from membench.policy_set import build_policies, dense_corpora
    from membench.stages.common import read_params, read_parquet, read_scenario
    from membench.tables import records_from_table

    params = read_params(root / "params.yaml")
    records = records_from_table(read_parquet(root / "data/fact_records.parquet"))
    policies = build_policies(params.policies)
    return embedding_texts(read_scenario(root / "data/scenario"), records, dense_corpora(policies))
