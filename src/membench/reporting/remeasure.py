"""The yearly re-measurement's logic, free of I/O: is one due, the params edit that dates
it, and the Markdown summary of what changed against the committed baseline."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass

INTERVAL_MONTHS = 12
# The date line inside params.yaml's `report:` block; the edit keeps quotes and comments.
_MEASURED = re.compile(r'^(report:\n(?:[ \t]+.*\n|[ \t]*#.*\n|\n)*?[ \t]+measured:[ \t]*)'
                       r'(["\']?)(\d{4}-\d{2}-\d{2})\2', re.MULTILINE)


def add_months(day: dt.date, months: int) -> dt.date:
    """The same day `months` later, clamped to the month's end (29 Feb -> 28 Feb)."""
    index = day.month - 1 + months
    year, month = day.year + index // 12, index % 12 + 1
    for last in (31, 30, 29, 28):
        try:
            return dt.date(year, month, min(day.day, last))
        except ValueError:
            continue
    raise AssertionError("unreachable")


def due_date(measured: dt.date) -> dt.date:
    return add_months(measured, INTERVAL_MONTHS)


def is_due(measured: dt.date, today: dt.date) -> bool:
    """A measurement is due when the last one is 12 months old or more."""
    return today >= due_date(measured)


def set_measured(params_text: str, day: dt.date) -> str:
    """params.yaml with report.measured set to `day`, every other byte unchanged."""
    found = list(_MEASURED.finditer(params_text))
    if len(found) != 1:
        raise ValueError("params.yaml: cannot find one `measured: YYYY-MM-DD` line under "
                         "`report:`")
    m = found[0]
    return (params_text[:m.start()] + m.group(1) + m.group(2) + day.isoformat() + m.group(2)
            + params_text[m.end():])


def flatten(data: object, prefix: str = "") -> dict[str, float]:
    """Numbers in nested JSON as dotted names, the way `dvc metrics show` names them."""
    if isinstance(data, Mapping):
        out: dict[str, float] = {}
        for key, value in data.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(data, list):
        out = {}
        for i, value in enumerate(data):
            out.update(flatten(value, f"{prefix}.{i}" if prefix else str(i)))
        return out
    if isinstance(data, bool) or not isinstance(data, int | float):
        return {}
    return {prefix: data}


@dataclass(frozen=True)
class Change:
    name: str
    old: object  # None when the metric is new
    new: object  # None when the metric is gone


def metric_changes(old: Mapping[str, float], new: Mapping[str, float]) -> list[Change]:
    return [Change(name, old.get(name), new.get(name))
            for name in sorted(set(old) | set(new)) if old.get(name) != new.get(name)]


def header_fields(report_markdown: str) -> dict[str, str]:
    """The report's environment block (```-fenced `Label: value` lines) as a dict."""
    block = re.search(r"^```\n(.*?)\n```", report_markdown, re.MULTILINE | re.DOTALL)
    fields: dict[str, str] = {}
    for line in block.group(1).splitlines() if block else ():
        label, sep, value = line.partition(":")
        if sep:
            fields[label.strip()] = value.strip()
    return fields


def _packages(value: str) -> dict[str, str]:
    return dict(item.strip().partition(" ")[::2] for item in value.split(",") if item.strip())


def environment_changes(old: Mapping[str, str], new: Mapping[str, str]) -> list[Change]:
    """Header fields that differ (the date excepted), packages one by one."""
    changes = []
    for label in dict.fromkeys([*old, *new]):
        if label == "Measured" or old.get(label) == new.get(label):
            continue
        if label == "Packages":
            before, after = _packages(old.get(label, "")), _packages(new.get(label, ""))
            changes += [Change(f"package {name}", before.get(name), after.get(name))
                        for name in dict.fromkeys([*before, *after])
                        if before.get(name) != after.get(name)]
        else:
            changes.append(Change(label, old.get(label), new.get(label)))
    return changes


def _cell(value: object) -> str:
    return "—" if value is None else str(value).replace("|", "\\|")


def _delta(change: Change) -> str:
    if not isinstance(change.old, int | float) or not isinstance(change.new, int | float):
        return "—"
    delta = round(change.new - change.old, 6)
    return f"{'+' if delta > 0 else ''}{delta:g}"


def render_summary(old_date: str, new_date: str, metrics: list[Change],
                   environment: list[Change], machine: Mapping[str, str]) -> str:
    """`environment` compares the committed report headers; `machine` describes the rerun's
    host, which the committed report does not record (results must not depend on it)."""
    lines = [f"# Re-measurement {new_date}", "",
             (f"Reran the whole pipeline (`dvc repro --force --no-run-cache`) and compared it "
             f"with the committed measurement of {old_date}."), "", "## Metrics", ""]
    if metrics:
        lines += [f"{len(metrics)} metric(s) changed.", "",
                  "| Metric | Old | New | Delta |", "|---|---:|---:|---:|"]
        lines += [f"| `{c.name}` | {_cell(c.old)} | {_cell(c.new)} | {_delta(c)} |"
                  for c in metrics]
    else:
        lines.append("No metric changed.")
    lines += ["", "## Environment", ""]
    if environment:
        lines += ["| What | Old | New |", "|---|---|---|"]
        lines += [f"| {c.name} | {_cell(c.old)} | {_cell(c.new)} |" for c in environment]
    else:
        lines.append("No change in packages, tokenizer, corpus, scenario, embeddings or "
                     "extractor.")
    lines += ["", "Rerun on:", ""] + [f"- {label}: {value}" for label, value in machine.items()]
    return "\n".join(lines) + "\n"


def tracked_results(pipeline: Mapping) -> tuple[list[str], str]:
    """The result files a re-measurement compares, read from the pipeline (dvc.yaml) so the
    paths are declared once: every JSON output kept in git (`cache: false`) or declared as
    a metric, and the one Markdown report."""
    json_files: list[str] = []
    reports: list[str] = []
    for stage in pipeline.get("stages", {}).values():
        for entry in [*stage.get("outs", []), *stage.get("metrics", [])]:
            path, options = next(iter(entry.items())) if isinstance(entry, dict) else (entry, {})
            if path.endswith(".json") and options.get("cache", True) is False:
                json_files.append(path)
            elif path.endswith(".md"):
                reports.append(path)
    if len(reports) != 1:
        raise ValueError(f"the pipeline must declare one Markdown report output, found {reports}")
    return sorted(json_files), reports[0]
