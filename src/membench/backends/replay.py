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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from membench.backends.at_rest import (
    AtRestRow,
    ScanCache,
    StatedTexts,
    at_rest_rows,
    scan_backend,
    stated_needles,
)
from membench.backends.base import NO_REMEDY, Embed, StoreBackend
from membench.extraction.extractors import FactRecord
from membench.memory.policies import Policy
from membench.memory.stores import STORES, Memory
from membench.retrieval.dense import reciprocal_rank_fusion
from membench.retrieval.retrievers import RRF_K, Document, IndexCache
from membench.scenario.model import Scenario
from membench.scoring.audit import audit_days
from membench.scoring.bench import BenchResult, Progress, no_tokens, run_bench

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
    """One store in one backend. Rows are keyed by the exchange a document came from;
    a store can hold several documents from one exchange (format 2: several facts
    stated in one turn), so the second and later get keys past every exchange index,
    the same ones every day (`extra_keys`), and `sources` maps keys back."""

    store: str
    backend: StoreBackend
    first_extra_key: int
    stated: StatedTexts  # the deleted facts' values in the texts of `seen`
    current: dict[int, str] = field(default_factory=dict)
    seen: dict[str, None] = field(default_factory=dict)
    deleted: bool = False
    extra_keys: dict[tuple[int, int], int] = field(default_factory=dict)
    sources: dict[int, int] = field(default_factory=dict)

    def _keyed(self, documents: Sequence[Document]) -> dict[int, str]:
        keyed = {document.source: document.text for document in documents}
        if len(keyed) == len(documents):  # one document per exchange: the keys are theirs
            return keyed
        keyed = {}
        occurrences: dict[int, int] = {}
        for document in documents:
            n = occurrences[document.source] = occurrences.get(document.source, -1) + 1
            key = document.source
            if n:
                key = self.extra_keys.setdefault(
                    (document.source, n), self.first_extra_key + len(self.extra_keys))
                self.sources[key] = document.source
            keyed[key] = document.text
        return keyed

    def source(self, key: int) -> int:
        return self.sources.get(key, key)

    def advance(self, memory: Memory) -> None:
        wanted = self._keyed(STORES[self.store].build(memory))
        current = self.current
        for key in sorted(current.keys() - wanted.keys()):
            self.backend.delete(key)
            self.deleted = True
        # Only the day's new and changed rows are written, in key order (a store of a
        # thousand days holds thousands of rows a day that did not change).
        for key in sorted(key for key, text in wanted.items() if current.get(key) != text):
            text = wanted[key]
            self.backend.upsert(key, text)
            if text not in self.seen:
                self.seen[text] = None
                self.stated.add(text)
        self.current = wanted


def scenario_ends(scenario: Scenario) -> tuple[int, ...]:
    """The last day of each scenario of a joined benchmark (the last day otherwise)."""
    return tuple(sorted({last for _, _, last in scenario.segments} | {scenario.sessions}))


def backend_audit_days(scenario: Scenario) -> tuple[int, ...]:
    """Every deletion day and the last day of each scenario."""
    return tuple(sorted(set(audit_days(scenario)) | set(scenario_ends(scenario))))


class Replay:
    """One backend, one instance per store, advanced day by day. A joined benchmark's
    scenarios are separate users: each starts on fresh, empty databases (the store
    builders list only the current scenario's documents), so the next scenario's start
    is not a mass deletion, and each scenario is audited for its own deletions."""

    def __init__(self, name: str, backend_class: type[StoreBackend], scenario: Scenario,
                 records: Sequence[FactRecord], stores: Sequence[str], embed: Embed,
                 workdir: Path, files: Files, remedy: str = NO_REMEDY,
                 cache: ScanCache | None = None, start_day: int = 0) -> None:
        self.name, self.scenario, self.records = name, scenario, records
        self.backend_class, self.workdir = backend_class, workdir
        self.embed, self.files, self.remedy = embed, files, remedy
        self.day = self.start_day = start_day
        self.at_rest: list[AtRestRow] = []
        self.rankings: dict[tuple, RankingRow] = {}
        self.cache = cache or ScanCache()
        self.stores: dict[str, _StoreReplay] = {}
        self.stated = StatedTexts(scenario.facts)
        self.deleting: list[tuple[int, str]] = []  # (scenario's last day, store) that deleted
        self._open(stores)

    def _open(self, stores: Sequence[str]) -> None:
        try:
            for store in stores:
                directory = Path(tempfile.mkdtemp(prefix=f"{self.name}-{store}-",
                                                  dir=self.workdir))
                self.stores[store] = _StoreReplay(
                    store, self.backend_class(directory, self.embed, self.remedy),
                    len(self.scenario.exchanges), self.stated.empty())
        except BaseException:
            self.close()
            raise

    def _end_scenario(self) -> None:
        """Records which stores deleted in the scenario ending today (self.day)."""
        self.deleting += [(self.day, store) for store, r in self.stores.items() if r.deleted]

    def advance_to(self, day: int, scan_days: Iterable[int] = ()) -> None:
        scan_on = set(scan_days)
        while self.day < day:
            if self.day > self.start_day and self.scenario.first_day(self.day + 1) == self.day + 1:
                self._end_scenario()  # the next scenario of a joined benchmark
                stores = list(self.stores)
                self.close()
                self.stores = {}
                self._open(stores)
            self.day += 1
            memory = Memory(self.scenario, self.records, self.day, IndexCache())
            for replay in self.stores.values():
                replay.advance(memory)
            if self.day in scan_on:
                self.scan(self.day)

    def finish(self) -> list[tuple[int, str]]:
        """(scenario's last day, store) of every store that deleted, in day order."""
        self._end_scenario()
        return self.deleting

    def scan(self, day: int) -> None:
        for store, replay in self.stores.items():
            self.at_rest += audit_store(self, store, replay.backend, self.remedy, day)

    def memory(self, day: int, indexes: IndexCache) -> Memory:
        self.advance_to(day, backend_audit_days(self.scenario))
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
            self._documents[store] = tuple(
                Document(replay.source(d.source), d.text) for d in sorted(
                    replay.backend.documents(),
                    key=lambda d: (position.get(d.source, len(position)), d.source)))
        return list(self._documents[store])

    def search(self, store, retriever, question, k):
        found = super().search(store, retriever, question, k)
        key = (self.replay.name, store, retriever, self.day, question, k)
        if store in self.replay.stores and key not in self.replay.rankings:
            # the first search of a question on a day is recorded; a later policy's same
            # search on the same day would read the same rows again
            replay = self.replay.stores[store]
            native = native_search(replay.backend, retriever, question, k)
            if native is not None:
                native = [replay.source(row) for row in native]
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
class BackendAudit:
    """What a backend's run leaves besides its outcomes."""
    rankings: tuple[RankingRow, ...]
    at_rest: tuple[AtRestRow, ...]
    costs: tuple[CostRow, ...]


@dataclass(frozen=True)
class BackendRun(BackendAudit):
    result: BenchResult

    def audit(self) -> BackendAudit:
        return BackendAudit(self.rankings, self.at_rest, self.costs)


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
    its files scanned for every fact of the day's scenario deleted by then."""
    first = replay.scenario.first_day(day)
    deleted = [f for f in replay.scenario.facts
               if f.deleted_at is not None and first <= f.deleted_at <= day]
    if not deleted:
        return []
    backend.settle()
    wanted = stated_needles(deleted, replay.stores[store].stated, replay.embed)
    found = scan_backend(backend, replay.files(backend.files_root()), wanted,
                         backend.documents(), replay.embed, replay.cache)
    return at_rest_rows(replay.name, store, remedy, day, found)


def _cure(replay: Replay, store: str, backend: StoreBackend, remedy: str
          ) -> tuple[list[AtRestRow], CostRow]:
    """The remedy on the store's backend at the replay's day, its cost, the scan after."""
    backend.settle()
    before = dict(replay.files(backend.files_root()))
    start = time.perf_counter()
    backend.apply_remedy()
    backend.settle()
    seconds = time.perf_counter() - start
    after = dict(replay.files(backend.files_root()))
    rows = audit_store(replay, store, backend, remedy, replay.day)
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


Cured = dict[str, tuple[list[AtRestRow], CostRow]]  # remedy -> rows after it, its cost


def fresh_replay(name: str, backend_class: type[StoreBackend], scenario: Scenario,
                 records: Sequence[FactRecord], store: str, embed: Embed, workdir: Path,
                 files: Files, cache: ScanCache, remedy: str, end: int) -> Replay:
    """A replay without reads of one store, opened for `remedy`, from the start of the
    scenario ending on day `end` to that day."""
    replay = Replay(name, backend_class, scenario, records, [store], embed, workdir, files,
                    remedy, cache, start_day=scenario.first_day(end) - 1)
    try:
        replay.advance_to(end)
    except BaseException:
        replay.close()
        raise
    return replay


@dataclass(frozen=True)
class FreshRemedy:
    """A remedy of a backend that cannot fork, on its own fresh replay of a store that
    deleted in the scenario ending on day `end`: a unit independent of every other."""

    backend: str
    end: int
    store: str
    remedy: str


def cure_fresh(backend_class: type[StoreBackend], scenario: Scenario,
               records: Sequence[FactRecord], embed: Embed, workdir: Path, files: Files,
               cache: ScanCache, unit: FreshRemedy) -> tuple[list[AtRestRow], CostRow]:
    """The remedy's at-rest rows and cost, on a replay of its own, cured in place."""
    replay = fresh_replay(unit.backend, backend_class, scenario, records, unit.store, embed,
                          workdir, files, cache, unit.remedy, unit.end)
    try:
        return _cure(replay, unit.store, replay.stores[unit.store].backend, unit.remedy)
    finally:
        replay.close()


def _remedied(audited: Replay, store: str, end: int) -> Cured:
    """Every remedy of a backend that forks on the store at the end of a scenario (day
    `end`), each as on a fresh replay of that scenario: from copies of one replay per
    opening, the audited replay itself when reads write nothing and it is still open on
    that day, else a replay without reads."""
    backend_class = audited.backend_class

    def fresh(remedy: str) -> Replay:
        return fresh_replay(audited.name, backend_class, audited.scenario, audited.records,
                            store, audited.embed, audited.workdir, audited.files,
                            audited.cache, remedy, end)

    cured: Cured = {}
    groups: dict[object, list[str]] = {}
    for remedy in backend_class.remedies:
        groups.setdefault(backend_class.opening(remedy), []).append(remedy)
    for opening, remedies in groups.items():
        if (not backend_class.reads_write and audited.day == end and
                opening == backend_class.opening(NO_REMEDY)):
            cured |= _forked(audited, store, audited.stores[store].backend, remedies,
                             audited.workdir)
            continue
        base = fresh(remedies[0])
        try:
            cured |= _forked(base, store, base.stores[store].backend, remedies,
                             audited.workdir)
        finally:
            base.close()
    return cured


@dataclass(frozen=True)
class PartialAudit:
    """A backend's audit before the remedies of a backend that cannot fork: those are
    `pending()` units (FreshRemedy), run wherever they like, then `completed()`."""

    name: str
    remedies: tuple[str, ...]
    forks: bool
    rankings: tuple[RankingRow, ...]
    at_rest: tuple[AtRestRow, ...]  # the replay's own scans
    deleting: tuple[tuple[int, str], ...]  # (scenario's last day, store) that deleted
    cured: dict[tuple[int, str], Cured]  # the forks' remedies, run with the replay

    def pending(self) -> list[FreshRemedy]:
        if self.forks:
            return []
        return [FreshRemedy(self.name, end, store, remedy)
                for end, store in self.deleting for remedy in self.remedies]

    def completed(self, fresh: Mapping[FreshRemedy, tuple[list[AtRestRow], CostRow]]
                  ) -> BackendAudit:
        """The whole audit: rows and costs by remedy, then by scenario and store."""
        at_rest, costs = list(self.at_rest), []
        for remedy in self.remedies:
            for end, store in self.deleting:
                if self.forks:
                    rows, cost = self.cured[(end, store)][remedy]
                else:
                    rows, cost = fresh[FreshRemedy(self.name, end, store, remedy)]
                at_rest += rows
                costs.append(cost)
        return BackendAudit(self.rankings, tuple(at_rest), tuple(costs))


def replay_backend(name: str, backend_class: type[StoreBackend], scenario: Scenario,
                   records: Sequence[FactRecord], policies: Sequence[Policy],
                   stores: Sequence[str], embed: Embed, vectors: IndexCache, workdir: Path,
                   files: Files, cache: ScanCache | None = None,
                   progress: Progress | None = None) -> tuple[BenchResult, PartialAudit]:
    """The policies on the backend (no remedy, scanned on every audit day), and the
    remedies of a backend that forks; those of one that cannot are left pending."""
    def said(message: str) -> None:
        if progress:
            progress(f"backend {name}: {message}")

    replay = Replay(name, backend_class, scenario, records, stores, embed, workdir, files,
                    cache=cache)
    cured: dict[tuple[int, str], Cured] = {}
    try:
        result = run_bench(scenario, records, policies, no_tokens, vectors,
                           progress=said, memories=replay.memory)
        said(f"replayed to day {replay.day} of {scenario.sessions}; the audit to the end")
        replay.advance_to(scenario.sessions, backend_audit_days(scenario))
        said(f"remedies {', '.join(backend_class.remedies) or '(none)'}")
        at_rest = tuple(replay.at_rest)
        deleting = replay.finish()
        if backend_class.forks and not backend_class.reads_write:  # forks of this replay
            cured = {(end, store): _remedied(replay, store, end) for end, store in deleting
                     if end == replay.day}
    finally:
        replay.close()
    if backend_class.forks:
        for end, store in deleting:
            if (end, store) not in cured:
                cured[(end, store)] = _remedied(replay, store, end)
    return result, PartialAudit(name, backend_class.remedies, backend_class.forks,
                                tuple(replay.rankings.values()), at_rest, tuple(deleting),
                                cured)


def run_backend(name: str, backend_class: type[StoreBackend], scenario: Scenario,
                records: Sequence[FactRecord], policies: Sequence[Policy],
                stores: Sequence[str], embed: Embed, vectors: IndexCache, workdir: Path,
                files: Files, cache: ScanCache | None = None,
                progress: Progress | None = None) -> BackendRun:
    """The policies on the backend (no remedy, scanned on every audit day), then each
    remedy, as on a fresh replay of every store that deleted, at its scenario's end; all
    in this process (the backends stage runs the fresh remedies as units of their own)."""
    cache = cache or ScanCache()  # the replay's and the fresh remedies' scans share it
    result, partial = replay_backend(name, backend_class, scenario, records, policies,
                                     stores, embed, vectors, workdir, files, cache, progress)
    fresh = {unit: cure_fresh(backend_class, scenario, records, embed, workdir, files,
                              cache, unit) for unit in partial.pending()}
    audit = partial.completed(fresh)
    return BackendRun(audit.rankings, audit.at_rest, audit.costs, result)
