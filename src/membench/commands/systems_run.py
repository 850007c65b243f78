"""The memory systems named in params, run on one scenario in every forget mode: shared by
the systems stage (with its persistent vector cache) and `membench bench --systems`."""

from __future__ import annotations

import shutil
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from membench.cleanup.private_temp import private_dir, remove
from membench.execution.embedding import embed_missing
from membench.io.at_rest import backend_files
from membench.io.scenario_file import scenario_toml
from membench.io.write_watch import WriteWatch
from membench.params import Params, ParamsError
from membench.plugins import load_plugins
from membench.retrieval.embedding_cache import EmbeddingCache
from membench.scenario.build import CorpusText, ScenarioShape, stretch_day
from membench.scenario.deployment import UserScenario, build_user_scenarios
from membench.scenario.generate import generate_scenario
from membench.scenario.model import Scenario
from membench.scenario.spec import parse_scenario_spec
from membench.scoring.bench import CountTokens, Progress
from membench.systems.base import FORGET_MODES, SYSTEMS, AskModel, SystemUnavailable
from membench.systems.deployment import DeploymentRun, run_system_deployment
from membench.systems.run import SystemFailed, SystemRun, run_system, system_texts
from membench.systems.summary import not_run, ran


@dataclass
class SystemsRun:
    entries: list[dict] = field(default_factory=list)  # reports/systems.json's, in params order
    runs: list[SystemRun] = field(default_factory=list)
    deployment: list[DeploymentRun] = field(default_factory=list)
    users: int = 0  # the deployment's users (0: none run)


def deployment_users(p: Params, corpus: Sequence[CorpusText]) -> list[UserScenario]:
    """The generated deployment the systems also run: the generate section's story with
    systems.users users over systems.sessions days, probed on the scenario's probe days
    stretched to those days, with systems.lines_per_reply filler lines; none when no
    system runs (a story too big for systems.sessions must not stop a stage with nothing
    to drive)."""
    s = p.systems
    if not s.users or not s.names:
        return []
    settings = replace(p.generate, users=s.users, sessions=s.sessions)
    spec = parse_scenario_spec(tomllib.loads(scenario_toml(generate_scenario(settings), "")))
    days = tuple(sorted({stretch_day(d, s.sessions, p.scenario.sessions)
                         for d in p.scenario.probe_days}))
    shape = ScenarioShape(p.scenario.seed, s.sessions, p.scenario.exchanges_per_session, days,
                          s.lines_per_reply)
    return build_user_scenarios(spec, corpus, shape)


def check_names(names) -> None:
    load_plugins("systems")
    unknown = [n for n in names if n not in SYSTEMS]
    if unknown:
        raise ParamsError(f"systems.names: unknown system(s) {unknown}; "
                          f"known: {', '.join(SYSTEMS)}")


def run_named_systems(p: Params, scenario: Scenario, count_tokens: CountTokens,
                      cache: EmbeddingCache, progress: Progress,
                      users: Sequence[UserScenario] = (),
                      ask: AskModel | None = None) -> SystemsRun:
    """Each system in p.systems.names that is installed, in both modes, on the scenario and
    on the deployment of `users` (if any); the others are reported as not run. Texts are
    embedded into `cache` first (a progress bar), once. A system that asks the model gets
    `ask` (the systems stage's, through its response cache)."""
    check_names(p.systems.names)
    asking = [n for n in p.systems.names if SYSTEMS[n].asks_model]
    if asking and ask is None:
        raise ParamsError(f"systems.names: {', '.join(asking)} ask(s) the model, which only "
                          "the systems stage gives (dvc repro; docs/model.md)")
    entries: dict[str, dict] = {}
    runnable = []
    for name in p.systems.names:
        try:
            SYSTEMS[name].check_installed()
            runnable.append(name)
        except SystemUnavailable as error:
            entries[name] = not_run(SYSTEMS[name], str(error))
            progress(f"system {name} not run: {error}")
    done = SystemsRun()
    if runnable:
        model, batch_size = p.embedding.model, p.embedding.batch_size
        texts = list(dict.fromkeys(system_texts(scenario) + [
            text for user in users for text in system_texts(user.scenario)]))
        progress(f"systems: {len(texts)} texts, {len(cache.missing(model, texts))} to embed "
                 f"with {model}")

        def embed(batch):
            """Cached vectors; a text no turn or probe holds is embedded now, and cached."""
            batch = list(batch)
            embed_missing(cache, model, batch, batch_size, progress)
            return cache.embed(model, batch, _nothing_missing)

        embed(texts)
        workdir = private_dir("systems")  # 0700; removed however the run ends
        # the names in workdir the systems may write: the directory's own marker, then theirs
        allowed = {entry.name for entry in workdir.iterdir()}
        watch = WriteWatch.start()
        try:
            for name in runnable:
                system_class = SYSTEMS[name]
                if system_class.asks_model:
                    system_class = system_class.with_model(ask, p.model.seed)
                system_runs = []
                for mode in FORGET_MODES:
                    directory = workdir / f"{name}-{mode}"
                    directory.mkdir()
                    allowed.add(directory.name)
                    try:
                        system_runs.append(run_system(
                            system_class, scenario, mode, p.policies, embed, count_tokens,
                            directory, backend_files, fork_in(workdir, allowed), progress))
                    except SystemFailed as error:
                        raise ValueError(str(error)) from error
                deployed = []
                for mode in FORGET_MODES if users else ():
                    directory = workdir / f"{name}-{mode}-users"
                    directory.mkdir()
                    allowed.add(directory.name)
                    try:
                        deployed.append(run_system_deployment(
                            system_class, users, mode, p.policies, embed, directory,
                            backend_files, fork_in(workdir, allowed), progress))
                    except SystemFailed as error:
                        raise ValueError(str(error)) from error
                outside = watch.written(workdir, allowed)
                if outside:
                    shown = ", ".join(outside[:5]) + (" ..." if len(outside) > 5 else "")
                    raise ValueError(f"system {name} wrote outside its directory: {shown}")
                entries[name] = ran(SYSTEMS[name], system_runs, deployed)
                done.runs += system_runs
                done.deployment += deployed
        finally:
            remove(workdir)
    done.entries = [entries[name] for name in p.systems.names]
    done.users = len(users)
    return done


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
