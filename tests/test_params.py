"""params.yaml: its values only there, read strictly through the schema into the same
settings the stages always received, every error one line naming the param, and the
README's table rendered from both."""

from __future__ import annotations

import copy
import dataclasses
from fractions import Fraction

import pytest
import yaml

from membench.extraction.params import SweepParams
from membench.extraction.settings import ConsolidationSettings, ExtractSettings, NoiseSettings
from membench.memory.policies import PolicySettings
from membench.params import (
    BackendParams,
    ParamsError,
    UsersParams,
    generate_settings,
    load_import_params,
    parse_import_params,
    parse_params,
)
from membench.params_table import END, START, render, with_table
from membench.scenario.generate import GenerateSettings

EXTRACTORS = {"perfect", "consolidating", "noisy"}


@pytest.fixture(scope="module")
def data(repo_root) -> dict:
    return yaml.safe_load((repo_root / "params.yaml").read_text())


def _parse(data: dict, **changes):
    """params.yaml with `section__key=value` changes (a value of ... drops the key)."""
    changed = copy.deepcopy(data)
    for dotted, value in changes.items():
        *path, key = dotted.split("__")
        table = changed
        for part in path:
            table = table[part]
        if value is ...:
            del table[key]
        else:
            table[key] = value
    return parse_params(changed, EXTRACTORS)


def test_params_yaml_gives_the_settings_the_stages_always_received(data):
    p = _parse(data)
    assert p.scenario.probe_days == (10, 20, 30) and p.scenario.shape().seed == 42
    assert p.policies == PolicySettings(20, 5, 3, 0.5)
    assert p.extraction == ExtractSettings(ConsolidationSettings("dense", 0.5, 0.45, 0.97),
                                           NoiseSettings(0, 0.1, 0.1, 0.1, 0.1))
    assert p.generate == GenerateSettings(20, (0, 1, 2, 3), Fraction(1, 10), 30, 1, 42)
    assert p.extraction_sweep == SweepParams((0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5),
                                             (1, 2, 3, 4, 5))
    assert p.users == UsersParams(True) and p.backends.stores[0] == "profile"
    assert p.measured == "2026-12-02" and p.scenario.corpus.exclude[0] == "site-packages/*"
    assert all(type(r) is float for r in p.extraction_sweep.rates)  # 0 in YAML is 0.0
    assert _parse(data, scenario__probe_days=[30, 10]).scenario.probe_days == (10, 30)


@pytest.mark.parametrize("overlay", ["data/many-users.params.yaml",
                                     "data/scale-users.params.yaml"])
def test_each_overlay_over_params_yaml_is_valid(data, repo_root, overlay):
    """Merged as benchmarks/scale_bench.py merges them: section by section."""
    merged = copy.deepcopy(data)
    for section, keys in yaml.safe_load((repo_root / overlay).read_text()).items():
        merged[section].update(keys)
    p = parse_params(merged, EXTRACTORS)
    assert p.generate.users == 100
    # another story: the committed model responses are the default story's, so every
    # stage that would ask the model is off (a request the cache lacks stops its stage)
    assert p.reader.policies == () and not p.llm_extractor.run and p.systems.names == ()


@pytest.mark.parametrize("settings", [PolicySettings, ConsolidationSettings, NoiseSettings,
                                      ExtractSettings, GenerateSettings, SweepParams,
                                      BackendParams, UsersParams])
def test_no_param_has_a_default_in_code(settings):
    """The values live in params.yaml alone: no settings field falls back on its own."""
    assert all(f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
               for f in dataclasses.fields(settings))


def _leaves(table: dict, prefix: str = ""):
    for key, value in table.items():
        if isinstance(value, dict):
            yield from _leaves(value, f"{prefix}{key}__")
        yield f"{prefix}{key}"


def test_every_key_the_pipeline_reads_must_be_in_the_file(data):
    for dotted in _leaves(data):
        *table, key = dotted.split("__")
        where = ".".join(table) or "params"
        with pytest.raises(ParamsError) as caught:
            _parse(data, **{dotted: ...})
        assert str(caught.value) == f"{where}: missing key(s) {dotted.replace('__', '.')}"


@pytest.mark.parametrize("changes,message", [
    ({"scenario__sessions": 0}, "scenario.sessions: must be at least 1, got 0"),
    ({"scenario__sessions": "30"}, "scenario.sessions: expected a whole number, got '30'"),
    ({"scenario__seed": True}, "scenario.seed: expected a whole number, got True"),
    ({"scenario__seed": 4.0}, "scenario.seed: expected a whole number, got 4.0"),
    ({"scenario__sede": 4, "scenario__zed": 1},
     "scenario: unknown key(s) scenario.sede, scenario.zed"),
    ({"colour": "red"}, "params: unknown key(s) colour"),
    ({"scenario__probe_days": [10, 20, 31]},
     "scenario.probe_days: day(s) [31] past the last session (scenario.sessions = 30)"),
    ({"scenario__probe_days": [10, 10]}, "scenario.probe_days: repeated day in [10, 10]"),
    ({"scenario__probe_days": [0, 10]}, "scenario.probe_days[0]: must be at least 1, got 0"),
    ({"scenario__probe_days": []}, "scenario.probe_days: expected a non-empty list"),
    ({"scenario__corpus": "stdlib"}, "scenario.corpus: expected a mapping, got str"),
    ({"extract__extractor": "gpt"},
     "extract.extractor: unknown extractor 'gpt'; known: consolidating, noisy, perfect"),
    ({"extract__extractor": "llm"},
     "extract.extractor: the LLM extractor is measured by the extraction stage "
     "(llm_extractor), beside the policies' extractor, which is one of consolidating, noisy, "
     "perfect (docs/model.md#the-llm-extractor)"),
    ({"extract__consolidation__similarity": "cosine"},
     "extract.consolidation.similarity: expected one of dense, lexical, both, got 'cosine'"),
    ({"extract__noise__missed_facts": 1.5},
     "extract.noise.missed_facts: must be at most 1, got 1.5"),
    ({"extract__noise__missed_facts": True},
     "extract.noise.missed_facts: expected a number, got True"),
    ({"extraction_sweep__rates": [0.3, 0.1]},
     "extraction_sweep.rates: expected increasing rates, got [0.3, 0.1]"),
    ({"policies__same_topic_threshold": -1},
     "policies.same_topic_threshold: must be at least 0, got -1"),
    ({"report__measured": "yesterday"},
     "report.measured: expected a date YYYY-MM-DD, got 'yesterday'"),
    ({"multiseed__seeds": [1, 1]}, "multiseed.seeds: repeated seed in [1, 1]"),
    ({"embedding__model": ""}, "embedding.model: expected non-empty text, got ''"),
    ({"backends__names": ["sqlite", "sqlite"]},
     "backends.names: repeated name in ['sqlite', 'sqlite']"),
    ({"users__dense": "yes"}, "users.dense: expected true or false, got 'yes'"),
    ({"generate__deleted_share": 2}, "generate.deleted_share: must be at most 1, got 2"),
])
def test_a_bad_value_is_one_line_naming_the_param(data, changes, message):
    with pytest.raises(ParamsError) as caught:
        _parse(data, **changes)
    assert str(caught.value) == message


def test_a_file_that_is_not_a_mapping_is_named():
    with pytest.raises(ParamsError, match="^params: expected a mapping, got NoneType$"):
        parse_params(None, EXTRACTORS)


def test_an_unquoted_date_is_read_as_its_iso_text(data):
    import datetime as dt

    assert _parse(data, report__measured=dt.date(2027, 1, 5)).measured == "2027-01-05"


def test_the_generate_section_alone_keeps_the_share_as_written():
    section = {"facts": 5, "changes": [0, 2], "deleted_share": 0.1, "sessions": 30,
               "users": 2, "seed": 1}
    assert generate_settings(section).deleted_share == Fraction(1, 10)  # not 0.1's binary
    with pytest.raises(ParamsError, match=r"^generate\.changes\[0\]: must be at least 0"):
        generate_settings({**section, "changes": [-1]})


def test_the_import_params_are_read_by_the_same_rules(repo_root):
    chosen = load_import_params(repo_root / "imports/params.yaml", {"locomo", "letta"})
    assert chosen.format == "locomo" and chosen.source.endswith(".json")
    for data, message in [
        ({"import": {"format": "locomo", "sorce": "x"}},
         "import: unknown key(s) import.sorce"),
        ({"import": {"format": "locomo"}}, "import: missing key(s) import.source"),
        ({"import": {"format": "dolly", "source": "x"}},
         "import.format: unknown format 'dolly'; known: letta, locomo"),
    ]:
        with pytest.raises(ParamsError) as caught:
            parse_import_params(data, {"locomo", "letta"})
        assert str(caught.value) == message


def test_the_readme_table_is_rendered_from_the_schema_and_params_yaml(repo_root, data):
    """If this fails, run `python scripts/params_table.py` (it rewrites the block)."""
    readme = (repo_root / "README.md").read_text()
    assert with_table(readme, render(data)) == readme
    table = render(data)
    assert all(f"`{section}." in table for section in data)  # every section has its rows
    assert "| `scenario.sessions` | 30 | days in the relationship |" in table


def test_the_table_block_must_be_marked_once():
    with pytest.raises(ValueError, match="params-table"):
        with_table(f"{START}\n{END}\n{START}\n{END}\n", "x")
    assert with_table(f"a\n{START}\nold\n{END}\nb", "new") == f"a\n{START}\nnew\n{END}\nb"
