"""Cache hits, misses and the Parquet round trip, with a fake embedder (no model).

Files are written the way the embed stage writes them (staged_outputs, to_table) and read
the way it reads them (load_cache)."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from membench.io.embedding_files import load_cache
from membench.io.outputs import staged_outputs
from membench.retrieval.embedding_cache import (
    CACHE_SCHEMA,
    VECTOR_DIMENSION,
    EmbeddingCache,
    text_sha256,
)

MODEL = "test/model"


def write(path, cache: EmbeddingCache, metadata: dict[str, str] | None = None) -> None:
    """As the embed stage writes its cache file."""
    table = cache.to_table()
    with staged_outputs() as outputs:
        outputs.parquet(path, table.replace_schema_metadata(metadata) if metadata else table)


def stored(cache: EmbeddingCache, model_id: str, text: str) -> np.ndarray:
    return cache.vectors(model_id)[text_sha256(text)]


class CountingEmbedder:
    """Deterministic fake vectors; records which texts it was asked to embed."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([self.vector(text) for text in texts], dtype=np.float32)

    @staticmethod
    def vector(text: str) -> np.ndarray:
        seed = int(text_sha256(text)[:8], 16)
        return np.random.default_rng(seed).standard_normal(VECTOR_DIMENSION).astype(np.float32)


def test_first_call_embeds_each_distinct_text_once():
    cache, embedder = EmbeddingCache(), CountingEmbedder()
    vectors = cache.embed(MODEL, ["a", "b", "a"], embedder)
    assert embedder.calls == [["a", "b"]]
    assert len(cache) == 2
    np.testing.assert_array_equal(vectors[0], vectors[2])
    np.testing.assert_array_equal(vectors[1], CountingEmbedder.vector("b"))


def test_unchanged_texts_are_never_embedded_again():
    cache, embedder = EmbeddingCache(), CountingEmbedder()
    first = cache.embed(MODEL, ["a", "b"], embedder)
    second = cache.embed(MODEL, ["b", "c", "a"], embedder)
    assert embedder.calls == [["a", "b"], ["c"]]
    np.testing.assert_array_equal(second[[2, 0]], first)
    cache.embed(MODEL, ["c", "a"], embedder)
    assert len(embedder.calls) == 2  # all hits: the embedder is not called at all


def test_keys_separate_models():
    cache, embedder = EmbeddingCache(), CountingEmbedder()
    cache.embed(MODEL, ["a"], embedder)
    assert cache.missing("other/model", ["a"]) == ["a"]
    assert cache.vectors("other/model") == {}
    assert list(cache.vectors(MODEL)) == [text_sha256("a")]
    assert (MODEL, text_sha256("a")) in cache


def test_put_rejects_wrong_dimension_and_copies_the_vector():
    cache = EmbeddingCache()
    with pytest.raises(ValueError):
        cache.put(MODEL, "a", np.zeros(3))
    vector = np.ones(VECTOR_DIMENSION, dtype=np.float32)
    cache.put(MODEL, "a", vector)
    vector[0] = 5
    assert stored(cache, MODEL, "a")[0] == 1


def test_parquet_round_trip_keeps_vectors_and_schema(tmp_path):
    cache = EmbeddingCache()
    cache.embed(MODEL, ["a", "b"], CountingEmbedder())
    cache.embed("other/model", ["a"], lambda texts: -CountingEmbedder()(texts))  # own vector
    path = tmp_path / "cache" / "embeddings.parquet"
    write(path, cache)
    assert pq.read_schema(path).equals(CACHE_SCHEMA)
    assert pq.read_schema(path).field("vector").type == pa.list_(pa.float32(), 384)
    loaded = load_cache(path)
    assert len(loaded) == 3
    vector = CountingEmbedder.vector
    expected = {(MODEL, "a"): vector("a"), (MODEL, "b"): vector("b"),
                ("other/model", "a"): -vector("a")}
    for (model_id, text), want in expected.items():
        assert stored(loaded, model_id, text).tobytes() == want.tobytes()
    embedder = CountingEmbedder()
    loaded.embed(MODEL, ["b", "a"], embedder)
    assert embedder.calls == []


def test_equal_caches_write_equal_bytes_whatever_the_insertion_order(tmp_path):
    forward, backward = EmbeddingCache(), EmbeddingCache()
    forward.embed(MODEL, ["a", "b", "c"], CountingEmbedder())
    backward.embed(MODEL, ["c", "b", "a"], CountingEmbedder())
    write(tmp_path / "f.parquet", forward)
    write(tmp_path / "b.parquet", backward)
    assert (tmp_path / "f.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def test_missing_file_loads_as_empty_cache_and_empty_cache_round_trips(tmp_path):
    assert len(load_cache(tmp_path / "absent.parquet")) == 0
    write(tmp_path / "empty.parquet", EmbeddingCache())
    assert len(load_cache(tmp_path / "empty.parquet")) == 0


def test_cache_from_another_encoder_is_dropped_with_a_message(tmp_path):
    from membench.io.embedding_files import ENCODER_METADATA, load_encoder_cache
    from membench.retrieval.embedding import ENCODER_VERSION

    cache = EmbeddingCache()
    cache.embed(MODEL, ["a", "b"], CountingEmbedder())
    old = tmp_path / "old.parquet"
    write(old, cache)  # no encoder recorded: what the torch encoder wrote
    said = []
    assert len(load_encoder_cache(old, said.append)) == 0
    assert "dropping 2 cached vectors" in said[0]
    current = tmp_path / "current.parquet"
    write(current, cache, {ENCODER_METADATA.decode(): ENCODER_VERSION})
    assert len(load_encoder_cache(current, said.append)) == 2
    assert len(said) == 1


def test_policies_refuse_embeddings_from_another_encoder():
    from membench.commands.embedding_cache_files import embeddings_table
    from membench.io.embedding_files import vectors_from_table

    cache = EmbeddingCache()
    cache.embed(MODEL, ["a"], CountingEmbedder())
    table = embeddings_table(cache, MODEL, ["a"], weights_sha256="0" * 64)
    assert list(vectors_from_table(table, MODEL)) == [text_sha256("a")]
    metadata = {key: value for key, value in table.schema.metadata.items()
                if key != b"membench.embedding_encoder"}
    with pytest.raises(ValueError, match="encoder"):
        vectors_from_table(table.replace_schema_metadata(metadata), MODEL)
