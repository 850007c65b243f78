"""An existing Dask cluster (Dask's own configuration names it): reached, and its
workers running the same membench and dependencies as this client, before any work."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from membench.execution.errors import ClusterError
from membench.execution.placement import Placement

CONNECT_TIMEOUT = "10s"
WORKERS_TIMEOUT = 30  # seconds to wait for a first worker to join


def _connect(placement: Placement) -> Any:
    from distributed import Client

    where = placement.address or f"the scheduler file {placement.scheduler_file}"
    try:
        if placement.address:
            return Client(placement.address, timeout=CONNECT_TIMEOUT,
                          set_as_default=False)
        return Client(scheduler_file=placement.scheduler_file, timeout=CONNECT_TIMEOUT,
                      set_as_default=False)
    except (OSError, TimeoutError, ValueError) as error:
        reason = str(error).strip().partition("\n")[0] or type(error).__name__
        raise ClusterError(f"cannot reach the Dask scheduler at {where}: {reason}") from None


def check_workers(client: Any, placement: Placement) -> None:
    """Every worker's membench source and dependency versions are this client's."""
    import cloudpickle

    from membench.execution import identity

    try:
        client.wait_for_workers(1, timeout=WORKERS_TIMEOUT)
    except TimeoutError:
        raise ClusterError(f"{placement.describe()} has no worker (waited "
                           f"{WORKERS_TIMEOUT} s)") from None
    cloudpickle.register_pickle_by_value(identity)  # a worker without membench answers too
    try:
        answers = client.run(identity.process_identity)
    finally:
        cloudpickle.unregister_pickle_by_value(identity)
    ours = identity.process_identity()
    for worker, theirs in sorted(answers.items()):
        different = identity.mismatch(ours, theirs)
        if different:
            raise ClusterError(f"worker {worker} of {placement.describe()} runs {different}")


@contextlib.contextmanager
def connected(placement: Placement) -> Iterator[Any]:
    client = _connect(placement)
    try:
        check_workers(client, placement)
        yield client
    finally:
        with contextlib.suppress(Exception):
            client.close()
