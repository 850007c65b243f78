"""Traversal vectors: each is refused, or provably lands inside the root.

Every vector is pushed through all six commands (as the target and, for
rename, as source and destination). Whatever happens, the only exception may be
MemoryToolError and nothing outside the root may change. Vectors marked
``reject`` must be refused by ``create``; vectors marked ``inside`` must be
accepted as a literal name and the file must appear inside the root.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import SECRET, Sandbox

from membench.memory_tool import MemoryToolError, MemoryToolHandler

REJECT, INSIDE = "reject", "inside"
LONG_PATH = "/memories/" + "/".join(["d" * 200] * 6)  # > 1024 bytes

VECTORS: dict[str, list[tuple[str, str, str]]] = {
    "dot_segments": [
        ("parent", "/memories/..", REJECT),
        ("parent_file", "/memories/../secrets.env", REJECT),
        ("double_parent", "/memories/../../etc/passwd", REJECT),
        ("nested_parent", "/memories/a/../../outside/sentinel.txt", REJECT),
        ("dot", "/memories/./x.md", REJECT),
        ("inner_dot", "/memories/a/./b.md", REJECT),
        ("trailing_parent", "/memories/a/..", REJECT),
        ("empty_component", "/memories//x.md", REJECT),
        ("double_trailing_slash", "/memories/x//", REJECT),
        ("triple_dot_is_a_name", "/memories/.../x.md", INSIDE),
    ],
    "encoded_dots": [
        ("pct_dots", "/memories/%2e%2e/x.md", INSIDE),
        ("pct_upper", "/memories/%2E%2E/x.md", INSIDE),
        ("pct_slash", "/memories/..%2f..%2foutside%2fsentinel.txt", INSIDE),
        ("double_encoded", "/memories/%252e%252e/x.md", INSIDE),
        ("overlong_utf8", "/memories/%c0%ae%c0%ae/x.md", INSIDE),
        ("pct_backslash", "/memories/%5c..%5cx.md", INSIDE),
    ],
    "backslashes": [
        ("windows_parent", "/memories\\..\\x.md", REJECT),
        ("mixed", "/memories/..\\..\\outside\\sentinel.txt", REJECT),
        ("inner", "/memories/a\\b.md", REJECT),
        ("windows_root", "\\memories\\x.md", REJECT),
    ],
    "absolute_and_prefix": [
        ("etc_passwd", "/etc/passwd", REJECT),
        ("sibling_prefix", "/memoriesX/f", REJECT),
        ("sibling_dash", "/memories-evil", REJECT),
        ("sibling_dash_file", "/memories-evil/f.md", REJECT),
        ("relative", "memories/x.md", REJECT),
        ("case", "/Memories/x.md", REJECT),
        ("double_leading_slash", "//memories/x.md", REJECT),
        ("detour", "/tmp/../memories/x.md", REJECT),
        ("empty", "", REJECT),
        ("leading_space", " /memories/x.md", REJECT),
        ("home", "~/memories/x.md", REJECT),
    ],
    "control_chars": [
        ("nul", "/memories/x.md\x00.txt", REJECT),
        ("nul_only", "/memories/\x00", REJECT),
        ("newline", "/memories/x.md\n", REJECT),
        ("inner_newline", "/memories/a\nb.md", REJECT),
        ("carriage_return", "/memories/\r", REJECT),
        ("tab", "/memories/x\t.md", REJECT),
        ("escape", "/memories/\x1b[2Jx.md", REJECT),
        ("rtl_override", "/memories/\u202edm.exe", REJECT),
        ("zero_width_space", "/memories/\u200b../x.md", REJECT),
    ],
    "unicode_lookalikes": [
        ("one_dot_leader", "/memories/\u2024\u2024/x.md", REJECT),
        ("two_dot_leader", "/memories/\u2025/x.md", REJECT),
        ("fullwidth_dots", "/memories/\uff0e\uff0e/x.md", REJECT),
        ("small_full_stop", "/memories/\ufe52\ufe52/x.md", REJECT),
        ("fullwidth_solidus", "/memories/\uff0e\uff0e\uff0fx.md", REJECT),
        ("fullwidth_backslash", "/memories/a\uff3cb.md", REJECT),
        ("division_slash_is_a_name", "/memories/..\u2215..\u2215x.md", INSIDE),
        ("fraction_slash_is_a_name", "/memories/a\u2044b.md", INSIDE),
        ("non_nfc_combining", "/memories/cafe\u0301.md", REJECT),
        ("non_nfc_angstrom", "/memories/\u212b.md", REJECT),
        ("lone_surrogate", "/memories/x\udc80.md", REJECT),
        ("nfc_accent_ok", "/memories/caf\u00e9.md", INSIDE),
    ],
    "overlong": [
        ("component_256_bytes", "/memories/" + "a" * 256, REJECT),
        ("component_multibyte", "/memories/" + "\u00e9" * 128, REJECT),
        ("component_255_bytes", "/memories/" + "a" * 255, INSIDE),
        ("path_over_1024", LONG_PATH, REJECT),
    ],
    "symlinks": [
        ("dir_link_out", "/memories/link_dir/sentinel.txt", REJECT),
        ("dir_link_new_file", "/memories/link_dir/new.md", REJECT),
        ("dir_link_nested", "/memories/link_dir/sub/seed.md", REJECT),
        ("link_to_parent", "/memories/link_up/outside/sentinel.txt", REJECT),
        ("link_to_fs_root", "/memories/link_abs_root/tmp/x.md", REJECT),
        ("file_link_out", "/memories/link_file", REJECT),
        ("dangling_link", "/memories/dangling", REJECT),
        ("loop", "/memories/loop", REJECT),
        ("loop_descend", "/memories/loop/x.md", REJECT),
    ],
    "hard_links": [
        ("hard_link_to_outside_file", "/memories/hard", REJECT),
    ],
    "reserved_names": [
        ("lock_file", "/memories/.memory-tool.lock", REJECT),
        ("temp_file", "/memories/.memory-tool.tmp-1-abc", REJECT),
    ],
}

CASES = [
    pytest.param(path, expect, id=f"{category}-{name}")
    for category, vectors in VECTORS.items()
    for name, path, expect in vectors
]


def test_enough_vectors() -> None:
    assert len(CASES) >= 40


def _try(handler: MemoryToolHandler, command: dict[str, object]) -> str | None:
    """Run a command; MemoryToolError is an acceptable outcome, anything else fails."""
    try:
        return handler.execute(command)
    except MemoryToolError:
        return None


def _regular_files(top: os.PathLike[str]) -> set[str]:
    return {
        os.path.join(dirpath, name)
        for dirpath, _, names in os.walk(top)
        for name in names
        if name != ".memory-tool.lock"
        and os.path.isfile(os.path.join(dirpath, name))
        and not os.path.islink(os.path.join(dirpath, name))
    }


def _all_commands(path: str) -> list[dict[str, object]]:
    return [
        {"command": "view", "path": path},
        {"command": "view", "path": path, "view_range": [1, -1]},
        {"command": "str_replace", "path": path, "old_str": "SECRET", "new_str": "PWNED"},
        {"command": "insert", "path": path, "insert_line": 0, "insert_text": "PWNED"},
        {"command": "rename", "old_path": "/memories/seed.md", "new_path": path},
        {"command": "rename", "old_path": path, "new_path": "/memories/moved.md"},
        {"command": "create", "path": path, "file_text": "PWNED"},
        {"command": "delete", "path": path},
    ]


@pytest.mark.parametrize(("path", "expect"), CASES)
def test_vector_is_refused_or_stays_inside(sandbox: Sandbox, path: str, expect: str) -> None:
    sandbox.plant_escape_hatches()
    handler = MemoryToolHandler(sandbox.root)
    before = sandbox.snapshot_outside()
    files_before = _regular_files(sandbox.root)

    created = _try(handler, {"command": "create", "path": path, "file_text": "PWNED"})
    if expect == REJECT:
        assert created is None, f"{path!r} was accepted: {created}"
    else:
        assert created is not None, f"{path!r} should be a harmless literal name"
        new_files = _regular_files(sandbox.root) - files_before
        assert len(new_files) == 1 and Path(new_files.pop()).read_text() == "PWNED"

    _try(handler, {"command": "create", "path": "/memories/seed.md", "file_text": SECRET})
    for command in _all_commands(path):
        _try(handler, command)

    assert sandbox.snapshot_outside() == before
    assert (sandbox.outside / "sentinel.txt").read_text() == SECRET


def test_hard_link_is_not_read_or_written_through(sandbox: Sandbox) -> None:
    sandbox.plant_escape_hatches()
    handler = MemoryToolHandler(sandbox.root)
    for command in _all_commands("/memories/hard")[:4]:
        with pytest.raises(MemoryToolError, match="more than one hard link"):
            handler.execute(command)
    assert handler.execute({"command": "delete", "path": "/memories/hard"}).startswith(
        "Successfully deleted"
    )
    assert (sandbox.outside / "sentinel.txt").read_text() == SECRET


def test_symlink_refusal_message(sandbox: Sandbox) -> None:
    sandbox.plant_escape_hatches()
    handler = MemoryToolHandler(sandbox.root)
    with pytest.raises(MemoryToolError) as caught:
        handler.execute({"command": "view", "path": "/memories/link_dir/sentinel.txt"})
    assert caught.value.message == "Path would escape /memories directory via symlink"


def test_deleting_a_symlink_removes_only_the_link(sandbox: Sandbox) -> None:
    sandbox.plant_escape_hatches()
    handler = MemoryToolHandler(sandbox.root)
    before = sandbox.snapshot_outside()
    handler.execute({"command": "delete", "path": "/memories/link_dir"})
    assert not os.path.lexists(sandbox.root / "link_dir")
    assert sandbox.snapshot_outside() == before
