"""The findings, each declared once: the policies and probes it needs (its premise), the
claim checked on outcome counts (so the multi-seed section can say on which seeds it holds)
and the report's sentence, built from the results table. A run without the premise gets a
"not measured" line instead of sentences about zero probes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from membench.reporting.parts import fmt
from membench.scoring.results import FORMS, Counts, ResultsTable

LIVE_OUTCOMES = ("current", "conflict", "stale", "missing")
Labels = Mapping[str, str]


@dataclass(frozen=True)
class Probes:
    """A kind of probe a finding needs the run to contain, as OutcomeRow fields."""
    what: str  # read after "no probe on", e.g. "a changed fact"
    where: Mapping[str, bool]


LIVE = Probes("a live fact", {"deleted": False})
# A run without a finding's premise probes: the finding does not apply (rather than being
# left unmeasured for want of a policy).
DOES_NOT_APPLY = "does not apply: "
CHANGED = Probes("a changed fact still live", {"changed": True, "deleted": False})
DELETED = Probes("a deleted fact", {"deleted": True})
# Findings that compare or quote a probe form need it in the run (a format-2 dataset may
# have one form, or forms of its own).
LITERAL = Probes("a literal question", {"form": "literal"})
PARAPHRASE = Probes("a paraphrased question", {"form": "paraphrase"})


@dataclass(frozen=True)
class Finding:
    id: str
    headline: str  # the report paragraph's bold lead, a topic rather than a result
    policies: tuple[str, ...]
    probes: tuple[Probes, ...]
    sentence: Callable[[ResultsTable, Labels], str]  # the measured numbers, in words
    claim: str = ""  # what the check asserts; empty when there is no check
    holds: Callable[[Counts], bool] | None = None  # None: not a claim on counts

    def absent(self, table: ResultsTable, policies: Sequence[str]) -> str | None:
        """Why this run cannot measure the finding, or None when it can."""
        missing = [f"`{p}`" for p in self.policies if p not in policies]
        if missing:
            return f"{', '.join(missing)} not in this run"
        lacking = [p.what for p in self.probes if not table.probed(**p.where)]
        if lacking:
            return f"{DOES_NOT_APPLY}no probe on {' or on '.join(lacking)}"
        return None


def _live(c: Counts, policy: str, form: str) -> int:
    return sum(c[policy][form][o] for o in LIVE_OUTCOMES)


def _deleted(c: Counts, policy: str, form: str) -> int:
    return c[policy][form]["leaked"] + c[policy][form]["clean"]


def _both(c: Counts, policy: str, outcome: str) -> int:
    return sum(c[policy][f][outcome] for f in FORMS)


def _found(c: Counts, policy: str, form: str) -> int:
    """Probes whose context held the current value, alone or beside an old one."""
    return c[policy][form]["current"] + c[policy][form]["conflict"]


def _tokens(t: ResultsTable, policy: str, form: str | None = None) -> str:
    return fmt(round(t.mean_tokens(policy, form)))


def _short_term(t: ResultsTable, labels: Labels) -> str:
    live = t.n("session_buffer", "literal", deleted=False)
    sb = [t.n("session_buffer", f, outcome="current") for f in FORMS]
    window = [t.n("last_n_exchanges", f, outcome="current") for f in FORMS]
    return (f"The session buffer returned the current value alone for {sb[0]} of {live} live "
            f"probes (literal) and {sb[1]} of {live} (paraphrase); "
            f"{labels['last_n_exchanges']} for {window[0]} and {window[1]}.")


def _keep_everything(t: ResultsTable, labels: Labels) -> str:
    changed = t.n("full_transcript", "literal", changed=True, deleted=False)
    deleted = t.n("full_transcript", "literal", deleted=True)
    conflicts = {p: t.n(p, "literal", outcome="conflict", changed=True)
                 for p in ("full_transcript", "fact_log")}
    leaks = {p: t.n(p, "literal", outcome="leaked") for p in ("full_transcript", "fact_log")}
    tokens = round(t.mean_tokens("full_transcript"))
    versus = ""
    if "profile" in t.policies:
        profile = round(t.mean_tokens("profile"))
        versus = f" ({tokens / max(profile, 1):.0f} times the profile's {fmt(profile)})"
    return (f"The full transcript produced a conflict on {conflicts['full_transcript']} of the "
            f"{changed} literal probes on changed facts and leaked deleted data on "
            f"{leaks['full_transcript']} of {deleted} literal deletion probes, at a mean "
            f"{fmt(tokens)} tokens per probe{versus}. The append-only fact log: "
            f"{conflicts['fact_log']} conflicts and {leaks['fact_log']} leaks, at "
            f"{_tokens(t, 'fact_log')} tokens.")


def _recall_words(t: ResultsTable, policy: str) -> str:
    recall = [t.recall(policy, f) for f in FORMS]
    if None in recall:
        return ""
    return (f"; the exchange that stated the current value was in its top-k (recall@k) for "
            f"{recall[0].hits} of {recall[0].probes} and {recall[1].hits} of "
            f"{recall[1].probes}")


def _lexical(t: ResultsTable, labels: Labels) -> str:
    live = t.n("bm25_transcript", "literal", deleted=False)
    found = {p: [t.n(p, f, outcome="current") + t.n(p, f, outcome="conflict") for f in FORMS]
             for p in ("bm25_transcript", "bm25_fact_log")}
    empty = sum(1 for r in t.select("bm25_fact_log", "paraphrase", deleted=False)
                if not r.retrieved)
    return (f"{labels['bm25_transcript']} put the current value in front of the model (alone "
            f"or beside an old one) for {found['bm25_transcript'][0]} of {live} literal "
            f"probes and {found['bm25_transcript'][1]} of {live} paraphrases"
            f"{_recall_words(t, 'bm25_transcript')}. Over the fact log: "
            f"{found['bm25_fact_log'][0]} and {found['bm25_fact_log'][1]}; {empty} of {live} "
            f"paraphrased live probes retrieved nothing there, injecting a mean "
            f"{_tokens(t, 'bm25_fact_log', 'paraphrase')} tokens per paraphrase probe.")


def _stale_hit(t: ResultsTable, labels: Labels) -> str:
    stale = t.select("bm25_transcript", outcome="stale")
    if not stale:
        return "BM25 over the transcript never returned only a superseded value."
    listed = ", ".join(f"`{r.fact_key}` ({r.form}, day {r.day})" for r in stale)
    return (f"BM25 over the transcript returned only a superseded value {len(stale)} "
            f"{'time' if len(stale) == 1 else 'times'}: {listed}. BM25 scores relevance, "
            f"not recency.")


def _both_forms(t: ResultsTable, policy: str, *outcomes: str) -> int:
    return sum(t.n(policy, outcome=o) for o in outcomes)


def _profile(t: ResultsTable, labels: Labels) -> str:
    return (f"The profile alone returned the current value alone on "
            f"{_both_forms(t, 'profile', 'current')} of {t.n('profile', deleted=False)} live "
            f"probes (both forms) with {_both_forms(t, 'profile', 'conflict', 'leaked')} "
            f"conflicts or leaks, at {_tokens(t, 'profile')} tokens per probe.")


def _hybrid(t: ResultsTable, labels: Labels) -> str:
    return (f"Adding BM25 over the full transcript to the profile gave "
            f"{_both_forms(t, 'profile_bm25', 'conflict')} conflicts and "
            f"{_both_forms(t, 'profile_bm25', 'leaked')} leaks over both forms "
            f"({t.n('profile_bm25', deleted=False)} live and "
            f"{t.n('profile_bm25', deleted=True)} deletion probes).")


def _redacted(t: ResultsTable, labels: Labels) -> str:
    return (f"Redacting deleted facts from the transcript left "
            f"{_both_forms(t, 'profile_bm25_redacted', 'leaked')} leaks on "
            f"{t.n('profile_bm25_redacted', deleted=True)} deletion probes and "
            f"{_both_forms(t, 'profile_bm25_redacted', 'conflict')} conflicts (both forms).")


def _unextracted(t: ResultsTable, labels: Labels) -> str:
    policy = "profile_bm25_unextracted"
    return (f"Indexing only what the profile did not extract returned the current value "
            f"alone on {_both_forms(t, policy, 'current')} of {t.n(policy, deleted=False)} "
            f"live probes with {_both_forms(t, policy, 'conflict')} conflicts and "
            f"{_both_forms(t, policy, 'leaked')} leaks, at {_tokens(t, policy, 'literal')} / "
            f"{_tokens(t, policy, 'paraphrase')} tokens.")


def _memory_tool(t: ResultsTable, labels: Labels) -> str:
    pairs = list(zip(t.select("profile"), t.select("memory_tool_profile")))
    same = sum(a.outcome == b.outcome for a, b in pairs)
    return (f"Kept as memory-tool files and injected as what `view` returns, the profile gave "
            f"the same outcome on {same} of {len(pairs)} probes, at "
            f"{_tokens(t, 'memory_tool_profile')} tokens per probe against "
            f"{_tokens(t, 'profile')} for the plain profile lines.")


FINDINGS: tuple[Finding, ...] = (
    Finding("short_term", "Short-term memory alone.",
            ("session_buffer", "last_n_exchanges"), (LIVE, LITERAL, PARAPHRASE), _short_term,
            "The session buffer and the last-20 window return the current value for fewer "
            "than half of the live probes, in both forms.",
            lambda c: all(2 * c[p][f]["current"] < _live(c, p, f)
                          for p in ("session_buffer", "last_n_exchanges") for f in FORMS)),
    Finding("keep_everything", "Keeping everything.", ("full_transcript", "fact_log"),
            (CHANGED, DELETED, LITERAL), _keep_everything,
            "The full transcript and the fact log conflict on changed facts and leak every "
            "deleted fact, in both forms.",
            lambda c: all(c[p][f]["conflict"] > 0 and c[p][f]["leaked"] == _deleted(c, p, f)
                          for p in ("full_transcript", "fact_log") for f in FORMS)),
    Finding("paraphrase_gap", "Lexical retrieval and reworded questions.",
            ("bm25_transcript", "bm25_fact_log"), (LIVE, LITERAL, PARAPHRASE), _lexical,
            "BM25 (over the transcript and over the fact log) puts the current value in "
            "front of the model for fewer paraphrases than literal probes.",
            lambda c: all(_found(c, p, "paraphrase") < _found(c, p, "literal")
                          for p in ("bm25_transcript", "bm25_fact_log"))),
    Finding("stale_hit", "Stale hits.", ("bm25_transcript",), (CHANGED,), _stale_hit,
            "BM25 over the transcript ranks an old value above the new one at least once "
            "(a stale outcome).",
            lambda c: _both(c, "bm25_transcript", "stale") > 0),
    Finding("profile_exact", "The profile.", ("profile",), (LIVE,), _profile,
            "The profile returns the current value for every live probe and leaks nothing.",
            lambda c: all(c["profile"][f]["current"] == _live(c, "profile", f)
                          and c["profile"][f]["leaked"] == 0 for f in FORMS)),
    Finding("hybrid_conflicts", "The common hybrid.", ("profile_bm25",), (CHANGED, DELETED),
            _hybrid,
            "Profile + BM25 over the full transcript brings back conflicts and leaks.",
            lambda c: _both(c, "profile_bm25", "conflict") > 0
            and _both(c, "profile_bm25", "leaked") > 0),
    Finding("redaction_stops_leaks", "Redaction.", ("profile_bm25_redacted",), (DELETED,),
            _redacted, "Redacting deleted facts from the transcript stops every leak.",
            lambda c: _both(c, "profile_bm25_redacted", "leaked") == 0),
    Finding("unextracted_clean", "Indexing only what was not extracted.",
            ("profile_bm25_unextracted",), (LIVE,), _unextracted,
            "Profile + BM25 over unextracted exchanges returns the current value for every "
            "live probe with no conflict and no leak.",
            lambda c: all(c["profile_bm25_unextracted"][f]["current"]
                          == _live(c, "profile_bm25_unextracted", f) for f in FORMS)
            and _both(c, "profile_bm25_unextracted", "leaked") == 0),
    Finding("memory_tool_files", "The profile on real files.",
            ("profile", "memory_tool_profile"), (), _memory_tool),
)


TRIO = ("bm25_transcript", "dense_transcript", "hybrid_transcript")
UNEXTRACTED = ("profile_bm25_unextracted", "profile_dense_unextracted",
               "profile_hybrid_unextracted")


def _paraphrase_gap_closed(t: ResultsTable, labels: Labels) -> str:
    live = t.n("bm25_transcript", "paraphrase", deleted=False)
    bm25, dense, hybrid = (t.n(p, "paraphrase", outcome="current") for p in TRIO)
    gap = live - bm25
    closed = f"{dense - bm25} of those {gap}" if gap else "none (there was no gap)"
    return (f"Over the transcript, BM25 returned only the current value for {bm25} of {live} "
            f"paraphrased questions; dense retrieval for {dense} (closing {closed}) and "
            f"BM25 + dense fusion for {hybrid}.")


def _recall_brings_conflicts(t: ResultsTable, labels: Labels) -> str:
    conflicts = [t.n(p, outcome="conflict") for p in TRIO]
    leaks = [t.n(p, outcome="leaked") for p in TRIO]
    return (f"Conflicts over both forms: BM25 {conflicts[0]}, dense {conflicts[1]}, fusion "
            f"{conflicts[2]}; deleted data leaked on {leaks[0]}, {leaks[1]} and {leaks[2]} of "
            f"{t.n('bm25_transcript', deleted=True)} deletion probes. A retriever that finds "
            f"the statement of a fact also finds the statements it superseded, and a reworded "
            f"question about a deleted detail finds it too.")


def _stemming_stale(t: ResultsTable, labels: Labels) -> str:
    return (f"Stale outcomes over both forms: plain BM25 "
            f"{t.n('bm25_transcript', outcome='stale')}, stemmed BM25 "
            f"{t.n('bm25_stemmed_transcript', outcome='stale')}.")


def _profile_only(t: ResultsTable, labels: Labels) -> str:
    listed = "; ".join(
        f"`{p}` {t.n(p, outcome='current')} current, {t.n(p, outcome='conflict')} conflicts, "
        f"{_tokens(t, p)} tokens" for p in UNEXTRACTED if p in t.policies)
    return f"The retriever no longer decides recall: {listed}."


# The retrieval section's findings: sentences only, no claim the seeds could check (the
# multi-seed run leaves out the dense policies).
RETRIEVAL_FINDINGS: tuple[Finding, ...] = (
    Finding("paraphrase_gap_closed", "The paraphrase gap.", TRIO, (LIVE, PARAPHRASE),
            _paraphrase_gap_closed),
    Finding("recall_brings_conflicts", "Conflicts and leaks come back with recall.", TRIO,
            (CHANGED, DELETED), _recall_brings_conflicts),
    Finding("stemming_stale", "Stemming and the stale hit.",
            ("bm25_transcript", "bm25_stemmed_transcript"), (CHANGED,), _stemming_stale),
    Finding("profile_only", "With facts in the profile only.", UNEXTRACTED[:1], (LIVE,),
            _profile_only),
)


def finding_paragraphs(table: ResultsTable, labels: Labels,
                       findings: Sequence[Finding] = FINDINGS) -> list[str]:
    """One paragraph per finding: its measured sentence, or why this run cannot measure it."""
    out = []
    for finding in findings:
        why = finding.absent(table, list(labels))
        if why and why.startswith(DOES_NOT_APPLY):
            body = f"Does not apply to this run: {why.removeprefix(DOES_NOT_APPLY)}."
        else:
            body = f"Not measured in this run: {why}." if why else finding.sentence(table,
                                                                                   labels)
        out.append(f"**{finding.headline}** {body}")
    return out


@dataclass(frozen=True)
class Verdict:
    finding: Finding
    absent: str | None  # why the run cannot measure it; then default and failing_seeds are empty
    default: bool  # holds on the default seed's run
    failing_seeds: tuple[int, ...]  # seeds of the multi-seed run where it does not hold
    seeds: int


def verdicts(table: ResultsTable, default: Counts, per_seed: Mapping[int, Counts],
             findings: Sequence[Finding] = FINDINGS) -> list[Verdict]:
    """Each checkable finding on the default run and on every seed. The premise's probes are
    read from the default run (every seed rebuilds the same shape); its policies must be in
    the multi-seed counts."""
    out = []
    covered = [p for p in default if all(p in counts for counts in per_seed.values())]
    for f in findings:
        if f.holds is None:
            continue
        why = f.absent(table, covered)
        if why:
            out.append(Verdict(f, why, False, (), len(per_seed)))
            continue
        out.append(Verdict(f, None, f.holds(default),
                           tuple(seed for seed, counts in per_seed.items()
                                 if not f.holds(counts)), len(per_seed)))
    return out
