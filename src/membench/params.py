"""params.yaml, validated strictly against membench.params_schema: an unknown, misspelt,
missing or out-of-range key stops the run with a one-line message naming it, before any
stage writes anything. The stages receive the frozen settings below."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from membench.extraction.params import SweepParams
from membench.extraction.settings import ConsolidationSettings, ExtractSettings, NoiseSettings
from membench.memory.policies import PolicySettings
from membench.params_schema import GenerateSection, ImportFile, ParamsFile
from membench.scenario.build import ScenarioShape
from membench.scenario.generate import GenerateSettings
from membench.validation import validation_message


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
    probe_days: tuple[int, ...]  # sorted
    lines_per_reply: int
    corpus: CorpusParams

    def shape(self) -> ScenarioShape:
        return ScenarioShape(self.seed, self.sessions, self.exchanges_per_session,
                             self.probe_days, self.lines_per_reply)


@dataclass(frozen=True)
class MultiseedParams:
    seeds: tuple[int, ...]  # the multi-seed stage's seeds, in report order


@dataclass(frozen=True)
class EmbeddingParams:
    model: str  # model id; its weights must ship in an installed package (offline)
    batch_size: int


@dataclass(frozen=True)
class BackendParams:
    """The backends stage: which real stores (membench.backends) and which memory
    stores to replay into each."""

    names: tuple[str, ...]
    stores: tuple[str, ...]


@dataclass(frozen=True)
class SystemParams:
    """The systems stage: which memory systems (membench.systems) to drive."""

    names: tuple[str, ...]
    users: int  # the generated deployment's users (0: none), its sessions and filler lines
    sessions: int
    lines_per_reply: int


@dataclass(frozen=True)
class UsersParams:
    """The users stage (many users in one deployment, docs/generate.md)."""

    dense: bool  # also the dense policies: every user's texts get embedded


@dataclass(frozen=True)
class ModelParams:
    """The optional model (docs/model.md): base_url "" calls none."""

    base_url: str
    name: str
    key_env: str
    seed: int
    concurrency: int
    timeout_seconds: float
    retries: int


@dataclass(frozen=True)
class ReaderParams:
    policies: tuple[str, ...]
    max_tokens: int
    max_context_tokens: int


@dataclass(frozen=True)
class LlmExtractorParams:
    run: bool
    max_tokens: int
    memories_shown: int


@dataclass(frozen=True)
class Params:
    scenario: ScenarioParams
    extractor: str
    policies: PolicySettings
    measured: str  # ISO date of the measurement, an input so reruns stay byte-identical
    multiseed: MultiseedParams
    embedding: EmbeddingParams
    generate: GenerateSettings
    extraction: ExtractSettings  # the configurable extractors' consolidation and noise
    extraction_sweep: SweepParams
    backends: BackendParams
    users: UsersParams
    systems: SystemParams
    model: ModelParams
    reader: ReaderParams
    llm_extractor: LlmExtractorParams


def _validated(model: type[BaseModel], data: Any, context: dict, prefix: str = "") -> Any:
    try:
        return model.model_validate(data, context=context)
    except ValidationError as error:
        raise ParamsError(validation_message(error, prefix)) from None


def parse_params(data: Any, known_extractors: set[str]) -> Params:
    f: ParamsFile = _validated(ParamsFile, data, {"extractors": known_extractors})
    s, c, e, p = f.scenario, f.scenario.corpus, f.extract, f.policies
    scenario = ScenarioParams(s.file, s.seed, s.sessions, s.exchanges_per_session,
                              tuple(sorted(s.probe_days)), s.lines_per_reply,
                              CorpusParams(c.source, c.glob, tuple(c.exclude)))
    consolidation, noise = e.consolidation, e.noise
    extraction = ExtractSettings(
        ConsolidationSettings(consolidation.similarity, consolidation.update_threshold,
                              consolidation.delete_threshold, consolidation.noop_threshold),
        NoiseSettings(noise.seed, noise.missed_facts, noise.missed_updates,
                      noise.false_merges, noise.missed_deletions))
    return Params(
        scenario, e.extractor,
        PolicySettings(p.window_exchanges, p.retrieval_top_k, p.hybrid_top_k,
                       p.same_topic_threshold),
        f.report.measured,
        MultiseedParams(tuple(f.multiseed.seeds)),
        EmbeddingParams(f.embedding.model, f.embedding.batch_size),
        _generate(f.generate), extraction,
        SweepParams(tuple(f.extraction_sweep.rates), tuple(f.extraction_sweep.seeds)),
        BackendParams(tuple(f.backends.names), tuple(f.backends.stores)),
        UsersParams(f.users.dense), SystemParams(
            tuple(f.systems.names), f.systems.users, f.systems.sessions,
            f.systems.lines_per_reply),
        ModelParams(f.model.base_url, f.model.name, f.model.key_env, f.model.seed,
                    f.model.concurrency, f.model.timeout_seconds, f.model.retries),
        ReaderParams(tuple(f.reader.policies), f.reader.max_tokens, f.reader.max_context_tokens),
        LlmExtractorParams(f.llm_extractor.run, f.llm_extractor.max_tokens,
                           f.llm_extractor.memories_shown))


def _generate(g: GenerateSection) -> GenerateSettings:
    # the share as written (0.1 is 1/10, not the nearest binary float)
    return GenerateSettings(g.facts, tuple(g.changes), Fraction(str(g.deleted_share)),
                            g.sessions, g.users, g.seed)


def generate_settings(value: Any) -> GenerateSettings:
    """The `generate:` section alone: what `membench generate` writes (docs/generate.md)."""
    return _generate(_validated(GenerateSection, value, {}, "generate"))


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

    format: str  # a name in membench.importers.model.IMPORTERS
    source: str  # the benchmark file, as downloaded


def parse_import_params(data: Any, known_formats: set[str]) -> ImportParams:
    section = _validated(ImportFile, data, {"formats": known_formats}).import_
    return ImportParams(section.format, section.source)


def load_import_params(path: Path, known_formats: set[str]) -> ImportParams:
    return parse_import_params(_yaml_file(path), known_formats)
