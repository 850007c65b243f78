"""The backends stage's summary (reports/backends.json): the report's two tables as
data, every figure counted from the stage's tables (no machine-dependent number)."""

from __future__ import annotations

from collections.abc import Sequence

from membench.backends.at_rest import AtRestRow
from membench.backends.base import NO_REMEDY, PLACES, StoreBackend
from membench.backends.parity import ParityRow
from membench.backends.replay import RankingRow
from membench.backends.scanner import VECTOR


def _places(rows: Sequence[AtRestRow], vectors: bool) -> tuple[list[str], list[str]]:
    chosen = [r for r in rows if (r.form == VECTOR) == vectors]
    places = {p for r in chosen for p in r.places}
    return ([p for p in PLACES if p in places],
            sorted({f for r in chosen for f in r.files}))


def at_rest_summary(rows: Sequence[AtRestRow], ends: Sequence[int]) -> list[dict]:
    """Per backend, store and remedy, at the end (of each scenario of a joined
    benchmark): where the deleted values and the deleted texts' vectors are still found
    (empty: nowhere)."""
    groups: dict[tuple[str, str, str], list[AtRestRow]] = {}
    for row in rows:
        if row.day in ends:
            groups.setdefault((row.backend, row.store, row.remedy), []).append(row)
    out = []
    for (backend, store, remedy), group in groups.items():
        values, value_files = _places(group, vectors=False)
        vectors, vector_files = _places(group, vectors=True)
        out.append({"backend": backend, "store": store, "remedy": remedy,
                    "values": values, "value_files": value_files,
                    "vectors": vectors, "vector_files": vector_files})
    return out


def parity_summary(rows: Sequence[ParityRow]) -> list[dict]:
    backends = list(dict.fromkeys(r.backend for r in rows))
    return [{"backend": b, "probes": sum(r.backend == b for r in rows),
             "same_outcome": sum(r.backend == b and r.same_outcome for r in rows),
             "same_context": sum(r.backend == b and r.same_context for r in rows)}
            for b in backends]


def ranking_summary(rows: Sequence[RankingRow]) -> list[dict]:
    groups: dict[tuple[str, str, str], list[RankingRow]] = {}
    for row in rows:
        groups.setdefault((row.backend, row.store, row.retriever), []).append(row)
    return [{"backend": b, "store": s, "retriever": r, "searches": len(group),
             "differing": sum(x.exact != x.native for x in group),
             "differing_sets": sum(set(x.exact) != set(x.native) for x in group)}
            for (b, s, r), group in groups.items()]


def backend_descriptions(backends: dict[str, type[StoreBackend]]) -> list[dict]:
    return [{"backend": name, "lexical": cls.lexical, "semantic": cls.semantic,
             "remedies": [NO_REMEDY, *cls.remedies]} for name, cls in backends.items()]


def summary(backends: dict[str, type[StoreBackend]], stores: Sequence[str],
            policies: Sequence[str], parity: Sequence[ParityRow],
            rankings: Sequence[RankingRow], at_rest: Sequence[AtRestRow],
            last_day: int, ends: Sequence[int] = ()) -> dict:
    """`ends`: each scenario's last day when a joined benchmark has several (listed
    under "scenario_ends" then); else the last day alone."""
    ends = tuple(ends) or (last_day,)
    return {"stores": list(stores), "policies": list(policies), "last_day": last_day,
            **({"scenario_ends": list(ends)} if len(ends) > 1 else {}),
            "backends": backend_descriptions(backends),
            "parity": parity_summary(parity), "rankings": ranking_summary(rankings),
            "at_rest": at_rest_summary(at_rest, ends)}
