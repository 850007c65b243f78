"""The report's section on real stores, rendered from the backends stage's summary
(reports/backends.json): where deleted data stays on disk per backend and remedy, and
whether the policies' outcomes on each backend equal the in-memory ones."""

from __future__ import annotations

from collections.abc import Mapping


def _where(places: list[str], files: list[str]) -> str:
    return f"{', '.join(places)} ({', '.join(f'`{f}`' for f in files)})" if places else "nowhere"


def at_rest_table(summary: Mapping) -> str:
    out = ["| Backend | Store | Remedy | Deleted values still found in | "
           "Deleted texts' vectors still found in |", "|---|---|---|---|---|"]
    for row in summary["at_rest"]:
        out.append(f"| `{row['backend']}` | `{row['store']}` | {row['remedy']} | "
                   f"{_where(row['values'], row['value_files'])} | "
                   f"{_where(row['vectors'], row['vector_files'])} |")
    return "\n".join(out)


def parity_table(summary: Mapping) -> str:
    natives = {}
    for row in summary["rankings"]:
        natives.setdefault(row["backend"], []).append(
            f"{row['retriever']} on `{row['store']}`: {row['differing']} of {row['searches']}")
    described = {b["backend"]: b for b in summary["backends"]}
    out = ["| Backend | Probes | Same outcome | Same injected context | Native lexical | "
           "Native vector | Native ranking differs from exact (searches) |",
           "|---|---|---|---|---|---|---|"]
    for row in summary["parity"]:
        b = described[row["backend"]]
        out.append(f"| `{row['backend']}` | {row['probes']} | {row['same_outcome']} | "
                   f"{row['same_context']} | {b['lexical'] or 'none'} | "
                   f"{b['semantic'] or 'none'} | "
                   f"{'; '.join(natives.get(row['backend'], [])) or 'no native search'} |")
    return "\n".join(out)


def backends_section(summary: Mapping) -> list[str]:
    parity = summary["parity"]
    probes = sum(r["probes"] for r in parity)
    same = sum(r["same_outcome"] for r in parity)
    return [
        "## Deleted, but still on disk: the policies on real stores",
        (f"The scenario is replayed day by day into {len(parity)} real stores, one database "
         f"per memory store ({', '.join(f'`{s}`' for s in summary['stores'])}), and the "
         f"{len(summary['policies'])} policies that keep only those stores run on each, with "
         f"membench's embeddings and exact search over the documents each database lists "
         f"back. {same} of {probes} probe outcomes equal the in-memory ones. Where a "
         "database ranks by itself (FTS5's bm25, ts_rank, vec0, pgvector HNSW, LangGraph's "
         "and LanceDB's search), its top-k is compared with membench's on the same question: "
         "the differences are findings, listed probe by probe in "
         "`data/backend_rankings.parquet`, not errors."),
        parity_table(summary),
        *_audit(summary),
    ]


def _audit(summary: Mapping) -> list[str]:
    if not summary["at_rest"]:
        return ["No fact of this scenario is deleted, so the forensic at-rest audit (what "
                "each database keeps on disk of deleted data, and which remedy clears it) "
                "does not apply to this run."]
    ends = summary.get("scenario_ends")
    when = (f"After the replay's last day ({summary['last_day']}), " if not ends else
            f"Each of the benchmark's {len(ends)} scenarios is replayed into databases of "
            "its own (a separate user's memory) and audited for its own deletions: after "
            f"each one's last day ({', '.join(map(str, ends))}), ")
    return [
        (f"{when}every file each database "
         "wrote is scanned for the deleted facts' values (UTF-8 bytes and token sequences) "
         "and for the float32 bytes of every text that stated one; each hit is placed from "
         "the file's role and its page's own header: live rows, free space, old versions "
         "(PostgreSQL dead tuples, LanceDB's earlier versions), log (WAL, journal), index. "
         "Each documented remedy then runs on a fresh replay of each store that deleted "
         "something, and is scanned again. `data/backend_at_rest.parquet` has every "
         "deletion day; the remedies' seconds and bytes rewritten are machine-dependent and "
         "go to `reports/backend_costs.json`, never committed. An append-only store "
         "(`fact_log`, `transcript`) keeps deleted values as live rows by design."),
        at_rest_table(summary),
    ]
