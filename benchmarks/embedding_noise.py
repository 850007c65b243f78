"""How far apart the encoder's float64 vectors land under different BLAS kernels.

Run from the repository root after `dvc repro extract`:
    python benchmarks/embedding_noise.py

Each configuration runs in a fresh interpreter (OpenBLAS and numpy pick their kernels
at import): OPENBLAS_CORETYPE, OPENBLAS_NUM_THREADS, numpy's SIMD features, embed
threads and batch size. It prints the largest difference of the unrounded unit vectors
from the first configuration's, over all default texts, and how many components would
round differently on the 2^-GRID_BITS grid: the margin the grid in
membench.retrieval.dense must keep.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "src")]

# (OPENBLAS_CORETYPE, OPENBLAS_NUM_THREADS, NPY_DISABLE_CPU_FEATURES, threads, batch size)
CONFIGURATIONS = [
    ("SkylakeX", "2", "", 2, 8),
    ("Haswell", "1", "", 2, 8),
    ("Sandybridge", "2", "", 1, 8),
    ("Prescott", "1", "", 2, 8),
    ("Nehalem", "2", "", 2, 3),
    ("SkylakeX", "1", "X86_V4 AVX512_ICL", 2, 1),
]


def child(output: Path, threads: int, batch_size: int) -> None:
    from documents import default_embed_texts
    from threadpoolctl import threadpool_info

    from membench.retrieval.embedding import load_model, unit_vectors

    vectors = unit_vectors(default_embed_texts(), load_model(), batch_size, threads=threads)
    np.save(output, vectors)
    blas = [f"{i['internal_api']} {i.get('architecture')}" for i in threadpool_info()
            if i["user_api"] == "blas"]
    print(", ".join(blas))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=2, help=argparse.SUPPRESS)
    parser.add_argument("--batch-size", type=int, default=8, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.threads, args.batch_size)
        return
    from membench.retrieval.dense import GRID_SCALE

    reference = None
    largest = 0.0
    with tempfile.TemporaryDirectory() as scratch:
        for number, (core, blas_threads, disabled, threads, batch) in enumerate(CONFIGURATIONS):
            output = Path(scratch) / f"{number}.npy"
            env = {**os.environ, "OPENBLAS_CORETYPE": core, "OPENBLAS_NUM_THREADS": blas_threads}
            if disabled:
                env["NPY_DISABLE_CPU_FEATURES"] = disabled
            command = [sys.executable, __file__, "--child", str(output),
                       "--threads", str(threads), "--batch-size", str(batch)]
            result = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
            vectors = np.load(output)
            reference = vectors if reference is None else reference
            difference = float(np.abs(vectors - reference).max())
            flips = int((np.rint(vectors * GRID_SCALE) != np.rint(reference * GRID_SCALE)).sum())
            largest = max(largest, difference)
            print(f"{core:<12} blas threads {blas_threads} numpy off [{disabled}] threads "
                  f"{threads} batch {batch}: kernel {result.stdout.strip()}, max abs "
                  f"difference {difference:.3e}, grid flips {flips} of {vectors.size}",
                  flush=True)
    print(f"largest difference {largest:.3e}; grid 2^-20 = {1 / GRID_SCALE:.3e} is "
          f"{1 / GRID_SCALE / max(largest, 1e-300):.3g}x coarser")


if __name__ == "__main__":
    main()
