"""Cold-start cost of embedding one relationship: sentence-transformers vs membench.

Run from the repository root:  python benchmarks/embed_bench.py [--count 360]

Each path runs in its own fresh interpreter (so imports and peak memory are cold
and not shared) and reports wall time for imports, model load and encode, plus
peak RSS (ru_maxrss). Encode is also given as CPU time (user + system), which a
busy neighbour inflates far less than wall time. The parent then prints the
largest absolute difference between the two paths' vectors. Times vary with
machine load: compare ratios, and use --repeat to take the best of several runs.
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
sys.path[:0] = [str(HERE), str(HERE.parent / "stages")]

from documents import build_documents

from membench.embedding import DEFAULT_BATCH_SIZE, EMBED_THREADS

PATHS = ("plain", "fast")


def run_plain(
    texts: list[str], batch_size: int, threads: int
) -> tuple[np.ndarray, dict[str, float]]:
    """sentence-transformers' own encode at its default batch size, as most code calls it."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from membench.embedding import DEFAULT_MODEL_ID, model_dir

    start = time.perf_counter()
    from sentence_transformers import SentenceTransformer

    imported = time.perf_counter()
    import torch

    torch.set_num_threads(threads)
    model = SentenceTransformer(str(model_dir(DEFAULT_MODEL_ID)), device="cpu")
    loaded = time.perf_counter()
    cpu_start = time.process_time()
    vectors = model.encode(texts, normalize_embeddings=True)
    encoded = time.perf_counter()
    return vectors, _phases(start, imported, loaded, encoded, time.process_time() - cpu_start)


def run_fast(
    texts: list[str], batch_size: int, threads: int
) -> tuple[np.ndarray, dict[str, float]]:
    """membench.embedding: plain-torch BERT, equal-length batches, no padding."""
    from membench.embedding import DEFAULT_MODEL_ID, embed, load_model

    start = time.perf_counter()
    import safetensors.torch  # noqa: F401
    import tokenizers  # noqa: F401
    import torch  # noqa: F401

    imported = time.perf_counter()
    model = load_model(DEFAULT_MODEL_ID)
    loaded = time.perf_counter()
    cpu_start = time.process_time()
    vectors = embed(texts, model, batch_size=batch_size, threads=threads)
    encoded = time.perf_counter()
    return vectors, _phases(start, imported, loaded, encoded, time.process_time() - cpu_start)


def _phases(
    start: float, imported: float, loaded: float, encoded: float, encode_cpu_s: float
) -> dict[str, float]:
    return {
        "imports_s": imported - start,
        "load_s": loaded - imported,
        "encode_s": encoded - loaded,
        "encode_cpu_s": encode_cpu_s,
    }


def child(args: argparse.Namespace) -> None:
    texts = build_documents(args.count, args.seed)
    runner = run_plain if args.child == "plain" else run_fast
    vectors, phases = runner(texts, args.batch_size, args.threads)
    np.save(args.output, np.asarray(vectors, dtype=np.float32))
    phases["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(phases))


def parent(args: argparse.Namespace) -> None:
    print(f"{args.count} documents (question + 30 stdlib lines), seed {args.seed}")
    print(
        f"plain: sentence-transformers encode, batch 32; fast: membench, "
        f"batch {args.batch_size}; torch threads {args.threads}"
    )
    print(
        f"{'path':<6} {'imports':>8} {'load':>6} {'encode':>7} {'enc cpu':>8} "
        f"{'process':>8} {'peak RSS':>9}"
    )
    vectors: dict[str, np.ndarray] = {}
    best = {path: {"process_s": np.inf, "encode_cpu_s": np.inf} for path in PATHS}
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(args.repeat):
            for path in PATHS:  # alternate, so background load hits both paths alike
                output = Path(scratch) / f"{path}.npy"
                command = [sys.executable, __file__, "--child", path, "--output", str(output)]
                command += ["--count", str(args.count), "--seed", str(args.seed)]
                command += ["--batch-size", str(args.batch_size), "--threads", str(args.threads)]
                started = time.perf_counter()
                result = subprocess.run(command, check=True, capture_output=True, text=True)
                phases = json.loads(result.stdout.strip().splitlines()[-1])
                phases["process_s"] = time.perf_counter() - started
                for key in best[path]:
                    best[path][key] = min(best[path][key], phases[key])
                vectors[path] = np.load(output)
                print(
                    f"{path:<6} {phases['imports_s']:>7.1f}s {phases['load_s']:>5.1f}s "
                    f"{phases['encode_s']:>6.1f}s {phases['encode_cpu_s']:>7.1f}s "
                    f"{phases['process_s']:>7.1f}s {phases['peak_rss_mb']:>6.0f} MB"
                )
    difference = np.abs(vectors["plain"] - vectors["fast"]).max()
    print(f"max abs difference plain vs fast: {difference:.2e}")
    for key in ("process_s", "encode_cpu_s"):
        print(f"best {key} fast / plain: {best['fast'][key] / best['plain'][key]:.2f}")
    print("process = whole cold interpreter run: startup, documents, imports, load, encode")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=360)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help="fast path")
    parser.add_argument("--threads", type=int, default=EMBED_THREADS, help="torch threads, both")
    parser.add_argument("--repeat", type=int, default=1, help="runs per path, alternating")
    parser.add_argument("--child", choices=PATHS, help=argparse.SUPPRESS)
    parser.add_argument("--output", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
    else:
        parent(args)


if __name__ == "__main__":
    main()
