"""The scenario manifest's format-2 keys (a format-1 story adds none, so its manifest
keeps its bytes): scoring mode, each scenario's days, and probe counts by kind."""

from __future__ import annotations

from collections import Counter

from membench.scenario.model import Scenario
from membench.scenario.sources import GivenSource, ScenarioSource, generated_sessions


def format2_manifest(source: ScenarioSource, built: Scenario) -> dict:
    if not isinstance(source, GivenSource):
        return {}
    titles = {spec.id: spec.title for spec in source.specs}
    scenarios = []
    for sid, first, last in built.segments:
        probes = [p for p in built.probes if p.scenario == sid]
        scenarios.append({"id": sid, "title": titles[sid], "first_day": first, "last_day": last,
                          "probes": len(probes),
                          "exchanges": sum(first <= e.day <= last for e in built.exchanges)})
    return {
        "format": 2,
        "scoring": built.scoring,
        "scenarios": scenarios,
        "probe_forms": dict(sorted(Counter(p.form_name for p in built.probes).items())),
        "abstention_probes": sum(p.abstention for p in built.probes),
        "joined": source.joined,
        "generated_sessions": generated_sessions(source),
    }
