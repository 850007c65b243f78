"""Typed access to the parameters of a model-issued command.

The command arrives as untrusted JSON, so every parameter is checked for
presence and type here and a wrong one becomes a MemoryToolError that tells the
model what to fix, instead of a KeyError or TypeError deep in the handler.
"""

from __future__ import annotations

from collections.abc import Mapping

from . import messages
from .errors import MemoryToolError


class CommandParams:
    """The parameters of one command, read with checks."""

    def __init__(self, command: object) -> None:
        if not isinstance(command, Mapping):
            raise MemoryToolError(
                messages.COMMAND_NOT_OBJECT.format(kind=type(command).__name__)
            )
        self._values = command
        name = command.get("command")
        if name is None:
            raise MemoryToolError(messages.MISSING_COMMAND)
        if not isinstance(name, str):
            raise self._wrong_type("command", "a string", name)
        self.name = name

    def _wrong_type(self, name: str, expected: str, value: object) -> MemoryToolError:
        return MemoryToolError(
            messages.WRONG_PARAMETER_TYPE.format(
                name=name, expected=expected, actual=type(value).__name__
            )
        )

    def _require(self, name: str) -> object:
        if name not in self._values or self._values[name] is None:
            raise MemoryToolError(messages.MISSING_PARAMETER.format(name=name, command=self.name))
        return self._values[name]

    def text(self, name: str) -> str:
        """A required string parameter that can be encoded as UTF-8."""
        value = self._require(name)
        if not isinstance(value, str):
            raise self._wrong_type(name, "a string", value)
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise MemoryToolError(messages.NOT_UNICODE_TEXT.format(name=name)) from None
        return value

    def integer(self, name: str) -> int:
        """A required integer parameter (``true``/``false`` are not integers)."""
        value = self._require(name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._wrong_type(name, "an integer", value)
        return value

    def view_range(self) -> tuple[int, int] | None:
        """Optional ``[start, end]`` for ``view``; absent or null means the whole file."""
        value = self._values.get("view_range")
        if value is None:
            return None
        if (
            not isinstance(value, (list, tuple))
            or len(value) != 2
            or not all(isinstance(item, int) and not isinstance(item, bool) for item in value)
        ):
            raise MemoryToolError(messages.INVALID_VIEW_RANGE.format(view_range=_short(value)))
        if value[1] < -1:  # only -1 means "to the end"; -2 must not silently drop lines
            raise MemoryToolError(messages.INVALID_VIEW_RANGE_END.format(view_range=_short(value)))
        return value[0], value[1]


def _short(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
