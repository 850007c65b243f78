"""The at-rest scan's memory across audit days, replays and servers of a stage run.

A store's files change a little from one audit day to the next (a few pages, the WAL's
last frames) while the needles only grow (every fact deleted so far), and the same
template files recur in every server. So each file is cut into blocks, and what was
found in a block is kept under the digest of its window (the block and the OVERLAP bytes
after it): a window seen before is searched only for the pieces it was not yet searched
for. Keyed by the bytes' digest, what the cache returns is what scanning the same bytes
again would return, and the hits are those of scanner.scan_many over the whole file
(tests/test_backend_scanner.py checks both on files that change between scans).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from membench.backends.scanner import Hit, Needle, PieceTable, hits_at, needle_pieces

BLOCK = 1 << 20  # bytes of a file whose findings are kept together
OVERLAP = 4096  # a piece at most OVERLAP + 1 bytes long starting in a block lies in its window
TABLES = 4  # piece tables kept per thread (a file alternates changed and unchanged blocks)


class _Wanted:
    """One scan's needles, prepared once for all the files scanned for them."""

    def __init__(self, needles: Sequence[Needle], number) -> None:
        self.needles = tuple(dict.fromkeys(needles))
        pieces = needle_pieces(self.needles)
        self.long = [piece for piece in pieces if len(piece) > OVERLAP + 1]
        self.ids = {number(piece): piece for piece in pieces if len(piece) <= OVERLAP + 1}
        self.mask = 0
        for i in self.ids:
            self.mask |= 1 << i
        self.holders: dict[bytes, list[int]] = {}  # piece -> positions of needles with it
        for position, needle in enumerate(self.needles):
            for piece in dict.fromkeys(needle.pieces()):
                self.holders.setdefault(piece, []).append(position)
        self.repeats = len(self.needles) != len(needles)


def _numbers(mask: int) -> list[int]:
    """The set bits' positions, ascending (a mask has a bit per piece: thousands)."""
    bits = np.frombuffer(bin(mask)[:1:-1].encode("ascii"), dtype=np.uint8)
    return np.flatnonzero(bits == ord("1")).tolist()


class ScanCache:
    """Offsets of the pieces found per window digest, and which pieces each window was
    searched for (a bit mask over the pieces' numbers). Shared by the backends' threads:
    pieces are numbered under a lock; two threads searching one window at once at worst
    search some pieces twice (the searched bits are stored with the offsets they found)."""

    def __init__(self) -> None:
        self._number: dict[bytes, int] = {}
        self._pieces: list[bytes] = []
        self._numbering = threading.Lock()
        self._windows: dict[bytes, tuple[int, dict[int, list[int]]]] = {}
        self._local = threading.local()  # each thread's prepared needles and piece tables

    def __reduce__(self):
        """A cache travels empty (to a worker, with a stage's inputs): it is only a cache."""
        return ScanCache, ()

    def _piece_number(self, piece: bytes) -> int:
        with self._numbering:
            if piece not in self._number:
                self._number[piece] = len(self._pieces)
                self._pieces.append(piece)
            return self._number[piece]

    def _prepared(self, wanted: tuple[Needle, ...]) -> _Wanted:
        # every file of one audit is scanned for the same tuple: prepared once for all
        last = getattr(self._local, "wanted", None)
        if last is None or last[0] is not wanted:
            self._local.wanted = last = wanted, _Wanted(wanted, self._piece_number)
        return last[1]

    def _table_for(self, mask: int) -> PieceTable:
        """The table of the pieces whose bits `mask` sets (keyed by the mask itself: its
        hash is cheap, a tuple of thousands of numbers per window was not)."""
        tables = getattr(self._local, "tables", None)
        if tables is None:
            tables = self._local.tables = OrderedDict()
        if mask in tables:
            tables.move_to_end(mask)
        else:
            tables[mask] = PieceTable([self._pieces[i] for i in _numbers(mask)])
            if len(tables) > TABLES:
                tables.popitem(last=False)
        return tables[mask]

    def _window(self, window: bytes, mask: int) -> dict[int, list[int]]:
        digest = hashlib.blake2b(window, digest_size=20).digest()
        searched, found = self._windows.get(digest, (0, {}))
        missing = mask & ~searched
        if missing:
            for piece, offsets in self._table_for(missing).offsets(window).items():
                found[self._number[piece]] = offsets
            self._windows[digest] = (searched | missing, found)
        return found

    def scan(self, blob: bytes, wanted: tuple[Needle, ...]) -> list[Hit]:
        """scanner.scan(blob, wanted)'s hits."""
        prepared = self._prepared(wanted)
        offsets: dict[bytes, list[int]] = {}
        if prepared.ids:
            for start in range(0, len(blob), BLOCK):
                found = self._window(blob[start:start + BLOCK + OVERLAP], prepared.mask)
                for number, at in found.items():
                    piece = prepared.ids.get(number)
                    if piece is not None:
                        offsets.setdefault(piece, []).extend(
                            start + offset for offset in at if offset < BLOCK)
        if prepared.long:
            offsets |= PieceTable(prepared.long).offsets(blob)
        positions = sorted({p for piece, at in offsets.items() if at
                            for p in prepared.holders[piece]})
        hits = hits_at([prepared.needles[p] for p in positions], offsets)
        order = wanted if prepared.repeats else hits  # hits: in wanted's order already
        return [hit for needle in order for hit in hits.get(needle, ())]
