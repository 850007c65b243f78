"""One import: converts the source items in file order and tallies the manifest (source
hash, counts, every dropped question with its reason). Pure: the items come in, the
scenarios go out; reading and writing are membench.io.import_files'."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from membench.importers.model import Converted, Importer, SourceItemError


class ImportRun:
    def __init__(self, name: str, importer: Importer, file_name: str, sha256: str,
                 size: int) -> None:
        self.name, self.importer = name, importer
        self.source = {"file": file_name, "sha256": sha256, "bytes": size}
        self.converted: list[Converted] = []  # without their scenarios, which can be large
        self.summaries: list[dict] = []
        self.owner: dict[str, str] = {}  # scenario id -> the item it came from

    def scenarios(self, items: Iterable[tuple[int, Any]]) -> Iterator[tuple[str, dict]]:
        """(file name, scenario) for each item that kept a question, in file order."""
        for index, item in items:
            converted = self.importer.convert(index, item)
            found = converted.scenario
            converted.scenario = None
            self.converted.append(converted)
            if found is None:
                continue
            sid = found["id"]
            if sid in self.owner:
                raise SourceItemError(f"items {self.owner[sid]} and {converted.item} both make "
                                      f"scenario {sid!r}")
            self.owner[sid] = converted.item
            found["source"]["file_sha256"] = self.source["sha256"]
            self.summaries.append(summary(found))
            yield f"{sid}.json", found

    def manifest(self) -> dict:
        dropped = [d for c in self.converted for d in c.dropped]
        kept = sum((Counter(s["probes_by_category"]) for s in self.summaries), Counter())
        return {
            "importer": self.name,
            "source": self.source,
            "counts": {
                "items": len(self.converted),
                "scenarios": len(self.summaries),
                "questions": sum(c.questions for c in self.converted),
                "probes": sum(s["probes"] for s in self.summaries),
                "dropped": len(dropped),
                "probes_by_category": dict(sorted(kept.items())),
                "dropped_by_category": dict(sorted(Counter(
                    d.category or "unknown" for d in dropped).items())),
                "sessions": sum(s["sessions"] for s in self.summaries),
                "turns": sum(s["turns"] for s in self.summaries),
                "facts": sum(s["facts"] for s in self.summaries),
                "changed_facts": sum(s["changed_facts"] for s in self.summaries),
            },
            "scenarios": self.summaries,
            "dropped": [d.as_dict() for d in dropped],
            "normalised": [n.as_dict() for c in self.converted for n in c.normalised],
            "notes": [note for c in self.converted for note in c.notes],
        }


def summary(scenario: dict) -> dict:
    """The manifest's line for one scenario."""
    by_category = Counter(p.get("tags", {}).get("category", "none") for p in scenario["probes"])
    return {
        "id": scenario["id"],
        "file": f"{scenario['id']}.json",
        "sessions": len(scenario["sessions"]),
        "turns": sum(len(s.get("turns", [])) for s in scenario["sessions"]),
        "facts": len(scenario["facts"]),
        "changed_facts": sum(len(f["versions"]) > 1 for f in scenario["facts"]),
        "probes": len(scenario["probes"]),
        "abstention_probes": sum("nothing" in p["expects"] for p in scenario["probes"]),
        "probes_by_category": dict(sorted(by_category.items())),
    }
