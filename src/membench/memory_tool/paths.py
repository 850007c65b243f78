"""Lexical validation of model-supplied ``/memories`` paths.

This is the first of three layers (see ``docs/memory-tool.md``): a path is
checked as text, before any filesystem call, so that hostile or ambiguous
spellings never reach the OS. The rules are deliberately stricter than "normalise
and check containment": a path that needs normalising is refused, because the
model should name files one way only.

Rules:

* the text is ``/memories`` or starts with ``/memories/`` (``/memoriesX`` is refused);
* no control or invisible format characters (NUL, newline, U+202E, ...), no backslash;
* the text is valid Unicode (no lone surrogates) and already NFC-normalised;
* no empty, ``.`` or ``..`` component, and no component that turns into ``.``,
  ``..``, ``/`` or ``\\`` under NFKC (U+2024, U+FF0E, U+FF0F look-alikes);
* each component is at most 255 UTF-8 bytes, the whole text at most 1024;
* a single trailing slash is tolerated and remembered (``trailing_slash``);
* names the tool itself uses (its lock file and temp files) are reserved;
* nothing is URL-decoded: ``%2e%2e`` is a literal, harmless file name.
"""

from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass

from . import messages
from .errors import MemoryToolError

MAX_COMPONENT_BYTES = 255
MAX_PATH_BYTES = 1024
# Levels below /memories that create and rename may make: deep enough for any sensible
# layout, shallow enough that walking or deleting a tree the tool made is cheap.
MAX_DEPTH = 32
LOCK_NAME = ".memory-tool.lock"
TEMP_PREFIX = ".memory-tool.tmp-"

_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_ROOT_PREFIX = messages.MEMORY_ROOT + "/"


@dataclass(frozen=True)
class MemoryPath:
    """A validated path: the model's text plus its components below ``/memories``."""

    text: str
    parts: tuple[str, ...]
    trailing_slash: bool = False

    @property
    def is_root(self) -> bool:
        return not self.parts

    @property
    def display(self) -> str:
        """Canonical spelling, without a trailing slash."""
        return "/".join((messages.MEMORY_ROOT, *self.parts))

    @property
    def relative(self) -> str:
        """Components joined with ``/``; ``.`` for the root itself."""
        return "/".join(self.parts) or "."

    @property
    def name(self) -> str:
        return self.parts[-1]

    @property
    def parent_parts(self) -> tuple[str, ...]:
        return self.parts[:-1]

    def contains(self, other: MemoryPath) -> bool:
        """True if ``other`` is this path or lies below it."""
        return other.parts[: len(self.parts)] == self.parts


def quote_for_message(text: str) -> str:
    """Echo a refused path safely: raw if harmless, else as a Python literal."""
    if all(unicodedata.category(ch) not in _REFUSED_CATEGORIES for ch in text):
        return text
    return repr(text)


def _invalid(text: str, reason: str) -> MemoryToolError:
    return MemoryToolError(messages.INVALID_PATH.format(path=quote_for_message(text), reason=reason))


def _check_characters(text: str) -> None:
    for ch in text:
        category = unicodedata.category(ch)
        if category == "Cs":
            raise _invalid(text, "it is not valid Unicode (lone surrogate)")
        if category in _REFUSED_CATEGORIES:
            raise _invalid(text, f"control or invisible character U+{ord(ch):04X} is not allowed")
    if "\\" in text:
        raise _invalid(text, "backslashes are not allowed; use '/' between names")
    if not unicodedata.is_normalized("NFC", text):
        raise _invalid(text, "the text is not in Unicode NFC form")
    if len(text.encode("utf-8")) > MAX_PATH_BYTES:
        raise _invalid(text, f"the path is longer than {MAX_PATH_BYTES} bytes")


def _check_component(text: str, component: str) -> None:
    if component == "":
        raise _invalid(text, "empty path component ('//')")
    if component == ".":
        raise _invalid(text, "'.' path components are not allowed")
    if component == "..":
        raise MemoryToolError(messages.PATH_ESCAPES.format(path=text))
    compat = unicodedata.normalize("NFKC", component)
    if compat in (".", "..") or "/" in compat or "\\" in compat:
        raise _invalid(text, f"the name {component!r} imitates '.', '..' or a slash")
    if len(component.encode("utf-8")) > MAX_COMPONENT_BYTES:
        raise _invalid(text, f"a name is longer than {MAX_COMPONENT_BYTES} bytes")
    if component == LOCK_NAME or component.startswith(TEMP_PREFIX):
        raise _invalid(text, f"the name {component!r} is reserved by the memory tool")


def parse_memory_path(text: object) -> MemoryPath:
    """Validate ``text`` lexically; raise MemoryToolError naming the first problem."""
    if not isinstance(text, str):
        raise MemoryToolError(
            messages.WRONG_PARAMETER_TYPE.format(
                name="path", expected="a string", actual=type(text).__name__
            )
        )
    _check_characters(text)
    if text != messages.MEMORY_ROOT and not text.startswith(_ROOT_PREFIX):
        raise MemoryToolError(messages.PATH_PREFIX.format(path=text))
    rest = text[len(messages.MEMORY_ROOT) :]
    trailing_slash = rest.endswith("/")
    if trailing_slash:
        rest = rest[:-1]
    if not rest:
        return MemoryPath(text, (), trailing_slash)
    components = tuple(rest[1:].split("/"))
    for component in components:
        _check_component(text, component)
    return MemoryPath(text, components, trailing_slash)


def is_within(real_root: str, real_path: str) -> bool:
    """True if ``real_path`` is ``real_root`` or below it (both already resolved)."""
    return real_path == real_root or real_path.startswith(real_root.rstrip(os.sep) + os.sep)


def resolve_memory_path(root: str | os.PathLike[str], requested: str) -> str:
    """Map ``requested`` to a path relative to ``root``, or raise MemoryToolError.

    Lexical validation first, then resolve-and-contain: the joined path is
    resolved with ``os.path.realpath`` and must stay within ``realpath(root)``
    (so a symlink inside the root that points out is refused too). Returns the
    relative POSIX path, e.g. ``projects/checkout.md`` (``.`` for the root).
    Reads no file contents and writes nothing; symlink resolution does consult
    the filesystem. A check, not a safe way in: the result is only true at the
    moment of the check, and a caller that then opens the path itself loses a swap
    race (a directory replaced by a symlink in between). Use ``MemoryToolHandler``
    for anything that touches files; it walks descriptors instead (see dirfd.py).
    """
    memory_path = parse_memory_path(requested)
    real_root = os.path.realpath(root)
    real_target = os.path.realpath(os.path.join(real_root, *memory_path.parts))
    if not is_within(real_root, real_target):
        raise MemoryToolError(messages.SYMLINK_ESCAPES)
    return memory_path.relative
