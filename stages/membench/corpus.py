"""Reads the filler corpus: the source files whose lines fill the assistant's replies."""

from __future__ import annotations

import fnmatch
import hashlib
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from membench.core.scenario import CorpusFile

STDLIB = "stdlib"  # params value meaning the running Python's standard library sources


class CorpusError(ValueError):
    """The corpus directory is missing or holds no usable file."""


@dataclass(frozen=True)
class Corpus:
    root: Path
    files: tuple[CorpusFile, ...]
    sha256: str  # over every file's relative path and bytes, in path order


def resolve_root(directory: str) -> Path:
    if directory == STDLIB:
        return Path(sysconfig.get_paths()["stdlib"])
    return Path(directory)


def read_corpus(directory: str, glob: str, exclude: list[str]) -> Corpus:
    root = resolve_root(directory)
    if not root.is_dir():
        raise CorpusError(f"scenario.corpus.dir: {root} is not a directory")
    digest = hashlib.sha256()
    files = []
    for path in sorted(root.glob(glob), key=lambda p: p.relative_to(root).as_posix()):
        relative = path.relative_to(root).as_posix()
        if not path.is_file() or any(fnmatch.fnmatchcase(relative, p) for p in exclude):
            continue
        raw = path.read_bytes()
        digest.update(relative.encode() + b"\0" + hashlib.sha256(raw).digest())
        text = raw.decode("utf-8", errors="replace")
        files.append(CorpusFile(relative, tuple(text.replace("\r\n", "\n").split("\n"))))
    if not files:
        raise CorpusError(
            f"scenario.corpus: no file under {root} matches glob {glob!r} "
            f"outside exclude {exclude!r}"
        )
    return Corpus(root, tuple(files), digest.hexdigest())
