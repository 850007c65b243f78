"""The schema of params.yaml: every key, its type, its bounds and its meaning. The values
live only in params.yaml (every key the pipeline reads must be there; an overlay such as
data/scale-users.params.yaml is merged over it section by section); membench.params
validates the file against these models and hands the stages their settings, and
membench.params_table renders the README's parameter table from them."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from pydantic import Field, ValidationInfo, field_validator, model_validator

from membench.extraction.params import ConsolidationSection, NoiseSection, Seed, Share, SweepSection
from membench.validation import Section, unique

Text = Annotated[str, Field(min_length=1)]
Count = Annotated[int, Field(ge=1)]


def grouped(description: str) -> Any:
    """A nested table shown as one row (`key.*`) in the README's parameter table."""
    return Field(description=description, json_schema_extra={"one_row": True})


def _registered_name(kind: str, name: str, known: set[str]) -> str:
    """A name checked against its registry (extractors, import formats)."""
    if name not in known:
        raise ValueError(f"unknown {kind} {name!r}; known: {', '.join(sorted(known))}")
    return name

class CorpusSection(Section):
    source: Text = Field(description="a `.tar.gz` snapshot, a directory, or `stdlib`")
    glob: Text = Field(description="the files read, relative to the source")
    exclude: list[str] = Field(description="fnmatch patterns on the relative path")


class ScenarioSection(Section):
    file: Text = Field(description="the story: a format-1 TOML, a format-2 JSON or a "
                                   "directory of them ([formats](docs/scenario-format.md))")
    seed: Seed = Field(description="picks distractor questions and code windows")
    sessions: Count = Field(description="days in the relationship")
    exchanges_per_session: Count = Field(description="exchanges per day")
    probe_days: list[Count] = Field(min_length=1, description="probes at the end of these "
                                                              "days (each <= `sessions`)")
    lines_per_reply: Count = Field(description="code lines in each filler reply")
    corpus: CorpusSection = grouped("the filler corpus: archive, directory or `stdlib`; "
                                    "`exclude` holds fnmatch patterns on the relative path")

    @field_validator("probe_days")
    @classmethod
    def _within_sessions(cls, days: list[int], info: ValidationInfo) -> list[int]:
        sessions = info.data.get("sessions")  # absent when itself invalid
        late = [d for d in days if sessions is not None and d > sessions]
        if late:
            raise ValueError(f"day(s) {late} past the last session "
                             f"(scenario.sessions = {sessions})")
        unique(days, "day")
        return days


class ExtractSection(Section):
    extractor: Text = Field(description="`perfect` (gold keys), `consolidating` (real, no "
                                        "gold) or `noisy` ([extraction](docs/extraction.md))")
    consolidation: ConsolidationSection = grouped(
        "the consolidating extractor's similarity and its update, delete and no-op thresholds")
    noise: NoiseSection = grouped("the noisy extractor's seed and rates of missed facts, "
                                  "missed updates, false merges, missed deletions")

    @field_validator("extractor")
    @classmethod
    def _registered(cls, name: str, info: ValidationInfo) -> str:
        if name == "llm" and name not in info.context["extractors"]:
            raise ValueError("the LLM extractor is measured by the extraction stage "
                             "(llm_extractor), beside the policies' extractor, which is one "
                             f"of {', '.join(sorted(info.context['extractors']))} "
                             "(docs/model.md#the-llm-extractor)")
        return _registered_name("extractor", name, info.context["extractors"])


class PoliciesSection(Section):
    window_exchanges: Count = Field(description="`last_n_exchanges` window")
    retrieval_top_k: Count = Field(description="BM25-only policies")
    hybrid_top_k: Count = Field(description="profile + BM25 policies")
    same_topic_threshold: Share = Field(description="recency readers: user words this "
                                                    "alike (Dice) are one topic")


class EmbeddingSection(Section):
    model: Text = Field(description="dense model; its weights must ship in an installed "
                                    "package (offline)")
    batch_size: Count = Field(description="texts per forward pass (memory, not results)")


class MultiseedSection(Section):
    seeds: list[Seed] = Field(min_length=1, description="seeds of the multi-seed stage, "
                                                        "in report order")

    @model_validator(mode="before")
    @classmethod
    def _no_workers(cls, data: Any) -> Any:
        if isinstance(data, dict) and "workers" in data:
            raise ValueError("workers is no longer a param: where the seeds run is "
                             "MEMBENCH_WORKERS or Dask's configuration "
                             "(docs/cluster.md)")
        return data

    @field_validator("seeds")
    @classmethod
    def _distinct(cls, seeds: list[int]) -> list[int]:
        unique(seeds, "seed")
        return seeds


class ReportSection(Section):
    measured: Text = Field(description="measurement date printed in the report (an input, "
                                       "not the clock); `membench remeasure` sets it")

    @field_validator("measured", mode="before")
    @classmethod
    def _date(cls, value: Any) -> Any:
        if isinstance(value, dt.date):  # YAML reads an unquoted date as a date
            return value.isoformat()
        if isinstance(value, str) and value:
            try:
                dt.date.fromisoformat(value)
            except ValueError:
                raise ValueError(f"expected a date YYYY-MM-DD, got {value!r}") from None
        return value


class GenerateSection(Section):
    facts: Count = Field(description="fact keys per user")
    changes: list[Annotated[int, Field(ge=0)]] = Field(
        min_length=1, description="times each fact changes, given to the facts in turn")
    deleted_share: Share = Field(description="share of the facts the user later asks to "
                                             "forget")
    sessions: Count = Field(description="days of the story (set `scenario.sessions` to the "
                                        "same)")
    users: Count = Field(description="users of one deployment, same keys, their own values")
    seed: Seed = Field(description="picks keys, days and values")


Names = Annotated[list[Text], Field(min_length=1)]


class BackendsSection(Section):
    """Names are checked against the registries by the backends stage (importing them
    here would make every stage depend on the backend modules)."""

    names: Names = Field(description="real stores the backends stage replays the scenario "
                                     "into ([backends](docs/backends.md))")
    stores: Names = Field(description="memory stores it replays; the policies whose every "
                                      "store is listed run on each backend")

    @field_validator("names", "stores")
    @classmethod
    def _distinct(cls, names: list[str]) -> list[str]:
        unique(names, "name")
        return names


class SystemsSection(Section):
    """Names are checked against the registry by the systems stage, as backends' are."""

    names: list[Text] = Field(description="memory systems the systems stage drives "
                                          "([systems](docs/systems.md)); [] runs none")
    users: int = Field(ge=0, description="users of its generated deployment (0: none)")
    sessions: Count = Field(description="that deployment's days")
    lines_per_reply: Count = Field(description="its filler replies' code lines")

    @field_validator("names")
    @classmethod
    def _distinct(cls, names: list[str]) -> list[str]:
        unique(names, "name")
        return names


class UsersSection(Section):
    dense: bool = Field(description="the users stage (several users) also runs the dense "
                                    "policies ([generate](docs/generate.md#dense-policies-"
                                    "usersdense))")


class ModelSection(Section):
    """An optional OpenAI-compatible chat endpoint. Only `name` and `seed` enter the
    response cache's keys: the address, key and limits change how answers are fetched, not
    which ones."""

    base_url: str = Field(description="`\"\"`: no model, answers from the response cache "
                                      "alone; `local`: a llama.cpp server this run starts; "
                                      "else e.g. `http://127.0.0.1:8080/v1` "
                                      "([model](docs/model.md))")
    name: Text = Field(description="the model asked (the cache's responses are keyed by it)")
    key_env: str = Field(description="the environment variable holding the endpoint's key "
                                     "(never the key itself)")
    seed: Seed = Field(description="sent with every request, for servers that honour it")
    concurrency: Count = Field(description="requests in flight at once")
    timeout_seconds: Annotated[float, Field(gt=0)] = Field(description="per request")
    retries: Annotated[int, Field(ge=0)] = Field(description="retries of a failed request, "
                                                           "with doubling backoff")

    @field_validator("base_url")
    @classmethod
    def _http(cls, url: str) -> str:
        if url and url != "local" and not url.startswith(("http://", "https://")):
            raise ValueError(f"expected \"\", `local` or an http:// or https:// address, "
                             f"got {url!r}")
        return url

    @field_validator("key_env")
    @classmethod
    def _variable_name(cls, name: str) -> str:
        if name and not name.replace("_", "a").isalnum():
            raise ValueError(f"expected an environment variable's name, got {name!r}")
        return name


class ReaderSection(Section):
    """Policies are checked against the registry by the reader stage."""

    policies: list[Text] = Field(description="policies whose injected context the model "
                                             "reads to answer each probe; [] runs no reader")
    max_tokens: Count = Field(description="of an answer")
    max_context_tokens: Count = Field(description="a longer context is not sent (counted "
                                                  "as not asked)")

    @field_validator("policies")
    @classmethod
    def _distinct(cls, names: list[str]) -> list[str]:
        unique(names, "policy")
        return names


class LlmExtractorSection(Section):
    run: bool = Field(description="the extraction stage measures the LLM extractor (its "
                                  "answers from the response cache or the model)")
    max_tokens: Count = Field(description="of one reply")
    memories_shown: Count = Field(description="the memories most like a new fact, shown to "
                                              "the model to decide ADD, UPDATE or DELETE")


class ParamsFile(Section):
    """params.yaml as a whole, its sections in the file's order."""

    scenario: ScenarioSection
    extract: ExtractSection
    policies: PoliciesSection
    embedding: EmbeddingSection
    multiseed: MultiseedSection
    report: ReportSection
    generate: GenerateSection = grouped(
        "the generated story (`membench generate`): facts, changes, deleted share, sessions, "
        "users, seed; read only when `scenario.file` names it ([generate](docs/generate.md))")
    extraction_sweep: SweepSection
    backends: BackendsSection
    users: UsersSection
    systems: SystemsSection
    model: ModelSection = grouped(
        "the optional model ([model](docs/model.md)): base URL (`\"\"`: none, answers from the "
        "committed cache alone; `local`: a llama.cpp server this run starts), name, the "
        "key's environment variable, seed, concurrency, timeout, retries")
    reader: ReaderSection = grouped(
        "the reader: the policies whose context the model answers from ([] runs none), an "
        "answer's max tokens, the longest context sent")
    llm_extractor: LlmExtractorSection = grouped(
        "the LLM extractor ([model](docs/model.md)): measured or not, reply tokens, memories "
        "shown per decision")


class ImportSection(Section):
    format: Text = Field(description="a name in membench.importers.model.IMPORTERS")
    source: Text = Field(description="the benchmark file, as downloaded")

    @field_validator("format")
    @classmethod
    def _registered(cls, name: str, info: ValidationInfo) -> str:
        return _registered_name("format", name, info.context["formats"])


class ImportFile(Section):
    """imports/params.yaml: the optional import pipeline's source (docs/importers.md)."""

    import_: ImportSection = Field(alias="import")
