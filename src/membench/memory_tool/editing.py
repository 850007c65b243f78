"""Pure text transformations behind ``view``, ``str_replace`` and ``insert``.

Kept free of I/O so the exact output format (line numbers right-aligned to six
digits and a tab, as in the SDK) and the edge cases are easy to test.
"""

from __future__ import annotations

from . import messages
from .errors import MemoryToolError

MAX_LINES = 999_999
LINE_NUMBER_WIDTH = len(str(MAX_LINES))
SNIPPET_CONTEXT = 2


def number_lines(lines: list[str], first_number: int) -> str:
    """``lines`` prefixed with right-aligned line numbers starting at ``first_number``."""
    return "\n".join(
        f"{str(number).rjust(LINE_NUMBER_WIDTH)}\t{line}"
        for number, line in enumerate(lines, start=first_number)
    )


def render_file(content: str, display: str, view_range: tuple[int, int] | None) -> str:
    """The ``view`` result for a file; ``view_range`` is 1-based and inclusive, -1 = to end."""
    lines = content.split("\n")
    if len(lines) > MAX_LINES:
        raise MemoryToolError(messages.TOO_MANY_LINES.format(path=display))
    first = 1
    if view_range is not None:
        start, end = view_range
        first = max(1, start)
        lines = lines[first - 1 : len(lines) if end == -1 else end]
    header = messages.FILE_VIEW_HEADER.format(path=display)
    return f"{header}\n{number_lines(lines, first)}"


def _line_of(content: str, offset: int) -> int:
    return content.count("\n", 0, offset) + 1


def replace_unique(content: str, old_str: str, new_str: str, display: str) -> tuple[str, str]:
    """Replace the single occurrence of ``old_str``; return (new content, result text)."""
    count = content.count(old_str)
    if count == 0:
        raise MemoryToolError(messages.NO_MATCH.format(old_str=old_str, path=display))
    if count > 1:
        lines: list[int] = []
        position = content.find(old_str)
        while position != -1:
            lines.append(_line_of(content, position))
            position = content.find(old_str, position + 1)
        raise MemoryToolError(
            messages.MULTIPLE_MATCHES.format(
                old_str=old_str, lines=", ".join(map(str, lines))
            )
        )
    position = content.find(old_str)
    changed_index = _line_of(content, position) - 1
    new_content = content[:position] + new_str + content[position + len(old_str) :]
    new_lines = new_content.split("\n")
    start = max(0, changed_index - SNIPPET_CONTEXT)
    end = min(len(new_lines), changed_index + SNIPPET_CONTEXT + 1)
    snippet = number_lines(new_lines[start:end], start + 1)
    return new_content, f"{messages.STR_REPLACED}\n{snippet}"


def insert_text(content: str, insert_line: int, text: str) -> str:
    """Insert ``text`` after line ``insert_line`` (0 = at the top); ends with a newline.

    Lines are split on ``\n`` only: ``\r``, U+2028, form feeds and the like are content
    the model wrote, and an insert must not rewrite them anywhere in the file.
    """
    body = content.removesuffix("\n")
    lines = body.split("\n") if body else []
    if insert_line < 0 or insert_line > len(lines):
        raise MemoryToolError(
            messages.INVALID_INSERT_LINE.format(insert_line=insert_line, count=len(lines))
        )
    lines.insert(insert_line, text.rstrip("\n"))
    return "\n".join(lines) + "\n"
