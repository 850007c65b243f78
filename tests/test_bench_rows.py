"""The rows that follow from the fact timeline alone must match the article exactly, and
`membench bench` prints every outcome a run has, so its rows add up to their probes."""

import re
from collections import Counter

import pytest
import yaml
from typer.testing import CliRunner

from membench.cli import app
from membench.commands import bench as bench_command
from membench.commands.bench import bench_table, outcome_groups
from membench.scoring.results import ResultsTable
from membench.scoring.summary import raw_table

FORMS = ("literal", "paraphrase")


def counts(run, policy, form):
    ids = [p.id for p in run.policies]
    return next(s.counts for s in ResultsTable(run.result).summaries(ids) if s.policy == policy and s.form == form)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("policy", ["full_transcript", "fact_log"])
def test_keep_everything_rows(default_run, policy, form):
    c = counts(default_run, policy, form)
    assert (c["current"], c["conflict"], c["stale"], c["missing"]) == (25, 12, 0, 0)
    assert (c["leaked"], c["clean"]) == (3, 0)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("policy", ["profile", "profile_bm25_unextracted"])
def test_single_store_rows(default_run, policy, form):
    c = counts(default_run, policy, form)
    assert (c["current"], c["conflict"], c["stale"], c["missing"]) == (37, 0, 0, 0)
    assert (c["leaked"], c["clean"]) == (0, 3)


@pytest.mark.parametrize("form", FORMS)
def test_session_buffer_row(default_run, form):
    c = counts(default_run, "session_buffer", form)
    assert (c["current"], c["missing"], c["leaked"]) == (1, 36, 0)


def test_probe_counts(default_run):
    scenario = default_run.scenario
    assert len(scenario.exchanges) == 360
    literal = [p for p in scenario.probes if p.form.value == "literal"]
    assert len(literal) == 40
    rows = [r for r in default_run.result.outcomes
            if r.policy == "profile" and r.form == "literal"]
    assert sum(r.deleted for r in rows) == 3
    assert sum(r.changed and not r.deleted for r in rows) == 12


def test_redaction_stops_leaks_but_not_conflicts(default_run):
    for form in FORMS:
        plain = counts(default_run, "profile_bm25", form)
        redacted = counts(default_run, "profile_bm25_redacted", form)
        assert redacted["leaked"] == 0
        assert redacted["conflict"] == plain["conflict"]


VIEW_HEADER = re.compile(r"Here's the content of /memories/\S+ with line numbers:")
VIEW_LINE = re.compile(r" +\d+\t(.*)")


def _stored_lines(text: str) -> list[str]:
    """The context cut into stored lines, each starting at a line that opens with `[day `;
    a line that does not, after the start, is the continuation of the one before (an
    exchange's code reply spans lines). Text before the first dated line is kept alone,
    so it can never pass as a stored line."""
    stored: list[str] = []
    for line in text.split("\n"):
        if line.startswith("[day ") or not stored:
            stored.append(line)
        else:
            stored[-1] += "\n" + line
    return stored


def test_every_stored_line_carries_its_day(default_run):
    """Every line of every context is part of an exchange or record the bench stored,
    prefixed with that exchange's or record's own day: an undated or misdated line anywhere
    fails, not only at the start."""
    days = {e.line(): e.day for e in default_run.scenario.exchanges}
    days.update((r.line(), r.day) for r in default_run.records)
    checked = 0
    for row in default_run.result.outcomes:
        if row.context == "":
            continue
        if row.policy == "memory_tool_profile":  # `view` output: headers, numbered file lines
            lines = []
            for line in row.context.split("\n"):
                if VIEW_HEADER.fullmatch(line):
                    continue
                numbered = VIEW_LINE.fullmatch(line)
                assert numbered, (row.policy, line)
                if numbered.group(1):
                    lines.append(numbered.group(1))
        else:
            lines = _stored_lines(row.context)
        for line in lines:
            assert line in days, (row.policy, row.day, line[:200])
            assert line.startswith(f"[day {days[line]}] "), (row.policy, line[:200])
            checked += 1
    assert checked > 10_000


def test_recall_of_gold_evidence(default_run):
    rows = [r for r in default_run.result.outcomes if r.gold_retrieved is not None]
    ids = [p.id for p in default_run.policies]
    retrieving = [p.id for p in default_run.policies if p.searches]
    assert retrieving and ResultsTable(default_run.result).retrieval_policies(ids) == retrieving
    assert {r.policy for r in rows} == set(retrieving)
    for row in rows:  # retrieving the statement brings the current value with it
        if row.gold_retrieved and not row.policy.startswith("profile"):
            assert row.outcome in ("current", "conflict")
    node = next(r for r in rows if r.policy == "bm25_transcript" and r.form == "literal"
                and r.day == 30 and r.fact_key == "node_version")
    assert node.gold_retrieved is False and node.outcome == "stale"
    assert not any(r.gold_retrieved for r in rows if r.policy == "profile_bm25_unextracted")
    assert all(r.gold_retrieved is None for r in default_run.result.outcomes if r.deleted)


# `membench bench` prints every outcome column the run has ----------------------------------

def _printed_rows(output: str) -> tuple[list[str], list[tuple[str, dict[str, int]]]]:
    """The outcome columns of `membench bench`'s table and, per line, the form and counts."""
    lines = output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("policy "))
    at = lines[header].index("probe")
    columns = [c for c in lines[header][at:].split()[1:] if c != "|"]
    columns = columns[:columns.index("mean")]
    rows = []
    for line in lines[header + 1:]:
        form, *cells = [c for c in line[at:].split() if c != "|"]
        rows.append((form, dict(zip(columns, map(int, cells)))))
    return columns, rows


def test_bench_table_is_the_report_raw_table_on_the_default_story(default_run):
    table = ResultsTable(default_run.result)
    labels = {p.id: p.label for p in default_run.policies}
    last = max(default_run.scenario.probe_days)
    assert (bench_table(default_run.result.outcomes, table, labels, last)
            == raw_table(table, labels, last))


def test_bench_on_a_format2_story_prints_every_outcome_and_rows_add_up(repo_root, tmp_path,
                                                                       monkeypatch):
    params = yaml.safe_load((repo_root / "params.yaml").read_text())
    params["scenario"]["file"] = "tests/fixtures/format2/story.json"
    overlay = tmp_path / "params.yaml"
    overlay.write_text(yaml.safe_dump(params))
    monkeypatch.chdir(repo_root)
    runs, run_in_memory = [], bench_command.run_in_memory

    def kept(*args, **kwargs):  # the run the command printed, kept to count its probes
        runs.append(run_in_memory(*args, **kwargs))
        return runs[-1]

    monkeypatch.setattr(bench_command, "run_in_memory", kept)
    done = CliRunner().invoke(app, ["bench", "--params", str(overlay), "-q"])
    assert done.exit_code == 0, done.output
    columns, rows = _printed_rows(done.output)
    # the article's six, in order, with partial among the live outcomes and the abstention
    # probes' two after the deleted facts'
    assert columns == ["current", "conflict", "stale", "partial", "missing", "leaked", "clean",
                       "premise", "no_premise"]
    probes = Counter((r.policy, r.form) for r in runs[0].result.outcomes)
    expected = [probes[(p.id, form)] for p in runs[0].policies
                for form in ("literal", "paraphrase", "adversarial")]
    assert len(rows) == len(expected) and {form for form, _ in rows} == {
        "literal", "paraphrase", "adversarial"}
    assert [sum(counts.values()) for _, counts in rows] == expected
    assert sum(counts["partial"] for _, counts in rows) >= 1
    assert sum(counts["premise"] + counts["no_premise"] for _, counts in rows) >= 1


def test_outcomes_not_known_to_bench_come_last_sorted():
    assert outcome_groups(set()) == [("current", "conflict", "stale", "missing"),
                                     ("leaked", "clean")]
    assert outcome_groups({"current", "zeta", "alpha", "premise"}) == [
        ("current", "conflict", "stale", "missing"), ("leaked", "clean"), ("premise",),
        ("alpha", "zeta")]
