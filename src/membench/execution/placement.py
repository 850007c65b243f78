"""Where a stage's units run, from the environment only (never from params.yaml).

- Dask's own configuration names an existing cluster: `scheduler-address`
  (DASK_SCHEDULER_ADDRESS) or `scheduler-file` (DASK_SCHEDULER_FILE, the JSON file
  `dask scheduler --scheduler-file` writes).
- Else MEMBENCH_WORKERS: 0 runs in this process; N starts a private LocalCluster of N
  worker processes (at most one per unit).
- Unset: automatic. The executor times the first unit in this process and moves the rest
  to a private LocalCluster of one worker per core only when they are long work
  (membench.execution.executor.Automatic)."""

from __future__ import annotations

import os
from dataclasses import dataclass

WORKERS_VARIABLE = "MEMBENCH_WORKERS"


@dataclass(frozen=True)
class Placement:
    workers: int = 0  # local worker processes; 0: this process (or the existing cluster)
    address: str | None = None
    scheduler_file: str | None = None
    automatic: bool = False  # nothing configured: this process unless the work is long

    @property
    def existing(self) -> bool:
        return bool(self.address or self.scheduler_file)

    def describe(self) -> str:
        if self.address:
            return f"the Dask cluster at {self.address}"
        if self.scheduler_file:
            return f"the Dask cluster in {self.scheduler_file}"
        if self.workers:
            return f"a local Dask cluster of {self.workers} worker(s)"
        if self.automatic:
            return "this process, or a local Dask cluster if the work is long"
        return "this process"


def configured_workers() -> int | None:
    """MEMBENCH_WORKERS as a count, None when unset; anything else is an error."""
    text = os.environ.get(WORKERS_VARIABLE, "").strip()
    if not text:
        return None
    if not text.isdigit():
        raise ValueError(f"{WORKERS_VARIABLE}={text!r}: expected a number of worker "
                         f"processes (0 runs in this process)")
    return int(text)


def placement_for(units: int) -> Placement:
    import dask.config

    address = dask.config.get("scheduler-address", None)
    scheduler_file = dask.config.get("scheduler-file", None)
    if address or scheduler_file:
        return Placement(address=str(address) if address else None,
                         scheduler_file=str(scheduler_file) if scheduler_file else None)
    workers = configured_workers()
    if workers is None:
        return Placement(automatic=True)
    return Placement(workers=min(workers, units))


def available_cores() -> int:
    """The cores this process may run on (its affinity, as a container or taskset sets it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1
