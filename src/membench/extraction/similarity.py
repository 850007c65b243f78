"""How alike a candidate turn and a stored memory are, in exact arithmetic so a threshold
decides the same way on every machine: MiniLM cosine from the embed stage's grid integers
(an integer dot product over an integer square root), stemmed content-word overlap (Dice),
or their mean. Scores are Fractions; thresholds are compared as Fractions too."""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

import numpy as np

from membench.retrieval.dense import GRID_BITS, grid_integers
from membench.retrieval.embedding_cache import text_sha256
from membench.retrieval.stemming import stemmed_tokens
from membench.scenario.text import tokens

# Words that carry no topic: a shared "now" or "the" must not make two facts one.
STOPWORDS = frozenset(
    ["a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "for", "from", "by", "with", "as", "is", "are", "was", "were", "be", "been", "am", "it", "its", "this", "that", "these", "those", "i", "my", "me", "we", "our", "us", "you", "your", "he", "she", "they", "them", "their", "there", "here", "now", "then", "again", "today", "from", "on", "off", "so", "very", "just", "also", "too", "not", "no", "yes", "please"])
FORGET_WORDS = frozenset(["forget", "forgot", "erase", "delete", "remove", "stop", "remembering", "remember", "rememb", "don", "t", "do", "about"])
COSINE_SCALE = 2 ** GRID_BITS  # cosines are kept on the vectors' own grid


class MissingTurnVectorError(ValueError):
    """The dense similarity needs a vector the embed_turns stage did not provide."""


def content_words(text: str, drop: frozenset[str] = frozenset()) -> frozenset[str]:
    """Stems of the words that are neither stopwords nor in `drop` (words or stems)."""
    return frozenset(stem for word, stem in zip(tokens(text), stemmed_tokens(text), strict=True)
                     if word not in STOPWORDS and word not in drop and stem not in drop)


def lexical(a: frozenset[str], b: frozenset[str]) -> Fraction:
    """Dice overlap of two content-word sets: 1 when equal, 0 when disjoint or empty."""
    if not a or not b:
        return Fraction(0)
    return Fraction(2 * len(a & b), len(a) + len(b))


class TurnVectors:
    """Grid-integer vectors of turn texts, by the text's SHA-256 (the embed cache's key)."""

    def __init__(self, vectors: Mapping[str, np.ndarray] | None) -> None:
        self._vectors = vectors or {}
        self._integers: dict[str, list[int]] = {}

    def integers(self, text: str) -> list[int]:
        digest = text_sha256(text)
        if digest not in self._integers:
            if digest not in self._vectors:
                raise MissingTurnVectorError(
                    f"no turn vector for {text[:60]!r}: rerun the embed_turns stage")
            row = grid_integers(np.asarray(self._vectors[digest])[None, :])[0]
            self._integers[digest] = [int(v) for v in row]
        return self._integers[digest]

    def cosine(self, a: str, b: str) -> Fraction:
        """Cosine on the 2^-GRID_BITS grid, rounded down: exact integers throughout."""
        x, y = self.integers(a), self.integers(b)
        dot = sum(p * q for p, q in zip(x, y, strict=True))
        norms = math.isqrt(sum(p * p for p in x) * sum(q * q for q in y)) or 1
        return Fraction(dot * COSINE_SCALE // norms, COSINE_SCALE)
