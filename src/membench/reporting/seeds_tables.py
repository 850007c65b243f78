"""The report's multi-seed section: the default seed's counts beside the mean, min and max
over `multiseed.seeds`, and which of the article's findings hold on every seed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from membench.reporting.findings import Verdict, verdicts
from membench.scoring.multiseed import spread
from membench.scoring.results import OUTCOMES, Counts, ResultsTable


def _mean(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _spread_table(default: Counts, per_seed: Mapping[int, Counts]) -> str:
    out = ["| Policy | Form | " + " | ".join(o.capitalize() for o in OUTCOMES) + " |",
           "|---|---|" + "---:|" * len(OUTCOMES)]
    cells: dict[tuple[str, str], list[str]] = {}
    for row in spread(list(per_seed.values())):
        here = default[row.policy][row.form][row.outcome]
        span = f"{row.low}" if row.low == row.high else f"{row.low}–{row.high}"
        cells.setdefault((row.policy, row.form), []).append(
            f"{here} · {_mean(row.mean)} [{span}]")
    for (policy, form), values in cells.items():
        out.append(f"| `{policy}` | {form} | " + " | ".join(values) + " |")
    return "\n".join(out)


def _verdict_table(default_seed: int, results: Sequence[Verdict]) -> str:
    out = [f"| Finding | Seed {default_seed} | Holds on | Does not hold on seeds |",
           "|---|---|---:|---|"]
    for v in results:
        if v.absent:
            why = v.absent if v.absent.startswith("does not apply") else \
                f"not measured: {v.absent}"
            out.append(f"| {v.finding.claim} | {why} | – | – |")
            continue
        failing = ", ".join(map(str, v.failing_seeds)) or "none"
        out.append(f"| {v.finding.claim} | {'holds' if v.default else 'does not hold'} | "
                   f"{v.seeds - len(v.failing_seeds)} of {v.seeds} | {failing} |")
    return "\n".join(out)


def _verdict_sentence(results: Sequence[Verdict], seeds: int) -> str:
    measured = [v for v in results if not v.absent]
    every = [v.finding.id for v in measured if not v.failing_seeds]
    some = [f"`{v.finding.id}` ({v.seeds - len(v.failing_seeds)} of {v.seeds})"
            for v in measured if v.failing_seeds]
    held = ", ".join(f"`{i}`" for i in every) or "none"
    sentence = (f"Holding on every one of the {seeds} seeds: {held}. "
                f"Not on every seed: {', '.join(some) or 'none'}.")
    absent = [f"`{v.finding.id}`" for v in results if v.absent]
    if absent:
        sentence += f" Not measured or not applying in this run: {', '.join(absent)}."
    return sentence


def seeds_section(table: ResultsTable, policy_ids: Sequence[str], default_seed: int,
                  per_seed: Mapping[int, Counts]) -> list[str]:
    default = table.counts(policy_ids)
    results = verdicts(table, default, per_seed)
    seeds = ", ".join(map(str, per_seed))
    return [
        "## Across seeds",
        (f"The same scenario shape rebuilt with seeds {seeds} (`multiseed.seeds`): each cell "
         f"is this report's count (seed {default_seed}), then the mean over the seeds and "
         f"[min–max]."),
        _spread_table(default, per_seed),
        "### Which findings hold on every seed",
        _verdict_table(default_seed, results),
        _verdict_sentence(results, len(per_seed)),
    ]
