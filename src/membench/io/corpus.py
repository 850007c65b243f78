"""Reads the filler corpus: the source files whose lines fill the assistant's replies.

A corpus source is a directory, the word "stdlib" (the running Python's standard
library), or a gzip-compressed tar archive such as the snapshot shipped in data/corpus/.
The default is the archive, so the filler, and with it every token count and BM25
row, does not depend on which Python patch release runs the bench. The same glob and
exclude patterns select files in all three, and the corpus SHA-256 covers only the
selected files' relative paths and bytes, so an archive made from a directory has the
same corpus SHA-256 as the directory.
"""

from __future__ import annotations

import fnmatch
import gzip
import hashlib
import io
import re
import sysconfig
import tarfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from membench.scenario.build import CorpusText

STDLIB = "stdlib"  # params value meaning the running Python's standard library sources
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")


class CorpusError(ValueError):
    """The corpus source is missing, unreadable or holds no usable file."""


@dataclass(frozen=True)
class Corpus:
    source: str  # as given in params ("stdlib" resolved to its directory)
    files: tuple[CorpusText, ...]
    sha256: str  # over every selected file's relative path and bytes, in path order


def glob_pattern(pattern: str) -> re.Pattern[str]:
    """A relative-path glob as a regex with Path.glob's meaning: a `**` segment spans
    zero or more directories; `*` and `?` never cross a `/`."""
    segments = []
    for segment in pattern.split("/"):
        if segment == "**":
            segments.append("(?:[^/]+/)*")
            continue
        translated = "".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c)
                             for c in segment)
        segments.append(translated + "/")
    return re.compile("".join(segments).removesuffix("/") + r"\Z", re.DOTALL)


def is_archive(source: str) -> bool:
    return source.endswith(ARCHIVE_SUFFIXES)


def resolve_source(source: str, base: Path = Path(".")) -> Path:
    if source == STDLIB:
        return Path(sysconfig.get_paths()["stdlib"])
    path = Path(source)
    return path if path.is_absolute() else base / path


def _directory_files(root: Path, glob: str,
                     keep: Callable[[str], bool]) -> Iterator[tuple[str, bytes]]:
    if not root.is_dir():
        raise CorpusError(f"scenario.corpus.source: {root} is not a directory")
    for path in root.glob(glob):
        name = path.relative_to(root).as_posix()
        if path.is_file() and keep(name):
            yield name, path.read_bytes()


def _archive_files(archive: Path, glob: str,
                   keep: Callable[[str], bool]) -> Iterator[tuple[str, bytes]]:
    if not archive.is_file():
        raise CorpusError(f"scenario.corpus.source: archive {archive} does not exist")
    selected = glob_pattern(glob)
    try:
        with tarfile.open(archive, mode="r:gz") as tar:
            for member in tar:
                if member.isfile() and selected.match(member.name) and keep(member.name):
                    handle = tar.extractfile(member)
                    assert handle is not None  # regular files always have data
                    yield member.name, handle.read()
    except (tarfile.TarError, OSError, EOFError) as error:
        raise CorpusError(f"scenario.corpus.source: cannot read archive {archive}: "
                          f"{error}") from None


def selected_files(source: str, glob: str, exclude: Iterable[str],
                   base: Path = Path(".")) -> list[tuple[str, bytes]]:
    """(relative path, bytes) of every file the glob selects outside exclude, by path.

    A relative source is taken from `base` (the project root)."""
    location = resolve_source(source, base)
    patterns = list(exclude)
    read = _archive_files if is_archive(source) else _directory_files
    chosen = sorted(read(location, glob, lambda name: not any(
        fnmatch.fnmatchcase(name, p) for p in patterns)))
    if not chosen:
        raise CorpusError(
            f"scenario.corpus: no file in {location} matches glob {glob!r} "
            f"outside exclude {patterns!r}"
        )
    return chosen


def read_corpus(source: str, glob: str, exclude: Iterable[str],
                base: Path = Path(".")) -> Corpus:
    """The selected files of a directory, "stdlib" or a .tar.gz archive, as text lines."""
    digest = hashlib.sha256()
    files = []
    for name, raw in selected_files(source, glob, exclude, base):
        digest.update(name.encode() + b"\0" + hashlib.sha256(raw).digest())
        text = raw.decode("utf-8", errors="replace")
        files.append(CorpusText(name, tuple(text.replace("\r\n", "\n").split("\n"))))
    shown = resolve_source(source).as_posix() if source == STDLIB else source
    return Corpus(shown, tuple(files), digest.hexdigest())


def write_archive(files: Iterable[tuple[str, bytes]]) -> bytes:
    """A reproducible .tar.gz of (relative path, bytes): sorted names, zero times and
    owners, mode 0644, no name or time in the gzip header, so equal files give equal bytes."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, raw in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(raw), 0o644, 0
            tar.addfile(info, io.BytesIO(raw))
    return gzip.compress(buffer.getvalue(), compresslevel=9, mtime=0)
