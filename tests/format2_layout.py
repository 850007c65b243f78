"""A small self-check of the agreed format-2 layout (docs/importers.md), so the importers'
tests hold without the format-2 parser: every rule here is one the layout states."""

from __future__ import annotations

import datetime as dt
import re

TOP = {"format", "id", "title", "scoring", "source", "sessions", "facts", "probes"}
PROBE = {"id", "question", "form", "session", "expects", "evidence", "tags"}


def layout_problems(s: dict) -> list[str]:
    """Every way `s` breaks the layout; [] when it follows it."""
    problems = []
    if set(s) - TOP or {"format", "id", "scoring", "sessions", "facts", "probes"} - set(s):
        problems.append(f"top-level keys {sorted(s)}")
    if s.get("format") != 2 or s.get("scoring") not in ("value", "evidence"):
        problems.append("format must be 2 and scoring value or evidence")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", str(s.get("id", ""))):
        problems.append(f"scenario id {s.get('id')!r}")
    where: dict[str, tuple[int, int]] = {}  # turn id -> (session number, position)
    for n, session in enumerate(s["sessions"], start=1):
        if session.get("number") != n or set(session) - {"number", "date", "turns"}:
            problems.append(f"session {n}: {sorted(session)} number {session.get('number')}")
        if "date" in session:
            dt.datetime.fromisoformat(session["date"])  # raises when not ISO
        for turn in session.get("turns", []):
            if set(turn) != {"id", "speaker", "text"} or not all(
                    isinstance(v, str) and v for v in turn.values()):
                problems.append(f"turn {turn}")
            if turn["id"] in where:
                problems.append(f"turn id {turn['id']} repeated")
            where[turn["id"]] = (n, len(where))
    first_session: dict[str, int] = {}
    for fact in s["facts"]:
        key = fact["key"]
        if key in first_session:
            problems.append(f"fact key {key} repeated")
        last = -1
        for version in fact["versions"]:
            if set(version) != {"turns", "value", "answers"} or not version["turns"]:
                problems.append(f"fact {key}: version {version}")
            missing = [t for t in version["turns"] if t not in where]
            if missing:
                problems.append(f"fact {key}: turns {missing} do not exist")
                continue
            if not isinstance(version["value"], str) or not all(
                    isinstance(a, str) for a in version["answers"]):
                problems.append(f"fact {key}: value/answers not text")
            start = min(where[t][1] for t in version["turns"])
            if start <= last:
                problems.append(f"fact {key}: versions out of conversation order")
            last = max(where[t][1] for t in version["turns"])
        if fact["versions"] and all(t in where for t in fact["versions"][0]["turns"]):
            first_session[key] = max(where[t][0] for t in fact["versions"][0]["turns"])
        if set(fact) - {"key", "versions", "deletions"}:
            problems.append(f"fact {key}: keys {sorted(fact)}")
    ids = set()
    for probe in s["probes"]:
        pid = probe["id"]
        if pid in ids or set(probe) - PROBE:
            problems.append(f"probe {pid}: repeated or keys {sorted(probe)}")
        ids.add(pid)
        if not 1 <= probe["session"] <= len(s["sessions"]):
            problems.append(f"probe {pid}: session {probe['session']}")
        expects = probe["expects"]
        if expects == {"nothing": True}:
            pass
        elif set(expects) == {"fact"} and expects["fact"] in first_session:
            if probe["session"] < first_session[expects["fact"]]:
                problems.append(f"probe {pid}: asked before its fact is stated")
        else:
            problems.append(f"probe {pid}: expects {expects}")
        if any(t not in where for t in probe.get("evidence", [])):
            problems.append(f"probe {pid}: evidence names no turn")
        if not all(isinstance(k, str) and isinstance(v, str)
                   for k, v in probe.get("tags", {}).items()):
            problems.append(f"probe {pid}: tags")
    return problems


def imported(name: str, path) -> tuple[dict[str, dict], dict]:
    """The scenarios (by id) and manifest `membench import name path` would write."""
    from membench.importers.model import IMPORTERS
    from membench.importers.run import ImportRun
    from membench.io.import_files import READERS, file_sha256
    from membench.plugins import load_plugins

    load_plugins("importers")
    importer = IMPORTERS[name]
    run = ImportRun(name, importer, path.name, *file_sha256(path))
    scenarios = {s["id"]: s for _, s in run.scenarios(READERS[importer.reads](path))}
    for s in scenarios.values():
        assert layout_problems(s) == [], s["id"]
    return scenarios, run.manifest()
