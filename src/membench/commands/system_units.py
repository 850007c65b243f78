"""One memory system in one forget mode, on the story or on the generated deployment: the
systems stage's unit of work (membench.execution), run in the stage's process or on a
worker. Each unit has a private directory of its own, watched for writes outside it.

A system that asks the model runs in the stage's process: its answers go through the
stage's response cache (and the local model server it may start), which do not travel."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from membench.cleanup.private_temp import private_dir, remove
from membench.io.at_rest import backend_files
from membench.io.write_watch import WriteWatch
from membench.memory.policies import PolicySettings
from membench.plugins import load_plugins
from membench.retrieval import embedding
from membench.retrieval.embedding_cache import EmbeddingCache
from membench.scenario.deployment import UserScenario
from membench.scenario.model import Scenario
from membench.scoring.bench import CountTokens, Progress
from membench.systems.base import SYSTEMS, AskModel
from membench.systems.deployment import DeploymentRun, run_system_deployment
from membench.systems.run import SystemFailed, SystemRun, run_system


@dataclass(frozen=True)
class SystemUnit:
    system: str
    mode: str
    deployment: bool  # the generated deployment of several users, else the story

    @property
    def directory_name(self) -> str:
        return f"{self.system}-{self.mode}" + ("-users" if self.deployment else "")

    def describe(self) -> str:
        return f"{self.system} {self.mode}" + (" users" if self.deployment else "")


@dataclass(frozen=True)
class SystemsInputs:
    """What every unit reads, sent once to wherever the units run."""

    scenario: Scenario
    users: tuple[UserScenario, ...]
    settings: PolicySettings
    model: str  # the embedding model's id
    batch_size: int
    # the stage's cache, every turn and probe already in it; a text a system makes up (a
    # memory its model extracted) is embedded when the system asks for it
    vectors: EmbeddingCache
    count_tokens: CountTokens
    say: Progress
    ask: AskModel | None = None  # the stage's process only: never sent to a worker
    model_seed: int = 0


def asks_model(unit: SystemUnit) -> bool:
    return SYSTEMS[unit.system].asks_model


def unit_size(inputs: SystemsInputs, unit: SystemUnit) -> float:
    """Exchanges the unit's system is told: its relative cost."""
    if unit.deployment:
        return float(sum(len(user.scenario.exchanges) for user in inputs.users))
    return float(len(inputs.scenario.exchanges))


@dataclass(frozen=True)
class SystemUnitResult:
    run: SystemRun | DeploymentRun
    # the texts this unit embedded, not known before it ran, and their vectors: a worker's
    # cache is a copy, so they go back to the stage's, which the stage writes
    embedded: tuple[tuple[str, np.ndarray], ...]


def run_system_unit(inputs: SystemsInputs, unit: SystemUnit) -> SystemUnitResult:
    load_plugins("systems")  # on a worker too: plugin systems register on import
    system_class = SYSTEMS[unit.system]
    if system_class.asks_model:
        if inputs.ask is None:
            raise ValueError(f"system {unit.system} asks the model: it runs in the stage's "
                             "process only")
        system_class = system_class.with_model(inputs.ask, inputs.model_seed)

    embedded: dict[str, np.ndarray] = {}

    def embed(batch):
        """Cached vectors; a text no turn or probe holds is embedded now, here (the
        same bytes as anywhere: membench.retrieval.embedding), and cached."""
        batch = list(batch)
        missing = inputs.vectors.missing(inputs.model, batch)
        if missing:
            embedding.embed_missing(inputs.vectors, inputs.model, missing, inputs.batch_size)
            embedded.update(zip(missing, inputs.vectors.embed(inputs.model, missing,
                                                               _nothing_missing), strict=True))
        return inputs.vectors.embed(inputs.model, batch, _nothing_missing)

    workdir = private_dir("systems")  # 0700; removed however the unit ends
    try:
        # the names in workdir the system may write: the directory's own marker, then its
        allowed = {entry.name for entry in workdir.iterdir()}
        directory = workdir / unit.directory_name
        directory.mkdir()
        allowed.add(directory.name)
        watch = WriteWatch.start()
        fork = fork_in(workdir, allowed)
        try:
            if unit.deployment:
                done = run_system_deployment(system_class, inputs.users, unit.mode,
                                             inputs.settings, embed, directory, backend_files,
                                             fork, inputs.say)
            else:
                done = run_system(system_class, inputs.scenario, unit.mode, inputs.settings,
                                  embed, inputs.count_tokens, directory, backend_files, fork,
                                  inputs.say)
        except SystemFailed as error:
            raise ValueError(str(error)) from error
        outside = watch.written(workdir, allowed)
        if outside:
            shown = ", ".join(outside[:5]) + (" ..." if len(outside) > 5 else "")
            raise ValueError(f"system {unit.system} wrote outside its directory: {shown}")
        return SystemUnitResult(done, tuple(embedded.items()))
    finally:
        remove(workdir)


def _nothing_missing(texts):
    raise AssertionError(f"{len(texts)} texts were not embedded first")


def fork_in(workdir: Path, allowed: set[str] | None = None):
    """Copies a system's directory into workdir for one remedy (run.Fork); the copy's name
    joins `allowed`."""
    def fork(directory: Path, remedy: str) -> Path:
        copy = workdir / f"{directory.name}-{remedy}"
        shutil.copytree(directory, copy)
        if allowed is not None:
            allowed.add(copy.name)
        return copy
    return fork
