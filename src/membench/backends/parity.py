"""Outcome parity: a policy on a backend against the same policy in memory, probe by
probe (the outcome class and the exact injected context)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from membench.scoring.bench import OutcomeRow


@dataclass(frozen=True)
class ParityRow:
    backend: str
    policy: str
    day: int
    fact_key: str
    form: str
    question: str
    outcome: str
    memory_outcome: str
    same_outcome: bool
    same_context: bool


def parity_rows(backend: str, on_backend: Sequence[OutcomeRow],
                in_memory: Iterable[OutcomeRow]) -> list[ParityRow]:
    """One row per probe the backend ran; a probe missing in memory is an error."""
    memory = {(r.policy, r.day, r.probe_id, r.question): r for r in in_memory}
    rows = []
    for r in on_backend:  # format 2's probe ids tell apart two probes asking the same
        m = memory.get((r.policy, r.day, r.probe_id, r.question))
        if m is None:
            raise ValueError(f"policy {r.policy!r} day {r.day}: probe {r.question!r} is not in "
                             "the in-memory outcomes: rerun the policies stage")
        rows.append(ParityRow(backend, r.policy, r.day, r.fact_key, r.form, r.question,
                              r.outcome, m.outcome, r.outcome == m.outcome,
                              r.context == m.context))
    return rows
