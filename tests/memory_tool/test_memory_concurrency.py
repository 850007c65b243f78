"""Read-modify-write commands from several processes are never lost."""

from __future__ import annotations

import multiprocessing

from membench.memory_tool import MemoryToolError, MemoryToolHandler

PROCESSES = 4
UPDATES = 200


def _insert_lines(root: str, worker: int) -> None:
    handler = MemoryToolHandler(root)
    for i in range(UPDATES):
        handler.execute({"command": "insert", "path": "/memories/log.md", "insert_line": 0,
                         "insert_text": f"{worker}-{i}"})


def _bump_counter(root: str, worker: int) -> None:
    """Optimistic increment: read the counter, str_replace it, retry if someone won.

    The value ends with ';' so a stale "counter: 19" cannot match inside "counter: 199".
    """
    handler = MemoryToolHandler(root)
    done = 0
    while done < UPDATES // 4:
        shown = handler.execute({"command": "view", "path": "/memories/counter.md"})
        value = int(shown.rsplit("counter: ", 1)[1].split(";", 1)[0])
        try:
            handler.execute({"command": "str_replace", "path": "/memories/counter.md",
                             "old_str": f"counter: {value};", "new_str": f"counter: {value + 1};"})
        except MemoryToolError:
            continue
        done += 1


def _run_workers(target, root: str) -> None:
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=target, args=(root, n)) for n in range(PROCESSES)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert [worker.exitcode for worker in workers] == [0] * PROCESSES


def test_concurrent_inserts_are_all_applied(sandbox) -> None:
    handler = MemoryToolHandler(sandbox.root)
    handler.execute({"command": "create", "path": "/memories/log.md", "file_text": ""})
    _run_workers(_insert_lines, str(sandbox.root))
    lines = (sandbox.root / "log.md").read_text().splitlines()
    expected = {f"{w}-{i}" for w in range(PROCESSES) for i in range(UPDATES)}
    assert len(lines) == PROCESSES * UPDATES
    assert set(lines) == expected


def test_concurrent_str_replace_counter_loses_nothing(sandbox) -> None:
    handler = MemoryToolHandler(sandbox.root)
    handler.execute({"command": "create", "path": "/memories/counter.md",
                     "file_text": "counter: 0;"})
    _run_workers(_bump_counter, str(sandbox.root))
    assert (sandbox.root / "counter.md").read_text() == f"counter: {PROCESSES * UPDATES // 4};"
