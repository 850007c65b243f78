"""The memory systems named in params, run on one scenario in every forget mode: shared by
the systems stage (with its persistent vector cache) and `membench bench --systems`."""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from membench.commands.system_units import (
    SystemsInputs,
    SystemUnit,
    SystemUnitResult,
    asks_model,
    run_system_unit,
    unit_size,
)
from membench.execution.embedding import embed_missing
from membench.execution.executor import executor
from membench.io.scenario_file import scenario_toml
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
from membench.systems.deployment import DeploymentRun
from membench.systems.run import SystemRun, system_texts
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
        embed_missing(cache, model, texts, batch_size, progress)
        inputs = SystemsInputs(scenario, tuple(users), p.policies, model, batch_size, cache,
                               count_tokens, progress, model_seed=p.model.seed)
        units = [SystemUnit(name, mode, deployment)
                 for name in runnable for deployment in ((False, True) if users else (False,))
                 for mode in FORGET_MODES]
        results = dict(zip(units, _run_units(inputs, units, ask), strict=True))
        for name in runnable:
            system_runs = [results[u] for u in units if u.system == name and not u.deployment]
            deployed = [results[u] for u in units if u.system == name and u.deployment]
            entries[name] = ran(SYSTEMS[name], system_runs, deployed)
            done.runs += system_runs
            done.deployment += deployed
    done.entries = [entries[name] for name in p.systems.names]
    done.users = len(users)
    return done


def _run_units(inputs: SystemsInputs, units: list[SystemUnit], ask: AskModel | None) -> list:
    """Each unit's run, in the units' order: those of systems that ask the model here
    (with `ask`), the others wherever the executor places them."""
    asking = [u for u in units if asks_model(u)]
    others = [u for u in units if not asks_model(u)]
    found: dict[SystemUnit, SystemUnitResult] = {}
    if others:
        with executor("systems", len(others), inputs.say) as where:  # membench.execution
            found.update(zip(others, where.map(
                run_system_unit, inputs, others, label="systems", name=SystemUnit.describe,
                sizes=[unit_size(inputs, u) for u in others]), strict=True))
    here = replace(inputs, ask=ask)
    for unit in asking:
        found[unit] = run_system_unit(here, unit)
    for unit in units:  # what workers embedded joins the stage's cache (here: already in)
        for text, vector in found[unit].embedded:
            inputs.vectors.put(inputs.model, text, vector)
    return [found[unit].run for unit in units]
