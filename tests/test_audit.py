"""The delete-everywhere audit finds deleted values at rest, even when never injected."""

from membench.core.audit import DOCUMENTS, VOCABULARY, audit_days, run_audit


def held(rows, policy, day, part=DOCUMENTS):
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
    for clean in ("profile", "profile_bm25_redacted", "profile_bm25_unextracted",
                  "memory_tool_profile", "session_buffer"):
        assert held(rows, clean, 30) == set(), clean
        assert held(rows, clean, 30, VOCABULARY) == set(), clean


def test_index_vocabulary_counts_only_identifying_terms(default_run):
    rows = run_audit(default_run.scenario, default_run.records, default_run.policies)
    vocab = {r.fact_key: r.held for r in rows if r.policy == "bm25_transcript"
             and r.day == 30 and r.part == VOCABULARY}
    assert set(vocab["phone_number"]) >= {"7700", "900123"}
    redacted = [r for r in rows if r.policy == "profile_bm25_redacted" and r.part == VOCABULARY]
    assert redacted and not any(r.holds for r in redacted)
