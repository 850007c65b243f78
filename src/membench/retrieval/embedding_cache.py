"""Embedding cache keyed by (model id, SHA-256 of the text), stored as Parquet.

Embedding is the slow step of a run; re-runs over a mostly unchanged relationship
should embed only the texts that changed. The file holds no text, but it does hold
conversation content: a SHA-256 of a templated statement is enumerable (a deleted
phone number was recovered from its key in seconds), and each vector encodes its text.
Nothing is evicted, so texts of deleted facts stay. This is the bench's own artifact,
like its scenario and records, not a store any policy keeps; a deployed dense store
must drop a deleted document's vector (the audit counts those as held).
No model here: callers pass the function that embeds misses.
Pass a model id that changes when the weights do (e.g. with weights_sha256) if
different weights may ever share one id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

VECTOR_DIMENSION = 384
CACHE_SCHEMA = pa.schema(
    [
        pa.field("model_id", pa.string(), nullable=False),
        pa.field("text_sha256", pa.string(), nullable=False),
        pa.field("vector", pa.list_(pa.float32(), VECTOR_DIMENSION), nullable=False),
    ]
)
EmbedTexts = Callable[[list[str]], np.ndarray]


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """In-memory map (model_id, text_sha256) -> float32 vector of VECTOR_DIMENSION."""

    def __init__(self) -> None:
        self._vectors: dict[tuple[str, str], np.ndarray] = {}

    def __len__(self) -> int:
        return len(self._vectors)

    def __contains__(self, key: tuple[str, str]) -> bool:
        return key in self._vectors

    def put(self, model_id: str, text: str, vector: np.ndarray) -> None:
        self._put_key(model_id, text_sha256(text), vector)

    def _put_key(self, model_id: str, digest: str, vector: np.ndarray) -> None:
        row = np.array(vector, dtype=np.float32).reshape(-1)  # own copy, not a view
        if row.shape != (VECTOR_DIMENSION,):
            raise ValueError(f"vector must have {VECTOR_DIMENSION} values, got {row.shape}")
        row.flags.writeable = False
        self._vectors[(model_id, digest)] = row

    def missing(self, model_id: str, texts: Sequence[str]) -> list[str]:
        """Distinct texts without a cached vector, in first-seen order."""
        seen: set[str] = set()
        result = []
        for text in texts:
            digest = text_sha256(text)
            if (model_id, digest) not in self._vectors and digest not in seen:
                seen.add(digest)
                result.append(text)
        return result

    def embed(self, model_id: str, texts: Sequence[str], embed_texts: EmbedTexts) -> np.ndarray:
        """Vectors for all texts, calling embed_texts once, on the misses only (if any)."""
        misses = self.missing(model_id, texts)
        if misses:
            vectors = np.asarray(embed_texts(misses))
            if len(vectors) != len(misses):
                raise ValueError(f"embedder returned {len(vectors)} vectors for {len(misses)}")
            for text, vector in zip(misses, vectors, strict=True):
                self.put(model_id, text, vector)
        matrix = np.zeros((len(texts), VECTOR_DIMENSION), dtype=np.float32)
        for row, text in enumerate(texts):
            matrix[row] = self._vectors[(model_id, text_sha256(text))]
        return matrix

    def subset(self, model_id: str, texts: Sequence[str]) -> EmbeddingCache:
        """A cache holding only these texts' vectors (all must be present)."""
        part = EmbeddingCache()
        for text in texts:
            digest = text_sha256(text)
            part._put_key(model_id, digest, self._vectors[(model_id, digest)])
        return part

    def vectors(self, model_id: str) -> dict[str, np.ndarray]:
        """Text SHA-256 -> vector, for one model."""
        return {digest: vector for (model, digest), vector in self._vectors.items()
                if model == model_id}

    def to_table(self) -> pa.Table:
        """Rows sorted by key, so equal caches serialise to equal bytes."""
        keys = sorted(self._vectors)
        flat = np.concatenate([self._vectors[key] for key in keys]) if keys else np.zeros(0)
        vectors = pa.FixedSizeListArray.from_arrays(
            pa.array(flat, type=pa.float32()), VECTOR_DIMENSION
        )
        return pa.Table.from_arrays(
            [
                pa.array([model_id for model_id, _ in keys], type=pa.string()),
                pa.array([digest for _, digest in keys], type=pa.string()),
                vectors,
            ],
            schema=CACHE_SCHEMA,
        )

    @classmethod
    def from_table(cls, table: pa.Table) -> EmbeddingCache:
        if not table.schema.equals(CACHE_SCHEMA):
            raise ValueError(f"embedding cache schema mismatch:\n{table.schema}")
        cache = cls()
        vectors = table.column("vector").combine_chunks().flatten().to_numpy()
        vectors = vectors.reshape(-1, VECTOR_DIMENSION)
        model_ids = table.column("model_id").to_pylist()
        digests = table.column("text_sha256").to_pylist()
        for model_id, digest, vector in zip(model_ids, digests, vectors, strict=True):
            cache._put_key(model_id, digest, vector)
        return cache
