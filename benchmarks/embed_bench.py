"""Embed stage cold, numpy encoder against sentence-transformers on torch, in one run.

Run from the repository root after `dvc repro extract` (it embeds the embed stage's
default texts, benchmarks/documents.py:default_embed_texts), naming an interpreter whose
venv has torch and sentence-transformers (membench no longer installs them):
    python benchmarks/embed_bench.py --torch-python /path/to/venv-with-torch/bin/python

Each path runs in its own fresh interpreter, so imports and peak memory are cold and
not shared: the numpy path in this interpreter (membench.retrieval.embedding.embed, what the
embed stage calls on an empty cache), the torch path in --torch-python
(SentenceTransformer.encode, batch 32, torch threads 2). Each reports wall time for
imports, model load and encode, plus peak RSS (ru_maxrss) and the whole process's wall
time. The machine's load moves times: compare the ratio, and use --repeat to take the
best of several alternating runs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "src"
sys.path[:0] = [str(HERE), str(SOURCE)]

PATHS = ("numpy", "torch")
THREADS = 2


def run_numpy(texts: list[str]) -> tuple[np.ndarray, list[float]]:
    start = time.perf_counter()
    from membench.retrieval.embedding import DEFAULT_MODEL_ID, embed, load_model

    imported = time.perf_counter()
    model = load_model(DEFAULT_MODEL_ID)
    loaded = time.perf_counter()
    vectors = embed(texts, model, threads=THREADS)
    return vectors, [start, imported, loaded, time.perf_counter()]


def run_torch(texts: list[str]) -> tuple[np.ndarray, list[float]]:
    os.environ["HF_HUB_OFFLINE"] = "1"
    from membench.retrieval.embedding import DEFAULT_MODEL_ID, model_dir

    start = time.perf_counter()
    import torch
    from sentence_transformers import SentenceTransformer

    imported = time.perf_counter()
    torch.set_num_threads(THREADS)
    model = SentenceTransformer(str(model_dir(DEFAULT_MODEL_ID)), device="cpu")
    loaded = time.perf_counter()
    vectors = model.encode(texts, normalize_embeddings=True)
    return vectors, [start, imported, loaded, time.perf_counter()]


def child(path: str, output: Path) -> None:
    from documents import default_embed_texts

    texts = default_embed_texts()
    vectors, (start, imported, loaded, encoded) = (run_numpy if path == "numpy" else run_torch)(
        texts)
    np.save(output, np.asarray(vectors, dtype=np.float32))
    print(json.dumps({
        "texts": len(texts),
        "imports_s": imported - start,
        "load_s": loaded - imported,
        "encode_s": encoded - loaded,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))


def parent(args: argparse.Namespace) -> None:
    interpreters = {"numpy": sys.executable, "torch": args.torch_python}
    print(f"numpy: {sys.executable}\ntorch: {args.torch_python}\nthreads {THREADS}")
    print(f"{'path':<6} {'texts':>5} {'imports':>8} {'load':>6} {'encode':>7} {'process':>8} "
          f"{'peak RSS':>9}")
    vectors: dict[str, np.ndarray] = {}
    best = {path: {"process_s": np.inf, "peak_rss_mb": np.inf} for path in PATHS}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(SOURCE), *filter(None, [os.environ.get("PYTHONPATH")])])}
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(args.repeat):
            for path in PATHS:  # alternate, so background load hits both paths alike
                output = Path(scratch) / f"{path}.npy"
                command = [interpreters[path], __file__, "--child", path, "--output", str(output)]
                started = time.perf_counter()
                result = subprocess.run(command, check=True, capture_output=True, text=True,
                                        env=env)
                phases = json.loads(result.stdout.strip().splitlines()[-1])
                phases["process_s"] = time.perf_counter() - started
                for key in best[path]:
                    best[path][key] = min(best[path][key], phases[key])
                vectors[path] = np.load(output)
                print(f"{path:<6} {phases['texts']:>5} {phases['imports_s']:>7.1f}s "
                      f"{phases['load_s']:>5.1f}s {phases['encode_s']:>6.1f}s "
                      f"{phases['process_s']:>7.1f}s {phases['peak_rss_mb']:>6.0f} MB", flush=True)
    difference = np.abs(vectors["numpy"] - vectors["torch"]).max()
    print(f"max abs difference numpy vs torch: {difference:.2e}")
    for key in ("process_s", "peak_rss_mb"):
        print(f"best {key} numpy / torch: {best['numpy'][key] / best['torch'][key]:.2f}")
    print("process = whole cold interpreter run: startup, texts, imports, load, encode")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch-python", required="--child" not in sys.argv,
                        help="interpreter of a venv with torch and sentence-transformers")
    parser.add_argument("--repeat", type=int, default=1, help="runs per path, alternating")
    parser.add_argument("--child", choices=PATHS, help=argparse.SUPPRESS)
    parser.add_argument("--output", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.output)
    else:
        parent(args)


if __name__ == "__main__":
    main()
