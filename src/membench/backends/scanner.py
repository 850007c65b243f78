"""The at-rest scanner: bytes in, findings out (no file access here; membench.io.at_rest
walks a backend's directory and hands each file's bytes to it).

Exact by construction: every needle is searched with bytes.find over the whole file, at
every offset, so a value stored contiguously and uncompressed is found wherever it lies:
a live row, a free page, a WAL frame, an old version's fragment or an index segment.
A vector is 384 float32s (1,536 bytes), longer than some storage units (a PostgreSQL TOAST
chunk is ~2 kB, an SQLite overflow page can start mid-vector), so a vector needle also
matches when any of its aligned VECTOR_PIECE-byte pieces is found: any contiguous run of
2 * VECTOR_PIECE - 1 bytes of the vector holds one whole aligned piece. Compressed storage
is the one thing no byte scan sees; docs/backends.md says which backend compresses what.
Where in a database a hit lies is read from the page headers by membench.backends.pages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from membench.scenario.text import tokens

VALUE, TOKENS, VECTOR = "value", "token sequence", "vector"
FORMS = (VALUE, TOKENS, VECTOR)
VECTOR_PIECE = 256  # bytes: 64 float32 components


@dataclass(frozen=True)
class Needle:
    fact_key: str
    form: str  # VALUE, TOKENS or VECTOR
    data: bytes

    def pieces(self) -> tuple[bytes, ...]:
        if self.form != VECTOR or len(self.data) <= VECTOR_PIECE:
            return (self.data,)
        return tuple(self.data[i:i + VECTOR_PIECE]
                     for i in range(0, len(self.data) - VECTOR_PIECE + 1, VECTOR_PIECE))


@dataclass(frozen=True)
class Hit:
    needle: Needle
    offset: int  # where in the file the (first found piece of the) needle starts


def value_needles(fact_key: str, value: str) -> list[Needle]:
    """A deleted value as its UTF-8 bytes and as its token sequence (lower-case tokens
    joined by one space, the form a tokenizing index or tsvector may keep)."""
    needles = [Needle(fact_key, VALUE, value.encode("utf-8"))]
    words = " ".join(tokens(value))
    if words and words.encode("utf-8") != needles[0].data:
        needles.append(Needle(fact_key, TOKENS, words.encode("utf-8")))
    return needles


def vector_needle(fact_key: str, vector: np.ndarray) -> Needle:
    """A deleted text's embedding as little-endian float32 bytes (how every backend here
    stores it: SQLite BLOBs, vec0 chunks, pgvector, Lance columns)."""
    return Needle(fact_key, VECTOR, np.asarray(vector, dtype="<f4").tobytes())


def end_of_data(blob: bytes) -> int:
    """One past the last non-zero byte (a WAL segment or a relation file is mostly
    zero-filled at its end)."""
    return len(blob.rstrip(b"\0"))


def scan_needle(blob: bytes, needle: Needle, end: int | None = None) -> list[Hit]:
    """Every occurrence of the needle (or of any piece of a vector needle) in blob.

    Still exact where it skips: bytes from `end` on are all zero (end defaults to
    end_of_data), so an occurrence of a piece holding a non-zero byte starts before end
    and lies within blob[:end - 1 + len(piece)]; a piece of zeros only is searched
    everywhere."""
    end = end_of_data(blob) if end is None else end
    hits: list[Hit] = []
    seen: set[int] = set()
    for piece_index, piece in enumerate(needle.pieces()):
        stop = min(len(blob), end - 1 + len(piece)) if piece.strip(b"\0") else len(blob)
        start = blob.find(piece, 0, stop)
        while start != -1:
            origin = start - piece_index * VECTOR_PIECE if needle.form == VECTOR else start
            if origin not in seen:
                seen.add(origin)
                hits.append(Hit(needle, start))
            start = blob.find(piece, start + 1, stop)
    return hits


def scan(blob: bytes, needles: Sequence[Needle]) -> list[Hit]:
    """Every occurrence of every needle (or of any piece of a vector needle) in blob."""
    end = end_of_data(blob)
    return [hit for needle in needles for hit in scan_needle(blob, needle, end)]
