"""Property: for any generated command, only MemoryToolError escapes and nothing
outside the root is created or modified."""

from __future__ import annotations

from conftest import Sandbox, make_sandbox
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from membench.memory_tool import MemoryToolError, MemoryToolHandler

COMPONENTS = st.one_of(
    st.sampled_from([
        "..", ".", "", "a", "b.md", "link_dir", "link_file", "link_up", "loop", "hard",
        "dangling", "sentinel.txt", "sub", "%2e%2e", "\u2024\u2024", "\uff0e\uff0e", "x\x00",
        "..\\..", "memories", ".memory-tool.lock", "cafe\u0301", "\u2215", "a" * 256,
    ]),
    st.text(max_size=6),
)
PATHS = st.one_of(
    st.builds(
        lambda prefix, parts: prefix + "/".join(parts),
        st.sampled_from(["/memories/", "/memories", "/", "", "/memoriesX/", "memories/", "/etc/"]),
        st.lists(COMPONENTS, max_size=4),
    ),
    st.text(max_size=12),
)
JUNK = st.one_of(st.none(), st.integers(), st.booleans(), st.lists(st.integers(), max_size=3),
                 st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
TEXT = st.one_of(st.text(max_size=20), st.sampled_from(["SECRET", "\ud800", ""]), JUNK)
INTS = st.one_of(st.integers(min_value=-3, max_value=5), JUNK, st.text(max_size=2))
PATH_OR_JUNK = st.one_of(PATHS, PATHS, PATHS, JUNK)


def _command(name: str, **params: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.fixed_dictionaries({"command": st.just(name)}, optional=params)


COMMANDS = st.one_of(
    _command("view", path=PATH_OR_JUNK, view_range=st.one_of(st.lists(INTS, max_size=3), JUNK)),
    _command("create", path=PATH_OR_JUNK, file_text=TEXT),
    _command("str_replace", path=PATH_OR_JUNK, old_str=TEXT, new_str=TEXT),
    _command("insert", path=PATH_OR_JUNK, insert_line=INTS, insert_text=TEXT),
    _command("delete", path=PATH_OR_JUNK),
    _command("rename", old_path=PATH_OR_JUNK, new_path=PATH_OR_JUNK),
    st.fixed_dictionaries({"command": st.one_of(st.text(max_size=8), JUNK)}),
    JUNK,
)


def test_any_command_only_raises_memory_tool_error_and_stays_inside(tmp_path) -> None:
    sandbox: Sandbox = make_sandbox(tmp_path)
    handler = MemoryToolHandler(sandbox.root)
    sandbox.plant_escape_hatches()
    before = sandbox.snapshot_outside()

    @settings(max_examples=200, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(st.lists(COMMANDS, min_size=1, max_size=4))
    def check(commands: list[object]) -> None:
        sandbox.plant_escape_hatches()
        for command in commands:
            try:
                result = handler.execute(command)
            except MemoryToolError as err:
                assert isinstance(err.message, str)
            else:
                assert isinstance(result, str)
                result.encode("utf-8")  # printable by the CLI
        assert sandbox.snapshot_outside() == before

    check()
