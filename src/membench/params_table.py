"""The README's parameter table, rendered from the params schema (each key's meaning) and
params.yaml (its value), so the table cannot drift from either. scripts/params_table.py
writes it into the README; tests/test_params.py checks that it is up to date."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import BaseModel

from membench.params_schema import ParamsFile

START = "<!-- params-table:start -->"
END = "<!-- params-table:end -->"
HEADER = "<!-- written by scripts/params_table.py from params.yaml and params_schema.py -->"


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"`{value}`" if value else '`""`'  # an empty string shown as written
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, list):
        shown = [*value[:2], ..., value[-1]] if len(value) > 4 else value  # compact
        return "[" + ", ".join("..." if v is ... else _value(v) for v in shown) + "]"
    return str(value)


def _rows(model: type[BaseModel], data: dict, prefix: str) -> list[tuple[str, str, str]]:
    rows = []
    for key, field in model.model_fields.items():
        name, value = f"{prefix}{field.alias or key}", data[field.alias or key]
        nested = field.annotation if isinstance(field.annotation, type) and issubclass(
            field.annotation, BaseModel) else None
        if nested is not None and not (field.json_schema_extra or {}).get("one_row"):
            rows += _rows(nested, value, f"{name}.")
        elif nested is not None:  # one row: the values in the table's order
            rows.append((f"{name}.*", ", ".join(_value(value[k]) for k in nested.model_fields),
                         field.description or ""))
        else:
            rows.append((name, _value(value), field.description or ""))
    return rows


def render(params: dict) -> str:
    """The table for these params (params.yaml as read by yaml.safe_load)."""
    lines = [HEADER, "| param | value in params.yaml | meaning |", "|---|---|---|"]
    lines += [f"| `{name}` | {value} | {meaning} |"
              for name, value, meaning in _rows(ParamsFile, params, "")]
    return "\n".join(lines)


def with_table(text: str, table: str) -> str:
    """`text` (the README) with the block between the markers replaced by `table`."""
    if text.count(START) != 1 or text.count(END) != 1 or text.index(START) > text.index(END):
        raise ValueError(f"expected one {START} ... {END} block")
    head, rest = text.split(START)
    return f"{head}{START}\n{table}\n{END}{rest.split(END)[1]}"
