"""params.yaml, validated strictly: an unknown, misspelt or out-of-range key stops the run
with a message naming it, before any stage writes anything."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml

from membench.extraction.params import (
    SweepParams,
    fraction_param,
    parse_extract_settings,
    parse_sweep,
)
from membench.extraction.settings import ExtractSettings
from membench.memory.policies import PolicySettings
from membench.scenario.build import ScenarioShape
from membench.scenario.generate import GenerateSettings
from membench.validation import check_keys


class ParamsError(ValueError):
    """params.yaml is unreadable or holds an invalid value; the message names the param."""


@dataclass(frozen=True)
class CorpusParams:
    source: str  # a .tar.gz snapshot, a directory, or "stdlib"
    glob: str
    exclude: tuple[str, ...]


@dataclass(frozen=True)
class ScenarioParams:
    file: str
    seed: int
    sessions: int
    exchanges_per_session: int
    probe_days: tuple[int, ...]
    lines_per_reply: int
    corpus: CorpusParams

    def shape(self) -> ScenarioShape:
        return ScenarioShape(self.seed, self.sessions, self.exchanges_per_session,
                             self.probe_days, self.lines_per_reply)


@dataclass(frozen=True)
class MultiseedParams:
    seeds: tuple[int, ...]  # the multi-seed stage's seeds, in report order
    workers: int  # processes that run seeds side by side


@dataclass(frozen=True)
class EmbeddingParams:
    model: str  # model id; its weights must ship in an installed package (offline)
    batch_size: int


@dataclass(frozen=True)
class BackendParams:
    """The backends stage: which real stores (membench.backends) and which memory
    stores to replay into each."""

    names: tuple[str, ...] = ("sqlite", "sqlite_vec", "langgraph_memory", "langgraph_sqlite",
                              "langgraph_postgres", "lancedb", "postgres")
    stores: tuple[str, ...] = ("profile", "fact_log", "transcript", "transcript_redacted")


@dataclass(frozen=True)
class UsersParams:
    """The users stage (many users in one deployment, docs/generate.md)."""

    dense: bool = True  # also the dense policies: every user's texts get embedded


@dataclass(frozen=True)
class Params:
    scenario: ScenarioParams
    extractor: str
    policies: PolicySettings
    measured: str  # ISO date of the measurement, an input so reruns stay byte-identical
    multiseed: MultiseedParams
    embedding: EmbeddingParams
    generate: GenerateSettings | None = None  # the optional `generate:` section
    extraction: ExtractSettings = field(default_factory=ExtractSettings)  # consolidation, noise
    extraction_sweep: SweepParams = field(default_factory=SweepParams)
    backends: BackendParams = BackendParams()
    users: UsersParams = UsersParams()  # the optional `users:` section


def _table(name: str, value: Any, keys: set[str]) -> dict:
    return check_keys(name, value, keys, set(), ParamsError)


def _int(name: str, value: Any, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ParamsError(f"{name}: expected a whole number, got {value!r}")
    if value < minimum:
        raise ParamsError(f"{name}: must be at least {minimum}, got {value}")
    return value


def _str(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ParamsError(f"{name}: expected non-empty text, got {value!r}")
    return value


DEFAULT_SWEEP = {"rates": list(SweepParams.rates), "seeds": list(SweepParams.seeds)}


def parse_params(data: Any, known_extractors: set[str]) -> Params:
    top = check_keys("params", data, {"scenario", "extract", "policies", "report",
                                      "multiseed", "embedding"},
                   {"generate", "extraction_sweep", "backends", "users"}, ParamsError)
    s = _table("scenario", top["scenario"], {"file", "seed", "sessions", "exchanges_per_session",
                                             "probe_days", "lines_per_reply", "corpus"})
    c = _table("scenario.corpus", s["corpus"], {"source", "glob", "exclude"})
    sessions = _int("scenario.sessions", s["sessions"], 1)
    days = s["probe_days"]
    if not isinstance(days, list) or not days:
        raise ParamsError("scenario.probe_days: expected a non-empty list of days")
    probe_days = tuple(_int("scenario.probe_days", d, 1) for d in days)
    late = [d for d in probe_days if d > sessions]
    if late:
        raise ParamsError(
            f"scenario.probe_days: day(s) {late} past the last session "
            f"(scenario.sessions = {sessions})"
        )
    if len(set(probe_days)) != len(probe_days):
        raise ParamsError(f"scenario.probe_days: repeated day in {list(probe_days)}")
    exclude = c["exclude"]
    if not isinstance(exclude, list) or not all(isinstance(p, str) for p in exclude):
        raise ParamsError("scenario.corpus.exclude: expected a list of glob patterns")
    scenario = ScenarioParams(
        file=_str("scenario.file", s["file"]),
        seed=_int("scenario.seed", s["seed"], 0),
        sessions=sessions,
        exchanges_per_session=_int("scenario.exchanges_per_session",
                                   s["exchanges_per_session"], 1),
        probe_days=tuple(sorted(probe_days)),
        lines_per_reply=_int("scenario.lines_per_reply", s["lines_per_reply"], 1),
        corpus=CorpusParams(_str("scenario.corpus.source", c["source"]),
                            _str("scenario.corpus.glob", c["glob"]), tuple(exclude)),
    )
    e = check_keys("extract", top["extract"], {"extractor"}, {"consolidation", "noise"},
                   ParamsError)
    extractor = _str("extract.extractor", e["extractor"])
    if extractor not in known_extractors:
        raise ParamsError(
            f"extract.extractor: unknown extractor {extractor!r}; "
            f"known: {', '.join(sorted(known_extractors))}"
        )
    p = check_keys("policies", top["policies"], {"window_exchanges", "retrieval_top_k",
                                                 "hybrid_top_k"}, {"same_topic_threshold"},
                   ParamsError)
    policies = PolicySettings(
        window_exchanges=_int("policies.window_exchanges", p["window_exchanges"], 1),
        retrieval_top_k=_int("policies.retrieval_top_k", p["retrieval_top_k"], 1),
        hybrid_top_k=_int("policies.hybrid_top_k", p["hybrid_top_k"], 1),
        same_topic_threshold=fraction_param("policies.same_topic_threshold",
                                            p.get("same_topic_threshold", 0.5), ParamsError),
    )
    r = _table("report", top["report"], {"measured"})
    measured = r["measured"]
    if isinstance(measured, dt.date):
        measured = measured.isoformat()
    try:
        dt.date.fromisoformat(_str("report.measured", measured))
    except ValueError:
        raise ParamsError(f"report.measured: expected a date YYYY-MM-DD, got {measured!r}") from None
    return Params(scenario, extractor, policies, measured, _multiseed(top["multiseed"]),
                  _embedding(top["embedding"]),
                  generate_settings(top["generate"]) if "generate" in top else None,
                  parse_extract_settings(e, ParamsError),
                  parse_sweep(top.get("extraction_sweep", DEFAULT_SWEEP), ParamsError),
                  _backends(top.get("backends", {})),
                  _users(top["users"]) if "users" in top else UsersParams())


def _users(value: Any) -> UsersParams:
    u = _table("users", value, {"dense"})
    if not isinstance(u["dense"], bool):
        raise ParamsError(f"users.dense: expected true or false, got {u['dense']!r}")
    return UsersParams(dense=u["dense"])


def _embedding(value: Any) -> EmbeddingParams:
    e = _table("embedding", value, {"model", "batch_size"})
    return EmbeddingParams(_str("embedding.model", e["model"]),
                           _int("embedding.batch_size", e["batch_size"], 1))


def _multiseed(value: Any) -> MultiseedParams:
    m = _table("multiseed", value, {"seeds", "workers"})
    seeds = m["seeds"]
    if not isinstance(seeds, list) or not seeds:
        raise ParamsError("multiseed.seeds: expected a non-empty list of seeds")
    checked = tuple(_int("multiseed.seeds", seed, 0) for seed in seeds)
    if len(set(checked)) != len(checked):
        raise ParamsError(f"multiseed.seeds: repeated seed in {list(checked)}")
    return MultiseedParams(checked, _int("multiseed.workers", m["workers"], 1))


def generate_settings(value: Any) -> GenerateSettings:
    """The `generate:` section: what `membench generate` writes (docs/generate.md)."""
    g = _table("generate", value, {"facts", "changes", "deleted_share", "sessions", "users",
                                   "seed"})
    changes = g["changes"]
    if not isinstance(changes, list) or not changes:
        raise ParamsError("generate.changes: expected a non-empty list of change counts")
    share = g["deleted_share"]
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
        raise ParamsError(f"generate.deleted_share: expected a number from 0 to 1, got {share!r}")
    return GenerateSettings(
        facts=_int("generate.facts", g["facts"], 1),
        changes=tuple(_int("generate.changes", c, 0) for c in changes),
        deleted_share=Fraction(str(share)),
        sessions=_int("generate.sessions", g["sessions"], 1),
        users=_int("generate.users", g["users"], 1),
        seed=_int("generate.seed", g["seed"], 0),
    )
def _names(name: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(
            isinstance(v, str) and v for v in value):
        raise ParamsError(f"{name}: expected a non-empty list of names")
    if len(set(value)) != len(value):
        raise ParamsError(f"{name}: repeated name in {value}")
    return tuple(value)


def _backends(value: Any) -> BackendParams:
    """Names are checked against the registries by the backends stage (importing them
    here would make every stage depend on the backend modules)."""
    b = check_keys("backends", value, set(), {"names", "stores"}, ParamsError)
    defaults = BackendParams()
    return BackendParams(
        _names("backends.names", b["names"]) if "names" in b else defaults.names,
        _names("backends.stores", b["stores"]) if "stores" in b else defaults.stores)


def load_params(path: Path, known_extractors: set[str]) -> Params:
    return parse_params(_yaml_file(path), known_extractors)


def _yaml_file(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ParamsError(f"cannot read params file {path}: {error.strerror}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ParamsError(f"{path} is not valid YAML: {error}") from None


@dataclass(frozen=True)
class ImportParams:
    """imports/params.yaml: the optional import pipeline's source (docs/importers.md)."""

    format: str  # a name in membench.importers.formats.IMPORTERS
    source: str  # the benchmark file, as downloaded


def parse_import_params(data: Any, known_formats: set[str]) -> ImportParams:
    top = _table("params", data, {"import"})
    i = _table("import", top["import"], {"format", "source"})
    name = _str("import.format", i["format"])
    if name not in known_formats:
        raise ParamsError(f"import.format: unknown format {name!r}; "
                          f"known: {', '.join(sorted(known_formats))}")
    return ImportParams(name, _str("import.source", i["source"]))


def load_import_params(path: Path, known_formats: set[str]) -> ImportParams:
    return parse_import_params(_yaml_file(path), known_formats)
