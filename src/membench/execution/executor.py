"""Runs a stage's units where `placement_for` says, and gives back their results in the
units' order, so the outputs are the same bytes wherever they ran.

A unit is `function(shared, unit)`: `function` importable (a module's top level), `shared`
the inputs every unit reads, sent once. Units start in their order (a stage lists its
longest first, so short ones fill in beside them). On a cluster a worker that dies is replaced (a
LocalCluster's nanny restarts it) and its units rerun; a unit that kills
`distributed.scheduler.allowed-failures` workers stops the stage."""

from __future__ import annotations

import contextlib
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from membench.execution.errors import ClusterError
from membench.execution.identity import source_digest
from membench.execution.placement import Placement, available_cores, placement_for
from membench.execution.queue import Follow, Followed, UnitQueue, Waiting
from membench.plugins import loaded_plugins

U = TypeVar("U")
R = TypeVar("R")
Say = Callable[[str], None]

def _duration(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 60} min {seconds % 60} s" if seconds >= 60 else f"{seconds} s"


class _Progress:
    """One line per finished unit: how many, the elapsed time, an estimate of the rest (by
    the units' sizes when the stage knows them, else by their count)."""

    def __init__(self, label: str, sizes: Sequence[float], say: Say,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.label, self.total, self.say, self.clock = label, len(sizes), say, clock
        self.size_left, self.size_done = float(sum(sizes)), 0.0
        self.done, self.start = 0, clock()
        self.lock = threading.Lock()

    def add(self, sizes: Sequence[float]) -> None:
        """Follow-ups a finished unit listed: more units to count."""
        with self.lock:
            self.total += len(sizes)
            self.size_left += float(sum(sizes))

    def finished(self, name: str, size: float = 1.0) -> None:
        with self.lock:  # the automatic placement's timed unit ends beside the others
            self._finished(name, size)

    def _finished(self, name: str, size: float) -> None:
        self.done += 1
        self.size_done += size
        self.size_left -= size
        elapsed = self.clock() - self.start
        rest = ""
        if self.done < self.total and self.size_done > 0:
            rest = f", about {_duration(elapsed / self.size_done * self.size_left)} left"
        self.say(f"{self.label}: {self.done}/{self.total} done ({name}), "
                 f"{_duration(elapsed)}{rest}")


def _sizes(units: Sequence[Any], sizes: Sequence[float] | None) -> list[float]:
    if sizes is None:
        return [1.0] * len(units)
    if len(sizes) != len(units):
        raise ValueError(f"{len(sizes)} sizes for {len(units)} units")
    return [float(size) for size in sizes]


class InProcess:
    """Units one after another in this process."""

    placement = Placement()

    def __init__(self, say: Say) -> None:
        self.say = say

    def map(self, function: Callable[[Any, U], R], shared: Any, units: Sequence[U], *,
            label: str, name: Callable[[U], str] = str, sizes: Sequence[float] | None = None,
            progress: _Progress | None = None, follow: Follow | None = None) -> list[Any]:
        """follow: a finished unit's follow-ups (membench.execution.queue); with it, each
        result is a Followed."""
        sizes = _sizes(units, sizes)
        progress = progress or _Progress(label, sizes, self.say)
        queue = UnitQueue(units, sizes, follow)
        while queue:
            item = queue.pop()
            progress.add(queue.finish(item, function(shared, item.unit)))
            progress.finished(name(item.unit), item.size)
        return queue.results()


def _shared(pickled: bytes) -> bytes:
    return pickled


# How protocol 4 and 5 name a global of __main__ (its module's name, 8 characters): a
# reference a worker could not import, which cloudpickle sends by value instead.
_MAIN_GLOBAL = b"\x8c\x08__main__"


def pickled_inputs(shared: Any) -> bytes:
    """A stage's shared inputs for its workers: pickle's own when everything in them is
    importable (a 10-user deployment: 0.5 s, against 2.0 s through cloudpickle's per-object
    hook), else cloudpickle (a lambda, a local function, something of __main__)."""
    import pickle

    try:
        blob = pickle.dumps(shared, protocol=5)
    except Exception:  # what pickle cannot name; cloudpickle's own error if it cannot either
        blob = None
    if blob is None or _MAIN_GLOBAL in blob:
        import cloudpickle

        blob = cloudpickle.dumps(shared)
    return blob


# The shared inputs travel pickled, as bytes: the scheduler deserializes every task it is
# given, and unpickling a large deployment's objects there (in the stage's own process, for
# a private cluster) held its event loop for tens of seconds and doubled its memory. Each
# worker process unpickles them once per run.
_unpickled: dict[str, Any] = {}
_unpickling = threading.Lock()


def _inputs_of(run: str, pickled: bytes) -> Any:
    with _unpickling:
        if run not in _unpickled:
            import pickle

            _unpickled.clear()  # one run's inputs at a time
            _unpickled[run] = pickle.loads(pickled)
        return _unpickled[run]


async def _forget_inputs(run: str) -> None:
    """On every worker when a stage's units are done: a worker of an existing cluster
    outlives the stage, and would hold its inputs until the next stage. (A coroutine, so
    the stage need not wait for it; a dict's pop needs no lock.)"""
    _unpickled.pop(run, None)


def _in_worker(plugins: tuple[str, ...], function: Callable[[Any, U], R], pickled: bytes,
               unit: U, run: str) -> R:
    """A unit on a worker, its registries filled as the stage's were."""
    from membench.plugins import CORE_KINDS, load_plugins

    load_plugins(*CORE_KINDS, modules=plugins)  # imported once per worker process
    shared = _inputs_of(run, pickled)
    try:
        return function(shared, unit)
    except Exception as error:
        import cloudpickle

        try:
            cloudpickle.dumps(error)
        except Exception:  # it holds what cannot travel back (a connection): its text does
            raise RuntimeError(f"{type(error).__name__}: {error}") from None
        raise


# membench's source as this process imported it (7 ms to read): later workers import the
# files as they are when they start
SOURCE_AT_IMPORT = source_digest()
WATCH_SECONDS = 5  # how often a stage waiting on its units asks whether any worker is left
# how long a stage waits with no worker at all before it stops: a private cluster's nanny
# replaces a dead worker within seconds; an existing cluster may be scaling up
NO_WORKER_GRACE = {"local": 60.0, "existing": 600.0}


class _WorkerWatch:
    """Stops a stage whose units wait on a cluster with no worker: a worker that cannot
    read a unit (membench's source edited while the stage ran, so a worker imports other
    code than the stage's) leaves the scheduler for good, and the units would wait forever."""

    def __init__(self, client: Any, placement: Placement, label: str) -> None:
        self.client, self.placement, self.label = client, placement, label
        self.grace = NO_WORKER_GRACE["existing" if placement.existing else "local"]
        self.alone_since: float | None = None

    def check(self, waiting: int) -> None:
        if self.client.nthreads():
            self.alone_since = None
            return
        now = time.monotonic()
        self.alone_since = self.alone_since if self.alone_since is not None else now
        if now - self.alone_since < self.grace:
            return
        why = (" (membench's source files changed since the stage started: rerun it "
               "once they stop changing)" if source_digest() != SOURCE_AT_IMPORT else "")
        raise ClusterError(f"{self.label}: {waiting} unit(s) waiting and no worker on "
                           f"{self.placement.describe()} for {round(self.grace)} s{why}; "
                           f"nothing was written")


class _Threads:
    """Which worker has a thread free, by this map's own count of the units it gave each.

    Dask's own placement did not keep the units' order: a task that depends on the shared
    inputs goes to the worker holding them unless its group is large enough to queue, and
    queued ones go two to a one-thread worker as their dependency's dependents (a set)
    come up. On the default story's backends stage two workers started PostgreSQL's unit,
    the second costliest, last. So a unit is submitted only when a thread is free for it,
    in the units' order, pinned to that worker loosely (elsewhere if it leaves)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.busy: dict[str, int] = {}

    def free(self) -> str | None:
        """The worker with the most threads free (its address), or None."""
        spare = {address: threads - self.busy.get(address, 0)
                 for address, threads in self.client.nthreads().items()}
        best = max(sorted(spare), key=lambda address: spare[address], default=None)
        return best if best is not None and spare[best] > 0 else None

    def take(self, address: str) -> None:
        self.busy[address] = self.busy.get(address, 0) + 1

    def give_back(self, address: str) -> None:
        self.busy[address] -= 1


class OnDask:
    """Units as tasks of a distributed Client; the shared inputs, pickled, one task every
    unit depends on (held by the scheduler, so recomputed if the worker holding it dies).
    A unit is submitted when a worker has a thread free for it (_Threads)."""

    def __init__(self, client: Any, placement: Placement, say: Say) -> None:
        self.client, self.placement, self.say = client, placement, say

    def map(self, function: Callable[[Any, U], R], shared: Any, units: Sequence[U], *,
            label: str, name: Callable[[U], str] = str, sizes: Sequence[float] | None = None,
            progress: _Progress | None = None, pickled: bytes | None = None,
            follow: Follow | None = None) -> list[Any]:
        """pickled: `shared` already pickled (pickled_inputs), taken instead of it; follow:
        as InProcess.map's."""
        import uuid

        from distributed import as_completed
        from distributed.scheduler import KilledWorker

        sizes = _sizes(units, sizes)
        run = uuid.uuid4().hex[:12]
        with _quiet_dask():
            inputs = self.client.submit(_shared, pickled or pickled_inputs(shared),
                                        key=f"{label}-inputs-{run}", pure=False)
        plugins = loaded_plugins()
        threads = _Threads(self.client)
        queue = UnitQueue(units, sizes, follow)
        futures: list[Any] = []
        # a submitted unit's key -> what it is, the worker it was given
        submitted: dict[str, tuple[Waiting, str]] = {}
        completed = as_completed([], loop=self.client.loop)

        def submit_while_free() -> None:
            while queue:
                address = threads.free()
                if address is None:
                    return
                item = queue.pop()
                with _quiet_dask():
                    future = self.client.submit(
                        _in_worker, plugins, function, inputs, item.unit, run,
                        pure=False, key=f"{label}-{len(futures)}-{run}", workers=[address],
                        allow_other_workers=True)
                threads.take(address)
                submitted[future.key] = (item, address)
                futures.append(future)
                completed.add(future)

        progress = progress or _Progress(label, sizes, self.say)
        watch = _WorkerWatch(self.client, self.placement, label)
        try:
            submit_while_free()
            waited_since = time.monotonic()
            while queue or not completed.is_empty():
                if not completed.has_ready():  # as as_completed's own wait: 0.1 s polls
                    time.sleep(0.1)
                    if time.monotonic() - waited_since >= WATCH_SECONDS:
                        watch.check(len(queue.waiting) + completed.count())
                        submit_while_free()  # a worker may have joined or come back
                        waited_since = time.monotonic()
                    continue
                future = next(completed)
                if future.status == "error":
                    future.result()  # raises the unit's own exception
                item, address = submitted[future.key]
                threads.give_back(address)
                progress.add(queue.finish(item, future.result()))
                submit_while_free()
                progress.finished(name(item.unit), item.size)
            return queue.results()
        except KilledWorker as error:
            raise ClusterError(f"{label}: a unit ended every worker that ran it ({error}); "
                               f"nothing was written") from None
        finally:
            self.client.cancel(futures + [inputs], force=True)
            with contextlib.suppress(Exception):  # sent, not awaited: a worker may be gone
                self.client.run(_forget_inputs, run, wait=False)


@contextlib.contextmanager
def _quiet_dask() -> Iterator[None]:
    """The shared inputs are large by design: no warning about large objects or graphs."""
    import warnings

    with warnings.catch_warnings():
        for said in (".*[Ll]arge object", ".*[Ll]arge graph", ".*task graph"):
            warnings.filterwarnings("ignore", message=said)
        yield


# Nothing configured: the units besides the timed one go to a private cluster when, at its
# pace, they would take at least this long here. Below it a cluster's start (1.3 s on an
# idle 2-core machine, more on a loaded one), each worker's imports and the inputs' trip to
# each worker eat the gain.
AUTO_CLUSTER_SECONDS = 30.0


class Automatic:
    """Nothing configured: one unit in this process, timed (the first, or the smallest when
    the stage gives `sizes`, the units' relative costs). The rest run here too when, at its
    pace scaled by the sizes (else all alike), they are short work or the machine has one
    core; else on a private LocalCluster of one worker per core (at most one per unit),
    started then and stopped when the stage's block ends. The rest do not wait for the
    timed unit to end: once it has run long enough to show they are long work, they start
    on the cluster beside it (a long story's timed unit took minutes alone). Once started,
    the block's later maps run every unit there."""

    placement = Placement(automatic=True)

    def __init__(self, say: Say, clusters: contextlib.ExitStack, cores: int) -> None:
        self.say, self.clusters, self.cores = say, clusters, cores
        self.started: tuple[Any, Placement] | None = None  # one cluster per block

    def _cluster(self, workers: int, temp: str | None = None) -> tuple[Any, Placement]:
        """temp: the workers' TMPDIR (the stage's, not the timed unit's own, which it
        may point at a directory of its own while the cluster starts)."""
        if self.started is None:
            from membench.execution.local import local_client

            environment = {"TMPDIR": temp} if temp else None
            self.started = (self.clusters.enter_context(local_client(workers, environment)),
                            Placement(workers=workers))
        return self.started

    def map(self, function: Callable[[Any, U], R], shared: Any, units: Sequence[U], *,
            label: str, name: Callable[[U], str] = str, sizes: Sequence[float] | None = None,
            progress: _Progress | None = None, follow: Follow | None = None) -> list[Any]:
        """follow: as InProcess.map's; the timed unit's follow-ups run in this process
        after it."""
        sizes = _sizes(units, sizes)
        progress = progress or _Progress(label, sizes, self.say)
        if not units:
            return []
        if self.started is not None and len(units) > 1:
            client, placement = self.started
            self.say(f"{label}: {len(units)} units on {placement.describe()}")
            return OnDask(client, placement, self.say).map(
                function, shared, units, label=label, name=name, sizes=sizes,
                progress=progress, follow=follow)
        timed = _timed_unit(sizes)
        others = [i for i in range(len(units)) if i != timed]
        rest, rest_sizes = [units[i] for i in others], [sizes[i] for i in others]
        # the rest's time at the timed unit's pace is `elapsed * scale`
        scale = sum(rest_sizes) / sizes[timed] if sizes[timed] else float("inf")
        workers = min(self.cores, len(rest))
        which = ("the first unit" if timed == 0 else
                 f"the smallest unit ({name(units[timed])})")

        after = AUTO_CLUSTER_SECONDS / scale if scale and workers >= 2 else None
        # What the cluster gets, taken before the timed unit runs: it may fill caches in the
        # inputs and point TMPDIR elsewhere while the cluster starts beside it.
        pickled = pickled_inputs(shared) if after is not None else None
        temp = tempfile.gettempdir()

        def on_cluster(said: str) -> list[R]:
            client, placement = self._cluster(workers, temp)
            self.say(f"{label}: {which} {said}; the other {len(rest)} on "
                     f"{placement.describe()}")
            return OnDask(client, placement, self.say).map(
                function, shared, rest, label=label, name=name, sizes=rest_sizes,
                progress=progress, pickled=pickled, follow=follow)

        early = _EarlyStart(lambda: self._cluster(workers, temp), on_cluster, after)
        start = time.monotonic()
        try:
            timed_result = function(shared, units[timed])
        finally:
            first = time.monotonic() - start
            started_early = early.stop()
        progress.finished(name(units[timed]), sizes[timed])
        if follow is not None:
            timed_result = self._follow_ups_here(function, shared, units[timed], timed_result,
                                                 follow, name, progress)
        if started_early:
            results = early.results()
        elif workers < 2 or first * scale < AUTO_CLUSTER_SECONDS:
            results = InProcess(self.say).map(function, shared, rest, label=label, name=name,
                                              sizes=rest_sizes, progress=progress,
                                              follow=follow)
        else:
            results = on_cluster(f"took {_duration(first)} here")
        return results[:timed] + [timed_result] + results[timed:]

    def _follow_ups_here(self, function: Callable[[Any, U], R], shared: Any, unit: U,
                         result: R, follow: Follow, name: Callable[[U], str],
                         progress: _Progress) -> Followed:
        follow_ups = list(follow(unit, result))
        sizes = [size for _, size in follow_ups]
        progress.add(sizes)
        done = InProcess(self.say).map(function, shared, [up for up, _ in follow_ups],
                                       label=progress.label, name=name, sizes=sizes,
                                       progress=progress)
        return Followed(result, done)


class _EarlyStart:
    """Starts the rest of an automatic map on its cluster from a thread of its own, after
    `after` seconds, unless stopped first (the timed unit ended, or failed)."""

    def __init__(self, prepare: Callable[[], Any], start: Callable[[str], list],
                 after: float | None) -> None:
        self.prepare, self.start, self.after = prepare, start, after
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.started = False
        self.done = threading.Event()
        self.outcome: tuple[list | None, BaseException | None] = (None, None)
        if after is not None:
            threading.Thread(target=self._run, name="membench-early-start",
                             daemon=True).start()

    def _run(self) -> None:
        if self.stopping.wait(self.after):
            return
        try:
            with self.lock:  # held while the cluster starts: stop() waits for it to be
                if self.stopping.is_set():  # the block's, which stops it however it ends
                    return
                self.started = True
                self.prepare()
            self.outcome = (self.start(f"has run {_duration(self.after)} here, not done"),
                            None)
        except BaseException as error:  # re-raised in the stage's thread, by results()
            self.outcome = (None, error)
        finally:
            self.done.set()

    def stop(self) -> bool:
        """Whether the rest were started (their cluster is the block's by then)."""
        self.stopping.set()
        with self.lock:
            return self.started

    def results(self) -> list:
        self.done.wait()
        results, error = self.outcome
        if error is not None:
            raise error
        return results  # type: ignore[return-value]


def _timed_unit(sizes: Sequence[float]) -> int:
    """The unit timed in the stage's process: the smallest that has a size (the first of
    equals), so that a stage with a few big units (the users stage's shared stores) learns
    its pace in the time of a small one, and its big ones start on workers side by side."""
    sized = [i for i, size in enumerate(sizes) if size > 0]
    return min(sized, key=lambda i: sizes[i]) if sized else 0


@contextlib.contextmanager
def executor(label: str, units: int, say: Say) -> Iterator[InProcess | Automatic | OnDask]:
    """Where `units` units of `label` run; the private cluster, if one was started, is
    stopped however the block ends."""
    placement = placement_for(units)
    if placement.automatic:
        with contextlib.ExitStack() as clusters:
            yield Automatic(say, clusters, available_cores())
        return
    if not placement.existing and not placement.workers:
        yield InProcess(say)
        return
    if placement.existing:
        from membench.execution.existing import connected

        with connected(placement) as client:
            say(f"{label}: {units} units on {placement.describe()}")
            yield OnDask(client, placement, say)
        return
    from membench.execution.local import local_client

    with local_client(placement.workers) as client:
        say(f"{label}: {units} units on {placement.describe()}")
        yield OnDask(client, placement, say)
