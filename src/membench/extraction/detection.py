"""Candidate detection without a model: which user turns state a durable fact about the
user or their project, and which ask the assistant to forget something.

A turn is a candidate fact when it is a short declarative sentence (not a question, not a
request for help) that speaks about the user or the team (first person), states what
something is, uses, runs or owns (a copula or possession verb), or sets a standing rule
(always, never, use). It reads only the turn's words: no gold label, no scenario field."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from membench.scenario.model import Exchange
from membench.scenario.text import tokens

INTERROGATIVES = frozenset(
    ["how", "why", "what", "which", "who", "whom", "whose", "where", "when", "can", "could", "should", "would", "will", "shall", "is", "are", "am", "was", "were", "do", "does", "did", "has", "have", "had", "may", "might"])
FIRST_PERSON = frozenset(["i", "my", "me", "mine", "we", "our", "ours", "us"])
STATE_VERBS = frozenset(
    ["is", "are", "was", "use", "uses", "used", "follow", "follows", "run", "runs", "own", "owns", "prefer", "prefers", "moved", "switched", "upgraded", "migrated", "set", "live", "lives", "work", "works", "changed"])
STANDING_RULES = frozenset(["always", "never", "use", "prefer", "avoid"])
HELP_REQUESTS = frozenset(["please", "can", "could", "show", "explain", "help", "tell", "give", "write", "fix"])
FORGET = re.compile(r"\b(forget|erase|delete|remove|stop remembering|do not remember|"
                    r"don't remember)\b", re.IGNORECASE)
POINTERS = frozenset(["that", "the", "this", "it"])  # "forget that", "delete the ..."
MIN_WORDS, MAX_WORDS = 3, 40


class CandidateKind(str, Enum):
    FACT = "fact"
    FORGET = "forget"


@dataclass(frozen=True)
class Candidate:
    exchange_index: int
    day: int
    kind: CandidateKind
    text: str  # the user's words


def _is_question(text: str, words: list[str]) -> bool:
    return text.rstrip().endswith("?") or words[0] in INTERROGATIVES


def classify(text: str) -> CandidateKind | None:
    """FACT, FORGET or None (not worth remembering) for one user turn."""
    words = tokens(text)
    if not (MIN_WORDS <= len(words) <= MAX_WORDS) or _is_question(text, words):
        return None
    if FORGET.search(text) and (FIRST_PERSON | POINTERS).intersection(words):
        return CandidateKind.FORGET
    if words[0] in HELP_REQUESTS - STANDING_RULES:
        return None
    if FIRST_PERSON.intersection(words) or STATE_VERBS.intersection(words) \
            or words[0] in STANDING_RULES:
        return CandidateKind.FACT
    return None


def detect(exchanges: Sequence[Exchange]) -> list[Candidate]:
    """Every candidate turn, in transcript order (reads `user` only, never `fact_key`)."""
    found = []
    for exchange in exchanges:
        kind = classify(exchange.user)
        if kind is not None:
            found.append(Candidate(exchange.index, exchange.day, kind, exchange.user))
    return found
