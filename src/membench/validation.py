"""Strict checks shared by the params file and the scenario file: an unknown or missing key
stops the run with its full dotted name, never silently ignored.

The params file is read by pydantic models built on `Section` (no coercion, no unknown
key); `validation_message` turns pydantic's report into the one-line message that names
the param. The scenario file still uses `check_keys`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError


def check_keys(where: str, table: Any, required: set[str], optional: set[str],
               error: type[ValueError]) -> dict:
    if not isinstance(table, dict):
        raise error(f"{where}: expected a mapping, got {type(table).__name__}")
    unknown = sorted(set(table) - required - optional)
    if unknown:
        raise error(f"{where}: unknown key(s) {', '.join(f'{where}.{k}' for k in unknown)}")
    missing = sorted(required - set(table))
    if missing:
        raise error(f"{where}: missing key(s) {', '.join(f'{where}.{k}' for k in missing)}")
    return table


class Section(BaseModel):
    """A table of a params file: every key required and typed exactly (a string is not a
    number, true is not 1), an unknown key an error. Each field's description is its
    meaning in the README's parameter table."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def unique(values: Sequence[Any], what: str) -> None:
    """For a validator: a list whose entries must differ (days, seeds, names)."""
    if len(set(values)) != len(values):
        raise ValueError(f"repeated {what} in {list(values)}")


def _dotted(prefix: str, loc: tuple[str | int, ...]) -> str:
    """`scenario.probe_days[2]`; the whole file, with no key, is `params`."""
    name = prefix
    for part in loc:
        name = f"{name}[{part}]" if isinstance(part, int) else (
            f"{name}.{part}" if name else str(part))
    return name or "params"


def _message(kind: str, value: Any, ctx: dict) -> str:
    """Pydantic's error kinds in the wording of the hand-written checks they replaced."""
    if kind in ("int_type", "int_parsing"):
        return f"expected a whole number, got {value!r}"
    if kind in ("float_type", "float_parsing"):
        return f"expected a number, got {value!r}"
    if kind in ("string_type", "string_too_short"):
        return f"expected non-empty text, got {value!r}"
    if kind == "bool_type":
        return f"expected true or false, got {value!r}"
    if kind == "list_type":
        return f"expected a list, got {value!r}"
    if kind == "too_short":
        return "expected a non-empty list"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return f"expected a mapping, got {type(value).__name__}"
    if kind == "greater_than_equal":
        return f"must be at least {ctx['ge']:g}, got {value!r}"
    if kind == "less_than_equal":
        return f"must be at most {ctx['le']:g}, got {value!r}"
    if kind == "value_error":
        return str(ctx["error"])
    return f"{kind}: {value!r}"


def validation_message(error: ValidationError, prefix: str = "") -> str:
    """The first problem as one line naming the dotted param, like
    `scenario.sessions: must be at least 1, got 0`; unknown and missing keys of one table
    are named together, as `scenario: unknown key(s) scenario.sede`. `prefix` names the
    table validated, when it is not the whole file."""
    problems = error.errors(include_url=False)
    for kind, label in (("extra_forbidden", "unknown"), ("missing", "missing")):
        keyed = [p for p in problems if p["type"] == kind]
        if keyed:
            table = keyed[0]["loc"][:-1]
            names = sorted(_dotted(prefix, p["loc"]) for p in keyed if p["loc"][:-1] == table)
            return f"{_dotted(prefix, table)}: {label} key(s) {', '.join(names)}"
    first = problems[0]
    return f"{_dotted(prefix, first['loc'])}: " \
           f"{_message(first['type'], first.get('input'), first.get('ctx', {}))}"
