"""The article's findings as checks on outcome counts, so the report can say, per seed,
which of them hold. Each check reads only counts ({policy: {form: {outcome: n}}}); the
sentence beside it is the claim, never a number."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from membench.core.multiseed import Counts
from membench.core.summary import FORMS

LIVE = ("current", "conflict", "stale", "missing")


def _live(c: Counts, policy: str, form: str) -> int:
    return sum(c[policy][form][o] for o in LIVE)


def _deleted(c: Counts, policy: str, form: str) -> int:
    return c[policy][form]["leaked"] + c[policy][form]["clean"]


def _both(c: Counts, policy: str, outcome: str) -> int:
    return sum(c[policy][f][outcome] for f in FORMS)


def _found(c: Counts, policy: str, form: str) -> int:
    return c[policy][form]["current"] + c[policy][form]["conflict"]


@dataclass(frozen=True)
class Finding:
    id: str
    claim: str
    check: Callable[[Counts], bool]


FINDINGS: tuple[Finding, ...] = (
    Finding("short_term", "The session buffer and the last-20 window return the current "
            "value for fewer than half of the live probes, in both forms.",
            lambda c: all(2 * c[p][f]["current"] < _live(c, p, f)
                          for p in ("session_buffer", "last_n_exchanges") for f in FORMS)),
    Finding("keep_everything", "The full transcript and the fact log conflict on changed "
            "facts and leak every deleted fact, in both forms.",
            lambda c: all(c[p][f]["conflict"] > 0 and c[p][f]["leaked"] == _deleted(c, p, f)
                          for p in ("full_transcript", "fact_log") for f in FORMS)),
    Finding("paraphrase_gap", "BM25 (over the transcript and over the fact log) finds the "
            "value for fewer paraphrases than literal probes.",
            lambda c: all(_found(c, p, "paraphrase") < _found(c, p, "literal")
                          for p in ("bm25_transcript", "bm25_fact_log"))),
    Finding("stale_hit", "BM25 over the transcript ranks an old value above the new one "
            "at least once (a stale outcome).",
            lambda c: _both(c, "bm25_transcript", "stale") > 0),
    Finding("profile_exact", "The profile returns the current value for every live probe "
            "and leaks nothing.",
            lambda c: all(c["profile"][f]["current"] == _live(c, "profile", f)
                          and c["profile"][f]["leaked"] == 0 for f in FORMS)),
    Finding("hybrid_conflicts", "Profile + BM25 over the full transcript brings back "
            "conflicts and leaks.",
            lambda c: _both(c, "profile_bm25", "conflict") > 0
            and _both(c, "profile_bm25", "leaked") > 0),
    Finding("redaction_stops_leaks", "Redacting deleted facts from the transcript stops "
            "every leak.",
            lambda c: _both(c, "profile_bm25_redacted", "leaked") == 0),
    Finding("unextracted_clean", "Profile + BM25 over unextracted exchanges returns the "
            "current value for every live probe with no conflict and no leak.",
            lambda c: all(c["profile_bm25_unextracted"][f]["current"]
                          == _live(c, "profile_bm25_unextracted", f) for f in FORMS)
            and _both(c, "profile_bm25_unextracted", "leaked") == 0),
)


@dataclass(frozen=True)
class Verdict:
    finding: Finding
    default: bool  # holds on the default seed's run
    failing_seeds: tuple[int, ...]  # seeds of the multi-seed run where it does not hold
    seeds: int


def verdicts(default: Counts, per_seed: Mapping[int, Counts],
             findings: Sequence[Finding] = FINDINGS) -> list[Verdict]:
    return [Verdict(f, f.check(default),
                    tuple(seed for seed, counts in per_seed.items() if not f.check(counts)),
                    len(per_seed))
            for f in findings]
