"""Reads a public benchmark file for an importer and writes the imported scenarios.

The source files are large (LongMemEval_M is one JSON array of about 2.7 GB), so a JSON
array is read one element at a time and a JSONL file one line at a time: memory holds one
item, never the file. Every problem names the file, the item and what is wrong."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from membench.io.outputs import staged_outputs

CHUNK = 1 << 20  # characters read at a time
MANIFEST = "manifest.json"


class ImportFileError(ValueError):
    """The source file is unreadable or not in the layout its importer reads."""


def file_sha256(path: Path) -> tuple[str, int]:
    """The file's SHA-256 and size, read in chunks."""
    digest, size = hashlib.sha256(), 0
    with path.open("rb") as stream:
        while block := stream.read(CHUNK):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


def _open(path: Path) -> TextIO:
    if not path.is_file():
        raise ImportFileError(f"{path}: no such file")
    return path.open(encoding="utf-8")


class _Buffer:
    """A window on a text stream: grows on demand, drops what was consumed."""

    def __init__(self, stream: TextIO) -> None:
        self.stream, self.text, self.pos, self.eof = stream, "", 0, False

    def more(self) -> bool:
        if self.eof:
            return False
        block = self.stream.read(max(CHUNK, len(self.text) - self.pos))  # doubles a long item
        if not block:
            self.eof = True
            return False
        self.text = self.text[self.pos:] + block
        self.pos = 0
        return True

    def next_char(self) -> str:
        """The next non-blank character (not consumed), or "" at the end of the file."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more():
                return ""


def _cut_short(error: json.JSONDecodeError, text: str, margin: int) -> bool:
    """Whether the decoder may have stopped because the item goes on past the text read so
    far (a cut literal or number ends within `margin` characters of it) rather than at a
    mistake inside the item, which is reported at once, without reading the rest."""
    return (error.msg.startswith("Unterminated string")
            or error.pos >= len(text.rstrip()) - margin)


def iter_json_array(path: Path) -> Iterator[tuple[int, Any]]:
    """(index, element) for each element of the file's top-level JSON array, one at a time."""
    decoder = json.JSONDecoder()
    try:
        with _open(path) as stream:
            buffer = _Buffer(stream)
            if buffer.next_char() != "[":
                raise ImportFileError(f"{path}: expected a JSON array ('[' first)")
            buffer.pos += 1
            index = 0
            if buffer.next_char() == "]":
                buffer.pos += 1
            else:
                while True:
                    first = buffer.next_char()
                    if not first:
                        raise ImportFileError(f"{path}: ends inside the JSON array (truncated?)")
                    if first != "{":
                        raise ImportFileError(f"{path}: item {index}: expected a JSON object")
                    while True:
                        try:
                            item, end = decoder.raw_decode(buffer.text, buffer.pos)
                            break
                        except json.JSONDecodeError as error:
                            if _cut_short(error, buffer.text, 8) and buffer.more():
                                continue
                            problem = ("the file ends inside it (truncated?)"
                                       if _cut_short(error, buffer.text, 0)
                                       else f"not valid JSON: {error.msg}")
                            raise ImportFileError(f"{path}: item {index}: {problem}") from None
                    buffer.pos = end
                    yield index, item
                    index += 1
                    separator = buffer.next_char()
                    buffer.pos += 1
                    if separator == "]":
                        break
                    if separator != ",":
                        raise ImportFileError(
                            f"{path}: after item {index - 1}: expected ',' or ']', got "
                            f"{separator or 'the end of the file'!r}")
            if buffer.next_char():
                raise ImportFileError(f"{path}: text after the JSON array's closing ']'")
    except UnicodeDecodeError as error:
        raise ImportFileError(f"{path}: not UTF-8 text ({error.reason})") from None


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, object) for each non-blank line of a JSON Lines file."""
    try:
        with _open(path) as stream:
            for number, line in enumerate(stream, start=1):
                if not line.strip():
                    continue
                try:
                    item = json.loads(line)
                except json.JSONDecodeError as error:
                    raise ImportFileError(
                        f"{path}: line {number} is not valid JSON: {error.msg}") from None
                if not isinstance(item, dict):
                    raise ImportFileError(f"{path}: line {number}: expected a JSON object")
                yield number, item
    except UnicodeDecodeError as error:
        raise ImportFileError(f"{path}: not UTF-8 text ({error.reason})") from None


READERS = {"json-array": iter_json_array, "jsonl": iter_jsonl}


def _previous_files(out: Path) -> list[Path]:
    """The files an earlier import left in `out`; refuses a directory it did not write."""
    if not out.exists():
        return []
    if not out.is_dir():
        raise ImportFileError(f"--out {out}: exists and is not a directory")
    files = sorted(p for p in out.iterdir() if not p.name.startswith("."))
    if files and not (out / MANIFEST).is_file():
        raise ImportFileError(f"--out {out}: holds files but no {MANIFEST} (not an earlier "
                              "import); choose an empty or new directory")
    return files


def write_import(out: Path, scenarios: Iterable[tuple[str, dict]],
                 manifest: Callable[[], dict]) -> set[str]:
    """Writes each (file name, scenario) as it comes, then the manifest (built after the last
    scenario). All or nothing: on any error no file in `out` changes; on success the files
    of an earlier import that this one did not write are removed."""
    previous = _previous_files(out)
    written: set[str] = set()
    with staged_outputs() as outputs:
        for name, scenario in scenarios:
            if name in written or name == MANIFEST:
                raise ImportFileError(f"two scenarios would be written to {out / name}")
            outputs.json(out / name, scenario)
            written.add(name)
        outputs.json(out / MANIFEST, manifest())
    for stale in previous:
        if stale.name not in written and stale.name != MANIFEST and stale.is_file():
            stale.unlink()
    return written
