"""Wall time and the peak memory of the largest process, per stage, with the stage's units
in process and on 1 and 2 local Dask workers (membench.execution, docs/cluster.md).

Not a test: machines here are shared and noisy, so compare placements within one run.

  python benchmarks/executor_bench.py [--stages backends users multiseed]
                                      [--workers 0 1 2 unset] [--params params.yaml]
                                      [--repeat N]
  python benchmarks/executor_bench.py --embed [--workers 0 1 2]

--embed measures dense work instead: the embed stage's default texts (after `dvc repro
extract`) embedded from an empty cache by membench.execution.embedding, each placement in
a fresh interpreter; it prints texts per second, per worker and in all.

Run from a checkout whose stage inputs exist (after `dvc repro`, or `dvc repro users` for
an overlay's story). Each stage runs as dvc.yaml says, its outputs redirected to a
temporary directory (persistent ones, such as embedding caches, copied there first), with
MEMBENCH_WORKERS set ("unset": left out, the automatic placement); the outputs must be the
same bytes for every placement (checked, machine-dependent cost files left out). The peak
is the largest VmHWM of any one process of the stage's tree (the stage, its workers, their
servers), sampled every 0.5 s (the walk over /proc costs some CPU itself: compare
placements, not machines).

--repeat N runs the placements N times, interleaved (1, 2, unset, 1, 2, unset, ...), so that
a spell of load on a shared machine falls on every placement alike; each cell gives the
median wall time (the range when N > 1) and the largest peak, and the speed-up is the
ratio of the medians. Two-worker runs of the users stage varied from 57.5 s to 67.5 s
one after another here.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
MACHINE_DEPENDENT = ("backend_costs.json",)


def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            parent = int(Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def _high_water_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def placement_env(workers: str) -> dict[str, str]:
    """MEMBENCH_WORKERS=workers; "unset" leaves it out (the automatic placement)."""
    env = {k: v for k, v in os.environ.items() if k != "MEMBENCH_WORKERS"}
    return env if workers == "unset" else {**env, "MEMBENCH_WORKERS": workers}


def run_stage(name: str, spec: dict, params: Path, workers: str, out: Path,
              log: Path) -> tuple[float, int]:
    words = shlex.split(spec["cmd"])
    outs = [next(iter(o)) if isinstance(o, dict) else o
            for o in spec.get("outs", []) + spec.get("metrics", [])]
    for path in outs:
        target = out / Path(path).name
        if Path(path).exists() and Path(path).is_file():
            shutil.copy(path, target)  # a persistent cache starts as the pipeline's
        words = [str(target) if word == path else word for word in words]
    words += ["--params", str(params)]
    env = {**placement_env(workers), "DVC_NO_ANALYTICS": "1"}
    started = time.monotonic()
    process = subprocess.Popen(words, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    # The stage's messages, each with the seconds since its start: where its units' time
    # went. Read as they come (an unread pipe would stop a long stage once full).
    copier = threading.Thread(target=_timed_lines, args=(process.stderr, log, started))
    copier.start()
    peak = 0
    while process.poll() is None:
        peak = max([peak] + [_high_water_kb(pid) for pid in _tree(process.pid)])
        time.sleep(0.5)
    wall = time.monotonic() - started
    copier.join()
    if process.returncode:
        tail = log.read_text(encoding="utf-8")[-2000:]
        raise SystemExit(f"{name} with MEMBENCH_WORKERS={workers} failed:\n{tail}")
    return wall, peak


def _timed_lines(stream, log: Path, started: float) -> None:
    with log.open("w", encoding="utf-8") as sink:
        for line in stream:
            sink.write(f"{time.monotonic() - started:9.1f} {line}")
            sink.flush()


EMBED_SCRIPT = """
import sys, time
sys.path.insert(0, "benchmarks")
from documents import default_embed_texts
from membench.execution.embedding import embed_missing
from membench.retrieval.embedding import DEFAULT_MODEL_ID, load_model
from membench.retrieval.embedding_cache import EmbeddingCache
texts = default_embed_texts()
load_model(DEFAULT_MODEL_ID)
started = time.monotonic()
embed_missing(EmbeddingCache(), DEFAULT_MODEL_ID, texts, 8, lambda line: None)
print(len(texts), time.monotonic() - started)
"""


def embed_rates(placements: list[str]) -> None:
    print("| placement | texts | wall | texts/s | texts/s per worker |")
    print("|---|---|---|---|---|")
    for workers in placements:
        done = subprocess.run(["python", "-c", EMBED_SCRIPT], cwd=ROOT, capture_output=True,
                              text=True, env=placement_env(workers),
                              check=True)
        count, wall = done.stdout.split()
        rate = int(count) / float(wall)
        per = (f"{rate / int(workers):.1f}" if workers.isdigit() and int(workers)
               else "(2 threads in process)")
        print(f"| MEMBENCH_WORKERS={workers} | {count} | {float(wall):.1f} s | {rate:.1f} | "
              f"{per} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stages", nargs="+", default=["backends", "users", "multiseed"])
    parser.add_argument("--workers", nargs="+", default=["0", "1", "2"])
    parser.add_argument("--params", type=Path, default=Path("params.yaml"))
    parser.add_argument("--embed", action="store_true", help="measure embedding instead")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each placement, interleaved (median reported)")
    parser.add_argument("--logs", type=Path,
                        default=Path(tempfile.gettempdir()) / "membench-executor-bench",
                        help="where each run's messages go, timed from its start")
    args = parser.parse_args()
    if args.embed:
        embed_rates(args.workers)
        return
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    print(f"| stage | {' | '.join(f'MEMBENCH_WORKERS={w}' for w in args.workers)} | "
          f"speed-up of the last over the one before |")
    print(f"|---|{'---|' * len(args.workers)}---|")
    if args.repeat < 1:
        raise SystemExit("--repeat must be at least 1")
    for name in args.stages:
        runs: dict[str, list[tuple[float, int]]] = {workers: [] for workers in args.workers}
        written = []
        for round_ in range(args.repeat):
            for workers in args.workers:
                with tempfile.TemporaryDirectory(prefix="executor-bench-") as directory:
                    out = Path(directory)
                    args.logs.mkdir(parents=True, exist_ok=True)
                    log = args.logs / f"{name}-workers-{workers}-{round_ + 1}.log"
                    wall, peak = run_stage(name, stages[name], args.params.resolve(), workers,
                                           out, log)
                    print(f"{name}, MEMBENCH_WORKERS={workers}: {wall:.1f} s, "
                          f"{peak / 1024:.0f} MiB (messages: {log})", file=sys.stderr,
                          flush=True)
                    written.append(_digests(out))
                runs[workers].append((wall, peak))
        walls = [statistics.median(wall for wall, _ in runs[w]) for w in args.workers]
        cells = [_cell(runs[w]) for w in args.workers]
        differ = sorted({path for w in written for path in set(w) | set(written[0])
                         if w.get(path) != written[0].get(path)})
        print(f"| {name} | {' | '.join(cells)} | {walls[-2 if len(walls) > 1 else -1] / walls[-1]:.2f}x"
              f"{'' if not differ else ' (OUTPUTS DIFFER: ' + ', '.join(differ) + ')'} |",
              flush=True)


def _cell(runs: list[tuple[float, int]]) -> str:
    """Median wall time (and the range of several runs), the largest peak."""
    walls = sorted(wall for wall, _ in runs)
    spread = f" ({walls[0]:.1f} to {walls[-1]:.1f})" if len(walls) > 1 else ""
    return (f"{statistics.median(walls):.1f} s{spread}, "
            f"{max(peak for _, peak in runs) / 1024:.0f} MiB")


def _digests(out: Path) -> dict[str, str]:
    """Every output file's SHA-256 by its path under `out` (a dataset is a directory)."""
    return {path.relative_to(out).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(out.rglob("*"))
            if path.is_file() and path.name not in MACHINE_DEPENDENT}


if __name__ == "__main__":
    main()
