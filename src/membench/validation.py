"""Strict mapping checks shared by the params file and the scenario file: an unknown or
missing key stops the run with its full dotted name, never silently ignored."""

from __future__ import annotations

from typing import Any


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
