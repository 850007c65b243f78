"""Where an approximate index (HNSW) would take over from exact cosine search.

Not a test. Exact search (membench.retrieval.dense.DenseIndex: int64 dot products of
grid vectors, exact on every machine) against faiss's IndexHNSWFlat (M=32,
efConstruction=40, efSearch=64, inner product) at growing corpus sizes: build time,
time per query, and the ANN's recall@5 against the exact top 5.

The vectors are the default story's real embeddings (data/embeddings.parquet, 384-d
all-MiniLM-L6-v2 on the 2^-20 grid) plus Gaussian noise, renormalised and snapped to
the grid: clustered like real text, as many as asked, without embedding millions of
texts. A probe day asks each store about 27 questions (the default story), so the
per-day cost is one build plus 27 queries; the crossover is printed both per query and
per day. faiss is not a membench dependency: `pip install faiss-cpu==1.15.1` first.

  python benchmarks/ann_crossover.py [--sizes 1000 4000 16000 64000 256000] [--queries 27]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from membench.retrieval.dense import DenseIndex, snap_to_grid

ROOT = Path(__file__).resolve().parents[1]
K = 5


def real_vectors() -> np.ndarray:
    table = pq.read_table(ROOT / "data/embeddings.parquet")
    column = next(name for name in table.column_names if "vector" in name or "embedding" in name)
    return np.asarray(table.column(column).to_pylist(), dtype=np.float64)


def clustered(centres: np.ndarray, n: int, rng: np.random.Generator, noise: float) -> np.ndarray:
    rows = centres[rng.integers(len(centres), size=n)]
    rows = rows + rng.normal(scale=noise, size=rows.shape)
    return snap_to_grid(rows / np.linalg.norm(rows, axis=1, keepdims=True))


def timed(work):
    start = time.perf_counter()
    value = work()
    return value, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+",
                        default=[1000, 4000, 16000, 64000, 256000])
    parser.add_argument("--queries", type=int, default=27, help="questions per store and day")
    parser.add_argument("--noise", type=float, default=0.03, help="per-component noise")
    args = parser.parse_args()
    try:
        import faiss
    except ImportError:
        sys.exit("faiss is not installed: pip install faiss-cpu==1.15.1")
    faiss.omp_set_num_threads(1)  # like the exact search: one core
    rng = np.random.default_rng(0)
    centres = real_vectors()
    print(f"{len(centres)} real vectors as centres, noise {args.noise}, "
          f"{args.queries} queries, k={K}, faiss {faiss.__version__}, 1 thread")
    print("| documents | exact build | exact per query | exact per day | HNSW build | "
          "HNSW per query | HNSW per day | recall@5 |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        documents = clustered(centres, n, rng, args.noise)
        queries = clustered(centres, args.queries, rng, args.noise)
        exact, exact_build = timed(lambda: DenseIndex(documents))
        truth, exact_all = timed(lambda: [exact.top_k(q, K) for q in queries])
        hnsw = faiss.IndexHNSWFlat(documents.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
        hnsw.hnsw.efConstruction = 40
        _, ann_build = timed(lambda: hnsw.add(np.ascontiguousarray(documents)))
        hnsw.hnsw.efSearch = 64
        (_, found), ann_all = timed(lambda: hnsw.search(np.ascontiguousarray(queries), K))
        recall = np.mean([len(set(t) & set(f.tolist())) / K for t, f in zip(truth, found)])
        print(f"| {n:,} | {exact_build * 1e3:.0f} ms | {exact_all / len(queries) * 1e3:.2f} ms | "
              f"{(exact_build + exact_all) * 1e3:.0f} ms | {ann_build * 1e3:.0f} ms | "
              f"{ann_all / len(queries) * 1e3:.3f} ms | {(ann_build + ann_all) * 1e3:.0f} ms | "
              f"{recall:.3f} |", flush=True)


if __name__ == "__main__":
    main()
