"""The forensic at-rest audit of one backend: which deleted values (and deleted texts'
vectors) its files still hold, and where (membench.backends.base's places)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from membench.backends.base import StoreBackend
from membench.backends.scan_cache import ScanCache
from membench.backends.scanner import (
    FORMS,
    VECTOR,
    Needle,
    value_needles,
    vector_needle,
)
from membench.retrieval.retrievers import Document
from membench.scenario.model import Fact
from membench.scenario.text import ValueFinder, has


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


class StatedTexts:
    """needles()' vector texts, kept as a store's texts arrive: for each fact the scenario
    deletes, the texts that stated one of its values, in the order the store first held
    them. An audit day then costs its new texts, not a pass of every deleted fact over
    every text the store ever held (a thousand-session transcript: 12,000 texts, a
    hundred deleted facts, on each of a hundred audit days)."""

    def __init__(self, facts: Sequence[Fact]) -> None:
        self._owners: list[Fact] = []
        values: list[str] = []
        for fact in facts:
            if fact.deleted_at is not None:
                for value in dict.fromkeys(fact.values()):
                    self._owners.append(fact)
                    values.append(value)
        self._finder = ValueFinder(values)
        self._texts: dict[Fact, list[str]] = {}

    def empty(self) -> StatedTexts:
        """Another store's, with no text yet (the values' finder is shared)."""
        other = object.__new__(StatedTexts)
        other._owners, other._finder, other._texts = self._owners, self._finder, {}
        return other

    def add(self, text: str) -> None:
        """A text the store holds for the first time."""
        for fact in dict.fromkeys(self._owners[i] for i in sorted(self._finder.found(text))):
            self._texts.setdefault(fact, []).append(text)

    def texts(self, fact: Fact) -> list[str]:
        return self._texts.get(fact, [])


def stated_needles(deleted: Sequence[Fact], stated: StatedTexts, embed) -> list[Needle]:
    """needles(deleted, texts, embed), from the texts' StatedTexts."""
    found: list[Needle] = []
    for fact in deleted:
        for value in dict.fromkeys(fact.values()):
            found += value_needles(fact.key, value)
        found += [vector_needle(fact.key, embed(text)) for text in stated.texts(fact)]
    return found


class _LiveData:
    """Whether a needle is still in a live row: its vector is a live text's, or its bytes
    are in a live text (as written or lower-cased). Each needle is looked up once per scan,
    in the live texts joined by NUL (a NUL-free needle cannot span two of them)."""

    def __init__(self, live_texts: Sequence[str], live_vectors: set[bytes]) -> None:
        self.texts, self.vectors = live_texts, live_vectors
        self._joined = "\0".join(live_texts)
        self._lowered = "\0".join(text.lower() for text in live_texts)
        self._known: dict[Needle, bool] = {}

    def __call__(self, needle: Needle) -> bool:
        if needle not in self._known:
            self._known[needle] = self._live(needle)
        return self._known[needle]

    def _live(self, needle: Needle) -> bool:
        if needle.form == VECTOR:
            return needle.data in self.vectors
        data = needle.data.decode("utf-8")
        if "\0" in data:
            return any(data in text.lower() or data in text for text in self.texts)
        return data in self._lowered or data in self._joined


def scan_backend(backend: StoreBackend, files: Iterable[tuple[str, bytes]],
                 wanted: Sequence[Needle], documents: Sequence[Document],
                 embed, cache: ScanCache | None = None
                 ) -> dict[tuple[str, str], tuple[set[str], set[str]]]:
    """(fact key, form) -> (places, file names) over every file the backend wrote."""
    cache = cache or ScanCache()
    wanted = tuple(wanted)
    live_texts = [d.text for d in documents]
    live = _LiveData(live_texts, {vector_needle("", embed(t)).data for t in live_texts})
    found: dict[tuple[str, str], tuple[set[str], set[str]]] = {
        (n.fact_key, n.form): (set(), set()) for n in wanted}
    for relative, blob in files:
        for hit in cache.scan(blob, wanted):
            located = backend.locate(relative, blob, hit.offset, live(hit.needle))
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
