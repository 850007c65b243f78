"""Classifies what a policy injected for one probe: the article's outcome function."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

from membench.scenario.model import Fact
from membench.scenario.text import has


class Outcome(str, Enum):
    CURRENT = "current"  # only the newest value
    CONFLICT = "conflict"  # newest and a superseded value both present
    STALE = "stale"  # only a superseded value
    MISSING = "missing"  # no value at all
    LEAKED = "leaked"  # a deleted fact's value is present
    CLEAN = "clean"  # a deleted fact's value is absent


LIVE_OUTCOMES = (Outcome.CURRENT, Outcome.CONFLICT, Outcome.STALE, Outcome.MISSING)
DELETED_OUTCOMES = (Outcome.LEAKED, Outcome.CLEAN)


def outcome(fact: Fact, day: int, context: str) -> Outcome:
    return outcome_by(fact, day, lambda value: has(context, value))


def outcome_by(fact: Fact, day: int, holds: Callable[[str], bool]) -> Outcome:
    """The outcome when `holds(value)` tells whether the injection holds a value."""
    live = [v for v in fact.versions if v.day <= day]
    if not live:
        raise ValueError(f"fact {fact.key} is not stated by day {day}")
    if fact.deleted_at is not None and fact.deleted_at <= day:
        return Outcome.LEAKED if any(holds(v.value) for v in live) else Outcome.CLEAN
    current = live[-1].value
    # Superseded values contained in the current one (by substring, as the article's
    # cur.contains(v)) cannot be told apart from it, so they are not counted as old.
    old = [v.value for v in reversed(live[:-1]) if v.value not in current]
    has_current = holds(current)
    has_old = any(holds(value) for value in old)
    if has_current and has_old:
        return Outcome.CONFLICT
    if has_current:
        return Outcome.CURRENT
    if has_old:
        return Outcome.STALE
    return Outcome.MISSING
