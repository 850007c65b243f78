"""A private Dask LocalCluster: worker processes of this account only, on loopback, every
connection TLS with a certificate made in memory for this run (another account on the
machine cannot submit work to it), no dashboard nor any other HTTP page, its files in a
private directory."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

BLAS_THREADS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
WORKER_START_TIMEOUT = 120  # seconds; a busy 2-core machine starts a worker in a few


class _WorkerOfThisStage:
    """Set up in every worker, restarted ones included: it ends when the stage's process
    does (however that ends), and leaves Ctrl-C to the stage (it reaches the whole
    process group; the stage then stops the cluster)."""

    name = "membench-worker-of-this-stage"
    idempotent = True

    def __init__(self, stage: int) -> None:
        self.stage = stage

    def setup(self, worker: Any) -> None:
        import signal
        import threading
        import time

        with contextlib.suppress(ValueError):  # not the main thread: nothing to do
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        stage = self.stage

        def watch() -> None:
            while os.getppid() == stage:
                time.sleep(0.5)
            os.kill(os.getpid(), signal.SIGKILL)

        threading.Thread(target=watch, name="membench-parent-watch", daemon=True).start()

    def teardown(self, worker: Any) -> None:
        pass

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        pass


@contextlib.contextmanager
def local_client(workers: int, environment: dict[str, str] | None = None) -> Iterator[Any]:
    """environment: variables each worker sets as it starts, over those it inherits."""
    import dask.config
    from distributed import Client, LocalCluster
    from distributed.diagnostics.plugin import WorkerPlugin
    from distributed.security import Security

    from membench.cleanup.private_temp import private_dir, remove

    # a WorkerPlugin subclass made here, so that importing this module imports no Dask
    plugin = type("WorkerOfThisStage", (_WorkerOfThisStage, WorkerPlugin), {})(os.getpid())
    directory = private_dir("dask")
    cluster = client = None
    try:
        security = Security.temporary()
        # The scheduler's files in the private directory too. No statistical profiler (a
        # thread sampling every worker's stack every 10 ms, for a dashboard never shown).
        # No HTTP routes: the scheduler and each worker always listen for HTTP, in plain
        # text on loopback, where any account may ask; Dask's routes would show it the
        # workers, the logs and the units' exceptions (the story's text among them).
        # Workers keep one BLAS thread each but not Dask's MALLOC_TRIM_THRESHOLD_ of 64 KiB:
        # glibc then returns every freed numpy buffer to the kernel, and the encoder ran
        # 45% slower (benchmarks/executor_bench.py --embed).
        with dask.config.set({"temporary-directory": str(directory),
                              "distributed.worker.profile.enabled": False,
                              "distributed.scheduler.http.routes": [],
                              "distributed.worker.http.routes": [],
                              "distributed.nanny.pre-spawn-environ": {
                                  name: 1 for name in BLAS_THREADS}}):
            cluster = LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                protocol="tls://", security=security, dashboard_address=None,
                local_directory=str(directory), silence_logs=50,
                worker_dashboard_address=None, env=environment or {},
                # its HTTP port any free one, not 8787: a second cluster on the machine
                # then warns of no port in use
                scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
        client = Client(cluster, security=security)
        client.register_plugin(plugin)
        client.wait_for_workers(workers, timeout=WORKER_START_TIMEOUT)
        yield client
    finally:
        with contextlib.suppress(Exception):
            if client is not None:
                client.close()
        with contextlib.suppress(Exception):
            if cluster is not None:
                cluster.close()
        remove(directory)
