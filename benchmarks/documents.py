"""The texts the embed stage embeds, for the embedding benchmarks."""

from __future__ import annotations

from pathlib import Path


def default_embed_texts(root: Path = Path(".")) -> list[str]:
    """Every text the embed stage embeds for the params at root, by the stage's own code.

    Needs the stages before embed to have run (`dvc repro extract`).
    """
    from membench.commands.parameters import read_params
    from membench.io.inputs import read_parquet, read_scenario
    from membench.io.tables import records_from_table
    from membench.memory.indexing import embedding_texts
    from membench.memory.policies import build_policies, embedded_stores

    params = read_params(root / "params.yaml")
    records = records_from_table(read_parquet(root / "data/fact_records.parquet"))
    policies = build_policies(params.policies)
    return embedding_texts(read_scenario(root / "data/scenario"), records, embedded_stores(policies))
