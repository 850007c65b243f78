"""Wall time and peak memory of a cold `dvc repro`, with and without the multi-seed stage,
and of single stages.

Not a test: machines here are shared and noisy, so read the figures, compare ratios
within one run, and record them in docs/benchmarks.md.

  python benchmarks/pipeline_bench.py [--before REV]

`--before` (default: the foundation commit, before the multi-seed stage existed) is also
exported into a fresh copy and timed, so the "within 2x" budget is checked against the
real earlier pipeline rather than an estimate.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
FOUNDATION = "451e392"  # last commit before the multi-seed, plots and summary stages
OUTPUT_DIRS = ["data/corpus.parquet", "data/scenario", "data/fact_records.parquet",
               "data/index.parquet", "data/outcomes.parquet", "data/stored.parquet"]


# Runs one command in a fresh interpreter and reports the peak RSS of its process tree's
# largest process, so each figure belongs to that command alone.
_MEASURE = (
    "import resource, subprocess, sys\n"
    "subprocess.run(sys.argv[1:], check=True, capture_output=True)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def stage_cmd(cwd: Path, name: str) -> list[str]:
    """The stage's command with the paths dvc.yaml passes (the commands have no defaults)."""
    return shlex.split(yaml.safe_load((cwd / "dvc.yaml").read_text())["stages"][name]["cmd"])


def timed(cwd: Path, *args: str) -> tuple[float, float]:
    """Seconds and peak RSS (MiB) of the largest process the command ran."""
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _MEASURE, *args], cwd=cwd, env=env,
                          check=True, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    return elapsed, int(done.stdout.split()[-1]) / 1024


def fresh_copy(rev: str | None = None) -> Path:
    """The tracked files (of the working tree, or of `rev`) in a new git repository."""
    target = Path(tempfile.mkdtemp(prefix="membench-bench-"))
    if rev:
        archive = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    else:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                                check=True).stdout.decode().split("\0")
        for name in filter(None, listed):
            if (ROOT / name).is_file():
                (target / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, target / name)
    for name in OUTPUT_DIRS:
        path = target / name
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
    subprocess.run(["git", "init", "-q"], cwd=target, check=True)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=FOUNDATION,
                        help="revision to time as the pipeline before this change")
    args = parser.parse_args()
    copy = fresh_copy()
    try:
        cold, cold_peak = timed(copy, "dvc", "repro", "--force")
        # Same pipeline with the embedding cache warm: every stage runs, no model compute.
        cached, _ = timed(copy, "dvc", "repro", "--force")
        without, _ = timed(copy, "dvc", "repro", "--force", "policies")
        multiseed, multiseed_peak = timed(copy, *stage_cmd(copy, "multiseed"))
        policies, policies_peak = timed(copy, *stage_cmd(copy, "policies"))
        (copy / "data/embedding_cache.parquet").unlink()
        embed, embed_peak = timed(copy, *stage_cmd(copy, "embed"))
        warm, _ = timed(copy, "dvc", "repro")
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    old = fresh_copy(args.before)
    try:
        before, before_peak = timed(old, "dvc", "repro", "--force")
    finally:
        shutil.rmtree(old, ignore_errors=True)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print(f"cold dvc repro --force, before ({args.before}): {before:6.2f} s   "
          f"peak RSS {before_peak:7.1f} MiB")
    print(f"cold dvc repro --force, now            : {cold:6.2f} s   peak RSS "
          f"{cold_peak:7.1f} MiB   (includes embedding every text)")
    print(f"dvc repro --force, embeddings cached   : {cached:6.2f} s   "
          f"({cached / before:.2f}x before)")
    print(f"embed stage alone, cold cache          : {embed:6.2f} s   peak RSS "
          f"{embed_peak:7.1f} MiB")
    print(f"cold dvc repro --force policies (no multiseed, plots, report): {without:6.2f} s")
    print(f"multiseed stage alone  : {multiseed:6.2f} s   peak RSS {multiseed_peak:7.1f} MiB")
    print(f"policies stage alone   : {policies:6.2f} s   peak RSS {policies_peak:7.1f} MiB")
    print(f"no-change dvc repro    : {warm:6.2f} s")


if __name__ == "__main__":
    main()
