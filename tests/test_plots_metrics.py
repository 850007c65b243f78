"""Plot rows, SVG charts and the two metrics files, from the default in-memory run."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from membench.core import metrics, plots, svg
from membench.core.results import ResultsTable
from membench.core.summary import combined_rows


@pytest.fixture(scope="module")
def table(default_run) -> ResultsTable:
    return ResultsTable(default_run.result)


@pytest.fixture(scope="module")
def ids(default_run) -> list[str]:
    return [p.id for p in default_run.policies]


def test_summary_is_the_comparison_table(table, ids):
    data = metrics.summary(table, ids)
    assert list(data) == ids
    for row in combined_rows(table, ids):
        m = data[row.policy]
        assert sorted(m) == sorted(metrics.SUMMARY_FIELDS)
        assert (m["current_only"], m["conflict"], m["stale_or_missing"], m["leaked"]) == \
            (row.current_only, row.conflict, row.stale_or_missing, row.leaked)
        assert round(m["tokens_literal"]) == row.mean_tokens[0]


def test_summary_stays_legible_for_exp_show(table, ids):
    flat = [f"{p}.{k}" for p, v in metrics.summary(table, ids).items() for k in v]
    assert len(flat) == 6 * len(ids)


def test_plot_rows_cover_every_policy_form_and_day(table, ids):
    points = plots.cost_quality(table, ids)
    assert len(points) == 2 * len(ids)
    profile = next(p for p in points if p["policy"] == "profile" and p["form"] == "literal")
    assert profile["current"] == 37
    bars = plots.outcome_bars(table, ids)
    assert len(bars) == 2 * len(ids) * 6
    assert sum(b["probes"] for b in bars) == len(table.rows)
    days = plots.by_day(table, ids)
    assert sum(d["probes"] for d in days) == len(table.rows)
    assert {d["day"] for d in days} == {10, 20, 30}


def test_svgs_are_well_formed_without_ids(table, ids):
    points = plots.cost_quality(table, ids)
    charts = [svg.cost_quality_svg(points, 40),
              svg.outcome_bars_svg(plots.outcome_bars(table, ids)),
              svg.by_day_svg(plots.by_day(table, ids))]
    for chart in charts:
        root = ET.fromstring(chart)
        assert root.tag.endswith("svg")
        assert " id=" not in chart
    ns = "{http://www.w3.org/2000/svg}"
    circles = ET.fromstring(charts[0]).findall(f"{ns}circle")
    assert len(circles) == len(ids)  # one filled circle per literal point


def test_svg_bytes_depend_only_on_the_rows(table, ids):
    bars = plots.outcome_bars(table, ids)
    assert svg.outcome_bars_svg(bars) == svg.outcome_bars_svg([dict(b) for b in bars])
    changed = [dict(b, probes=b["probes"] + 1) if i == 0 else b for i, b in enumerate(bars)]
    assert svg.outcome_bars_svg(changed) != svg.outcome_bars_svg(bars)


def test_log_axis_places_ten_times_the_tokens_one_decade_right():
    rows = [{"policy": "a", "form": "literal", "mean_injected_tokens": 10.0, "current": 1},
            {"policy": "b", "form": "literal", "mean_injected_tokens": 100.0, "current": 1},
            {"policy": "c", "form": "literal", "mean_injected_tokens": 1000.0, "current": 1}]
    ns = "{http://www.w3.org/2000/svg}"
    xs = [float(c.get("cx")) for c in
          ET.fromstring(svg.cost_quality_svg(rows, 4)).findall(f"{ns}circle")]
    assert xs[1] - xs[0] == pytest.approx(xs[2] - xs[1])
