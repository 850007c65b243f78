"""Where a stage's units run (membench.execution): the same results in this process, on a
private LocalCluster of one or two workers and on an existing cluster; a worker killed
mid-unit is replaced and its unit rerun; an unreachable scheduler or a worker with other
versions stops before any work. Real Dask processes throughout, never a mock."""

from __future__ import annotations

import operator
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import dask.config
import distributed  # noqa: F401  its config defaults exist before a test sets one of them
import numpy as np
import pytest

import membench.execution.executor as executor_module
from membench.execution.errors import ClusterError
from membench.execution.executor import Automatic, InProcess, OnDask, executor, pickled_inputs
from membench.execution.identity import mismatch, process_identity
from membench.execution.placement import Placement, placement_for


def square_plus(offset: int, unit: int) -> int:
    return unit * unit + offset


def fails_on_three(offset: int, unit: int) -> int:
    if unit == 3:
        raise ValueError("unit 3 is bad")
    return unit


def timed_unit(seconds: float, unit: int) -> tuple[int, int, int]:
    """Takes `seconds`; says which process ran it."""
    time.sleep(seconds)
    return unit, unit * 10, os.getpid()


@pytest.mark.parametrize("cores", [1, 2])
def test_unconfigured_short_work_stays_in_this_process(no_cluster_configured, cores,
                                                      monkeypatch):
    """Long work on one core stays here too: one worker is slower than this process."""
    monkeypatch.setattr(executor_module, "available_cores", lambda: cores)
    if cores == 1:
        monkeypatch.setattr(executor_module, "AUTO_CLUSTER_SECONDS", 0.01)
    lines: list[str] = []
    with executor("demo", 4, lines.append) as units:
        assert isinstance(units, Automatic)
        results = units.map(timed_unit, 0.05, [1, 2, 3, 4], label="demo")
    assert results == [(unit, unit * 10, os.getpid()) for unit in (1, 2, 3, 4)]
    assert not any("Dask" in line for line in lines), lines
    assert [line.split(" (")[0] for line in lines] == [f"demo: {n}/4 done" for n in (1, 2, 3, 4)]


def test_unconfigured_long_work_moves_the_units_after_the_first_to_a_local_cluster(
        no_cluster_configured, monkeypatch):
    """Timed by the first unit, the other three would take longer here than the threshold:
    they run on a private cluster of one worker per core, and the results keep their order."""
    monkeypatch.setattr(executor_module, "available_cores", lambda: 2)
    monkeypatch.setattr(executor_module, "AUTO_CLUSTER_SECONDS", 0.5)
    lines: list[str] = []
    with executor("demo", 4, lines.append) as units:
        results = units.map(timed_unit, 0.3, [4, 3, 2, 1], label="demo")
        assert units.started is not None  # the cluster lives until the block ends
        client = units.started[0]
        assert len(client.nthreads()) == 2
    assert client.status == "closed"
    assert [result[:2] for result in results] == [(4, 40), (3, 30), (2, 20), (1, 10)]
    assert results[0][2] == os.getpid()  # the first unit, timed here
    assert all(result[2] != os.getpid() for result in results[1:])
    # 0.3 s at its pace is long work once it has run 0.5 / 3 s: the rest start then
    assert any(line.startswith("demo: the first unit has run ") and
               line.endswith(" s here, not done; the other 3 on a local Dask cluster of 2 "
                             "worker(s)")
               for line in lines), lines
    assert sum(" done (" in line for line in lines) == 4


def test_unconfigured_later_maps_of_a_block_run_every_unit_on_its_cluster(
        no_cluster_configured, monkeypatch):
    """Once a block has started its cluster, a later map (the backends stage's remedies)
    sends every unit there, the first too: the cluster's start is paid already."""
    monkeypatch.setattr(executor_module, "available_cores", lambda: 2)
    monkeypatch.setattr(executor_module, "AUTO_CLUSTER_SECONDS", 0.5)
    lines: list[str] = []
    with executor("demo", 4, lines.append) as units:
        units.map(timed_unit, 0.3, [4, 3, 2, 1], label="demo")
        later = units.map(timed_unit, 0.01, [2, 1], label="later")
        alone = units.map(timed_unit, 0.01, [5], label="alone")
    assert [result[:2] for result in later] == [(2, 20), (1, 10)]
    assert all(result[2] != os.getpid() for result in later)
    assert "later: 2 units on a local Dask cluster of 2 worker(s)" in lines
    assert alone[0][2] == os.getpid()  # one unit: no trip for it


def sized_unit(seconds_per_size: float, size: int) -> tuple[int, int]:
    """Takes `size` times `seconds_per_size`; says which process ran it."""
    time.sleep(seconds_per_size * size)
    return size, os.getpid()


def test_unconfigured_work_scaled_by_the_units_sizes_stays_short(no_cluster_configured,
                                                                  monkeypatch):
    """The smallest unit is timed, and the work scaled by the sizes is short: the big
    first unit and the rest run here too (alike, they would have been long)."""
    monkeypatch.setattr(executor_module, "available_cores", lambda: 2)
    monkeypatch.setattr(executor_module, "AUTO_CLUSTER_SECONDS", 0.5)
    lines: list[str] = []
    with executor("demo", 4, lines.append) as units:
        results = units.map(sized_unit, 0.02, [10, 1, 1, 1], label="demo",
                            sizes=[10, 1, 1, 1])
        assert units.started is None
    assert results == [(10, os.getpid()), (1, os.getpid()), (1, os.getpid()),
                       (1, os.getpid())]
    assert not any("Dask" in line for line in lines), lines
    assert lines[0].startswith("demo: 1/4 done (1)")  # the smallest, timed first


def test_unconfigured_long_work_times_the_smallest_unit_and_starts_the_big_one_on_a_worker(
        no_cluster_configured, monkeypatch):
    """A stage whose first unit is its biggest (the users stage's shared stores) learns
    its pace from the smallest; the big one then runs on a worker beside the others, and
    the results keep the units' order."""
    monkeypatch.setattr(executor_module, "available_cores", lambda: 2)
    monkeypatch.setattr(executor_module, "AUTO_CLUSTER_SECONDS", 0.5)
    lines: list[str] = []
    with executor("demo", 4, lines.append) as units:
        results = units.map(sized_unit, 0.1, [10, 2, 1, 3], label="demo",
                            sizes=[10, 2, 1, 3])
    assert [size for size, _ in results] == [10, 2, 1, 3]
    assert results[2][1] == os.getpid()  # the smallest, timed here
    assert all(pid != os.getpid() for i, (_, pid) in enumerate(results) if i != 2)
    assert any(line.startswith("demo: the smallest unit (1) has run ") and
               line.endswith(" here, not done; the other 3 on a local Dask cluster of 2 "
                             "worker(s)")
               for line in lines), lines


def timed_span(seconds: float, unit: int) -> tuple[int, float, float, int]:
    """Unit 0 takes `seconds`, the others a moment; when each began and ended, where."""
    began = time.time()
    time.sleep(seconds if unit == 0 else 0.01)
    return unit, began, time.time(), os.getpid()


def test_unconfigured_long_work_starts_the_rest_while_the_timed_unit_still_runs(
        no_cluster_configured, monkeypatch):
    """The timed unit does not run alone to its end: once it has run long enough to show
    the rest are long work, they start on the cluster beside it, and are done first."""
    monkeypatch.setattr(executor_module, "available_cores", lambda: 2)
    monkeypatch.setattr(executor_module, "AUTO_CLUSTER_SECONDS", 0.5)
    lines: list[str] = []
    with executor("demo", 3, lines.append) as units:
        results = units.map(timed_span, 12.0, [0, 1, 2], label="demo")
    timed = results[0]
    assert [result[0] for result in results] == [0, 1, 2]
    assert timed[3] == os.getpid()
    assert all(pid != os.getpid() and ended < timed[2] for _, _, ended, pid in results[1:])
    assert "demo: the first unit has run 0 s here, not done; the other 2 on a local Dask " \
           "cluster of 2 worker(s)" in lines, lines
    assert lines[-1].startswith("demo: 3/3 done (0)"), lines


def test_unconfigured_a_failing_timed_unit_stops_the_cluster_it_started(
        no_cluster_configured, monkeypatch):
    """The timed unit fails after the rest started beside it: the error is the stage's,
    and the cluster stops with the block."""
    monkeypatch.setattr(executor_module, "available_cores", lambda: 2)
    monkeypatch.setattr(executor_module, "AUTO_CLUSTER_SECONDS", 0.5)
    lines: list[str] = []
    with pytest.raises(ValueError, match="unit 3 is bad"):
        with executor("demo", 3, lines.append) as units:
            units.map(slow_fail, 3.0, [3, 1, 2], label="demo")
    assert units.started is not None and units.started[0].status == "closed"


def unit_with_side_effects(shared: dict, unit: int) -> tuple[int, str | None, bool, int]:
    """Unit 0 fills a cache in the inputs and points TMPDIR at a directory of its own while
    it runs (as a backend's unit does for native libraries); the others say what they see."""
    if unit == 0:
        shared["cache"] = "filled"
        before = os.environ.get("TMPDIR")
        os.environ["TMPDIR"] = "/unit-0-own-directory"
        try:
            time.sleep(shared["seconds"])
        finally:
            if before is None:
                os.environ.pop("TMPDIR", None)
            else:
                os.environ["TMPDIR"] = before
    return unit, os.environ.get("TMPDIR"), "cache" in shared, os.getpid()


def test_unconfigured_early_start_gives_workers_the_stage_state_not_the_timed_units(
        no_cluster_configured, monkeypatch):
    """The cluster starts while the timed unit runs: its workers get the inputs as they
    were before it (not its caches) and the stage's temp directory (not its own)."""
    import tempfile

    monkeypatch.setattr(executor_module, "available_cores", lambda: 2)
    monkeypatch.setattr(executor_module, "AUTO_CLUSTER_SECONDS", 0.5)
    lines: list[str] = []
    with executor("demo", 3, lines.append) as units:
        results = units.map(unit_with_side_effects, {"seconds": 8.0}, [0, 1, 2], label="demo")
    assert any("has run 0 s here, not done" in line for line in lines), lines
    for unit, temp, cached, pid in results[1:]:
        assert pid != os.getpid()
        assert temp == tempfile.gettempdir()
        assert not cached


def slow_fail(seconds: float, unit: int) -> int:
    time.sleep(seconds if unit == 3 else 0.01)
    return fails_on_three(0, unit)


def started_at(_: None, unit: int) -> tuple[int, int]:
    started = time.time_ns()
    time.sleep(0.2)
    return unit, started


def test_units_start_on_a_cluster_in_their_order(no_cluster_configured):
    """A stage lists its longest units first; one worker runs them in that order."""
    no_cluster_configured.setenv("MEMBENCH_WORKERS", "1")
    with executor("demo", 6, lambda line: None) as units:
        results = units.map(started_at, None, [5, 0, 3, 1, 4, 2], label="demo")
    assert [unit for unit, _ in results] == [5, 0, 3, 1, 4, 2]
    starts = [started for _, started in results]
    assert starts == sorted(starts)


def span(_: None, unit: tuple[int, float]) -> tuple[int, int, int]:
    started = time.monotonic_ns()
    time.sleep(unit[1])
    return unit[0], started, time.monotonic_ns()


def test_units_start_on_two_workers_in_their_order_as_threads_free(no_cluster_configured):
    """Dask's own placement sent units depending on the shared inputs to the worker holding
    them, or two at a time to each worker in the order of a set: the second costliest
    backend started last. Now the next unit starts on whichever worker is free."""
    no_cluster_configured.setenv("MEMBENCH_WORKERS", "2")
    units_in = [(0, 3.0)] + [(n, 0.3) for n in range(1, 7)]
    with executor("demo", len(units_in), lambda line: None) as units:
        results = units.map(span, None, units_in, label="demo")
    assert [unit for unit, _, _ in results] == list(range(7))
    starts = [start for _, start, _ in results]
    # units 0 and 1 are given to the two workers at once: which starts first is the
    # machine's to say (a loaded one started unit 1 18 ms earlier); the rest wait their turn
    assert starts[1:] == sorted(starts[1:]) and starts[0] < starts[2]
    long_end = results[0][2]
    assert all(end < long_end for _, _, end in results[1:5]), results  # none waited on it


def with_follow_ups(unit: int, result: int) -> list[tuple[int, float]]:
    return [(unit * 100 + n, 0.5) for n in range(unit % 3)]


@pytest.mark.parametrize("workers", ["0", "2"])
def test_follow_ups_come_back_with_their_unit_wherever_they_ran(no_cluster_configured,
                                                               workers):
    from membench.execution.queue import Followed

    no_cluster_configured.setenv("MEMBENCH_WORKERS", workers)
    lines: list[str] = []
    with executor("demo", 5, lines.append) as units:
        results = units.map(square_plus, 1, [5, 4, 3, 2, 1], label="demo",
                            sizes=[5, 4, 3, 2, 1], follow=with_follow_ups)
    assert results == [Followed(26, [250001, 251002]), Followed(17, [160001]),
                       Followed(10, []), Followed(5, [40001, 40402]), Followed(2, [10001])]
    assert lines[-1].startswith("demo: 11/11 done"), lines


def test_unconfigured_the_timed_unit_s_follow_ups_come_back_with_it(no_cluster_configured,
                                                                  monkeypatch):
    from membench.execution.queue import Followed

    monkeypatch.setattr(executor_module, "available_cores", lambda: 1)
    lines: list[str] = []
    with executor("demo", 3, lines.append) as units:
        assert isinstance(units, Automatic)
        results = units.map(square_plus, 1, [5, 4, 2], label="demo", sizes=[5, 4, 2],
                            follow=with_follow_ups)  # times the smallest, 2: two follow-ups
    assert results == [Followed(26, [250001, 251002]), Followed(17, [160001]),
                       Followed(5, [40001, 40402])]
    assert lines[-1].startswith("demo: 8/8 done"), lines


def test_a_follow_up_waits_before_the_first_smaller_unit():
    from membench.execution.queue import UnitQueue

    queue = UnitQueue(["a", "b", "c", "d"], [8, 4, 2, 1],
                      follow=lambda unit, result: [(unit + "1", 3), (unit + "2", 3)]
                      if unit == "a" else [])
    order = []
    while queue:
        item = queue.pop()
        order.append(item.unit)
        queue.finish(item, item.unit.upper())
    assert order == ["a", "b", "a1", "a2", "c", "d"]
    assert [(r.result, r.follow_ups) for r in queue.results()] == [
        ("A", ["A1", "A2"]), ("B", []), ("C", []), ("D", [])]


def test_the_time_left_is_estimated_by_the_units_sizes():
    """The first unit is three times the others: at its pace the rest take a third of it
    each, not as long as it (alike, the first line would have said 12 s left)."""
    ticks = iter([0.0, 6.0, 8.0, 10.0])
    lines: list[str] = []
    progress = executor_module._Progress("demo", [6, 2, 2], lines.append,
                                         clock=lambda: next(ticks))
    for name, size in (("a", 6), ("b", 2), ("c", 2)):
        progress.finished(name, size)
    assert lines == ["demo: 1/3 done (a), 6 s, about 4 s left",
                     "demo: 2/3 done (b), 8 s, about 2 s left", "demo: 3/3 done (c), 10 s"]
    with pytest.raises(ValueError, match="2 sizes for 3 units"):
        InProcess(lines.append).map(square_plus, 0, [1, 2, 3], label="demo", sizes=[1, 2])


class UnpickledWhere:
    """Shared inputs that leave a file named by the process that unpickles them."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def __reduce__(self):
        return _unpickled_in, (self.directory,)


def _unpickled_in(directory: str) -> UnpickledWhere:
    Path(directory, f"unpickled-{os.getpid()}-{time.monotonic_ns()}").touch()
    return UnpickledWhere(directory)


def unit_number(shared: UnpickledWhere, unit: int) -> int:
    return unit


def test_the_shared_inputs_are_unpickled_once_per_worker_never_by_the_scheduler(
        no_cluster_configured, tmp_path):
    """A private cluster's scheduler runs in the stage's process: unpickling a large
    deployment there held its event loop and doubled its memory."""
    no_cluster_configured.setenv("MEMBENCH_WORKERS", "1")
    with executor("demo", 4, lambda line: None) as units:
        assert units.map(unit_number, UnpickledWhere(str(tmp_path)), [4, 3, 2, 1],
                         label="demo") == [4, 3, 2, 1]
        deadline = time.monotonic() + 30  # the stage sends the request, and goes on
        while list(units.client.run(inputs_held).values()) != [0]:
            assert time.monotonic() < deadline, "the worker still holds the inputs"
            time.sleep(0.05)
    unpickled_by = [path.name.split("-")[1] for path in tmp_path.glob("unpickled-*")]
    assert len(unpickled_by) == 1 and unpickled_by[0] != str(os.getpid())


def inputs_held() -> int:
    return len(executor_module._unpickled)


def slow_unit(directory: str, unit: int) -> tuple[int, int]:
    """Leaves one file per attempt (named by unit and pid), then takes a while."""
    Path(directory, f"{unit}-{os.getpid()}-{time.monotonic_ns()}").touch()
    time.sleep(1.5)
    return unit, unit * 10


@pytest.fixture
def no_cluster_configured(monkeypatch):
    monkeypatch.delenv("MEMBENCH_WORKERS", raising=False)
    with dask.config.set({"scheduler-address": None, "scheduler-file": None}):
        yield monkeypatch


def test_placement_comes_from_the_environment_never_from_params(no_cluster_configured):
    monkeypatch = no_cluster_configured
    monkeypatch.setenv("MEMBENCH_WORKERS", "0")
    assert placement_for(8) == Placement()
    monkeypatch.setenv("MEMBENCH_WORKERS", "3")
    assert placement_for(8) == Placement(workers=3)
    assert placement_for(2) == Placement(workers=2)  # never more workers than units
    monkeypatch.setenv("MEMBENCH_WORKERS", "two")
    with pytest.raises(ValueError, match="MEMBENCH_WORKERS='two'"):
        placement_for(8)
    monkeypatch.delenv("MEMBENCH_WORKERS")
    assert placement_for(8) == Placement(automatic=True)  # unset: decided by the work
    with dask.config.set({"scheduler-address": "tcp://10.0.0.1:8786"}):
        assert placement_for(8).existing and placement_for(8).address == "tcp://10.0.0.1:8786"


@pytest.mark.parametrize("workers", ["0", "1", "2"])
def test_results_are_the_same_in_process_and_on_one_or_two_workers(
        no_cluster_configured, workers):
    no_cluster_configured.setenv("MEMBENCH_WORKERS", workers)
    lines = []
    with executor("demo", 5, lines.append) as units:
        assert isinstance(units, InProcess if workers == "0" else OnDask)
        assert units.map(square_plus, 7, [5, 4, 3, 2, 1], label="demo") == [32, 23, 16, 11, 8]
        with pytest.raises(ValueError, match="unit 3 is bad"):  # the unit's own error
            units.map(fails_on_three, 0, [1, 2, 3], label="demo")
    assert sum("done" in line for line in lines) >= 5


def test_a_worker_killed_mid_unit_is_replaced_and_the_unit_rerun(
        no_cluster_configured, tmp_path):
    no_cluster_configured.setenv("MEMBENCH_WORKERS", "2")
    killed: list[int] = []

    def kill_the_worker_running_unit_two() -> None:
        deadline = time.monotonic() + 120
        while not killed and time.monotonic() < deadline:
            for attempt in tmp_path.glob("2-*"):
                pid = int(attempt.name.split("-")[1])
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                break
            time.sleep(0.05)

    with executor("demo", 4, lambda line: None) as units:
        killer = threading.Thread(target=kill_the_worker_running_unit_two)
        killer.start()
        results = units.map(slow_unit, str(tmp_path), [1, 2, 3, 4], label="demo")
        killer.join()
    assert results == [(1, 10), (2, 20), (3, 30), (4, 40)]
    assert killed
    attempts = sorted(path.name.split("-")[1] for path in tmp_path.glob("2-*"))
    assert len(attempts) >= 2 and str(killed[0]) in attempts  # killed, then run again


def ends_its_worker(offset: int, unit: int) -> int:
    if unit == 2:
        os._exit(3)  # as an out-of-memory kill would
    return unit


def test_a_unit_that_ends_every_worker_running_it_stops_the_stage_in_one_line(
        no_cluster_configured):
    no_cluster_configured.setenv("MEMBENCH_WORKERS", "1")
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        with executor("demo", 3, lambda line: None) as units:
            with pytest.raises(ClusterError) as raised:
                units.map(ends_its_worker, 0, [1, 2, 3], label="demo")
    message = str(raised.value)
    assert message.startswith("demo: a unit ended every worker that ran it (")
    assert message.endswith("; nothing was written") and "\n" not in message


UNREADABLE_UNIT = "def unit(offset, value):\n    return value + offset\n"


@pytest.mark.parametrize("source_changed", [False, True])
def test_units_no_worker_can_read_stop_the_stage_instead_of_waiting_forever(
        no_cluster_configured, tmp_path, source_changed):
    """A worker that cannot import a unit's code (its file edited after the stage imported
    it, as an edit of membench's source while a stage runs) leaves the scheduler for good:
    the stage stops in one line once no worker has been there for the grace period."""
    monkeypatch = no_cluster_configured
    monkeypatch.setenv("MEMBENCH_WORKERS", "1")
    monkeypatch.setitem(executor_module.NO_WORKER_GRACE, "local", 3.0)
    if source_changed:  # as if membench's own files had changed since this process began
        monkeypatch.setattr(executor_module, "SOURCE_AT_IMPORT", "another digest")
    module = tmp_path / "edited_while_running.py"
    module.write_text(UNREADABLE_UNIT)
    monkeypatch.syspath_prepend(str(tmp_path))  # spawned workers get this sys.path too
    import edited_while_running

    try:
        with executor("demo", 2, lambda line: None) as units:
            module.write_text("raise ImportError('half-written')\n")  # the workers' copy
            started = time.monotonic()
            with pytest.raises(ClusterError) as raised:
                units.map(edited_while_running.unit, 1, [1, 2], label="demo")
        assert time.monotonic() - started < 60
    finally:
        sys.modules.pop("edited_while_running", None)
    message = str(raised.value)
    assert message.startswith("demo: 2 unit(s) waiting and no worker on a local Dask "
                              "cluster of 1 worker(s) for 3 s")
    assert message.endswith("; nothing was written") and "\n" not in message
    assert ("membench's source files changed" in message) == source_changed


def test_identities_differ_by_the_first_package_that_differs():
    ours = process_identity()
    assert ours["membench"] and len(ours["membench source"]) == 16
    assert {"pyarrow", "numpy", "tiktoken", "dask", "distributed"} <= set(ours)
    assert mismatch(ours, dict(ours)) is None
    assert mismatch(ours, {**ours, "pyarrow": "25.0.0"}) == \
        f"pyarrow 25.0.0 (this client: {ours['pyarrow']})"
    theirs = {k: v for k, v in ours.items() if k != "numpy"}
    assert mismatch(ours, theirs) == f"numpy not installed (this client: {ours['numpy']})"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_scheduler_is_one_line_naming_its_address(no_cluster_configured):
    address = f"tcp://127.0.0.1:{_free_port()}"  # nothing listens there
    with dask.config.set({"scheduler-address": address}), pytest.raises(ClusterError) as raised:
        with executor("demo", 3, lambda line: None):
            pytest.fail("no work may start")
    message = str(raised.value)
    assert message.startswith(f"cannot reach the Dask scheduler at {address}: ")
    assert "\n" not in message


@pytest.fixture(scope="module")
def existing_cluster(tmp_path_factory):
    """A real scheduler and two real workers, as `dask scheduler` and `dask worker` start
    them: one like this client, one whose pyarrow reports another version (an installed
    distribution's metadata found first on its path)."""
    root = tmp_path_factory.mktemp("cluster")
    other = root / "other"
    (other / "pyarrow-25.0.0.dist-info").mkdir(parents=True)
    (other / "pyarrow-25.0.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: pyarrow\nVersion: 25.0.0\n")
    scheduler_file = root / "scheduler.json"
    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    started = [subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
         "--port", "0", "--no-dashboard", "--scheduler-file", str(scheduler_file)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)]
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert scheduler_file.exists(), "the scheduler did not start"

        def worker(name: str, path: str) -> subprocess.Popen:
            return subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
                 str(scheduler_file), "--name", name, "--nthreads", "1", "--no-nanny",
                 "--no-dashboard", "--host", "127.0.0.1"],
                env={**env, "PYTHONPATH": os.pathsep.join(
                    filter(None, [path, os.environ.get("PYTHONPATH", "")]))},
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        yield scheduler_file, worker, str(other)
    finally:
        for process in started:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _workers(scheduler_file: Path, count: int) -> None:
    from distributed import Client

    with Client(scheduler_file=str(scheduler_file), timeout="30s") as client:
        client.wait_for_workers(count, timeout=60)


def test_an_existing_cluster_runs_the_units_then_a_worker_of_another_version_stops_it(
        no_cluster_configured, existing_cluster):
    scheduler_file, start_worker, other_path = existing_cluster
    same = start_worker("same", "")
    try:
        _workers(scheduler_file, 1)
        with dask.config.set({"scheduler-file": str(scheduler_file)}):
            with executor("demo", 3, lambda line: None) as units:
                assert isinstance(units, OnDask) and units.placement.existing
                # a function the workers can import (they have membench, not tests/)
                assert units.map(operator.add, 1, [3, 2, 1], label="demo") == [4, 3, 2]
            other = start_worker("other", other_path)
            try:
                _workers(scheduler_file, 2)
                with pytest.raises(ClusterError) as raised:
                    with executor("demo", 3, lambda line: None):
                        pytest.fail("no work may start")
            finally:
                os.killpg(other.pid, signal.SIGKILL)
                other.wait()
    finally:
        os.killpg(same.pid, signal.SIGKILL)
        same.wait()
    message = str(raised.value)
    assert message.startswith("worker tcp://127.0.0.1:") and "\n" not in message
    assert f"runs pyarrow 25.0.0 (this client: {process_identity()['pyarrow']})" in message


def test_embedding_chunks_on_workers_are_the_in_process_vectors(no_cluster_configured,
                                                               monkeypatch):
    from membench.execution import embedding as fanned
    from membench.retrieval.embedding import DEFAULT_MODEL_ID
    from membench.retrieval.embedding_cache import EmbeddingCache

    texts = [f"Dana's {thing} is now number {n}" for n in range(7)
             for thing in ("locker", "flat", "desk")]
    caches = {}
    for workers in ("0", "2"):
        monkeypatch.setenv("MEMBENCH_WORKERS", workers)
        monkeypatch.setattr(fanned, "CHUNK_TEXTS", 8)  # 3 chunks
        lines: list[str] = []
        cache = EmbeddingCache()
        cache.put(DEFAULT_MODEL_ID, texts[0], np.zeros(384, dtype=np.float32))  # cached: kept
        fanned.embed_missing(cache, DEFAULT_MODEL_ID, texts, 4, lines.append)
        caches[workers] = cache.to_table()
        if workers == "2":
            assert any(line.startswith("embedding: 3/3 done") for line in lines), lines
    assert caches["0"].equals(caches["2"])
    assert caches["0"].num_rows == len(texts)


def test_shared_inputs_travel_by_pickle_unless_a_worker_could_not_import_them(monkeypatch):
    """pickle's own bytes when every object is importable; cloudpickle's for a lambda and
    for a class of __main__ (pickle would name it, and a worker's __main__ lacks it)."""
    importable = {"placement": Placement(workers=2), "vector": np.arange(4.0)}
    assert pickled_inputs(importable) == pickle.dumps(importable, protocol=5)
    assert pickle.loads(pickled_inputs({"add": lambda x: x + 1}))["add"](1) == 2

    class Local:
        pass

    Local.__module__, Local.__qualname__ = "__main__", "Local"
    monkeypatch.setattr(sys.modules["__main__"], "Local", Local, raising=False)
    assert b"__main__" in pickle.dumps(Local(), protocol=5)  # pickle names it
    code = ("import pickle, sys; "
            "print(type(pickle.loads(sys.stdin.buffer.read())[0]).__name__)")
    loaded = subprocess.run([sys.executable, "-c", code], input=pickled_inputs([Local()]),
                            capture_output=True, check=True)
    assert loaded.stdout.strip() == b"Local"


def _http_port(dask_worker) -> int:
    return dask_worker.http_server.port


def test_a_private_cluster_serves_no_http_page_and_takes_only_its_own_certificate():
    """Each node of a private cluster listens for HTTP on loopback, where any account may
    ask: it answers no page there (Dask's would show the workers, the logs and the units'
    exceptions). Its comms take a client holding the run's certificate, no other."""
    import urllib.error
    import urllib.request

    from distributed import Client
    from distributed.security import Security

    from membench.execution.local import local_client

    with local_client(1) as client:
        scheduler = client.cluster.scheduler
        ports = [scheduler.http_server.port, *client.run(_http_port).values()]
        assert len(ports) == 2
        for port in ports:
            for path in ("/info/main/workers.html", "/info/main/logs.html", "/json/counts.json",
                         "/metrics", "/health", "/statics/css/base.css"):
                with pytest.raises(urllib.error.HTTPError) as refused:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10)
                assert refused.value.code == 404, (port, path)
        assert scheduler.address.startswith("tls://127.0.0.1:")
        assert client.submit(operator.add, 1, 2).result() == 3  # the run's own client
        with pytest.raises((OSError, TimeoutError)):
            Client(scheduler.address, security=Security.temporary(), timeout=5)
