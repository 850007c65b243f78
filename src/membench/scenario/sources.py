"""What `scenario.file` names, as parsed: a format-1 story (ScenarioSpec) or one or more
format-2 scenarios (GivenSource), and the one build call for either."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from membench.scenario.build import CorpusText, ScenarioShape, build_scenario
from membench.scenario.format2 import Format2Spec
from membench.scenario.given import build_given
from membench.scenario.model import Scenario
from membench.scenario.spec import ScenarioSpec


@dataclass(frozen=True)
class GivenSource:
    specs: tuple[Format2Spec, ...]
    joined: bool  # a benchmark directory: several scenarios run as one


ScenarioSource = ScenarioSpec | GivenSource


def generated_sessions(source: ScenarioSource) -> int | None:
    """Format 2: how many sessions are generated (drawn by seed); None for format 1."""
    if not isinstance(source, GivenSource):
        return None
    return sum(s.turns is None for spec in source.specs if spec.filler for s in spec.sessions)


def seed_matters(source: ScenarioSource) -> bool:
    """A seed draws filler only: a scenario whose sessions are all given ignores it."""
    return generated_sessions(source) != 0


def build_any(source: ScenarioSource, corpus: Sequence[CorpusText],
              shape: ScenarioShape) -> Scenario:
    if isinstance(source, GivenSource):
        return build_given(source.specs, corpus, shape, joined=source.joined)
    return build_scenario(source, corpus, shape)
