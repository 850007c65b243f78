"""DVC details around the pipeline: docs/sweeps.md's `dvc exp show --keep` example keeps the
columns it names, generated files stay out of git, and the plot templates tell revisions
apart in `dvc plots diff`."""

from __future__ import annotations

import inspect
import json
import re
import subprocess

import yaml

from membench.commands.remeasure import remeasure


def keep_pattern(readme: str) -> re.Pattern:
    found = re.search(r"dvc exp show [^\n]*--keep '([^']+)'", readme)
    assert found, "docs/sweeps.md shows a `dvc exp show --keep` example"
    return re.compile(found.group(1))


def test_sweeps_exp_show_keeps_seed_top_k_and_the_named_metrics(repo_root):
    # DVC joins --keep patterns and applies re.match (anchored at the start) to each column
    # name, e.g. `scenario.seed`: a bare `seed` keeps nothing (dvc/commands/experiments/show.py).
    keep = keep_pattern((repo_root / "docs/sweeps.md").read_text())
    for column in ("Experiment", "scenario.seed", "policies.retrieval_top_k",
                   "policies.hybrid_top_k", "bm25_transcript.current_only"):
        assert keep.match(column), column
    for column in ("multiseed.seeds", "bm25_fact_log.current_only", "reports/multiseed.json"):
        assert not keep.match(column), column


def test_the_old_keep_pattern_fails_that_check():
    old = re.compile("Experiment|seed|top_k|bm25_transcript")
    assert not old.match("scenario.seed") and not old.match("policies.retrieval_top_k")


def test_generated_files_are_ignored_by_git(repo_root):
    summary = inspect.signature(remeasure).parameters["summary"].default
    paths = ["dvc_plots/index.html", str(summary)]
    done = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=repo_root,
                          capture_output=True, text=True, check=False)
    assert done.stdout.split() == paths, done.stdout + done.stderr


def rev_channels(node) -> set[str]:
    """Every encoding or facet channel of a Vega-Lite spec whose field is `rev`."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, dict) and value.get("field") == "rev":
                found.add(key)
            found |= rev_channels(value)
    elif isinstance(node, list):
        for item in node:
            found |= rev_channels(item)
    return found


def test_every_plot_template_separates_revisions(repo_root):
    plots = yaml.safe_load((repo_root / "dvc.yaml").read_text())["plots"]
    templates = [next(iter(plot.values()))["template"] for plot in plots]
    assert len(templates) == 4
    for path in templates:
        spec = json.loads((repo_root / path).read_text())
        assert spec["data"] == {"values": "<DVC_METRIC_DATA>"}, path
        channels = rev_channels(spec)
        # Bars side by side within their band (xOffset/yOffset), or points by shape, so
        # `dvc plots diff main <exp>` neither stacks two revisions into one bar nor hides one.
        assert channels & {"xOffset", "yOffset", "shape", "column", "row"}, (path, channels)
        if "opacity" in channels:
            # One revision (`dvc plots show`) must draw at full opacity: an ordinal scale maps
            # a single value to the first of the range (a point scale would pick the middle).
            opacity = rev_channels_spec(spec, "opacity")
            assert opacity["scale"]["type"] == "ordinal" and opacity["scale"]["range"][0] == 1


def rev_channels_spec(node, channel: str) -> dict:
    if isinstance(node, dict):
        if isinstance(node.get(channel), dict) and node[channel].get("field") == "rev":
            return node[channel]
        for value in node.values():
            found = rev_channels_spec(value, channel)
            if found:
                return found
    elif isinstance(node, list):
        for item in node:
            found = rev_channels_spec(item, channel)
            if found:
                return found
    return {}


def test_dvc_fills_each_template_with_two_revisions(repo_root):
    """What `dvc plots diff main <exp>` hands to Vega-Lite: DVC's own renderer fills each
    template with rows tagged by `rev`; the spec keeps both revisions and encodes them."""
    from dvc_render.vega import VegaRenderer

    for plot in yaml.safe_load((repo_root / "dvc.yaml").read_text())["plots"]:
        (path, props), = plot.items()
        rows = json.loads((repo_root / path).read_text())
        datapoints = [{**row, "rev": rev, "filename": path, "field": props["y"]}
                      for rev in ("main", "exp-a") for row in rows]
        renderer = VegaRenderer(datapoints, path, template=str(repo_root / props["template"]),
                                x=props["x"], y=props["y"])
        spec = renderer.get_filled_template()
        assert {row["rev"] for row in spec["data"]["values"]} == {"main", "exp-a"}, path
        assert rev_channels(spec) & {"xOffset", "yOffset", "shape"}, path
