"""Shared by tests/test_interrupts.py and tests/test_server_access.py: a scratch workspace
holding the backends and multiseed stages' inputs, each stage run as a real `membench`
process (the command dvc.yaml gives it) with a TMPDIR of its own, so that what it leaves
in the temp directory, and the processes naming it, can be counted.

The inputs are made cheaply: a small corpus, and vectors from a hash of each text instead
of the embedding model (HASH_VECTORS, a sitecustomize module), so no stage loads the model.
What the tests exercise (signals, servers, temporary directories) is not faked."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DVC_YAML = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))
INPUT_STAGES = ("corpus", "scenario", "embed_turns", "extract", "index", "embed", "policies")

HASH_VECTORS = """
import hashlib

import numpy as np

import membench.retrieval.embedding as embedding
from membench.retrieval.dense import snap_to_grid


def _vector(text):
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).normal(size=384)
    return snap_to_grid(v / np.linalg.norm(v))


def _embed_missing(cache, model_id, texts, batch_size):
    for text in cache.missing(model_id, texts):
        cache.put(model_id, text, _vector(text))


embedding.embed_missing = _embed_missing
"""


def small_corpus(target: Path) -> Path:
    """Forty files of numbered lines: fast to read and free of fact values."""
    target.mkdir(parents=True)
    for i in range(40):
        (target / f"module_{i:02}.py").write_text(
            "\n".join(f"value_{i}_{j} = compute({j})" for j in range(80)) + "\n")
    return target


def make_workspace(target: Path, backends: list[str], stores: list[str],
                   seeds: list[int]) -> Path:
    """The committed scenario and params, with a small corpus, the given backends, stores
    and multiseed seeds; `fake/` holds the sitecustomize module."""
    (target / "data").mkdir(parents=True)
    for name in ("scenario.toml", "article.toml"):
        shutil.copy(ROOT / "data" / name, target / "data" / name)
    corpus = small_corpus(target / "corpus")
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    params["scenario"]["corpus"] = {"source": str(corpus), "glob": "*.py", "exclude": []}
    params["backends"]["names"] = backends
    params["backends"]["stores"] = stores
    params["multiseed"]["seeds"] = seeds
    (target / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    (target / "fake").mkdir()
    (target / "fake" / "sitecustomize.py").write_text(HASH_VECTORS, encoding="utf-8")
    return target


def private_tmp() -> Path:
    """A TMPDIR for one stage run: short (the servers' unix socket paths must fit in 107
    bytes) and traversable (run as root, the servers run as `nobody`)."""
    path = Path(tempfile.mkdtemp(prefix="mbt-", dir="/tmp"))
    path.chmod(0o755)
    return path


def stage_command(name: str) -> list[str]:
    """The stage's command as dvc.yaml runs it, as `python -m membench.cli ...`."""
    words = shlex.split(DVC_YAML["stages"][name]["cmd"])
    assert words[:2] == ["membench", name], words
    return [sys.executable, "-m", "membench.cli", *words[1:]]


def stage_env(workspace: Path, tmp: Path) -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(workspace / "fake"),
                                         os.environ.get("PYTHONPATH", "")]))
    return {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": path, "DVC_NO_ANALYTICS": "1"}


def run_stage(workspace: Path, name: str, tmp: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(stage_command(name), cwd=workspace,
                          env={**stage_env(workspace, tmp), **env},
                          capture_output=True, text=True, timeout=900, check=False)


def start_stage(workspace: Path, name: str, tmp: Path) -> subprocess.Popen:
    return subprocess.Popen(stage_command(name), cwd=workspace, env=stage_env(workspace, tmp),
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)


def build_inputs(workspace: Path) -> None:
    tmp = private_tmp()
    try:
        for name in INPUT_STAGES:
            done = run_stage(workspace, name, tmp)
            assert done.returncode == 0, f"{name}: {done.stderr}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def processes_naming(text: str) -> set[int]:
    """Every process whose command line holds `text` (a server names its data directory)."""
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if text.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.add(int(pid))
        except OSError:
            continue
    return found


def children(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of a process's children."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()
            if int(stat[1]) == pid:
                command = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ")
                found.append((int(name), command.decode(errors="replace")))
        except OSError:
            continue
    return found
