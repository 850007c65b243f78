"""Holes and rough edges from the outside review: deep trees, line separators, view ranges,
hard-linked listings and names that are not UTF-8."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import typer
from typer.testing import CliRunner

from membench.memory_tool import MemoryToolError, MemoryToolHandler
from membench.memory_tool.cli import memory_tool


def error_of(handler: MemoryToolHandler, command: dict[str, object]) -> str:
    with pytest.raises(MemoryToolError) as caught:
        handler.execute(command)
    return caught.value.message


def _nested_dirs(top_fd: int, levels: int) -> None:
    """``levels`` nested directories below ``top_fd``, made without any recursion."""
    fd = os.dup(top_fd)
    try:
        for _ in range(levels):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        with open(os.open("leaf.md", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd), "w") as leaf:
            leaf.write("deep\n")
    finally:
        os.close(fd)


# --- deep trees -------------------------------------------------------------------


def test_delete_removes_a_tree_deeper_than_the_recursion_limit(handler, sandbox) -> None:
    top = sandbox.root / "top"
    top.mkdir()
    top_fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        _nested_dirs(top_fd, 1002)
    finally:
        os.close(top_fd)
    try:
        assert handler.execute({"command": "delete", "path": "/memories/top"}) == (
            "Successfully deleted /memories/top")
        assert not top.exists()
    finally:  # never leave a tree that pytest's own (recursive) cleanup cannot remove
        subprocess.run(["rm", "-rf", str(top)], check=True)


def test_create_refuses_a_path_deeper_than_the_limit(handler, sandbox) -> None:
    deep = "/memories/" + "d/" * 200 + "f.md"
    message = error_of(handler, {"command": "create", "path": deep, "file_text": "x"})
    assert "levels" in message
    assert not (sandbox.root / "d").exists()
    handler.execute({"command": "create", "path": "/memories/" + "d/" * 20 + "f.md",
                     "file_text": "x"})


def test_rename_refuses_to_stack_trees_beyond_the_limit(handler, sandbox) -> None:
    for top in ("a", "b"):
        handler.execute({"command": "create", "path": f"/memories/{top}/" + "d/" * 20 + "f.md",
                         "file_text": "x"})
    into = "/memories/b/" + "d/" * 20 + "a"
    message = error_of(handler, {"command": "rename", "old_path": "/memories/a",
                                 "new_path": into})
    assert "levels" in message
    assert (sandbox.root / "a").is_dir()
    handler.execute({"command": "rename", "old_path": "/memories/a", "new_path": "/memories/c"})


# --- insert keeps every byte it does not touch --------------------------------------


def test_insert_splits_on_newlines_only(handler, sandbox) -> None:
    original = "a\r\nb\u2028c\x85d\x0ce\x1df\rg\n"  # two lines: "a\r" and the rest
    handler.execute({"command": "create", "path": "/memories/n.md", "file_text": original})
    handler.execute({"command": "insert", "path": "/memories/n.md", "insert_line": 2,
                     "insert_text": "new"})
    assert (sandbox.root / "n.md").read_bytes().decode() == original + "new\n"
    handler.execute({"command": "insert", "path": "/memories/n.md", "insert_line": 0,
                     "insert_text": "top"})
    assert (sandbox.root / "n.md").read_bytes().decode() == "top\n" + original + "new\n"


# --- view_range ---------------------------------------------------------------------


@pytest.mark.parametrize("end", [-2, -5])
def test_view_range_negative_end_other_than_minus_one_is_an_error(handler, end) -> None:
    handler.execute({"command": "create", "path": "/memories/n.md", "file_text": "a\nb\nc\n"})
    message = error_of(handler, {"command": "view", "path": "/memories/n.md",
                                 "view_range": [1, end]})
    assert message.startswith("Invalid `view_range` parameter")


# --- listings -----------------------------------------------------------------------


def test_listing_leaves_out_a_hard_linked_file(handler, sandbox) -> None:
    os.link(sandbox.outside / "sentinel.txt", sandbox.root / "hard.md")
    handler.execute({"command": "create", "path": "/memories/own.md", "file_text": "x"})
    listing = handler.execute({"command": "view", "path": "/memories"})
    assert "/memories/own.md" in listing
    assert "hard.md" not in listing


def _plant_non_utf8_names(root) -> None:
    base = os.fsencode(root)
    with open(os.path.join(base, b"caf\xe9.md"), "wb") as planted:
        planted.write(b"x")
    os.mkdir(os.path.join(base, b"dir\xff"))


def test_listing_never_returns_lone_surrogates(handler, sandbox) -> None:
    _plant_non_utf8_names(sandbox.root)
    listing = handler.execute({"command": "view", "path": "/memories"})
    listing.encode("utf-8")  # strict: a lone surrogate would raise here
    assert "caf\\xe9.md" in listing
    assert "dir\\xff/" in listing


# --- the CLI answers bad input with a usage error, never a traceback ------------------

app = typer.Typer()
app.command("memory-tool")(memory_tool)


@app.callback()
def main() -> None:
    """Force sub-command mode, like the real membench app."""


def _cli(root, command: str, stdin: bytes | None = None):
    return CliRunner().invoke(app, ["memory-tool", "--root", str(root), command], input=stdin)


def test_cli_deeply_nested_json_is_a_usage_error(tmp_path) -> None:
    result = _cli(tmp_path, "[" * 100_000 + "]" * 100_000)
    assert result.exit_code == 2, result.exception
    assert "not valid JSON" in result.stderr


def test_cli_non_utf8_stdin_is_a_usage_error(tmp_path) -> None:
    result = _cli(tmp_path, "-", stdin=b'{"command": "view", "path": "/memories/\xff"}')
    assert result.exit_code == 2, result.exception
    assert "UTF-8" in result.stderr


def test_cli_views_a_root_holding_non_utf8_names(tmp_path) -> None:
    _plant_non_utf8_names(tmp_path)
    result = _cli(tmp_path, json.dumps({"command": "view", "path": "/memories"}))
    assert result.exit_code == 0, result.exception
    assert "caf\\xe9.md" in result.stdout
