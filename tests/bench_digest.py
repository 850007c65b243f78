"""A digest of a bench run's outcomes and stored rows, over named fields only (fields
added later to the rows do not change it), for the before/after parity tests."""

from __future__ import annotations

import hashlib


def outcome_digest(result) -> str:
    h = hashlib.sha256()
    for r in result.outcomes:
        h.update(repr((r.policy, r.form, r.day, r.fact_key, r.question, r.changed, r.deleted,
                       r.outcome, r.injected_tokens, r.context, r.retrieved,
                       r.gold_retrieved)).encode())
    for r in result.stored:
        h.update(repr((r.policy, r.day, r.store, r.lines, r.tokens)).encode())
    return h.hexdigest()
