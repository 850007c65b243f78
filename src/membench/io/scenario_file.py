"""Reads the scenario file: a format-1 story (TOML), a format-2 scenario (JSON) or a
benchmark directory of format-2 files, validated strictly; writes a generated story."""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path
from typing import Any

from membench.scenario.format2 import Format2Spec, parse_format2
from membench.scenario.sources import GivenSource, ScenarioSource
from membench.scenario.spec import ScenarioSpec, ScenarioSpecError, parse_scenario_spec

MANIFEST = "manifest.json"  # an importer's manifest beside a benchmark's scenario files


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
def read_format2(path: Path) -> Format2Spec:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ScenarioSpecError(f"cannot read scenario file {path}: {error.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ScenarioSpecError(f"scenario file {path} is not valid JSON: {error}") from None
    try:
        return parse_format2(data)
    except ScenarioSpecError as error:
        raise ScenarioSpecError(f"scenario file {path}: {error}") from None


def benchmark_files(directory: Path) -> list[Path]:
    """A benchmark's scenario files: every *.json but the manifest, sorted by name."""
    files = sorted(p for p in directory.glob("*.json") if p.name != MANIFEST)
    if not files:
        raise ScenarioSpecError(f"scenario directory {directory} holds no format-2 *.json file")
    return files


def read_scenario_source(path: Path) -> ScenarioSource:
    """By what the path is: a directory (benchmark), *.json (format 2), else TOML."""
    if path.is_dir():
        return GivenSource(tuple(read_format2(p) for p in benchmark_files(path)), joined=True)
    if path.suffix == ".json":
        return GivenSource((read_format2(path),), joined=False)
    return read_scenario_spec(path)


def scenario_sha256(path: Path) -> str:
    """A file's SHA-256; a directory's: of its scenario files' "name sha256" lines."""
    if not path.is_dir():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    lines = "".join(f"{p.name} {hashlib.sha256(p.read_bytes()).hexdigest()}\n"
                    for p in benchmark_files(path))
    return hashlib.sha256(lines.encode()).hexdigest()
