"""Stage users: a deployment of several users, each policy with namespaced and with shared
stores, and the cross-user leaks (an empty table for a single-user story)."""

from __future__ import annotations

from pathlib import Path

import typer

from membench.commands.common import (
    PARAMS_FILE,
    CorpusSnapshot,
    OutFile,
    ParamsFile,
    fails_cleanly,
    progress,
    read_parameters_and_corpus,
)
from membench.extraction.extractors import EXTRACTORS
from membench.io.outputs import staged_outputs
from membench.io.scenario_file import read_scenario_source
from membench.io.tables import user_outcomes_table
from membench.memory.policies import build_policies, without_embeddings
from membench.scenario.deployment import build_user_scenarios
from membench.scenario.spec import ScenarioSpec
from membench.scoring.users import build_deployment, run_deployment


@fails_cleanly
def users(corpus: CorpusSnapshot, out: OutFile, params: ParamsFile = PARAMS_FILE) -> None:
    """Run every policy without embeddings per user and on one shared store."""
    p, files = read_parameters_and_corpus(params, corpus)
    spec = read_scenario_source(Path(p.scenario.file))
    others = spec.users if isinstance(spec, ScenarioSpec) else ()  # format 2: one user
    rows = []
    if others:
        deployment = build_deployment(build_user_scenarios(spec, files, p.scenario.shape()),
                                      EXTRACTORS[p.extractor])
        # Dense policies would need every user's texts embedded; they are left out here.
        rows = run_deployment(deployment, without_embeddings(build_policies(p.policies)),
                              progress=progress)
    with staged_outputs() as outputs:
        outputs.parquet(out, user_outcomes_table(rows))
    typer.echo(f"users: {1 + len(others)} user(s), {len(rows)} probe outcomes", err=True)
