"""The forensic at-rest audit of one backend: which deleted values (and deleted texts'
vectors) its files still hold, and where (membench.backends.base's places)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from membench.backends.base import StoreBackend
from membench.backends.scanner import (
    FORMS,
    VECTOR,
    Hit,
    Needle,
    scan_many,
    value_needles,
    vector_needle,
)
from membench.retrieval.retrievers import Document
from membench.scenario.model import Fact
from membench.scenario.text import has


@dataclass(frozen=True)
class AtRestRow:
    backend: str
    store: str
    remedy: str
    day: int
    fact_key: str
    form: str  # scanner.VALUE, TOKENS or VECTOR
    places: tuple[str, ...]  # where found, sorted; empty: nowhere on disk
    files: tuple[str, ...]  # the backend's stable names of the files it was found in


def needles(deleted: Sequence[Fact], texts_seen: Iterable[str], embed) -> list[Needle]:
    """Each deleted fact's values (bytes, token sequence) and the vector of every text the
    store ever held that stated one of them."""
    seen = tuple(dict.fromkeys(texts_seen))
    found: list[Needle] = []
    for fact in deleted:
        values = tuple(dict.fromkeys(fact.values()))
        for value in values:
            found += value_needles(fact.key, value)
        found += [vector_needle(fact.key, embed(text)) for text in seen
                  if any(has(text, value) for value in values)]
    return found


def _live(needle: Needle, live_texts: Sequence[str], live_vectors: set[bytes]) -> bool:
    if needle.form == VECTOR:
        return needle.data in live_vectors
    return any(needle.data.decode("utf-8") in text.lower() or
               needle.data.decode("utf-8") in text for text in live_texts)


class ScanCache:
    """Hits per (file bytes, needle): a file unchanged since an earlier scan (a server's
    template databases, an old WAL segment, an untouched fragment) is scanned only for
    the needles it was not yet scanned for, on every audit day, replay and server of a
    stage run. Keyed by the bytes' digest, so what it returns is what scanning the same
    bytes again would return."""

    def __init__(self) -> None:
        self._hits: dict[tuple[bytes, Needle], list[Hit]] = {}

    def scan(self, blob: bytes, wanted: tuple[Needle, ...]) -> list[Hit]:
        digest = hashlib.blake2b(blob, digest_size=20).digest()
        missing = [n for n in dict.fromkeys(wanted) if (digest, n) not in self._hits]
        if missing:
            for needle, hits in scan_many(blob, missing).items():
                self._hits[(digest, needle)] = hits
        return [hit for needle in wanted for hit in self._hits[(digest, needle)]]


def scan_backend(backend: StoreBackend, files: Iterable[tuple[str, bytes]],
                 wanted: Sequence[Needle], documents: Sequence[Document],
                 embed, cache: ScanCache | None = None
                 ) -> dict[tuple[str, str], tuple[set[str], set[str]]]:
    """(fact key, form) -> (places, file names) over every file the backend wrote."""
    cache = cache or ScanCache()
    wanted = tuple(wanted)
    live_texts = [d.text for d in documents]
    live_vectors = {vector_needle("", embed(t)).data for t in live_texts}
    found: dict[tuple[str, str], tuple[set[str], set[str]]] = {
        (n.fact_key, n.form): (set(), set()) for n in wanted}
    for relative, blob in files:
        for hit in cache.scan(blob, wanted):
            located = backend.locate(relative, blob, hit.offset,
                                     _live(hit.needle, live_texts, live_vectors))
            places, names = found[(hit.needle.fact_key, hit.needle.form)]
            places.add(located.place)
            names.add(located.name)
    return found


def at_rest_rows(backend_name: str, store: str, remedy: str, day: int,
                 found: Mapping[tuple[str, str], tuple[set[str], set[str]]]) -> list[AtRestRow]:
    order = {form: i for i, form in enumerate(FORMS)}
    return [AtRestRow(backend_name, store, remedy, day, key, form, tuple(sorted(places)),
                      tuple(sorted(names)))
            for (key, form), (places, names) in
            sorted(found.items(), key=lambda item: (item[0][0], order[item[0][1]]))]
