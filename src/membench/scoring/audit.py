"""The delete-everywhere audit: which stores still hold a deleted value at rest.

Injected leaks only show what reaches the model for one question; a store that keeps
the phone number but never retrieves it still holds data the user asked to delete.
After each deletion day and on the last day, every store each policy keeps is checked,
in every form the policy keeps it:

* text: the store's documents, with the probes' whole-token matching;
* index terms: the search index's vocabulary, for terms that exist in it only because
  of the deleted facts' exchanges ("example" or "com" are used elsewhere too);
* index token sequences: the tokenized documents a search index keeps in order; the
  phone number ``+44 7700 900123`` survives as the tokens ``44 7700 900123`` even when
  no single term identifies anyone;
* vectors: a dense index keeps one embedding per document, and a vector whose text held
  a deleted value is held data (it is never re-embedded without it);
* extraction records: policies whose store is the extraction record log itself (the
  append-only fact log) keep every record, set records included. A profile applies each
  record as an upsert or a delete and keeps only its lines; that the bench replays it from
  the log each day is the bench's mechanics, not a store the profile keeps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from membench.extraction.extractors import FactRecord
from membench.memory.policies import Policy, searches
from membench.memory.stores import STORES, Memory
from membench.retrieval.retrievers import ANALYZERS, PLAIN, IndexCache
from membench.scenario.model import Fact, Scenario
from membench.scenario.text import has, tokens

TEXT = "text"
INDEX_TERMS = "index terms"
INDEX_SEQUENCES = "index token sequences"
VECTORS = "vectors"
RECORDS = "extraction records"
RECORDS_STORE = "fact_records"
_JOIN = "\0"  # never inside a token (tokens are letters and digits)


@dataclass(frozen=True)
class AuditRow:
    policy: str
    day: int
    fact_key: str
    store: str
    part: str  # TEXT, INDEX_TERMS, INDEX_SEQUENCES, VECTORS or RECORDS
    held: tuple[str, ...]  # deleted values found (index terms: identifying terms found)

    @property
    def holds(self) -> bool:
        return bool(self.held)


def audit_days(scenario: Scenario) -> tuple[int, ...]:
    days = {f.deleted_at for f in scenario.facts if f.deleted_at is not None}
    return tuple(sorted(days | {scenario.sessions}))


def _sequence_finder(token_lists: Sequence[Sequence[str]]) -> Callable[[Sequence[str]], bool]:
    """True for a token sequence that occurs consecutively, in order, in one document."""
    joined = [_JOIN + _JOIN.join(words) + _JOIN for words in token_lists]
    return lambda words: bool(words) and any(
        _JOIN + _JOIN.join(words) + _JOIN in document for document in joined)


def _keeps_records(policy: Policy) -> bool:
    return any(STORES[store].keeps_record_log for store in policy.stores)


def _record_text(records: Sequence[FactRecord]) -> str:
    return "\n".join(f"{r.text}\n{r.value or ''}" for r in records)


class _DayAudit:
    """One audit day: each store's forms are searched once, shared by the policies."""

    def __init__(self, memory: Memory, deleted: Sequence[Fact], indexes: IndexCache) -> None:
        self.memory = memory
        self.deleted = deleted
        self.indexes = indexes
        deleted_keys = {f.key for f in deleted}
        self.deleted_sources = {r.exchange_index for r in memory.records
                                if r.key in deleted_keys}
        self._found: dict[tuple[str, str, str], dict[str, tuple[str, ...]]] = {}

    def found(self, store: str, part: str, analyzer: str = PLAIN) -> dict[str, tuple[str, ...]]:
        """Fact key -> what ``part`` of ``store`` holds of it."""
        key = (store, part, analyzer)
        if key not in self._found:
            self._found[key] = self._search(store, part, analyzer)
        return self._found[key]

    def _search(self, store: str, part: str, analyzer: str) -> dict[str, tuple[str, ...]]:
        values = {f.key: tuple(dict.fromkeys(f.values())) for f in self.deleted}
        if part == RECORDS:
            text = _record_text(self.memory.records)
            return {k: tuple(v for v in vs if has(text, v)) for k, vs in values.items()}
        documents = self.memory.documents(store)
        if part in (TEXT, VECTORS):  # one vector per document: held where the text is
            text = "\n".join(d.text for d in documents)
            return {k: tuple(v for v in vs if has(text, v)) for k, vs in values.items()}
        tokenize = ANALYZERS[analyzer]
        if part == INDEX_SEQUENCES:
            occurs = _sequence_finder([tokenize(d.text) for d in documents])
            return {k: tuple(v for v in vs if occurs(tokenize(v))) for k, vs in values.items()}
        vocabulary = self.indexes.bm25(store, self.memory.day, documents).vocabulary
        elsewhere = {t for d in documents if d.source not in self.deleted_sources
                     for t in tokens(d.text)}
        identifying = set(vocabulary) - elsewhere
        return {k: tuple(t for t in dict.fromkeys(t for v in vs for t in tokens(v))
                         if t in identifying) for k, vs in values.items()}

    def rows(self, policy: Policy) -> list[AuditRow]:
        checks = [(store, TEXT, PLAIN) for store in policy.stores]
        for store, retriever in searches(policy):
            if retriever.analyzer is not None:
                checks += [(store, INDEX_TERMS, PLAIN),
                           (store, INDEX_SEQUENCES, retriever.analyzer)]
        checks += [(store, VECTORS, PLAIN) for store, retriever in searches(policy)
                   if retriever.needs_vectors]
        if _keeps_records(policy):
            checks.append((RECORDS_STORE, RECORDS, PLAIN))
        return [AuditRow(policy.id, self.memory.day, fact.key, store, part,
                         self.found(store, part, analyzer)[fact.key])
                for store, part, analyzer in checks for fact in self.deleted]


def run_audit(scenario: Scenario, records: Sequence[FactRecord], policies: Sequence[Policy],
              indexes: IndexCache | None = None) -> list[AuditRow]:
    indexes = indexes or IndexCache()
    rows: list[AuditRow] = []
    for day in audit_days(scenario):
        deleted = [f for f in scenario.facts if f.deleted_at is not None and f.deleted_at <= day]
        if not deleted:
            continue
        audit = _DayAudit(Memory(scenario, records, day, indexes), deleted, indexes)
        for policy in policies:
            rows += audit.rows(policy)
    return rows
