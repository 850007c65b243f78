"""memory_tool_profile keeps the profile as real files through the handler's commands."""

from membench.extraction.extractors import FactRecord, RecordAction
from membench.memory_tool.policy import file_texts, key_path


def rows(run, policy):
    return [(r.form, r.day, r.fact_key, r.outcome) for r in run.result.outcomes
            if r.policy == policy]


def test_outcomes_equal_the_profiles(default_run):
    assert rows(default_run, "memory_tool_profile") == rows(default_run, "profile")


def test_injection_is_the_view_of_each_file(default_run):
    row = next(r for r in default_run.result.outcomes
               if r.policy == "memory_tool_profile" and r.day == 30)
    assert row.context.startswith("Here's the content of /memories/profile/")
    assert "with line numbers:" in row.context
    assert "+44 7700 900123" not in row.context


def test_upsert_and_delete_through_the_commands():
    records = [
        FactRecord("node", RecordAction.SET, "Node 20", 8, 1, "Services run on Node 20."),
        FactRecord("phone", RecordAction.SET, "+44 1", 9, 2, "My phone is +44 1."),
        FactRecord("node", RecordAction.SET, "Node 24", 22, 3, "Every service runs on Node 24."),
        FactRecord("phone", RecordAction.DELETE, None, 23, 4, "Please forget my phone."),
    ]
    files = file_texts(records)
    assert files == {key_path("node"): "[day 22] Every service runs on Node 24.\n"}


def test_memory_tool_command_on_the_membench_cli(tmp_path):
    from typer.testing import CliRunner

    from membench.cli import app

    runner = CliRunner()
    create = '{"command": "create", "path": "/memories/a.md", "file_text": "hi"}'
    result = runner.invoke(app, ["memory-tool", "--root", str(tmp_path), create])
    assert result.exit_code == 0
    assert result.output.strip() == "File created successfully at: /memories/a.md"
    escape = '{"command": "view", "path": "/memories/../../etc/passwd"}'
    result = runner.invoke(app, ["memory-tool", "--root", str(tmp_path), escape])
    assert result.exit_code == 1
