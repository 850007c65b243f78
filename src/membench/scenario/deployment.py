"""A deployment of several users: each user's own sessions, and the one transcript a shared
store would see with every user's messages in it.

Each user's story is built like the single-user one (same shape, the seed offset by the
user's position, so fillers differ) with the user's name at the start of every message:
in a shared store the name in the text is all that tells users apart. No filler quotes any
user's value, so a value found in an injection came from that user's statements.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from membench.scenario.build import CorpusText, ScenarioShape, build_scenario
from membench.scenario.model import Scenario
from membench.scenario.spec import ScenarioSpec
from membench.scenario.text import ValueFinder


@dataclass(frozen=True)
class UserScenario:
    name: str
    scenario: Scenario  # exchange indices are the user's own, from 0


def user_specs(spec: ScenarioSpec) -> list[tuple[str, ScenarioSpec]]:
    """(name, single-user spec) per user, the main story's user first."""
    if spec.user is None:
        raise ValueError("the scenario file names no users (see docs/generate.md)")
    main = replace(spec, user=None, users=())
    return [(spec.user, main)] + [(u.name, replace(main, facts=u.facts)) for u in spec.users]


def addressed(name: str, text: str) -> str:
    """A message as a shared store keeps it: the user's name, then the text."""
    return f"{name}: {text}"


def build_user_scenarios(spec: ScenarioSpec, corpus: Sequence[CorpusText],
                         shape: ScenarioShape) -> list[UserScenario]:
    specs = user_specs(spec)
    every_value = ValueFinder([v for _, s in specs for fact in s.facts for v in fact.values()])
    users = []
    for position, (name, user_spec) in enumerate(specs):
        built = build_scenario(user_spec, corpus, replace(shape, seed=shape.seed + position),
                               forbidden=every_value)
        exchanges = tuple(replace(e, user=addressed(name, e.user)) for e in built.exchanges)
        users.append(UserScenario(name, replace(built, exchanges=exchanges)))
    return users


def shared_transcript(users: Sequence[UserScenario]) -> tuple[Scenario, list[dict[int, int]]]:
    """Every user's exchanges in one transcript (day by day, users in order within a day),
    re-indexed, and per user the map from its own exchange index to the shared one.

    The shared scenario keeps the first user's facts and no probes: the shared-store bench
    reads only its exchanges; each probe is scored against its own user's facts."""
    order = sorted(((e.day, position, e.index), position, e)
                   for position, user in enumerate(users) for e in user.scenario.exchanges)
    maps: list[dict[int, int]] = [{} for _ in users]
    exchanges = []
    for index, (_, position, exchange) in enumerate(order):
        maps[position][exchange.index] = index
        exchanges.append(replace(exchange, index=index))
    first = users[0].scenario
    return replace(first, exchanges=tuple(exchanges), probes=()), maps
