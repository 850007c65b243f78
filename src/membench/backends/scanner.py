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

scan_needle is the reference: one bytes.find pass per piece. scan_many finds the same hits
for many needles in one pass over the file (a thousand-session store is tens of MB, and an
audit day has thousands of vector pieces): a table of every piece's first PREFIX bytes
marks the candidate offsets (numpy, in chunks), and each candidate is checked byte for byte.
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
    found = scan_many(blob, needles)
    return [hit for needle in needles for hit in found[needle]]


PREFIX = 3  # bytes: a table of 2**24 flags, one per possible prefix
KEY = 8  # bytes of a candidate looked up before the whole piece is compared
CHUNK = 1 << 23  # offsets per numpy pass (bounds the temporary arrays to ~50 MB)
# Up to this many pieces, one bytes.find pass each beats the table's one pass for all
# (benchmarks/scan_bench.py: a find pass costs about 1/300 of a table pass per byte); an
# audit day's cached rescan of unchanged bytes looks only for that day's new pieces.
FIND_PIECES = 128


class PieceTable:
    """Many pieces, found together: built once (a 16 MB table of prefixes), searched in
    any number of blobs (an audit day's changed blocks of many files)."""

    def __init__(self, pieces: Sequence[bytes]) -> None:
        self.pieces = tuple(dict.fromkeys(pieces))
        # a few pieces, pieces too short for the table, or pieces starting with zeros (a
        # file's zero fill would make every offset a candidate) take bytes.find as in
        # scan_needle
        few = len(self.pieces) <= FIND_PIECES
        self._found_by_find = [piece for piece in self.pieces if few or
                               not (len(piece) >= KEY and piece[:PREFIX].strip(b"\0"))]
        self._by_key: dict[bytes, list[bytes]] = {}
        for piece in self.pieces:
            if not few and len(piece) >= KEY and piece[:PREFIX].strip(b"\0"):
                self._by_key.setdefault(piece[:KEY], []).append(piece)
        if self._by_key:
            self._wanted = np.zeros(1 << (8 * PREFIX), dtype=bool)
            keys = np.frombuffer(b"".join(self._by_key), dtype=np.uint8).reshape(-1, KEY)
            self._wanted[_prefix_codes(keys[:, 0], keys[:, 1], keys[:, 2])] = True
            self._key_codes = np.unique(keys.view(np.uint64).ravel())  # sorted

    def offsets(self, blob: bytes, end: int | None = None) -> dict[bytes, list[int]]:
        """Every start offset of every piece found in blob, ascending; a piece not found
        has no entry (a table holds thousands of pieces, and an audit day searches a
        thousand small files: a list for each piece in each was most of the scan's time)."""
        end = end_of_data(blob) if end is None else end
        found: dict[bytes, list[int]] = {}
        for piece in self._found_by_find:
            stop = min(len(blob), end - 1 + len(piece)) if piece.strip(b"\0") else len(blob)
            start = blob.find(piece, 0, stop)
            while start != -1:
                found.setdefault(piece, []).append(start)
                start = blob.find(piece, start + 1, stop)
        if not self._by_key:
            return found
        data = np.frombuffer(blob, dtype=np.uint8)
        # a piece holding a non-zero byte starts before `end`: the bytes from there are zeros
        last = min(end, len(blob) - KEY + 1)
        for first in range(0, max(last, 0), CHUNK):
            stop = min(first + CHUNK, last)
            codes = _prefix_codes(data[first:stop], data[first + 1:stop + 1],
                                  data[first + 2:stop + 2])
            candidates = np.flatnonzero(self._wanted[codes]) + first
            if not len(candidates):
                continue
            # then the whole KEY bytes at each candidate, before any Python-level check
            # (looked up in the sorted key codes: np.isin would sort them again each time)
            at = data[candidates[:, None] + np.arange(KEY)].view(np.uint64).ravel()
            slots = np.minimum(np.searchsorted(self._key_codes, at), len(self._key_codes) - 1)
            for offset in candidates[self._key_codes[slots] == at].tolist():
                for piece in self._by_key.get(blob[offset:offset + KEY], ()):
                    if blob.startswith(piece, offset):
                        found.setdefault(piece, []).append(offset)
        return found


def _prefix_codes(b0: np.ndarray, b1: np.ndarray, b2: np.ndarray) -> np.ndarray:
    return (b0.astype(np.uint32) << 16) | (b1.astype(np.uint32) << 8) | b2


def needle_pieces(needles: Sequence[Needle]) -> list[bytes]:
    """Every piece of every needle, once, in order."""
    return list(dict.fromkeys(piece for needle in needles for piece in needle.pieces()))


def hits_at(needles: Sequence[Needle], offsets: dict[bytes, list[int]]
            ) -> dict[Needle, list[Hit]]:
    """scan_needle's hits, in its order, from every piece's ascending offsets: a vector
    found by several of its pieces at one origin is one hit, at the first piece's."""
    found: dict[Needle, list[Hit]] = {}
    for needle in dict.fromkeys(needles):
        hits: list[Hit] = []
        seen: set[int] = set()
        for piece_index, piece in enumerate(needle.pieces()):
            for start in offsets.get(piece, ()):
                origin = start - piece_index * VECTOR_PIECE if needle.form == VECTOR else start
                if origin not in seen:
                    seen.add(origin)
                    hits.append(Hit(needle, start))
        found[needle] = hits
    return found


def scan_many(blob: bytes, needles: Sequence[Needle],
              end: int | None = None) -> dict[Needle, list[Hit]]:
    """scan_needle's hits, in its order, for every needle: one pass over blob for all."""
    return hits_at(needles, PieceTable(needle_pieces(needles)).offsets(blob, end))
