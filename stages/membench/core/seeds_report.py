"""The report's multi-seed section: the default seed's counts beside the mean, min and max
over `multiseed.seeds`, and which of the article's findings hold on every seed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from membench.core.bench import BenchResult
from membench.core.findings import verdicts
from membench.core.multiseed import Counts, spread
from membench.core.scoring import Outcome
from membench.core.summary import summarize


def default_counts(result: BenchResult, policy_ids: Sequence[str]) -> Counts:
    counts: Counts = {}
    for s in summarize(result, policy_ids):
        counts.setdefault(s.policy, {})[s.form] = dict(s.counts)
    return counts


def _mean(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _spread_table(default: Counts, per_seed: Mapping[int, Counts]) -> str:
    outcomes = [o.value for o in Outcome]
    out = ["| Policy | Form | " + " | ".join(o.capitalize() for o in outcomes) + " |",
           "|---|---|" + "---:|" * len(outcomes)]
    cells: dict[tuple[str, str], list[str]] = {}
    for row in spread(list(per_seed.values())):
        here = default[row.policy][row.form][row.outcome]
        span = f"{row.low}" if row.low == row.high else f"{row.low}–{row.high}"
        cells.setdefault((row.policy, row.form), []).append(
            f"{here} · {_mean(row.mean)} [{span}]")
    for (policy, form), values in cells.items():
        out.append(f"| `{policy}` | {form} | " + " | ".join(values) + " |")
    return "\n".join(out)


def _verdict_table(default_seed: int, default: Counts, per_seed: Mapping[int, Counts]) -> str:
    out = [f"| Finding | Seed {default_seed} | Holds on | Does not hold on seeds |",
           "|---|---|---:|---|"]
    for v in verdicts(default, per_seed):
        failing = ", ".join(map(str, v.failing_seeds)) or "none"
        out.append(f"| {v.finding.claim} | {'holds' if v.default else 'does not hold'} | "
                   f"{v.seeds - len(v.failing_seeds)} of {v.seeds} | {failing} |")
    return "\n".join(out)


def _verdict_sentence(default: Counts, per_seed: Mapping[int, Counts]) -> str:
    results = verdicts(default, per_seed)
    every = [v.finding.id for v in results if not v.failing_seeds]
    some = [f"`{v.finding.id}` ({v.seeds - len(v.failing_seeds)} of {v.seeds})"
            for v in results if v.failing_seeds]
    held = ", ".join(f"`{i}`" for i in every) or "none"
    return (f"Holding on every one of the {len(per_seed)} seeds: {held}. "
            f"Not on every seed: {', '.join(some) or 'none'}.")


def seeds_section(result: BenchResult, policy_ids: Sequence[str], default_seed: int,
                  per_seed: Mapping[int, Counts]) -> list[str]:
    default = default_counts(result, policy_ids)
    seeds = ", ".join(map(str, per_seed))
    return [
        "## Across seeds",
        (f"The same scenario shape rebuilt with seeds {seeds} (`multiseed.seeds`): each cell "
         f"is this report's count (seed {default_seed}), then the mean over the seeds and "
         f"[min–max]."),
        _spread_table(default, per_seed),
        "### Which findings hold on every seed",
        _verdict_table(default_seed, default, per_seed),
        _verdict_sentence(default, per_seed),
    ]
