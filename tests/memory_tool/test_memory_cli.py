"""The ``memory-tool`` command mounted on a small typer app, as membench's CLI will."""

from __future__ import annotations

import json

import typer
from typer.testing import CliRunner

from membench.memory_tool.cli import memory_tool

app = typer.Typer()
app.command("memory-tool")(memory_tool)


@app.callback()
def main() -> None:
    """Force sub-command mode, like the real membench app."""


runner = CliRunner()


def invoke(root, command: str, stdin: str | None = None):
    return runner.invoke(app, ["memory-tool", "--root", str(root), command], input=stdin)


def test_cli_creates_and_views(tmp_path) -> None:
    create = json.dumps({"command": "create", "path": "/memories/a.md", "file_text": "hi"})
    result = invoke(tmp_path, create)
    assert result.exit_code == 0
    assert result.stdout == "File created successfully at: /memories/a.md\n"
    result = invoke(tmp_path, "-", stdin='{"command": "view", "path": "/memories/a.md"}')
    assert result.exit_code == 0
    assert result.stdout.endswith("     1\thi\n")


def test_cli_reports_tool_errors_on_stderr(tmp_path) -> None:
    result = invoke(tmp_path, '{"command": "view", "path": "/etc/passwd"}')
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == "Path must start with /memories, got: /etc/passwd\n"


def test_cli_rejects_invalid_json(tmp_path) -> None:
    result = invoke(tmp_path, "{not json")
    assert result.exit_code == 2
    assert "not valid JSON" in result.stderr
