"""The results table: one row per policy, probe form, day and fact (outcome, injected tokens,
recall of the gold evidence), with the group-by helpers every table, metric, finding, chart
and the multi-seed run read, so a count is defined in one place."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from membench.scoring.bench import BenchResult, OutcomeRow
from membench.scoring.rules import Outcome

FORMS = ("literal", "paraphrase")
OUTCOMES = tuple(o.value for o in Outcome)

# {policy: {form: {outcome: count}}}: what the multi-seed file keeps of a results table
Counts = dict[str, dict[str, dict[str, int]]]


def is_abstention(row: OutcomeRow) -> bool:
    return row.probe_id is not None and not row.fact_key


@dataclass(frozen=True)
class FormSummary:
    policy: str
    form: str
    counts: dict[str, int]  # every Outcome value, zero when absent
    probes: int
    mean_injected_tokens: float


@dataclass(frozen=True)
class Recall:
    """recall@k of the gold evidence: probes whose top-k held the exchange that stated the
    current value, out of the live probes of a policy that retrieves."""
    hits: int
    probes: int


class ResultsTable:
    """The bench's outcome rows grouped once by policy and form; `stored` (tokens each
    policy keeps per day) rides along because the same tables print it beside the counts."""

    def __init__(self, result: BenchResult) -> None:
        # Format-2 abstention probes expect no fact: kept apart from every outcome count
        # (membench.reporting.given_sections reports them).
        self.abstentions = tuple(r for r in result.outcomes if is_abstention(r))
        self.rows = tuple(r for r in result.outcomes if not is_abstention(r))
        self.stored = result.stored
        self._by_policy_form: dict[tuple[str, str], list[OutcomeRow]] = {}
        for row in self.rows:
            self._by_policy_form.setdefault((row.policy, row.form), []).append(row)
        # A format-2 run may have other probe forms and outcomes (partial, premise, ...):
        # the article's come first, always, so a format-1 table is unchanged.
        self.forms = FORMS + tuple(dict.fromkeys(
            r.form for r in self.rows if r.form not in FORMS))
        self.outcomes = OUTCOMES + tuple(sorted(
            {r.outcome for r in self.rows} - set(OUTCOMES)))

    @property
    def policies(self) -> tuple[str, ...]:
        """Policy ids present, in row order."""
        return tuple(dict.fromkeys(policy for policy, _ in self._by_policy_form))

    def select(self, policy: str, form: str | None = None, **where) -> list[OutcomeRow]:
        forms = self.forms if form is None else (form,)
        return [r for f in forms for r in self._by_policy_form.get((policy, f), ())
                if all(getattr(r, k) == v for k, v in where.items())]

    def n(self, policy: str, form: str | None = None, **where) -> int:
        return len(self.select(policy, form, **where))

    def probed(self, **where) -> bool:
        """Whether any probe of the run matches, e.g. probed(changed=True, deleted=False)."""
        return any(all(getattr(r, k) == v for k, v in where.items()) for r in self.rows)

    def mean_tokens(self, policy: str, form: str | None = None) -> float:
        rows = self.select(policy, form)
        return sum(r.injected_tokens for r in rows) / len(rows) if rows else 0.0

    def recall(self, policy: str, form: str | None = None) -> Recall | None:
        """None when the policy retrieved nothing to score (no retrieval, or no live probe)."""
        rows = [r for r in self.select(policy, form) if r.gold_retrieved is not None]
        return Recall(sum(r.gold_retrieved for r in rows), len(rows)) if rows else None

    def retrieval_policies(self, policy_ids: Sequence[str]) -> list[str]:
        """The policies that returned a top-k (their rows carry `retrieved`), in the given
        order: derived from the run, so a newly registered retriever shows up by itself."""
        return [p for p in policy_ids if any(r.retrieved is not None for r in self.select(p))]

    def summaries(self, policy_ids: Sequence[str]) -> list[FormSummary]:
        """Outcome counts and mean injected tokens per policy and form, zeros included."""
        out = []
        for policy in policy_ids:
            for form in self.forms:
                rows = self.select(policy, form)
                counts = dict.fromkeys(self.outcomes, 0)
                for row in rows:
                    counts[row.outcome] += 1
                out.append(FormSummary(policy, form, counts, len(rows),
                                       self.mean_tokens(policy, form)))
        return out

    def counts(self, policy_ids: Sequence[str]) -> Counts:
        counts: Counts = {}
        for s in self.summaries(policy_ids):
            counts.setdefault(s.policy, {})[s.form] = dict(s.counts)
        return counts

    def by_day(self, policy_ids: Sequence[str]) -> dict[tuple[str, int, str], int]:
        """Probes of both forms per (policy, day, outcome), zeros included."""
        days = sorted({r.day for r in self.rows})
        counts = {(p, d, o): 0 for p in policy_ids for d in days for o in self.outcomes}
        for r in self.rows:
            if r.policy in policy_ids:
                counts[(r.policy, r.day, r.outcome)] += 1
        return counts

    def stored_tokens(self, policy: str, day: int) -> int:
        return sum(r.tokens for r in self.stored if r.policy == policy and r.day == day)

    def transcript_tokens(self, day: int) -> int:
        return next(r.tokens for r in self.stored if r.store == "transcript" and r.day == day)
