"""Replays the scenario day by day into a backend (one instance per store) and runs the
policies on it, exactly as in memory: each day's store contents are the in-memory store
builders' (membench.memory.stores), applied to the backend as deletes and upserts keyed by
the exchange index, and the policies read the backend's listed documents back.

Retrieval over the listed documents is membench's own (the same embeddings, exact
search), so outcomes must equal the in-memory ones; each backend's native ranking (FTS5
bm25, ts_rank, vec0, HNSW, LangGraph's and LanceDB's search) runs beside it on the same
questions and is recorded for comparison, never used for the outcome.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from membench.backends.at_rest import (
    AtRestRow, ScanCache, at_rest_rows, needles, scan_backend)
from membench.backends.base import NO_REMEDY, Embed, StoreBackend
from membench.extraction.extractors import FactRecord
from membench.memory.policies import Policy
from membench.memory.stores import STORES, Memory
from membench.retrieval.dense import reciprocal_rank_fusion
from membench.retrieval.retrievers import RRF_K, Document, IndexCache
from membench.scenario.model import Scenario
from membench.scoring.audit import audit_days
from membench.scoring.bench import BenchResult, run_bench

Files = Callable[[Path | None], Iterable[tuple[str, bytes]]]  # membench.io.at_rest


@dataclass(frozen=True)
class RankingRow:
    backend: str
    store: str
    retriever: str
    day: int
    question: str
    k: int
    exact: tuple[int, ...]  # membench's ranking over the listed documents
    native: tuple[int, ...]  # the backend's own


@dataclass(frozen=True)
class CostRow:
    """Machine-dependent: written to an untracked file, never to a committed one."""

    backend: str
    store: str
    remedy: str
    seconds: float
    bytes_before: int
    bytes_after: int
    bytes_rewritten: int  # bytes that differ between the files before and after


@dataclass
class _StoreReplay:
    store: str
    backend: StoreBackend
    current: dict[int, str] = field(default_factory=dict)
    seen: dict[str, None] = field(default_factory=dict)
    deleted: bool = False

    def advance(self, memory: Memory) -> None:
        wanted = {d.source: d.text for d in STORES[self.store].build(memory)}
        for key in sorted(set(self.current) - set(wanted)):
            self.backend.delete(key)
            self.deleted = True
        for key in sorted(wanted):
            if self.current.get(key) != wanted[key]:
                self.backend.upsert(key, wanted[key])
                self.seen[wanted[key]] = None
        self.current = wanted


class Replay:
    """One backend, one instance per store, advanced day by day."""

    def __init__(self, name: str, backend_class: type[StoreBackend], scenario: Scenario,
                 records: Sequence[FactRecord], stores: Sequence[str], embed: Embed,
                 workdir: Path, files: Files, remedy: str = NO_REMEDY,
                 cache: ScanCache | None = None) -> None:
        self.name, self.scenario, self.records = name, scenario, records
        self.embed, self.files, self.remedy = embed, files, remedy
        self.day = 0
        self.at_rest: list[AtRestRow] = []
        self.rankings: dict[tuple, RankingRow] = {}
        self.cache = cache or ScanCache()
        self.stores: dict[str, _StoreReplay] = {}
        try:
            for store in stores:
                directory = Path(tempfile.mkdtemp(prefix=f"{name}-{store}-", dir=workdir))
                self.stores[store] = _StoreReplay(store, backend_class(directory, embed, remedy))
        except BaseException:
            self.close()
            raise

    def advance_to(self, day: int, scan_days: Iterable[int] = ()) -> None:
        scan_on = set(scan_days)
        while self.day < day:
            self.day += 1
            memory = Memory(self.scenario, self.records, self.day, IndexCache())
            for replay in self.stores.values():
                replay.advance(memory)
            if self.day in scan_on:
                self.scan(self.day)

    def scan(self, day: int) -> None:
        for store, replay in self.stores.items():
            self.at_rest += audit_store(self, store, replay.backend, self.remedy, day)

    def memory(self, day: int, indexes: IndexCache) -> Memory:
        self.advance_to(day, audit_days(self.scenario))
        return BackendMemory(self, day, indexes)

    def close(self) -> None:
        for replay in self.stores.values():
            replay.backend.close()


class BackendMemory(Memory):
    """Memory whose replayed stores are read back from the backend; searches are
    membench's, and the backend's native ranking of the same question is recorded."""

    def __init__(self, replay: Replay, day: int, indexes: IndexCache) -> None:
        super().__init__(replay.scenario, replay.records, day, indexes)
        self.replay = replay

    def documents(self, store: str) -> list[Document]:
        if store not in self.replay.stores:
            return super().documents(store)
        if store not in self._documents:
            replay = self.replay.stores[store]
            # The database's rows, in the store's order (a profile keeps a fact's line where
            # it was first written; rows come back by key): a key the store no longer has
            # goes last, so a delete that did not happen shows in the parity table.
            position = {key: i for i, key in enumerate(replay.current)}
            self._documents[store] = tuple(sorted(
                replay.backend.documents(),
                key=lambda d: (position.get(d.source, len(position)), d.source)))
        return list(self._documents[store])

    def search(self, store, retriever, question, k):
        found = super().search(store, retriever, question, k)
        key = (self.replay.name, store, retriever, self.day, question, k)
        if store in self.replay.stores and key not in self.replay.rankings:
            # the first search of a question on a day is recorded; a later policy's same
            # search on the same day would read the same rows again
            native = native_search(self.replay.stores[store].backend, retriever, question, k)
            if native is not None:
                self.replay.rankings[key] = RankingRow(
                    self.replay.name, store, retriever, self.day, question, k,
                    tuple(d.source for d in found), tuple(native))
        return found


def native_search(backend: StoreBackend, retriever: str, question: str,
                  k: int) -> list[int] | None:
    """The backend's own ranking for a membench retriever, None where it has none."""
    lexical = backend.lexical is not None
    semantic = backend.semantic is not None
    if retriever == "bm25" and lexical:
        return backend.lexical_search(question, k)
    if retriever == "dense" and semantic:
        return backend.vector_search(question, k)
    if retriever == "hybrid" and lexical and semantic:
        return reciprocal_rank_fusion([backend.lexical_search(question, k),
                                       backend.vector_search(question, k)], RRF_K, top=k)
    return None


@dataclass(frozen=True)
class BackendRun:
    result: BenchResult
    rankings: tuple[RankingRow, ...]
    at_rest: tuple[AtRestRow, ...]
    costs: tuple[CostRow, ...]


def _no_tokens(texts: Sequence[str]) -> list[int]:
    return [0] * len(texts)


def _rewritten(before: dict[str, bytes], after: dict[str, bytes]) -> int:
    total = 0
    for name in set(before) | set(after):
        old, new = before.get(name, b""), after.get(name, b"")
        if old == new:
            continue
        common = min(len(old), len(new))
        total += int(np.count_nonzero(np.frombuffer(old, np.uint8, common)
                                      != np.frombuffer(new, np.uint8, common)))
        total += abs(len(old) - len(new))
    return total


def audit_store(replay: Replay, store: str, backend: StoreBackend, remedy: str,
                day: int) -> list[AtRestRow]:
    """The at-rest rows of one store's backend (the replay's, or a fork of it) on a day:
    its files scanned for every fact deleted by then."""
    deleted = [f for f in replay.scenario.facts
               if f.deleted_at is not None and f.deleted_at <= day]
    if not deleted:
        return []
    backend.settle()
    wanted = needles(deleted, replay.stores[store].seen, replay.embed)
    found = scan_backend(backend, replay.files(backend.files_root()), wanted,
                         backend.documents(), replay.embed, replay.cache)
    return at_rest_rows(replay.name, store, remedy, day, found)


def _cure(replay: Replay, store: str, backend: StoreBackend, remedy: str
          ) -> tuple[list[AtRestRow], CostRow]:
    """The remedy on the store's backend at the last day, its cost, the scan after it."""
    backend.settle()
    before = dict(replay.files(backend.files_root()))
    start = time.perf_counter()
    backend.apply_remedy()
    backend.settle()
    seconds = time.perf_counter() - start
    after = dict(replay.files(backend.files_root()))
    rows = audit_store(replay, store, backend, remedy, replay.scenario.sessions)
    return rows, CostRow(replay.name, store, remedy, seconds, sum(map(len, before.values())),
                         sum(map(len, after.values())), _rewritten(before, after))


def _forked(replay: Replay, store: str, base: StoreBackend, remedies: Sequence[str],
            workdir: Path) -> dict[str, tuple[list[AtRestRow], CostRow]]:
    """Each remedy on its own copy of the base's files (the base stays as it was)."""
    cured = {}
    for remedy in remedies:
        directory = Path(tempfile.mkdtemp(prefix=f"{replay.name}-{store}-", dir=workdir))
        fork = base.fork(directory, remedy)
        try:
            cured[remedy] = _cure(replay, store, fork, remedy)
        finally:
            fork.close()
    return cured


def _remedied(name: str, backend_class: type[StoreBackend], audited: Replay, store: str,
              workdir: Path) -> dict[str, tuple[list[AtRestRow], CostRow]]:
    """Every remedy of the backend on the store, each as on a fresh replay of it.

    A backend that forks starts its remedies from copies of one replay per opening: the
    audited replay itself when reads write nothing (its end is a fresh replay's end),
    else a replay without reads. Otherwise each remedy has its own replay, cured in place."""
    args = (name, backend_class, audited.scenario, audited.records, [store], audited.embed,
            workdir, audited.files)
    last = audited.scenario.sessions
    cured: dict[str, tuple[list[AtRestRow], CostRow]] = {}
    if not backend_class.forks:
        for remedy in backend_class.remedies:
            fresh = Replay(*args, remedy, audited.cache)
            try:
                fresh.advance_to(last)
                cured[remedy] = _cure(fresh, store, fresh.stores[store].backend, remedy)
            finally:
                fresh.close()
        return cured
    groups: dict[object, list[str]] = {}
    for remedy in backend_class.remedies:
        groups.setdefault(backend_class.opening(remedy), []).append(remedy)
    for opening, remedies in groups.items():
        if not backend_class.reads_write and opening == backend_class.opening(NO_REMEDY):
            cured |= _forked(audited, store, audited.stores[store].backend, remedies,
                             workdir)
            continue
        base = Replay(*args, remedies[0], audited.cache)
        try:
            base.advance_to(last)
            cured |= _forked(base, store, base.stores[store].backend, remedies, workdir)
        finally:
            base.close()
    return cured


def run_backend(name: str, backend_class: type[StoreBackend], scenario: Scenario,
                records: Sequence[FactRecord], policies: Sequence[Policy],
                stores: Sequence[str], embed: Embed, vectors: IndexCache, workdir: Path,
                files: Files, cache: ScanCache | None = None) -> BackendRun:
    """The policies on the backend (no remedy, scanned on every audit day), then each
    remedy, as on a fresh replay of every store the replay deleted from, scanned after it."""
    cache = cache or ScanCache()
    replay = Replay(name, backend_class, scenario, records, stores, embed, workdir, files,
                    cache=cache)
    cured: dict[str, dict[str, tuple[list[AtRestRow], CostRow]]] = {}
    try:
        result = run_bench(scenario, records, policies, _no_tokens, vectors,
                           memories=replay.memory)
        replay.advance_to(scenario.sessions, audit_days(scenario))
        at_rest = list(replay.at_rest)
        deleting = [store for store, r in replay.stores.items() if r.deleted]
        if backend_class.forks and not backend_class.reads_write:  # forks of this replay
            cured = {store: _remedied(name, backend_class, replay, store, workdir)
                     for store in deleting}
    finally:
        replay.close()
    for store in deleting:
        if store not in cured:
            cured[store] = _remedied(name, backend_class, replay, store, workdir)
    costs: list[CostRow] = []
    for remedy in backend_class.remedies:
        for store in deleting:
            rows, cost = cured[store][remedy]
            at_rest += rows
            costs.append(cost)
    return BackendRun(result, tuple(replay.rankings.values()), tuple(at_rest), tuple(costs))
