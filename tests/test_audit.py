"""The delete-everywhere audit finds deleted values at rest, in every form a policy keeps."""

from params_yaml import PARAMS

from membench.memory.policies import POLICIES
from membench.scoring.audit import (
    INDEX_SEQUENCES,
    INDEX_TERMS,
    RECORDS,
    RECORDS_STORE,
    TEXT,
    VECTORS,
    audit_days,
    run_audit,
)

BOTH = {"phone_number", "personal_email"}


def held(rows, policy, day, part=TEXT):
    return {(r.fact_key, r.store) for r in rows
            if r.policy == policy and r.day == day and r.part == part and r.holds}


def test_audit_days_are_deletion_days_and_the_last(default_run):
    assert audit_days(default_run.scenario) == (20, 26, 30)


def test_stores_that_keep_deleted_values(default_run):
    rows = run_audit(default_run.scenario, default_run.records, default_run.policies)
    both = {("phone_number", "transcript"), ("personal_email", "transcript")}
    assert held(rows, "full_transcript", 30) == both
    assert held(rows, "last_n_exchanges", 30) == both  # holds it, never injects it
    assert held(rows, "profile_bm25", 30) == both
    assert held(rows, "fact_log", 20) == {("phone_number", "fact_log")}
    for redacted in ("profile", "profile_bm25_redacted", "profile_bm25_unextracted",
                     "memory_tool_profile", "session_buffer"):
        assert held(rows, redacted, 30) == set(), redacted
        assert held(rows, redacted, 30, INDEX_TERMS) == set(), redacted
        assert held(rows, redacted, 30, INDEX_SEQUENCES) == set(), redacted
    assert not any(r.holds for r in rows if r.policy == "session_buffer")


def test_index_terms_count_only_identifying_terms(default_run):
    rows = run_audit(default_run.scenario, default_run.records, default_run.policies)
    terms = {r.fact_key: r.held for r in rows if r.policy == "bm25_transcript"
             and r.day == 30 and r.part == INDEX_TERMS}
    assert set(terms["phone_number"]) >= {"7700", "900123"}
    assert terms["personal_email"] == ()  # "k", "dev", "example", "com" occur elsewhere


def test_index_token_sequences_rebuild_values_no_single_term_identifies(default_run):
    """The email's tokens `k dev example com` stay in the transcript index, in order."""
    rows = run_audit(default_run.scenario, default_run.records, default_run.policies)
    for policy in ("bm25_transcript", "profile_bm25", "bm25_stemmed_transcript"):
        assert {k for k, _ in held(rows, policy, 30, INDEX_SEQUENCES)} == BOTH, policy
    redacted = [r for r in rows if r.policy == "profile_bm25_redacted"
                and r.part in (INDEX_TERMS, INDEX_SEQUENCES)]
    assert redacted and not any(r.holds for r in redacted)


def test_only_the_fact_log_keeps_the_extraction_records(default_run):
    """An append-only log is the record log; a profile applies records and keeps its lines."""
    rows = run_audit(default_run.scenario, default_run.records, default_run.policies)
    for policy in ("fact_log", "bm25_fact_log"):
        assert held(rows, policy, 30, RECORDS) == {(k, RECORDS_STORE) for k in BOTH}, policy
    for policy in ("profile", "memory_tool_profile", "profile_bm25_redacted", "full_transcript",
                   "bm25_transcript", "session_buffer"):
        assert not any(r.part == RECORDS for r in rows if r.policy == policy), policy
    for policy in ("profile", "memory_tool_profile", "profile_bm25_unextracted"):
        day_30 = [r for r in rows if r.policy == policy and r.day == 30]
        assert day_30 and not any(r.holds for r in day_30), policy


def test_dense_policies_keep_a_vector_of_each_deleted_exchange(default_run):
    settings = PARAMS.policies
    dense = [POLICIES[p](settings) for p in ("dense_transcript", "profile_dense_unextracted")]
    rows = run_audit(default_run.scenario, default_run.records, dense)
    assert {k for k, _ in held(rows, "dense_transcript", 30, VECTORS)} == BOTH
    unextracted = [r for r in rows if r.policy == "profile_dense_unextracted"
                   and r.part == VECTORS]
    assert unextracted and not any(r.holds for r in unextracted)
    assert not any(r.part in (INDEX_TERMS, INDEX_SEQUENCES) for r in rows)  # no BM25 index
