"""The report's extraction section, the sweep chart's rows and the metrics' `extraction`
key, from the extraction stage's file (reports/extraction.json). Every number is computed
from that run; the crossover is read off the sweep, not stated."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

MEASURES = ("current", "conflict", "leaked")
QUALITY_COLUMNS = (
    ("detection_precision", "Detection precision"), ("detection_recall", "Detection recall"),
    ("update_accuracy", "Update accuracy"), ("missed_updates", "Missed updates"),
    ("false_merges", "False merges"), ("missed_facts", "Missed facts"),
    ("deletion_recall", "Deletion recall"), ("false_deletions", "False deletions"))
ERROR_CLASSES = ("missed_fact", "missed_update", "false_merge", "missed_deletion",
                 "false_deletion", "other")


def _mean(values: list[int]) -> float:
    return float(round(Fraction(sum(values), len(values)), 2))


def sweep_bands(sweep: Mapping) -> list[dict]:
    """Per rate, policy and measure: mean, min and max over the seeds; each reference is
    flat (the same count at every rate: no extractor changes it)."""
    rows = []
    for rate in sweep["rates"]:
        runs = [r for r in sweep["runs"] if r["rate"] == rate]
        for policy in runs[0]["counts"]:
            for measure in MEASURES:
                values = [r["counts"][policy][measure] for r in runs]
                rows.append({"rate": rate, "policy": policy, "measure": measure,
                             "mean": _mean(values), "low": min(values), "high": max(values),
                             "kind": "profile"})
        for policy, counts in sweep["references"].items():
            for measure in MEASURES:
                rows.append({"rate": rate, "policy": policy, "measure": measure,
                             "mean": float(counts[measure]), "low": counts[measure],
                             "high": counts[measure], "kind": "reference"})
    return rows


def best_reference(sweep: Mapping) -> tuple[str, int] | None:
    """The extraction-free policy with the most current-only answers (first on a tie)."""
    references = sweep["references"]
    if not references:
        return None
    best = max(references, key=lambda p: references[p]["current"])
    return best, references[best]["current"]


def crossover(sweep: Mapping, policy: str) -> float | None:
    """The lowest swept rate at which the policy's mean current-only count over the seeds
    is no longer above the best extraction-free policy's; None if it never drops to it."""
    best = best_reference(sweep)
    if best is None:
        return None
    for rate in sweep["rates"]:
        values = [r["counts"][policy]["current"] for r in sweep["runs"] if r["rate"] == rate]
        if Fraction(sum(values), len(values)) <= best[1]:
            return rate
    return None


def extraction_metrics(data: Mapping) -> dict:
    """metrics.json's `extraction` key: quality and profile rows per extractor, and the
    sweep's crossover rate per swept policy."""
    sweep = data["sweep"]
    swept = list(sweep["runs"][0]["counts"]) if sweep["runs"] else []
    best = best_reference(sweep)
    return {"extractors": {name: {"quality": e["quality"], "profile_policies": e["policies"]}
                           for name, e in data["extractors"].items()},
            "sweep": {"best_reference": best[0] if best else None,
                      "best_reference_current": best[1] if best else None,
                      "crossover_rate": {p: crossover(sweep, p) for p in swept}}}


def _fmt(value) -> str:
    return "n/a" if value is None else (f"{value:.2f}" if isinstance(value, float) else
                                        str(value))


def _quality_table(data: Mapping) -> str:
    out = ["| Extractor | " + " | ".join(t for _, t in QUALITY_COLUMNS) + " |",
           "|---|" + "---:|" * len(QUALITY_COLUMNS)]
    for name in _order(data):
        q = data["extractors"][name]["quality"]
        out.append(f"| `{name}` | " + " | ".join(_fmt(q[k]) for k, _ in QUALITY_COLUMNS) + " |")
    return "\n".join(out)


def _order(data: Mapping) -> list[str]:
    names = list(data["extractors"])
    return sorted(names, key=lambda n: (n != "perfect", n != "consolidating", n))


def _profile_rows(data: Mapping, probes: int) -> str:
    out = ["| Policy | Extractor | Current only | Conflict | Leaked |", "|---|---|---:|---:|---:|"]
    names = _order(data)
    for policy in data["extractors"][names[0]]["policies"]:
        for name in names:
            c = data["extractors"][name]["policies"][policy]
            out.append(f"| `{policy}` | `{name}` | {c['current']} of {probes} | "
                       f"{c['conflict']} | {c['leaked']} |")
    return "\n".join(out)


def _effects(data: Mapping) -> list[str]:
    parts = []
    for name in _order(data)[1:]:
        effects = data["extractors"][name]["effects"]
        rows = [(p, e) for p, e in effects.items() if any(v["changed"] for v in e.values())]
        if not rows:
            parts.append(f"`{name}`: no probe outcome of a profile policy differs from the "
                         "perfect extractor's.")
            continue
        out = [f"`{name}`, probes whose outcome differs from the perfect extractor's "
               "(of them, current answers lost), by the error that hit the probed fact:", "",
               "| Policy | " + " | ".join(c.replace("_", " ") for c in ERROR_CLASSES) + " |",
               "|---|" + "---:|" * len(ERROR_CLASSES)]
        for policy, e in rows:
            out.append(f"| `{policy}` | " + " | ".join(
                f"{e[c]['changed']} ({e[c]['current_lost']})" for c in ERROR_CLASSES) + " |")
        parts.append("\n".join(out))
    return parts


def _sweep_table(sweep: Mapping) -> str:
    bands = sweep_bands(sweep)
    swept = [p for p in dict.fromkeys(b["policy"] for b in bands if b["kind"] == "profile")]
    header = "| Error rate | " + " | ".join(f"`{p}` {m}" for p in swept for m in MEASURES) + " |"
    out = [header, "|---:|" + "---:|" * (len(swept) * len(MEASURES))]
    for rate in sweep["rates"]:
        cells = []
        for p in swept:
            for m in MEASURES:
                b = next(b for b in bands if (b["rate"], b["policy"], b["measure"]) == (rate, p, m))
                cells.append(f"{b['mean']:g} [{b['low']}–{b['high']}]")
        out.append(f"| {rate:g} | " + " | ".join(cells) + " |")
    refs = "; ".join(f"`{p}` {c['current']} current, {c['conflict']} conflicts, "
                     f"{c['leaked']} leaked" for p, c in sweep["references"].items())
    return "\n".join(out) + (f"\n\nExtraction-free references (flat): {refs}." if refs else "")


def _crossover_sentences(sweep: Mapping) -> str:
    best = best_reference(sweep)
    if best is None or not sweep["runs"]:
        return "Not measured in this run: no extraction-free reference policy ran."
    sentences = []
    for policy in sweep["runs"][0]["counts"]:
        rate = crossover(sweep, policy)
        if rate is None:
            sentences.append(f"`{policy}` still beats `{best[0]}` ({best[1]} current-only "
                             f"answers) at the largest swept rate, {max(sweep['rates']):g}.")
        else:
            sentences.append(f"`{policy}` stops beating the best extraction-free policy, "
                             f"`{best[0]}` ({best[1]} current-only answers), at an error rate "
                             f"of {rate:g}: its mean current-only count over the seeds is no "
                             "longer above it.")
    return " ".join(sentences)


def _llm_sentence(data: Mapping) -> list[str]:
    """What the model did as the extractor, counted by the extraction stage."""
    llm = data.get("llm")
    if llm is None:
        return []
    d = llm["decisions"]
    return [(f"The LLM extractor (`llm`) is the model `{llm['model']}` (docs/model.md): it read "
             f"the {llm['turns_read']} distinct user turns, and in the transcript's turns found "
             f"{llm['facts']} facts and {llm['forget_requests']} forget requests (the replies to {llm['unparsed_turns']} "
             f"turns held no FACT, FORGET or NONE line); against the memories most like each, it decided "
             f"{d['add']} ADD, {d['update']} UPDATE, {d['delete']} DELETE and {d['none']} NONE, "
             f"and {d['unparsed']} replies decided nothing valid. It wrote {llm['records']} "
             "records.")]


def extraction_section(data: Mapping, probes: int) -> list[str]:
    sweep = data["sweep"]
    return [
        "## Extraction measured",
        ("Every profile row above rests on the configured extractor "
         f"(`{data['configured']}`). Here the perfect extractor (gold keys), the consolidating "
         "extractor (no gold label: candidate detection, then ADD/UPDATE/DELETE/NOOP against "
         "the memories kept so far by the similarity thresholds of `extract.consolidation`), "
         "the noisy extractor (the perfect one with the seeded error rates of `extract.noise`) "
         "and the configured one are scored against the scenario's gold labels."),
        *_llm_sentence(data),
        _quality_table(data),
        "Profile policies under each extractor (both probe forms):",
        _profile_rows(data, probes),
        *_effects(data),
        "### Extraction error sweep",
        (f"The noisy extractor with every error class (missed facts, missed updates, false "
         f"merges, missed deletions) at each rate, over noise seeds "
         f"{', '.join(map(str, sweep['seeds']))}: mean [min–max] of the probes of both forms."),
        _sweep_table(sweep),
        _crossover_sentences(sweep),
    ]
