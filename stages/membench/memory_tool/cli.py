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
    text = sys.stdin.read() if command == "-" else command
    try:
        return json.loads(text)
    except ValueError as err:
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
