"""Time and peak memory per stage of the in-memory bench for 30, 300 and 3,000 sessions,
and of a generated many-users deployment (--users).

Not a test: machines here are shared and noisy, so compare sizes within one run (the
issue's budget is a ratio: 3,000 sessions at most 11x the time of 300, and at most 2 GB).

  python benchmarks/scale_bench.py [--sessions 30 300 3000] [--audit] [--write]

Each size runs in a fresh interpreter: the default params with `scenario.sessions` set
and the probe days stretched as the facts are (10/30, 20/30 and 30/30 of the sessions),
the policies that need no embeddings (what `membench bench` runs), stage by stage as
`membench.commands.inmemory.run_in_memory` does. A stage's peak is the largest resident
set while it ran (Linux: the high-water mark is reset before each stage through
/proc/self/clear_refs, and read from VmHWM after it); "whole process" is the whole run's.
Each cell gives wall time, CPU time (user + system, all threads) and that peak: on a busy
machine the wall time stretches with the other jobs, the CPU time much less.
--write replaces the block between the scale-bench markers in docs/benchmarks.md (the one
place measurement tables live; the README links it) with the table.

  python benchmarks/scale_bench.py --users data/scale-users.params.yaml [--write]

measures the generated deployment the overlay describes instead (params.yaml with the
overlay's keys over it): the generate, scenario and users stages' work and the report's
reading of the users table, the two modes apart; --write fills the scale-users block.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUDGET_GB, BUDGET_RATIO = 2.0, 11.0
BEGIN, END = "<!-- scale-bench:begin -->", "<!-- scale-bench:end -->"
USERS_BEGIN, USERS_END = "<!-- scale-users:begin -->", "<!-- scale-users:end -->"
TABLES = ROOT / "docs" / "benchmarks.md"  # where --write puts both blocks


def _hwm_reset() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass  # not Linux: stage peaks become the process peak so far


def _hwm_mib() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def stage(name, work):
    """Runs work() as one measured stage: prints its wall and CPU time and peak memory."""
    _hwm_reset()
    began, cpu = time.perf_counter(), _cpu()
    value = work()
    print(json.dumps({"stage": name, "seconds": time.perf_counter() - began,
                      "cpu": _cpu() - cpu, "peak_mib": _hwm_mib()}), flush=True)
    return value


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def child(sessions: int, audit: bool) -> None:
    """One size, stage by stage; prints one JSON line per stage."""
    start = time.perf_counter()
    from dataclasses import replace

    from membench.commands.parameters import read_params
    from membench.extraction.extractors import extractor_for
    from membench.io.corpus import read_corpus
    from membench.io.scenario_file import read_scenario_spec
    from membench.io.vocabulary import load_token_counter
    from membench.memory.policies import build_policies, without_embeddings
    from membench.plugins import load_plugins
    from membench.retrieval.retrievers import IndexCache
    from membench.scenario.build import build_scenario
    from membench.scoring.audit import run_audit
    from membench.scoring.bench import run_bench

    params = read_params(ROOT / "params.yaml")
    s = params.scenario
    last = max(s.probe_days)
    days = tuple(sorted({max(1, round(d * sessions / last)) for d in s.probe_days}))
    s = replace(s, sessions=sessions, probe_days=days)
    print(json.dumps({"stage": "imports", "seconds": time.perf_counter() - start,
                      "cpu": _cpu(), "peak_mib": _hwm_mib()}), flush=True)
    counter = stage("vocabulary", lambda: load_token_counter(None))
    corpus = stage("corpus", lambda: read_corpus(s.corpus.source, s.corpus.glob,
                                                  s.corpus.exclude, base=ROOT))
    spec = read_scenario_spec(ROOT / s.file)
    scenario = stage("scenario", lambda: build_scenario(spec, corpus.files, s.shape()))
    load_plugins()
    extract = extractor_for(params.extractor, params.extraction)
    records = stage("extract", lambda: extract(scenario))
    policies = without_embeddings(build_policies(params.policies))
    indexes = IndexCache()
    # keep_contexts=False, as `membench bench` runs it: its table reads no context
    stage("bench", lambda: run_bench(scenario, records, policies, counter.count_lines, indexes,
                                     keep_contexts=False))
    if audit:
        stage("audit", lambda: run_audit(scenario, records, policies, indexes))
    print(json.dumps({"stage": "process", "seconds": time.perf_counter() - start,
                      "cpu": _cpu(), "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "exchanges": len(scenario.exchanges), "probe_days": list(days)}),
          flush=True)


def child_users(overlay: Path) -> None:
    """A generated deployment (params.yaml with the overlay's keys over it), stage by
    stage as the generate, scenario and users stages and the report's reading do it."""
    start = time.perf_counter()
    import tempfile
    import tomllib

    import yaml

    from membench.extraction.extractors import EXTRACTORS, extractor_for
    from membench.io.corpus import read_corpus
    from membench.io.datasets import read_user_batches, user_partitions
    from membench.io.inputs import BATCH_ROWS
    from membench.io.outputs import staged_outputs
    from membench.io.scenario_file import scenario_toml
    from membench.io.tables import (
        USER_OUTCOMES_FILE_SCHEMA,
        USER_OUTCOMES_SCHEMA,
        user_outcome_summary,
        user_outcomes_table,
    )
    from membench.memory.policies import build_policies, without_embeddings
    from membench.params import parse_params
    from membench.plugins import load_plugins
    from membench.scenario.deployment import build_user_scenarios
    from membench.scenario.generate import generate_scenario
    from membench.scenario.spec import parse_scenario_spec
    from membench.scoring.users import (
        LeakClassifier,
        build_deployment,
        run_namespaced,
        run_shared,
    )

    load_plugins()
    data = yaml.safe_load((ROOT / "params.yaml").read_text())
    for section, keys in yaml.safe_load(overlay.read_text()).items():
        data.setdefault(section, {}).update(keys)
    params = parse_params(data, set(EXTRACTORS))
    s, g = params.scenario, params.generate
    print(json.dumps({"stage": "imports", "seconds": time.perf_counter() - start,
                      "cpu": _cpu(), "peak_mib": _hwm_mib()}), flush=True)
    corpus = stage("corpus", lambda: read_corpus(s.corpus.source, s.corpus.glob,
                                                  s.corpus.exclude, base=ROOT))
    text = stage("generate", lambda: scenario_toml(generate_scenario(g), "bench"))
    spec = stage("scenario file", lambda: parse_scenario_spec(tomllib.loads(text)))
    users = stage("build users", lambda: build_user_scenarios(spec, corpus.files, s.shape()))
    deployment = stage("extract", lambda: build_deployment(
        users, extractor_for(params.extractor, params.extraction)))
    del users
    policies = without_embeddings(build_policies(params.policies))
    classifier = LeakClassifier({u.name: u.scenario.facts for u in deployment.users})
    def progress(message: str) -> None:  # on stderr, which the parent passes through
        print(f"{time.perf_counter() - start:8.1f} s  {message}", file=sys.stderr, flush=True)

    namespaced = stage("namespaced", lambda: run_namespaced(deployment, policies, classifier,
                                                             progress))
    shared = stage("shared", lambda: run_shared(deployment, policies, classifier, progress))
    rows = [row for day in s.probe_days for position in range(len(deployment.users))
            for row in namespaced.pop((day, position))] + [
        row for day in s.probe_days for row in shared.pop(day)]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "users_outcomes"

        def write(table) -> None:
            with staged_outputs() as outputs:
                outputs.dataset(out, USER_OUTCOMES_FILE_SCHEMA, user_partitions([table], s.seed))

        stage("outcomes table", lambda: write(user_outcomes_table(rows)))
        del rows
        summary = stage("report's reading", lambda: user_outcome_summary(
            read_user_batches(out, USER_OUTCOMES_SCHEMA, BATCH_ROWS)))
        size = sum(file.stat().st_size for file in out.rglob("*") if file.is_file())
    counts = summary.counts["modes"]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"stage": "process", "seconds": time.perf_counter() - start,
                      "cpu": _cpu(), "peak_mib": peak,
                      "story": f"{g.facts} facts x {g.users} users, {s.sessions:,} sessions "
                               f"x {s.exchanges_per_session} exchanges, probe days "
                               f"{list(s.probe_days)}",
                      "outcomes": sum(c["probes"] for m in counts.values() for c in m.values()),
                      "parquet_mib": size / 2**20,
                      "leaks": {mode: sum(c["cross_user_leak"] for c in m.values())
                                for mode, m in counts.items()}}), flush=True)


def measure(sessions: int, audit: bool) -> dict[str, dict]:
    args = [sys.executable, __file__, "--child", str(sessions)] + (["--audit"] if audit else [])
    done = subprocess.run(args, cwd=ROOT, check=True, capture_output=True, text=True)
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {row["stage"]: row for row in rows}


def table(results: dict[int, dict[str, dict]]) -> str:
    sizes = sorted(results)
    stages = [name for name in results[sizes[0]] if name != "process"]
    head = "| stage | " + " | ".join(f"{n:,} sessions" for n in sizes) + " |"
    lines = [head, "|---" * (len(sizes) + 1) + "|"]
    for name in stages + ["process"]:
        cells = [f"{results[n][name]['seconds']:.1f} s ({results[n][name]['cpu']:.1f} s CPU), "
                 f"{results[n][name]['peak_mib']:,.0f} MiB" for n in sizes]
        label = "whole process" if name == "process" else name
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# (smaller size, larger size): the larger's peak budget in GB; its time at most 11x the
# smaller's. 30,000 sessions is issue 24's target (one user, about 106M transcript tokens).
BUDGETS = {(300, 3000): BUDGET_GB, (3000, 30000): 4.0}


def verdict(results: dict[int, dict[str, dict]]) -> list[str]:
    lines = []
    for (small_size, big_size), budget_gb in BUDGETS.items():
        if not {small_size, big_size} <= set(results):
            continue
        big, small = results[big_size]["process"], results[small_size]["process"]
        ratio, cpu_ratio = big["seconds"] / small["seconds"], big["cpu"] / small["cpu"]
        gb = big["peak_mib"] / 1024
        lines.append(
            f"{big_size:,} sessions: peak {gb:.2f} GB (budget {budget_gb} GB: "
            f"{'met' if gb <= budget_gb else 'MISSED'}), wall time {ratio:.1f}x that of "
            f"{small_size:,} sessions (budget {BUDGET_RATIO:.0f}x: "
            f"{'met' if ratio <= BUDGET_RATIO else 'MISSED'}), CPU time {cpu_ratio:.1f}x.")
    return lines


def measure_users(overlay: Path) -> dict[str, dict]:
    args = [sys.executable, __file__, "--child-users", str(overlay)]
    done = subprocess.run(args, cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True)
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {row["stage"]: row for row in rows}


def users_table(result: dict[str, dict]) -> str:
    process = result["process"]
    lines = [f"{process['story']}: {process['outcomes']:,} probe outcomes "
             f"({process['parquet_mib']:.1f} MiB of Parquet), cross-user leaks "
             + ", ".join(f"{mode} {n:,}" for mode, n in process["leaks"].items()), "",
             "| stage | wall time | CPU time | peak memory |", "|---|---:|---:|---:|"]
    for name, row in result.items():
        label = "whole process" if name == "process" else name
        lines.append(f"| {label} | {row['seconds']:,.1f} s | {row['cpu']:,.1f} s | "
                     f"{row['peak_mib']:,.0f} MiB |")
    return "\n".join(lines)


def write(path: Path, text: str, begin: str = BEGIN, end: str = END) -> None:
    doc = path.read_text()
    if begin not in doc or end not in doc:
        raise SystemExit(f"{path}: no {begin} ... {end} block to replace")
    head, rest = doc.split(begin, 1)
    path.write_text(head + begin + "\n" + text + "\n" + end + rest.split(end, 1)[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[30, 300, 3000])
    parser.add_argument("--audit", action="store_true",
                        help="also time the deletion audit (the policies stage runs it)")
    parser.add_argument("--write", action="store_true",
                        help=f"fill the table's block in {TABLES.relative_to(ROOT)}")
    parser.add_argument("--users", type=Path, metavar="OVERLAY",
                        help="instead, a generated deployment: params.yaml with this file's "
                             "keys over it (data/scale-users.params.yaml)")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child-users", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.audit)
        return
    if args.child_users:
        child_users(args.child_users)
        return
    if args.users:
        result = measure_users(args.users.resolve())
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        text = "\n".join([f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load "
                          f"average {load:.1f} at the end; `--users {args.users}`", "",
                          users_table(result)])
        print(text)
        if args.write:
            write(TABLES, text, USERS_BEGIN, USERS_END)
        return
    results = {n: measure(n, args.audit) for n in args.sessions}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    header = (f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
              f"{load:.1f} at the end; probe days "
              + ", ".join(f"{n:,}: {results[n]['process']['probe_days']}" for n in sorted(results)))
    text = "\n".join([header, "", table(results), "", *verdict(results)])
    print(text)
    if args.write:
        write(TABLES, text)


if __name__ == "__main__":
    main()
