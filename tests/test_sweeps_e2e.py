"""The README's sweeps in a temporary clone: a queued seed sweep (docs/sweeps.md's range
syntax, one seed), a top-k and a session-count experiment run by two queue workers, then
`dvc exp show --json` with the summary's columns. Two multi-seed seeds, two backends and short filler replies in the clone keep each
experiment short."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from pipeline_clone import copy_clone

# One worker runs the module: its fixture is the whole sweep.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("sweeps")]
GIT = ("git", "-c", "user.name=t", "-c", "user.email=t@t")


def sh(cwd: Path, *args: str) -> str:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1",
           # experiments are git commits: give them an author where none is configured (CI)
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def sweep(built_clone, tmp_path_factory) -> list[dict]:
    """Runs the sweeps as the README does, after a `dvc repro`: a copy of the run's shared
    built clone (tests/pipeline_clone.py), whose .dvc/cache spares the experiments the
    stages and embeddings they share with the default run. Returns every experiment's data
    from exp show."""
    clone = copy_clone(built_clone, tmp_path_factory.mktemp("sweep") / "clone")
    params = clone / "params.yaml"
    text = params.read_text()
    start = text.index("  seeds: [")
    text = text.replace(text[start:text.index("]", start) + 1], "  seeds: [42, 1]")
    # Two backends that need no server: the PostgreSQL ones take minutes per experiment
    # (tests/test_pipeline_e2e.py runs the default list).
    start = text.index("  names: [sqlite")
    text = text.replace(text[start:text.index("]", start) + 1],
                        "  names: [sqlite, langgraph_memory]")
    # Two rates and one seed of the extraction sweep (the default is 8 x 5 runs).
    for key, value in (("  rates: [", "  rates: [0.0, 0.5]"), ("  seeds: [1, 2, 3", "  seeds: [1]")):
        start = text.index(key)
        text = text.replace(text[start:text.index("]", start) + 1], value)
    # Filler replies of 4 code lines, not 30: a seed draws other filler, so each experiment
    # embeds its whole transcript, and the encoder's time grows with the tokens.
    text = text.replace("  lines_per_reply: 30 ", "  lines_per_reply: 4 ", 1)
    assert "  lines_per_reply: 4 " in text
    # A seed draws other user questions: the LLM extractor's requests are not in the
    # committed cache, so the sweeps run without it, as docs/sweeps.md says.
    text = text.replace("  run: true ", "  run: false", 1)
    assert "  run: false" in text
    # No memory system: each experiment would replay mem0 (the systems stage reads the seed);
    # tests/test_pipeline_e2e.py runs it.
    text = text.replace("  names: [mem0_qdrant] ", "  names: [] ", 1)
    assert "  names: [] " in text
    params.write_text(text)
    sh(clone, "git", "add", "-A")
    sh(clone, *GIT, "commit", "-qm", "sweep params")  # experiments start from a commit
    try:
        # One seed: the top-k experiment keeps seed 42, and its transcript is the other seed's
        # (top-k changes what is retrieved, not the transcript).
        sh(clone, "dvc", "exp", "run", "--queue", "-S", "scenario.seed=range(1,2)")
        # Their contexts change: no reader, as docs/sweeps.md says (the seeds' reader replays
        # the committed cache: its policies inject no filler).
        sh(clone, "dvc", "exp", "run", "--queue", "-n", "topk10",
           "-S", "policies.retrieval_top_k=10", "-S", "reader.policies=[]")
        sh(clone, "dvc", "exp", "run", "--queue", "-n", "sessions40",
           "-S", "scenario.sessions=40", "-S", "scenario.probe_days=[10,20,40]",
           "-S", "reader.policies=[]")
        # The workers are daemons that inherit the starting command's stdout: read it from a
        # file, not a pipe, or waiting for the pipe's end waits for the workers to exit, and
        # an idle worker whose shutdown monitor died (seen under load) never exits.
        with open(clone / "queue-start.log", "w") as log:
            subprocess.run(["dvc", "queue", "start", "-j", "2"], cwd=clone, stdout=log,
                           stderr=subprocess.STDOUT, env={**os.environ, "DVC_NO_ANALYTICS": "1"},
                           timeout=120, check=True)
        deadline = time.monotonic() + 1800
        while time.monotonic() < deadline:
            status = sh(clone, "dvc", "queue", "status")
            if "Queued" not in status and "Running" not in status:
                break
            time.sleep(2)
        else:
            pytest.fail(f"the queued experiments did not finish in 30 minutes:\n{status}")
        assert "Failed" not in status, sh(clone, "dvc", "queue", "logs", "sessions40")
    finally:
        subprocess.run(["dvc", "queue", "stop", "--kill"], cwd=clone, capture_output=True,
                       check=False, timeout=120)
    shown = json.loads(sh(clone, "dvc", "exp", "show", "--json"))
    experiments = []
    for entry in shown:
        for exp in entry.get("experiments") or []:
            for rev in exp["revs"]:
                experiments.append({"name": rev["name"], **rev["data"]})
    return experiments


def _summary(exp: dict) -> dict:
    return exp["metrics"]["reports/summary.json"]["data"]


def _params(exp: dict) -> dict:
    return exp["params"]["params.yaml"]["data"]


def test_every_queued_experiment_ran(sweep):
    assert len(sweep) == 3
    seeds = sorted(_params(e)["scenario"]["seed"] for e in sweep)
    assert seeds == [1, 42, 42]


def test_exp_show_has_the_flat_summary_columns(sweep):
    for exp in sweep:
        summary = _summary(exp)
        assert summary["profile"]["current_only"] > 0
        assert set(summary["bm25_transcript"]) == {"current_only", "conflict",
                                                   "stale_or_missing", "leaked",
                                                   "tokens_literal", "tokens_paraphrase"}
        assert "reports/metrics.json" not in exp["metrics"]


def test_the_swept_params_move_the_metrics(sweep):
    by_name = {e["name"]: e for e in sweep}
    topk, sessions = by_name["topk10"], by_name["sessions40"]
    (seed,) = [e for e in sweep if e["name"] not in ("topk10", "sessions40")]
    assert _params(topk)["policies"]["retrieval_top_k"] == 10
    assert _params(topk)["scenario"]["sessions"] == 30  # queued runs start from HEAD
    assert _params(sessions)["scenario"]["probe_days"] == [10, 20, 40]
    # A wider top-k injects more text per probe.
    assert _summary(topk)["bm25_transcript"]["tokens_literal"] > \
        _summary(seed)["bm25_transcript"]["tokens_literal"]
    # Seeds draw other filler code: the transcript's size (and tokens) differ between seed
    # 1 and the top-k experiment's seed 42.
    assert _summary(seed)["full_transcript"]["tokens_literal"] != \
        _summary(topk)["full_transcript"]["tokens_literal"]
    # 40 sessions: a longer transcript by the last probe day.
    assert _summary(sessions)["full_transcript"]["tokens_literal"] > \
        max(_summary(e)["full_transcript"]["tokens_literal"] for e in (seed, topk))
