"""The filler corpus: the shipped snapshot, archives read like directories, clean failures."""

from __future__ import annotations

import gzip
import hashlib
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from membench.cli import app
from membench.io.corpus import CorpusError, glob_pattern, read_corpus, selected_files, write_archive

runner = CliRunner()
EXCLUDE = ["skip/*", "*/tests/*"]


def _unwrapped(output: str) -> str:
    """Typer's error box wraps long lines (a temp path) at the terminal width."""
    return " ".join(output.replace("│", " ").split())


@pytest.fixture()
def tree(tmp_path) -> Path:
    """Nested files: matched, excluded, wrong suffix, and a near-miss name."""
    root = tmp_path / "tree"
    files = {"a.py": "top = 1\n", "pkg/b.py": "b = 2\r\nc = 3\n", "pkg/deep/c.py": "c = 4\n",
             "pkg/tests/t.py": "excluded\n", "skip/s.py": "excluded\n", "notes.txt": "no\n",
             "pkg/bpy": "no\n", "uni/ünï.py": "x = 'é'\n"}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(text.encode())
    return root


def test_an_archive_reads_exactly_like_its_directory(tree, tmp_path):
    archive = tmp_path / "snapshot.tar.gz"
    archive.write_bytes(write_archive(selected_files(str(tree), "**/*.py", EXCLUDE)))
    from_dir = read_corpus(str(tree), "**/*.py", EXCLUDE)
    from_archive = read_corpus(str(archive), "**/*.py", EXCLUDE)
    assert [f.path for f in from_dir.files] == ["a.py", "pkg/b.py", "pkg/deep/c.py",
                                                  "uni/ünï.py"]
    assert from_archive.files == from_dir.files
    assert from_archive.sha256 == from_dir.sha256
    assert from_dir.files[1].lines == ("b = 2", "c = 3", "")


def test_archives_are_reproducible(tree):
    files = selected_files(str(tree), "**/*.py", EXCLUDE)
    first = write_archive(files)
    assert write_archive(list(reversed(files))) == first
    assert gzip.decompress(first)  # a plain gzip stream, no name or time in its header
    assert first[4:8] == b"\0\0\0\0"


@pytest.mark.parametrize("pattern", ["**/*.py", "*.py", "pkg/*.py", "pkg/**/*.py", "**/?.py",
                                     "**/deep/*"])
def test_archive_glob_selects_what_path_glob_selects(tree, pattern):
    on_disk = {p.relative_to(tree).as_posix() for p in tree.glob(pattern) if p.is_file()}
    every_file = [p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file()]
    assert {name for name in every_file if glob_pattern(pattern).match(name)} == on_disk


def test_glob_metacharacters_are_literal_outside_wildcards():
    assert glob_pattern("a+b.py").match("a+b.py")
    assert not glob_pattern("a.py").match("aXpy")
    assert isinstance(glob_pattern("*.py"), re.Pattern)


def test_the_shipped_snapshot_is_the_pinned_one(repo_root, default_params):
    """The archive named in params.yaml, its hash as published in data/corpus/README.md,
    and the corpus hash every committed result was made with."""
    c = default_params.scenario.corpus
    archive = repo_root / c.source
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    assert digest in (repo_root / "data/corpus/README.md").read_text(encoding="utf-8")
    corpus = read_corpus(c.source, c.glob, c.exclude, base=repo_root)
    assert corpus.sha256 == "45554d8d50ac2a5f2dc5fd910eec48bc0d2634e2b3e9ff7328a3dd642b38999f"
    assert len(corpus.files) == 734
    assert (repo_root / "data/corpus/LICENSE-CPython.txt").is_file()


def test_missing_and_broken_archives_fail_with_the_param_named(tmp_path):
    with pytest.raises(CorpusError, match="scenario.corpus.source: archive .* does not exist"):
        read_corpus(str(tmp_path / "absent.tar.gz"), "**/*.py", [])
    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(b"not a gzip stream")
    with pytest.raises(CorpusError, match="cannot read archive"):
        read_corpus(str(broken), "**/*.py", [])
    with pytest.raises(CorpusError, match="is not a directory"):
        read_corpus(str(tmp_path / "nowhere"), "**/*.py", [])


def test_corpus_snapshot_command_writes_a_readable_archive(tree, tmp_path, repo_root,
                                                           monkeypatch):
    monkeypatch.chdir(repo_root)
    out = tmp_path / "out" / "snap.tar.gz"
    result = runner.invoke(app, ["corpus-snapshot", "--source", str(tree), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "corpus-snapshot: 5 files" in result.output  # params exclude */tests/*
    assert [f.path for f in read_corpus(str(out), "**/*.py", []).files] == \
        ["a.py", "pkg/b.py", "pkg/deep/c.py", "skip/s.py", "uni/ünï.py"]


def test_corpus_snapshot_refuses_a_bad_target_and_writes_nothing(tree, tmp_path, repo_root,
                                                                  monkeypatch):
    monkeypatch.chdir(repo_root)
    result = runner.invoke(app, ["corpus-snapshot", "--source", str(tree),
                                 "--out", str(tmp_path / "snap.zip")])
    assert result.exit_code == 2 and "must end in .tar.gz" in _unwrapped(result.output)
    result = runner.invoke(app, ["corpus-snapshot", "--source", str(tmp_path / "none"),
                                 "--out", str(tmp_path / "snap.tar.gz")])
    assert result.exit_code == 1 and "is not a directory" in result.output
    assert list(tmp_path.iterdir()) == [tree]
