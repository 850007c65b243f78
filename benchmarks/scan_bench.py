"""The at-rest scan: one pass over a file for every needle (scanner.scan_many) against the
reference, one bytes.find pass per needle piece (scanner.scan_needle).

Not a test. The file is a store-like blob: words of text around a block of float32
vectors; the needles are deleted values and the vectors of a tenth of the texts, as on
an audit day of a long story. Both scanners must find the same hits (checked); the
figures are seconds in one run, so compare the ratio, not the times.

Then the next audit day, as the stage's cache (membench.backends.scan_cache) sees it: a
few pages of the file rewritten and ten more needles; the cached rescan (unchanged 1 MiB
blocks searched only for the new needles) against one pass over the whole file, with the
same hits.

Last, an audit day over a server's data directory: a thousand small files (8 KiB each,
two holding a deleted vector) searched by the cache for every needle, then the next day
for ten more; the same hits as scanning each file on its own (a PostgreSQL cluster is
about a thousand files, most of them a few pages).

  python benchmarks/scan_bench.py [--megabytes 20] [--vectors 500] [--files 1000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from membench.backends.scan_cache import ScanCache
from membench.backends.scanner import (
    scan,
    scan_many,
    scan_needle,
    value_needles,
    vector_needle,
)

WORDS = (b"the", b"user", b"said", b"Berlin", b"phone", b"number", b"is", b"Thursday",
         b"and", b"Theodore")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=float, default=20.0)
    parser.add_argument("--vectors", type=int, default=500, help="vector needles")
    parser.add_argument("--files", type=int, default=1000, help="small files, last part")
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(args.vectors * 10, 384)).astype("<f4")
    words = int(args.megabytes * 1e6 - vectors.nbytes) // 6
    text = b" ".join(WORDS[i] for i in rng.integers(0, len(WORDS), max(words, 1)))
    blob = text[:len(text) // 2] + vectors.tobytes() + text[len(text) // 2:]
    needles = [vector_needle("k", v) for v in vectors[::10]]
    needles += [n for value in ("Theodore Berlin", "Thursday the 5th", "Berlin")
                for n in value_needles("v", value)]
    start = time.perf_counter()
    many = scan_many(blob, needles)
    one_pass = time.perf_counter() - start
    start = time.perf_counter()
    reference = {needle: scan_needle(blob, needle) for needle in needles}
    per_needle = time.perf_counter() - start
    assert many == reference, "the one-pass scan differs from the reference"
    pieces = sum(len(n.pieces()) for n in needles)
    print(f"file {len(blob) / 1e6:.1f} MB, {len(needles)} needles ({pieces} pieces), "
          f"{sum(map(len, many.values()))} hits, the same in both")
    print(f"one pass (scan_many): {one_pass:.2f} s")
    print(f"one find per piece (scan_needle): {per_needle:.2f} s ({per_needle / one_pass:.0f}x)")
    next_day(blob, needles, rng)
    small_files(needles, vectors, rng, args.files)


def next_day(blob: bytes, needles: list, rng: np.random.Generator) -> None:
    """The cache's second scan of a file that changed in three 8 kB pages."""
    cache = ScanCache()
    cache.scan(blob, tuple(needles))
    changed = bytearray(blob)
    for at in rng.integers(0, len(blob) - 8192, 3):
        changed[at:at + 8192] = rng.integers(0, 256, 8192, dtype=np.uint8).tobytes()
    changed = bytes(changed)
    grown = tuple(needles + [vector_needle("new", rng.normal(size=384)) for _ in range(10)])
    start = time.perf_counter()
    cached = cache.scan(changed, grown)
    rescan = time.perf_counter() - start
    start = time.perf_counter()
    whole = scan(changed, grown)
    full = time.perf_counter() - start
    assert cached == whole, "the cached rescan differs from a scan of the whole file"
    print(f"next day (3 pages rewritten, 10 more needles, {len(whole)} hits, the same in "
          f"both): cached rescan {rescan:.2f} s, whole file {full:.2f} s "
          f"({full / rescan:.0f}x)")


def small_files(needles: list, vectors: np.ndarray, rng: np.random.Generator,
                count: int) -> None:
    """The cache over many small files: every needle on the first day, ten more the next."""
    files = [rng.integers(0, 256, 8192, dtype=np.uint8).tobytes() for _ in range(count)]
    for at in (0, count // 2):  # a deleted text's vector on two pages
        files[at] = files[at][:1000] + vectors[0].tobytes() + files[at][1000 + 1536:]
    cache = ScanCache()
    days = [tuple(needles),
            tuple(needles + [vector_needle("new", rng.normal(size=384)) for _ in range(10)])]
    for day, wanted in enumerate(days, start=1):
        start = time.perf_counter()
        cached = [cache.scan(blob, wanted) for blob in files]
        seconds = time.perf_counter() - start
        assert cached == [scan(blob, wanted) for blob in files], "the cached scan differs"
        print(f"{count} files of 8 KiB, day {day} ({len(wanted)} needles, "
              f"{sum(map(len, cached))} hits, the same file by file): {seconds:.2f} s")


if __name__ == "__main__":
    main()
