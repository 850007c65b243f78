"""What an extractor makes: fact records, the one thing policies read about facts.

Its own module so that an extractor's helpers (membench.extraction.given) and the registry
of extractors (membench.extraction.extractors) both import it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class RecordAction(str, Enum):
    SET = "set"
    DELETE = "delete"


@dataclass(frozen=True)
class FactRecord:
    key: str
    action: RecordAction
    value: str | None  # None for a delete
    day: int
    exchange_index: int
    text: str  # the user's words that carried the fact

    def line(self) -> str:
        """The record as the fact log and profile store it: dated user text."""
        return f"[day {self.day}] {self.text}"
