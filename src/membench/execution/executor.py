"""Runs a stage's units where `placement_for` says, and gives back their results in the
units' order, so the outputs are the same bytes wherever they ran.

A unit is `function(shared, unit)`: `function` importable (a module's top level), `shared`
the inputs every unit reads, sent once. Units start in their order (a stage lists its
longest first, so short ones fill in beside them). On a cluster a worker that dies is replaced (a
LocalCluster's nanny restarts it) and its units rerun; a unit that kills
`distributed.scheduler.allowed-failures` workers stops the stage."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from membench.execution.errors import ClusterError
from membench.execution.identity import source_digest
from membench.execution.placement import Placement, available_cores, placement_for
from membench.plugins import loaded_plugins

U = TypeVar("U")
R = TypeVar("R")
Say = Callable[[str], None]

def _duration(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 60} min {seconds % 60} s" if seconds >= 60 else f"{seconds} s"


class _Progress:
    """One line per finished unit: how many, the elapsed time, an estimate of the rest."""

    def __init__(self, label: str, total: int, say: Say) -> None:
        self.label, self.total, self.say = label, total, say
        self.done, self.start = 0, time.monotonic()

    def finished(self, name: str) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.start
        left = elapsed / self.done * (self.total - self.done)
        rest = f", about {_duration(left)} left" if self.done < self.total else ""
        self.say(f"{self.label}: {self.done}/{self.total} done ({name}), "
                 f"{_duration(elapsed)}{rest}")


class InProcess:
    """Units one after another in this process."""

    placement = Placement()

    def __init__(self, say: Say) -> None:
        self.say = say

    def map(self, function: Callable[[Any, U], R], shared: Any, units: Sequence[U], *,
            label: str, name: Callable[[U], str] = str, sizes: Sequence[float] | None = None,
            progress: _Progress | None = None) -> list[R]:
        progress = progress or _Progress(label, len(units), self.say)
        results = []
        for unit in units:
            results.append(function(shared, unit))
            progress.finished(name(unit))
        return results


def _shared(value: Any) -> Any:
    return value


def _in_worker(plugins: tuple[str, ...], function: Callable[[Any, U], R], shared: Any,
               unit: U) -> R:
    """A unit on a worker, its registries filled as the stage's were."""
    from membench.plugins import CORE_KINDS, load_plugins

    load_plugins(*CORE_KINDS, modules=plugins)  # imported once per worker process
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


class OnDask:
    """Units as tasks of a distributed Client; the shared inputs one task every unit
    depends on (held by the scheduler, so recomputed if the worker holding it dies)."""

    def __init__(self, client: Any, placement: Placement, say: Say) -> None:
        self.client, self.placement, self.say = client, placement, say

    def map(self, function: Callable[[Any, U], R], shared: Any, units: Sequence[U], *,
            label: str, name: Callable[[U], str] = str, sizes: Sequence[float] | None = None,
            progress: _Progress | None = None) -> list[R]:
        import uuid
        import warnings

        from distributed import as_completed
        from distributed.scheduler import KilledWorker

        run = uuid.uuid4().hex[:12]
        with warnings.catch_warnings():  # the shared inputs are large by design
            for said in (".*[Ll]arge object", ".*[Ll]arge graph", ".*task graph"):
                warnings.filterwarnings("ignore", message=said)
            inputs = self.client.submit(_shared, shared, key=f"{label}-inputs-{run}",
                                        pure=False)
            plugins = loaded_plugins()
            # in the units' order (a stage lists its longest first): Dask's own order
            # for independent tasks left the longest for the end
            futures = [self.client.submit(_in_worker, plugins, function, inputs, unit,
                                          pure=False, priority=len(units) - index,
                                          key=f"{label}-{index}-{run}")
                       for index, unit in enumerate(units)]
        names = {future.key: name(unit) for future, unit in zip(futures, units)}
        progress = progress or _Progress(label, len(units), self.say)
        watch = _WorkerWatch(self.client, self.placement, label)
        try:
            completed = as_completed(futures, loop=self.client.loop)
            waited_since = time.monotonic()
            while not completed.is_empty():
                if not completed.has_ready():  # as as_completed's own wait: 0.1 s polls
                    time.sleep(0.1)
                    if time.monotonic() - waited_since >= WATCH_SECONDS:
                        watch.check(completed.count())
                        waited_since = time.monotonic()
                    continue
                future = next(completed)
                if future.status == "error":
                    future.result()  # raises the unit's own exception
                progress.finished(names[future.key])
            return [future.result() for future in futures]
        except KilledWorker as error:
            raise ClusterError(f"{label}: a unit ended every worker that ran it ({error}); "
                               f"nothing was written") from None
        finally:
            self.client.cancel(futures + [inputs], force=True)


# Nothing configured: the units after the first go to a private cluster when, timed by the
# first, they would take at least this long here. Below it a cluster's start (a few
# seconds, more on a loaded machine) and the inputs' trip to each worker eat the gain.
AUTO_CLUSTER_SECONDS = 120.0


class Automatic:
    """Nothing configured: the first unit in this process, timed; the rest here too when,
    at that pace, they are short work (scaled by `sizes`, the units' relative costs, when
    the stage knows them: else all alike) or the machine has one core, else on a private
    LocalCluster of one worker per core (at most one per unit), started then and stopped
    when the stage's block ends."""

    placement = Placement(automatic=True)

    def __init__(self, say: Say, clusters: contextlib.ExitStack, cores: int) -> None:
        self.say, self.clusters, self.cores = say, clusters, cores
        self.started: tuple[Any, Placement] | None = None  # one cluster per block

    def map(self, function: Callable[[Any, U], R], shared: Any, units: Sequence[U], *,
            label: str, name: Callable[[U], str] = str, sizes: Sequence[float] | None = None,
            progress: _Progress | None = None) -> list[R]:
        progress = progress or _Progress(label, len(units), self.say)
        if not units:
            return []
        start = time.monotonic()
        results = [function(shared, units[0])]
        first = time.monotonic() - start
        sizes = sizes or [1.0] * len(units)
        estimate = first * sum(sizes[1:]) / sizes[0] if sizes[0] else float("inf")
        progress.finished(name(units[0]))
        rest = units[1:]
        workers = min(self.cores, len(rest))
        if workers < 2 or estimate < AUTO_CLUSTER_SECONDS:
            return results + InProcess(self.say).map(function, shared, rest, label=label,
                                                     name=name, progress=progress)
        if self.started is None:
            from membench.execution.local import local_client

            placement = Placement(workers=workers)
            self.started = (self.clusters.enter_context(local_client(workers)), placement)
        client, placement = self.started
        self.say(f"{label}: the first unit took {_duration(first)} here; the other "
                 f"{len(rest)} on {placement.describe()}")
        return results + OnDask(client, placement, self.say).map(
            function, shared, rest, label=label, name=name, progress=progress)


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
