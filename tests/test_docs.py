"""The README and docs/ hold together: the README is a guide of at most 12 KB whose generated
tables live in docs/ only, every relative link and linked heading exists, every
source path they name exists, every Parquet file the pipeline writes (and every column of
its schema) is documented in docs/schemas.md; and the report opens with its glossary and
puts the findings before the big tables."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from membench.io import tables
from membench.reporting.report import GLOSSARY, ReportInputs, render_report
from membench.scoring.results import FORMS, OUTCOMES

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_PATH = re.compile(r"`((?:stages|tests|benchmarks|scripts|\.ci|\.github|docs)/[^`\s*{}<>]+)`")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)


def _pages(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def _anchors(page: Path) -> set[str]:
    """GitHub's heading ids: lowercase, punctuation other than `-` and `_` dropped, spaces
    to `-`."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE)}


def test_docs_exist_and_the_readme_links_each(repo_root):
    readme = (repo_root / "README.md").read_text(encoding="utf-8")
    docs = sorted((repo_root / "docs").glob("*.md"))
    assert {p.name for p in docs} >= {"design.md", "schemas.md", "memory-tool.md",
                                      "benchmarks.md", "reproducibility.md", "audit.md"}
    for page in docs:
        assert f"](docs/{page.name})" in readme, page.name


README_LIMIT = 12 * 1024  # bytes: a guide, not a measurement log
GENERATED_BLOCK = re.compile(r"<!-- ([\w-]+):begin -->")


def test_the_readme_is_a_guide_of_at_most_12_kb(repo_root):
    size = len((repo_root / "README.md").read_bytes())
    assert size <= README_LIMIT, f"README.md is {size:,} bytes; move detail to docs/"


def test_generated_tables_are_written_to_docs_only(repo_root):
    readme = (repo_root / "README.md").read_text(encoding="utf-8")
    assert not GENERATED_BLOCK.findall(readme)
    for block in ("scale-bench", "scale-users"):  # benchmarks/scale_bench.py --write
        holders = [p.name for p in _pages(repo_root)
                   if f"<!-- {block}:begin -->" in p.read_text(encoding="utf-8")]
        assert holders == ["benchmarks.md"], (block, holders)
    script = (repo_root / "benchmarks/scale_bench.py").read_text(encoding="utf-8")
    assert 'TABLES = ROOT / "docs" / "benchmarks.md"' in script


def test_the_readme_keeps_one_parameter_table_block(repo_root):
    readme = (repo_root / "README.md").read_text(encoding="utf-8")
    assert readme.count("<!-- params-table:start -->") == 1
    assert readme.count("<!-- params-table:end -->") == 1
    block = readme.split("<!-- params-table:start -->")[1].split("<!-- params-table:end -->")[0]
    assert "scenario.seed" in block
    assert readme.index("## Parameters") < readme.index("<!-- params-table:start -->")


def test_every_relative_link_resolves(repo_root):
    checked = 0
    for page in _pages(repo_root):
        for target in LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
            if re.match(r"[a-z]+:", target):
                continue  # an external URL
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            assert dest.exists(), f"{page.name}: {target}"
            if anchor:
                assert anchor in _anchors(dest), f"{page.name}: {target}"
            checked += 1
    assert checked > 20


def test_every_source_path_named_exists(repo_root):
    for page in _pages(repo_root):
        for path in CODE_PATH.findall(page.read_text(encoding="utf-8")):
            assert (repo_root / path).exists(), f"{page.name}: {path}"


def _pipeline_parquet(repo_root: Path, scenario) -> set[str]:
    outs = set()
    for stage in yaml.safe_load((repo_root / "dvc.yaml").read_text())["stages"].values():
        for out in stage.get("outs", []):
            outs.add(next(iter(out)) if isinstance(out, dict) else out)
    files = {o for o in outs if o.endswith(".parquet")}
    assert "data/scenario" in outs  # a directory output: its tables are named in tables.py
    # the scenario stage writes one `{name}.parquet` per table into that directory
    files |= {f"data/scenario/{name}.parquet" for name in tables.scenario_tables(scenario)}
    return files


def test_every_parquet_output_and_column_is_documented(repo_root, default_run):
    schemas = (repo_root / "docs/schemas.md").read_text(encoding="utf-8")
    files = _pipeline_parquet(repo_root, default_run.scenario)
    assert len(files) >= 11, files
    for name in files:
        assert f"`{name}`" in schemas, name
    declared = [v for k, v in vars(tables).items() if k.endswith("_SCHEMA")
                and isinstance(v, pa.Schema)]
    assert len(declared) >= 9
    for schema in declared:
        for field in schema:
            assert f"`{field.name}`" in schemas or f"| {field.name} |" in schemas, field.name


@pytest.fixture(scope="module")
def report(default_run) -> str:
    s = default_run.scenario
    manifest = {"sessions": s.sessions, "exchanges": len(s.exchanges), "facts": len(s.facts),
                "probe_days": list(s.probe_days), "seed": s.seed}
    return render_report(ReportInputs(
        header=[("Measured", "test")], manifest=manifest,
        labels={p.id: p.label for p in default_run.policies}, result=default_run.result,
        exchanges=s.exchanges, article={}, trace_fact="node_version"))


def test_the_glossary_defines_every_outcome_and_form_once():
    terms = [term for term, _ in GLOSSARY]
    assert len(terms) == len(set(terms))
    assert set(OUTCOMES) | set(FORMS) | {"stored", "recall@k"} <= set(terms)


def test_the_report_opens_with_the_glossary_then_the_findings(report):
    sections = re.findall(r"^## (.+)$", report, re.MULTILINE)
    assert sections[:3] == ["Glossary", "Findings", "Raw table"], sections
    for big in ("Comparison table (both probe forms)", "Beside the article's published numbers"):
        assert sections.index(big) > sections.index("Findings")
    glossary = report.split("## Glossary", 1)[1].split("## Findings", 1)[0]
    for term, _ in GLOSSARY:
        assert f"- **{term}**: " in glossary, term
