"""``membench memory-tool``: run one memory command from the shell.

A plain function, not an app, so the main CLI can mount it with
``app.command("memory-tool")(memory_tool)``. Useful for inspecting a memory
root by hand and for driving the store from non-Python agent loops.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from .errors import MemoryToolError
from .handler import MemoryToolHandler


def _load_command(command: str) -> object:
    """The parsed command; anything unreadable is a usage error (exit 2), never a traceback."""
    if command == "-":
        try:  # bytes, decoded here: the result must not depend on the locale's encoding
            command = sys.stdin.buffer.read().decode("utf-8")
        except UnicodeDecodeError as err:
            raise typer.BadParameter(f"standard input is not UTF-8: {err}",
                                     param_hint="COMMAND") from err
    try:
        return json.loads(command)
    except (ValueError, RecursionError) as err:  # RecursionError: nested too deeply
        raise typer.BadParameter(f"not valid JSON: {err}", param_hint="COMMAND") from err


RootOption = Annotated[
    Path,
    typer.Option("--root", help="Directory that stands in for /memories (created if missing)."),
]
CommandArgument = Annotated[
    str,
    typer.Argument(help="JSON command object, or - to read it from stdin."),
]


def memory_tool(root: RootOption, command: CommandArgument) -> None:
    """Execute one memory tool command and print its result."""
    parsed = _load_command(command)
    try:
        result = MemoryToolHandler(root).execute(parsed)
    except MemoryToolError as err:
        typer.echo(err.message, err=True)
        raise typer.Exit(code=1) from None
    typer.echo(result)
