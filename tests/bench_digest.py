"""A digest of a bench run's outcomes and stored rows, over named fields only (fields
added later to the rows do not change it) and over the policies measured then (policies
added later do not either), for the before/after parity tests."""

from __future__ import annotations

import hashlib

# Registered after the digests were taken (the recency readers, issue 12).
LATER_POLICIES = frozenset({"fact_log_latest", "bm25_transcript_latest"})


def outcome_digest(result) -> str:
    h = hashlib.sha256()
    for r in (r for r in result.outcomes if r.policy not in LATER_POLICIES):
        h.update(repr((r.policy, r.form, r.day, r.fact_key, r.question, r.changed, r.deleted,
                       r.outcome, r.injected_tokens, r.context, r.retrieved,
                       r.gold_retrieved)).encode())
    for r in (r for r in result.stored if r.policy not in LATER_POLICIES):
        h.update(repr((r.policy, r.day, r.store, r.lines, r.tokens)).encode())
    return h.hexdigest()
