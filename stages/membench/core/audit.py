"""The delete-everywhere audit: which stores still hold a deleted value at rest.

Injected leaks only show what reaches the model for one question; a store that keeps
the phone number but never retrieves it still holds data the user asked to delete.
After each deletion day and on the last day, every store each policy keeps is checked
with the probes' whole-token matching. The vocabulary of every search index a policy builds is
checked for terms that exist in it only because of the deleted facts' exchanges (terms
also used elsewhere, like "example" or "com", cannot identify anyone and are not counted).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from membench.core.extract import FactRecord
from membench.core.memory import IndexCache, Memory
from membench.core.model import Scenario
from membench.core.policies import Policy, lexical_index_stores
from membench.core.text import has, tokens

DOCUMENTS = "documents"
VOCABULARY = "index vocabulary"


@dataclass(frozen=True)
class AuditRow:
    policy: str
    day: int
    fact_key: str
    store: str
    part: str  # DOCUMENTS or VOCABULARY
    held: tuple[str, ...]  # deleted values (documents) or identifying terms (vocabulary)

    @property
    def holds(self) -> bool:
        return bool(self.held)


def audit_days(scenario: Scenario) -> tuple[int, ...]:
    days = {f.deleted_at for f in scenario.facts if f.deleted_at is not None}
    return tuple(sorted(days | {scenario.sessions}))


def run_audit(scenario: Scenario, records: Sequence[FactRecord], policies: Sequence[Policy],
              indexes: IndexCache | None = None) -> list[AuditRow]:
    indexes = indexes or IndexCache()
    rows: list[AuditRow] = []
    for day in audit_days(scenario):
        deleted = [f for f in scenario.facts if f.deleted_at is not None and f.deleted_at <= day]
        if not deleted:
            continue
        memory = Memory(scenario, records, day, indexes)
        deleted_keys = {f.key for f in deleted}
        deleted_sources = {r.exchange_index for r in memory.records if r.key in deleted_keys}
        identifying_terms: dict[str, set[str]] = {}  # per store, shared by its policies
        for policy in policies:
            for store in policy.stores:
                documents = memory.documents(store)
                text = "\n".join(d.text for d in documents)
                identifying: set[str] | None = None
                if store in lexical_index_stores(policy):
                    if store not in identifying_terms:
                        vocabulary = indexes.get(store, day, documents).vocabulary
                        elsewhere = {t for d in documents if d.source not in deleted_sources
                                     for t in tokens(d.text)}
                        identifying_terms[store] = set(vocabulary) - elsewhere
                    identifying = identifying_terms[store]
                for fact in deleted:
                    values = dict.fromkeys(fact.values())
                    rows.append(AuditRow(policy.id, day, fact.key, store, DOCUMENTS,
                                         tuple(v for v in values if has(text, v))))
                    if identifying is not None:
                        terms = dict.fromkeys(t for v in values for t in tokens(v))
                        rows.append(AuditRow(policy.id, day, fact.key, store, VOCABULARY,
                                             tuple(t for t in terms if t in identifying)))
    return rows
