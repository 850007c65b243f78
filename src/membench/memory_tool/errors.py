"""The single error type the memory tool lets escape.

The model sees the message verbatim as an ``is_error`` tool result, so every
failure - bad input, unsafe path, OS error - is funnelled into this one type and
callers need exactly one ``except`` clause.
"""

from __future__ import annotations


class MemoryToolError(Exception):
    """A memory command failed; ``message`` is written for the model to read."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message
