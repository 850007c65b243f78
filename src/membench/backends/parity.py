"""Outcome parity: a policy on a backend against the same policy in memory, probe by
probe (the outcome class and the exact injected context)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
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


ProbeKey = tuple[str, int, str, str]  # policy, day, probe id, question


def context_digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=32).digest()


def memory_index(in_memory: Iterable[OutcomeRow],
                 policies: Iterable[str] | None = None) -> dict[ProbeKey, tuple[str, bytes]]:
    """The in-memory side kept small: each probe's outcome and a digest of its context
    (a full transcript's context is megabytes at a thousand sessions)."""
    wanted = None if policies is None else set(policies)
    return {(r.policy, r.day, r.probe_id, r.question): (r.outcome, context_digest(r.context))
            for r in in_memory if wanted is None or r.policy in wanted}


def parity_rows(backend: str, on_backend: Sequence[OutcomeRow],
                memory: Mapping[ProbeKey, tuple[str, bytes]]) -> list[ParityRow]:
    """One row per probe the backend ran; a probe missing in memory is an error."""
    rows = []
    for r in on_backend:  # format 2's probe ids tell apart two probes asking the same
        m = memory.get((r.policy, r.day, r.probe_id, r.question))
        if m is None:
            raise ValueError(f"policy {r.policy!r} day {r.day}: probe {r.question!r} is not in "
                             "the in-memory outcomes: rerun the policies stage")
        memory_outcome, memory_context = m
        rows.append(ParityRow(backend, r.policy, r.day, r.fact_key, r.form, r.question,
                              r.outcome, memory_outcome, r.outcome == memory_outcome,
                              context_digest(r.context) == memory_context))
    return rows
