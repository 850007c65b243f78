"""Plot rows, SVG charts and the two metrics files, from the default in-memory run."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from html import escape
from pathlib import Path

import pytest
import yaml

from membench.reporting import charts as images
from membench.reporting import plots
from membench.scoring import metrics
from membench.scoring.results import ResultsTable
from membench.scoring.summary import combined_rows


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


def charts(table, ids) -> dict[str, list[dict]]:
    return {"cost_quality.json": plots.cost_quality(table, ids),
            "outcomes.json": plots.outcome_bars(table, ids),
            "by_day.json": plots.by_day(table, ids)}


def test_the_report_images_are_the_dvc_plots_templates(table, ids, repo_root):
    """Each SVG is its dvc.yaml template filled as `dvc plots show` fills it: every policy
    and the template's title appear, and a changed template changes the image."""
    for name, rows in charts(table, ids).items():
        _, template, _, _ = images.chart(name, repo_root / "dvc.yaml")
        chart = images.chart_svg(name, rows, repo_root / "dvc.yaml")
        root = ET.fromstring(chart)
        assert root.tag.endswith("svg") and " id=" not in chart
        title = json.loads(template.read_text())["title"]
        assert escape(title if isinstance(title, str) else title["text"]) in chart
        for policy in ids:
            assert policy in chart, (name, policy)
    path, template, x, y = images.chart("outcomes.json", repo_root / "dvc.yaml")
    spec = images.filled_spec(template, charts(table, ids)["outcomes.json"], path, x, y)
    spec["title"] = "Another title"
    assert "Another title" in images.render_svg(spec)


def test_cost_quality_reads_with_twenty_policies_and_an_honest_ceiling(repo_root):
    """Twenty-four policies: every one is an axis label (no colour per policy to reuse),
    the two forms have two distinct colours, and the axis stops at the live probes (37),
    not at a rounded 40."""
    rows = [{"policy": f"policy_{i:02}", "form": form, "point": f"policy_{i:02} ({form})",
             "mean_injected_tokens": 1000.0 * (i + 1), "current": i % 38, "live": 37}
            for i in range(24) for form in ("literal", "paraphrase")]
    chart = images.chart_svg("cost_quality.json", rows, repo_root / "dvc.yaml")
    labels = re.findall(r"<text[^>]*>([^<]*)</text>", chart)
    assert all(f"policy_{i:02}" in labels for i in range(24))
    points = re.findall(r'aria-roledescription="point"[^>]* fill="(#[0-9a-f]{6})"',
                        chart)
    assert len(points) >= 2 * 24 * 2 and set(points) == {"#1f77b4", "#e6550d"}
    ticks = [int(t) for t in labels if t.isdigit()]
    assert max(ticks) <= 37 and "40" not in labels


def test_plot_rows_state_the_live_ceiling(table, ids):
    for point in plots.cost_quality(table, ids):
        assert point["current"] <= point["live"] == table.n(point["policy"], point["form"],
                                                           deleted=False)


RENDER = """
import hashlib, json, sys
from membench.reporting import charts as images
rows = json.load(open(sys.argv[1]))
print(hashlib.sha256(images.chart_svg("outcomes.json", rows).encode()).hexdigest())
"""


def test_svg_bytes_depend_only_on_the_rows(table, ids, repo_root, tmp_path):
    """Twice in-process, then in a subprocess with one thread, another locale and time zone
    and a HOME without fonts: the same bytes. A font on the machine that shadows the pinned
    one is refused (images.PROBE_SHA256) rather than silently changing the images."""
    bars = plots.outcome_bars(table, ids)
    first = images.chart_svg("outcomes.json", bars, repo_root / "dvc.yaml")
    assert first == images.chart_svg("outcomes.json", [dict(b) for b in bars], repo_root / "dvc.yaml")
    changed = [dict(b, probes=b["probes"] + 1) if i == 0 else b for i, b in enumerate(bars)]
    assert images.chart_svg("outcomes.json", changed, repo_root / "dvc.yaml") != first
    data = tmp_path / "bars.json"
    data.write_text(json.dumps(bars))
    (tmp_path / "home").mkdir()
    env = {**os.environ, "HOME": str(tmp_path / "home"), "LC_ALL": "C", "LANG": "C",
           "TZ": "Pacific/Auckland", "RAYON_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", RENDER, str(data)], env=env, cwd=repo_root,
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == hashlib.sha256(first.encode()).hexdigest()


def test_the_report_shows_every_declared_chart(repo_root, tmp_path):
    """The report's images are dvc.yaml's `plots:` list, captioned by each template's title:
    a chart declared there reaches the report with no edit to the report stage."""
    shutil.copytree(repo_root / ".dvc/plots", tmp_path / "templates")
    (tmp_path / "templates/extra.json").write_text(json.dumps({"title": "An extra chart"}))
    pipeline = yaml.safe_load((repo_root / "dvc.yaml").read_text())
    for plot in pipeline["plots"]:
        props = next(iter(plot.values()))
        props["template"] = props["template"].replace(".dvc/plots", "templates")
    pipeline["plots"].append({"reports/plots/extra.json":
                              {"template": "templates/extra.json", "x": "a", "y": "b"}})
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump(pipeline))
    found = images.report_images(Path("reports/report.md"), tmp_path / "dvc.yaml",
                                 tmp_path / "templates")
    assert found == [("Cost versus quality", "plots/cost_quality.svg"),
                     ("Outcomes per policy and probe form", "plots/outcomes.svg"),
                     ("Outcomes per checkpoint day (both probe forms)", "plots/by_day.svg"),
                     ("Profile outcomes as extraction errs (noisy extractor; bands: min-max "
                      "over seeds; references flat)", "plots/extraction_sweep.svg"),
                     ("An extra chart", "plots/extra.svg")]
    with pytest.raises(images.ChartRenderError, match="not under"):
        images.report_images(Path("reports/report.md"), tmp_path / "dvc.yaml",
                             repo_root / ".dvc/plots")
