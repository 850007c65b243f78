"""Each command's result and error strings, matching the Anthropic SDK's local memory tool."""

from __future__ import annotations

import os
import stat

import pytest

from membench.memory_tool import MemoryToolError, MemoryToolHandler, tool_definition


def run(handler: MemoryToolHandler, **command: object) -> str:
    return handler.execute(command)


def error_of(handler: MemoryToolHandler, command: object) -> str:
    with pytest.raises(MemoryToolError) as caught:
        handler.execute(command)
    return caught.value.message


@pytest.fixture
def notes(handler: MemoryToolHandler) -> MemoryToolHandler:
    run(handler, command="create", path="/memories/notes.md", file_text="alpha\nbeta\ngamma\n")
    return handler


def test_tool_definition() -> None:
    assert tool_definition() == {"type": "memory_20250818", "name": "memory"}


# --- create -------------------------------------------------------------------


def test_create_reports_path_and_writes_private_file(handler, sandbox) -> None:
    result = run(handler, command="create", path="/memories/a/b/c.md", file_text="hi")
    assert result == "File created successfully at: /memories/a/b/c.md"
    target = sandbox.root / "a" / "b" / "c.md"
    assert target.read_text() == "hi"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE((sandbox.root / "a").stat().st_mode) == 0o700
    assert stat.S_IMODE((sandbox.root / "a" / "b").stat().st_mode) == 0o700


def test_create_refuses_to_overwrite(notes) -> None:
    command = {"command": "create", "path": "/memories/notes.md", "file_text": "x"}
    assert error_of(notes, command) == "File /memories/notes.md already exists"


def test_create_refuses_the_root(handler) -> None:
    command = {"command": "create", "path": "/memories", "file_text": "x"}
    assert error_of(handler, command) == "File /memories already exists"


def test_create_refuses_trailing_slash(handler) -> None:
    command = {"command": "create", "path": "/memories/dir/", "file_text": "x"}
    assert "needs a file path" in error_of(handler, command)


def test_create_leaves_no_temp_files(handler, sandbox) -> None:
    run(handler, command="create", path="/memories/x.md", file_text="x")
    run(handler, command="str_replace", path="/memories/x.md", old_str="x", new_str="y")
    assert sorted(os.listdir(sandbox.root)) == [".memory-tool.lock", "x.md"]


# --- view -----------------------------------------------------------------------


def test_view_file_numbers_lines(notes) -> None:
    assert run(notes, command="view", path="/memories/notes.md") == (
        "Here's the content of /memories/notes.md with line numbers:\n"
        "     1\talpha\n     2\tbeta\n     3\tgamma\n     4\t"
    )


@pytest.mark.parametrize(
    ("view_range", "expected"),
    [
        ([2, 3], "     2\tbeta\n     3\tgamma"),
        ([2, -1], "     2\tbeta\n     3\tgamma\n     4\t"),
        ([0, 1], "     1\talpha"),
        ([9, 12], ""),
    ],
)
def test_view_file_honours_view_range(notes, view_range, expected) -> None:
    result = run(notes, command="view", path="/memories/notes.md", view_range=view_range)
    assert result == "Here's the content of /memories/notes.md with line numbers:\n" + expected


@pytest.mark.parametrize("view_range", [[1], [1, 2, 3], ["1", "2"], [True, 2], "1-2", 5])
def test_view_rejects_malformed_view_range(notes, view_range) -> None:
    command = {"command": "view", "path": "/memories/notes.md", "view_range": view_range}
    assert error_of(notes, command).startswith("Invalid `view_range` parameter")


def test_view_directory_lists_two_levels_with_sizes(handler, sandbox) -> None:
    run(handler, command="create", path="/memories/profile.md", file_text="x" * 1536)
    run(handler, command="create", path="/memories/p/q/r.md", file_text="")
    run(handler, command="create", path="/memories/p/q/s/too-deep.md", file_text="deep")
    run(handler, command="create", path="/memories/.hidden", file_text="h")
    os.symlink("/etc", sandbox.root / "symlinked")

    def dir_size(*parts: str) -> str:
        size = (sandbox.root.joinpath(*parts)).stat().st_size
        return f"{size // 1024}K" if size % 1024 == 0 else f"{size}B"

    assert run(handler, command="view", path="/memories") == "\n".join(
        [
            (
                "Here're the files and directories up to 2 levels deep in /memories, "
                "excluding hidden items:"
            ),
            f"{dir_size()}\t/memories",
            f"{dir_size('p')}\t/memories/p/",
            f"{dir_size('p', 'q')}\t/memories/p/q/",
            "1.5K\t/memories/profile.md",
        ]
    )


def test_view_subdirectory(handler) -> None:
    run(handler, command="create", path="/memories/p/a.md", file_text="abc")
    lines = run(handler, command="view", path="/memories/p").split("\n")
    assert lines[0].endswith("in /memories/p, excluding hidden items:")
    assert lines[2] == "3B\t/memories/p/a.md"


def test_view_missing_path(handler) -> None:
    command = {"command": "view", "path": "/memories/nope.md"}
    assert error_of(handler, command) == (
        "The path /memories/nope.md does not exist. Please provide a valid path."
    )


def test_view_refuses_non_utf8(handler, sandbox) -> None:
    (sandbox.root / "bin.dat").write_bytes(b"\xff\xfe")
    assert "not valid UTF-8" in error_of(handler, {"command": "view", "path": "/memories/bin.dat"})


def test_view_refuses_fifo_without_blocking(handler, sandbox) -> None:
    os.mkfifo(sandbox.root / "pipe")
    command = {"command": "view", "path": "/memories/pipe"}
    assert error_of(handler, command) == "Unsupported file type for /memories/pipe"


# --- str_replace ---------------------------------------------------------------


def test_str_replace_returns_snippet(notes, sandbox) -> None:
    result = run(notes, command="str_replace", path="/memories/notes.md", old_str="beta",
                 new_str="BETA")
    assert result == (
        "The memory file has been edited. Here is the snippet showing the change "
        "(with line numbers):\n     1\talpha\n     2\tBETA\n     3\tgamma\n     4\t"
    )
    assert (sandbox.root / "notes.md").read_text() == "alpha\nBETA\ngamma\n"


def test_str_replace_refuses_zero_matches(notes) -> None:
    command = {"command": "str_replace", "path": "/memories/notes.md", "old_str": "delta",
               "new_str": "x"}
    assert error_of(notes, command) == (
        "No replacement was performed, old_str `delta` did not appear verbatim in "
        "/memories/notes.md."
    )


def test_str_replace_refuses_multiple_matches(notes) -> None:
    command = {"command": "str_replace", "path": "/memories/notes.md", "old_str": "a\n",
               "new_str": "x"}
    assert error_of(notes, command) == (
        "No replacement was performed. Multiple occurrences of old_str `a\n` in lines: 1, 2, 3. "
        "Please ensure it is unique"
    )


def test_str_replace_missing_file_and_directory(handler) -> None:
    run(handler, command="create", path="/memories/d/f.md", file_text="x")
    missing = {"command": "str_replace", "path": "/memories/no.md", "old_str": "a", "new_str": ""}
    assert error_of(handler, missing) == (
        "The path /memories/no.md does not exist. Please provide a valid path."
    )
    on_dir = {"command": "str_replace", "path": "/memories/d", "old_str": "a", "new_str": ""}
    assert error_of(handler, on_dir) == "The path /memories/d is not a file."


# --- insert -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [(0, "new\nalpha\nbeta\ngamma\n"), (2, "alpha\nbeta\nnew\ngamma\n"),
     (3, "alpha\nbeta\ngamma\nnew\n")],
)
def test_insert_after_line(notes, sandbox, line, expected) -> None:
    result = run(notes, command="insert", path="/memories/notes.md", insert_line=line,
                 insert_text="new\n")
    assert result == "The file /memories/notes.md has been edited."
    assert (sandbox.root / "notes.md").read_text() == expected


@pytest.mark.parametrize("line", [-1, 4])
def test_insert_refuses_out_of_range_line(notes, line) -> None:
    command = {"command": "insert", "path": "/memories/notes.md", "insert_line": line,
               "insert_text": "x"}
    assert error_of(notes, command) == (
        f"Invalid `insert_line` parameter: {line}. It should be within the range [0, 3]."
    )


def test_insert_requires_integer_line(notes) -> None:
    command = {"command": "insert", "path": "/memories/notes.md", "insert_line": "1",
               "insert_text": "x"}
    assert error_of(notes, command) == "Parameter `insert_line` must be an integer, got str."


# --- delete -------------------------------------------------------------------


def test_delete_file_and_directory(notes, sandbox) -> None:
    run(notes, command="create", path="/memories/d/e/f.md", file_text="x")
    assert run(notes, command="delete", path="/memories/notes.md") == (
        "Successfully deleted /memories/notes.md"
    )
    assert run(notes, command="delete", path="/memories/d") == "Successfully deleted /memories/d"
    assert sorted(os.listdir(sandbox.root)) == [".memory-tool.lock"]


def test_delete_refuses_root(handler) -> None:
    for path in ("/memories", "/memories/"):
        assert error_of(handler, {"command": "delete", "path": path}) == (
            "Cannot delete the /memories directory itself"
        )


def test_delete_missing(handler) -> None:
    assert error_of(handler, {"command": "delete", "path": "/memories/x/y"}) == (
        "The path /memories/x/y does not exist"
    )


# --- rename -------------------------------------------------------------------


def test_rename_moves_and_creates_parents(notes, sandbox) -> None:
    result = run(notes, command="rename", old_path="/memories/notes.md",
                 new_path="/memories/archive/2024/notes.md")
    assert result == "Successfully renamed /memories/notes.md to /memories/archive/2024/notes.md"
    assert (sandbox.root / "archive" / "2024" / "notes.md").exists()
    assert not (sandbox.root / "notes.md").exists()


def test_rename_refuses_existing_destination(notes) -> None:
    run(notes, command="create", path="/memories/other.md", file_text="x")
    command = {"command": "rename", "old_path": "/memories/notes.md",
               "new_path": "/memories/other.md"}
    assert error_of(notes, command) == "The destination /memories/other.md already exists"


def test_rename_missing_source(handler) -> None:
    command = {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"}
    assert error_of(handler, command) == "The path /memories/a.md does not exist"


def test_rename_refuses_root_and_self_nesting(handler) -> None:
    run(handler, command="create", path="/memories/d/f.md", file_text="x")
    root = {"command": "rename", "old_path": "/memories", "new_path": "/memories/x"}
    assert error_of(handler, root) == "Cannot rename the /memories directory itself"
    nested = {"command": "rename", "old_path": "/memories/d", "new_path": "/memories/d/e"}
    assert error_of(handler, nested) == "Cannot move /memories/d into itself (/memories/d/e)"


# --- malformed commands ----------------------------------------------------


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (None, "The memory command must be a JSON object, got NoneType."),
        ([], "The memory command must be a JSON object, got list."),
        ({}, (
            "Missing required parameter `command`; expected one of: "
            "view, create, str_replace, insert, delete, rename."
        )),
        ({"command": 3}, "Parameter `command` must be a string, got int."),
        ({"command": "undo"}, "Unknown command: undo"),
        ({"command": "view"}, "Missing required parameter `path` for command `view`."),
        ({"command": "view", "path": 7}, "Parameter `path` must be a string, got int."),
        ({"command": "create", "path": "/memories/a"},
         "Missing required parameter `file_text` for command `create`."),
        ({"command": "create", "path": "/memories/a", "file_text": "\ud800"},
         "Parameter `file_text` is not valid Unicode text (it contains lone surrogates)."),
        ({"command": "rename", "old_path": "/memories/a"},
         "Missing required parameter `new_path` for command `rename`."),
    ],
)
def test_malformed_commands(handler, command, message) -> None:
    assert error_of(handler, command) == message


def test_tool_result_blocks(handler) -> None:
    ok = handler.tool_result("tu_1", {"command": "view", "path": "/memories"})
    assert ok["is_error"] is False and ok["tool_use_id"] == "tu_1"
    bad = handler.tool_result("tu_2", {"command": "view", "path": "/etc"})
    assert bad == {"type": "tool_result", "tool_use_id": "tu_2",
                   "content": "Path must start with /memories, got: /etc", "is_error": True}


def test_root_that_is_a_file_is_refused(tmp_path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(MemoryToolError, match="cannot be used"):
        MemoryToolHandler(tmp_path / "file")
