"""Reads the scenario text file (TOML) into a validated ScenarioSpec; writes a generated one."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

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


def _toml_value(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, dict)):
        raise TypeError(f"scenario TOML: unsupported value {value!r}")
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(value, int):
        return str(value)
    return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"


def _toml_entries(table: dict) -> list[str]:
    lines = []
    for key, value in table.items():
        if isinstance(value, list):
            lines.append(f"{key} = [")
            lines += [f"  {_toml_value(item)}," for item in value]
            lines.append("]")
        else:
            lines.append(f"{key} = {_toml_value(value)}")
    return lines


def scenario_toml(data: dict, comment: str = "") -> str:
    """The scenario file's text for `data` as membench.scenario.generate builds it:
    top-level values, then [[facts]], then [[users]] with their [[users.facts]]."""
    lines = [f"# {line}".rstrip() for line in comment.splitlines()]
    lines += _toml_entries({k: v for k, v in data.items() if k not in ("facts", "users")})
    for fact in data["facts"]:
        lines += ["", "[[facts]]", *_toml_entries(fact)]
    for user in data.get("users", ()):
        lines += ["", "[[users]]", f"name = {_toml_value(user['name'])}"]
        for fact in user["facts"]:
            lines += ["[[users.facts]]", *_toml_entries(fact)]
    return "\n".join(lines) + "\n"
