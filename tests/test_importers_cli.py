"""`membench import` end to end through the CLI: same file, same bytes; a wrong or
malformed file stops with a message naming the file, the item and the problem, exit
status non-zero, and nothing written."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from membench.cli import app
from membench.io import import_files
from membench.io.import_files import ImportFileError, iter_json_array

EXAMPLES = {"locomo": "locomo10-example.json", "longmemeval": "longmemeval-example.json",
            "letta": "letta_bench_gen-example.jsonl"}


def run(*args: str):
    return CliRunner().invoke(app, ["import", *map(str, args)])


def files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_two_imports_give_the_same_bytes_and_the_manifest_hashes_the_source(
        name, repo_root, tmp_path):
    source = repo_root / "imports/examples" / EXAMPLES[name]
    first, second = run(name, source, "--out", tmp_path / "a"), run(name, source, "--out",
                                                                      tmp_path / "b")
    assert first.exit_code == 0 and second.exit_code == 0, first.output
    written = files(tmp_path / "a")
    assert written == files(tmp_path / "b")
    manifest = json.loads(written["manifest.json"])
    assert manifest["source"] == {"file": source.name, "bytes": source.stat().st_size,
                                  "sha256": hashlib.sha256(source.read_bytes()).hexdigest()}
    assert sorted(written) == sorted([s["file"] for s in manifest["scenarios"]]
                                     + ["manifest.json"])
    text = written["manifest.json"].decode()
    assert text == json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_a_reimport_replaces_the_earlier_one(repo_root, tmp_path):
    out = tmp_path / "out"
    assert run("longmemeval", repo_root / "imports/examples/longmemeval-example.json",
               "--out", out).exit_code == 0
    assert (out / "longmemeval-ex001.json").exists()
    assert run("locomo", repo_root / "imports/examples/locomo10-example.json",
               "--out", out).exit_code == 0
    assert sorted(files(out)) == ["locomo-ex-1.json", "locomo-ex-2.json", "manifest.json"]


def test_a_directory_it_did_not_write_is_refused(repo_root, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    result = run("letta", repo_root / "imports/examples/letta_bench_gen-example.jsonl",
                 "--out", tmp_path)
    assert result.exit_code == 1 and "not an earlier import" in result.output
    assert files(tmp_path) == {"notes.txt": b"mine"}


def _malformed(tmp_path: Path, repo_root: Path) -> list[tuple[str, Path, str]]:
    locomo = json.loads((repo_root / "imports/examples/locomo10-example.json").read_text())
    letta = (repo_root / "imports/examples/letta_bench_gen-example.jsonl").read_text()
    broken = json.loads(json.dumps(locomo))
    del broken[1]["conversation"]["session_2"][0]["text"]
    cases = {
        "truncated.json": ("locomo", json.dumps(locomo)[:-300],
                           "truncated.json: item 1: the file ends inside it (truncated?)"),
        "bad-value.json": ("locomo", '[{"qa": [], "sample_id": nope}]',
                           "bad-value.json: item 0: not valid JSON: Expecting value"),
        "object.json": ("locomo", '{"qa": []}', "object.json: expected a JSON array"),
        "numbers.json": ("locomo", "[1, 2]", "numbers.json: item 0: expected a JSON object"),
        "broken-turn.json": ("locomo", json.dumps(broken),
                             ("broken-turn.json: item 1 (ex-2).conversation.session_2[0]: "
                              "missing field 'text'")),
        "not-jsonl.jsonl": ("letta", letta.splitlines()[0] + "\nnot json\n",
                            "not-jsonl.jsonl: line 2 is not valid JSON"),
        "latin1.json": ("locomo", None, "latin1.json: not UTF-8 text"),
        "letta-as-locomo.jsonl": ("locomo", letta,
                                  "letta-as-locomo.jsonl: expected a JSON array ('[' first)"),
        "locomo-as-letta.json": ("letta", json.dumps(locomo, indent=1),
                                 "locomo-as-letta.json: line 1 is not valid JSON"),
        "two-arrays.json": ("locomo", "[]\n[]", "two-arrays.json: text after the JSON array"),
    }
    made = []
    for name, (fmt, text, message) in cases.items():
        path = tmp_path / name
        if text is None:
            path.write_bytes('[{"sample_id": "caf\u00e9"}]'.encode("latin-1"))
        else:
            path.write_text(text)
        made.append((fmt, path, message))
    return made


def test_a_malformed_file_stops_naming_file_item_and_problem_and_writes_nothing(
        repo_root, tmp_path):
    for fmt, path, message in _malformed(tmp_path, repo_root):
        out = tmp_path / f"out-{path.stem}"
        result = run(fmt, path, "--out", out)
        assert result.exit_code == 1, (path.name, result.output)
        assert result.output.startswith("membench import: error: "), result.output
        assert message in result.output, (message, result.output)
        assert not out.exists() or not any(out.iterdir()), path.name


def test_a_failed_import_leaves_the_earlier_one_untouched(repo_root, tmp_path):
    out = tmp_path / "out"
    assert run("locomo", repo_root / "imports/examples/locomo10-example.json",
               "--out", out).exit_code == 0
    before = files(out)
    bad = tmp_path / "bad.json"
    data = json.loads((repo_root / "imports/examples/locomo10-example.json").read_text())
    data[1]["qa"] = "none"  # the second item is wrong: the first was already converted
    bad.write_text(json.dumps(data))
    result = run("locomo", bad, "--out", out)
    assert result.exit_code == 1 and "item 1 (ex-2).qa: expected a list" in result.output
    assert files(out) == before


@pytest.mark.parametrize(("args", "message"), [
    (["csv", "x.csv"], "unknown format 'csv'; known: locomo, longmemeval, letta"),
    (["locomo", "missing.json"], "missing.json: no such file"),
    (["locomo"], "give FORMAT and SRC"),
])
def test_wrong_arguments_are_clear_errors(args, message, tmp_path):
    result = run(*args, "--out", tmp_path / "out")
    assert result.exit_code == 1 and message in result.output, result.output


def test_the_params_file_names_format_and_source(repo_root, tmp_path, monkeypatch):
    monkeypatch.chdir(repo_root)  # imports/params.yaml's paths are from the repository root
    result = run("--params", "imports/params.yaml", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    direct = run("locomo", "imports/examples/locomo10-example.json", "--out", tmp_path / "cli")
    assert direct.exit_code == 0 and files(tmp_path / "out") == files(tmp_path / "cli")
    bad = tmp_path / "params.yaml"
    bad.write_text("import:\n  format: locomo\n  sorce: x.json\n")
    result = run("--params", bad, "--out", tmp_path / "bad")
    assert result.exit_code == 2 and "import.sorce" in result.output
    both = run("locomo", "x.json", "--params", bad, "--out", tmp_path / "both")
    assert both.exit_code == 1 and "not both" in both.output


def test_an_array_is_read_one_item_at_a_time_across_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(import_files, "CHUNK", 7)  # every item spans several reads
    items = [{"id": i, "text": "x" * (i * 13), "nested": [{"a": "]"}, "},{"]} for i in range(6)]
    path = tmp_path / "items.json"
    path.write_text(" \n[" + " ,\n ".join(json.dumps(item) for item in items) + "\n]\n")
    assert list(iter_json_array(path)) == list(enumerate(items))
    (tmp_path / "empty.json").write_text("[ ]")
    assert list(iter_json_array(tmp_path / "empty.json")) == []
    (tmp_path / "cut.json").write_text('[{"a": 1}, {"a": "%s", "b": [1, 2' % ("x" * 30))
    with pytest.raises(ImportFileError, match=r"item 1: the file ends inside it \(truncated"):
        list(iter_json_array(tmp_path / "cut.json"))
    (tmp_path / "trailing.json").write_text('[{"a": 1}] x')
    with pytest.raises(ImportFileError, match="text after the JSON array"):
        list(iter_json_array(tmp_path / "trailing.json"))


def test_a_mistake_inside_an_item_is_reported_without_reading_on(tmp_path, monkeypatch):
    monkeypatch.setattr(import_files, "CHUNK", 64)
    reads = []
    real = import_files._Buffer.more

    def counted(self):
        reads.append(1)
        return real(self)

    monkeypatch.setattr(import_files._Buffer, "more", counted)
    path = tmp_path / "bad.json"
    items = ['{"a": "%s"}' % ("x" * 40)] * 2 + ['{"a": nope, "b": 1}'] + ['{"c": 1}'] * 5000
    path.write_text("[" + ", ".join(items) + "]")
    with pytest.raises(ImportFileError, match="item 2: not valid JSON: Expecting value"):
        list(iter_json_array(path))
    assert len(reads) < 10  # the 5,000 items after the mistake are never read
