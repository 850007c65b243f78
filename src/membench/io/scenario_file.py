"""Reads the scenario text file (TOML) into a validated ScenarioSpec."""

from __future__ import annotations

import tomllib
from pathlib import Path

from membench.scenario.spec import ScenarioSpec, ScenarioSpecError, parse_scenario_spec


def read_scenario_spec(path: Path) -> ScenarioSpec:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ScenarioSpecError(f"cannot read scenario file {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ScenarioSpecError(f"scenario file {path} is not valid TOML: {error}") from None
    try:
        return parse_scenario_spec(data)
    except ScenarioSpecError as error:
        raise ScenarioSpecError(f"scenario file {path}: {error}") from None
