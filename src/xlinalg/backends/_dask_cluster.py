"""Where the dask backend's graphs run in a benchmark, and what is recorded about it.

- ``--scheduler ADDRESS`` (or ``DASK_SCHEDULER_ADDRESS`` in the environment): each
  process that times dask cells connects a ``distributed.Client`` to that scheduler
  (``--scheduler`` is probed once first: :func:`probe`).
- ``--dask-workers N`` (``--dask-memory-limit SIZE``): the command starts a
  ``LocalCluster`` of N worker processes on 127.0.0.1, hands its address to the
  timing processes the same way, and closes it at the end.
- A ``Client`` already active in the process (the Python API, ``isolate=False``)
  is used as it is.
- Otherwise: Dask's threaded scheduler, with ``--threads`` workers.

The scheduler, its address, the workers (threads, memory limits) and the chunking
rule of the inputs go into every dask result's backend state.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["configure", "local_cluster", "probe", "scheduler_address", "state"]

ENV = "DASK_SCHEDULER_ADDRESS"
_ADDRESS = re.compile(r"^(tcp|tls|inproc|ucx|ws|wss)://[A-Za-z0-9._\-\[\]:]{1,200}$")
CHUNKING = ("stacks: 4 chunks along the first (batch) axis, each matrix whole; "
            "a single matrix: one chunk (xlinalg.backends, dask from_numpy)")


def check_address(address: str) -> str:
    """`address` if it reads as a scheduler address (``tcp://host:port``), else ValueError."""
    if not isinstance(address, str) or not _ADDRESS.match(address):
        raise ValueError(
            f"a Dask scheduler address looks like tcp://HOST:PORT, got {address!r:.80}"
        )
    return address


#: seconds to reach a named scheduler, and for it to have a worker (``probe``)
PROBE_TIMEOUT_S = 10.0
WORKERS_TIMEOUT_S = 60.0


def probe(address: str) -> None:
    """Connect once to the scheduler at `address` and wait for one worker, else a
    ValueError saying which failed. (Unchecked, every timing process waited 30 s
    for a scheduler that is not there, and every dask cell failed with it.)"""
    try:
        from distributed import Client
    except ImportError:
        raise ValueError("it names a Dask cluster, but dask.distributed is not installed "
                         "(pip install 'xlinalg[dask]')") from None
    try:
        client = Client(address, timeout=PROBE_TIMEOUT_S, set_as_default=False)
    except Exception as exc:
        why = str(exc).splitlines()[0] if str(exc) else ""
        raise ValueError(f"no Dask scheduler answered at {address} within {PROBE_TIMEOUT_S:g} s "
                         f"({type(exc).__name__}{': ' + why[:200] if why else ''})") from None
    try:
        client.wait_for_workers(1, timeout=WORKERS_TIMEOUT_S)
    except Exception:
        raise ValueError(f"the Dask scheduler at {address} has no worker after {WORKERS_TIMEOUT_S:g} s; "
                         f"start one (`dask worker {address}`)") from None
    finally:
        with contextlib.suppress(Exception):
            client.close(timeout=10)


def scheduler_address() -> str | None:
    """The scheduler to connect to: ``DASK_SCHEDULER_ADDRESS``, or Dask's config."""
    address = os.environ.get(ENV)
    if address:
        try:
            return check_address(address)
        except ValueError as exc:
            raise ValueError(f"environment variable {ENV}: {exc}") from None
    if "dask" in sys.modules:
        import dask

        address = dask.config.get("scheduler-address", None)
    return check_address(address) if address else None


def _active_client() -> Any:
    if "distributed" not in sys.modules:  # (no client can exist: nothing to import)
        return None
    from distributed import default_client

    try:
        return default_client()
    except ValueError:
        return None


def configure(threads: int | None) -> Callable[[], None]:
    """Choose the scheduler in this process (see the module); returns the undo."""
    import dask

    address = scheduler_address()
    if address is not None:
        try:
            from distributed import Client
        except ImportError as exc:
            raise RuntimeError(
                f"{ENV} or --scheduler names a Dask cluster, but dask.distributed is not "
                "installed (pip install 'xlinalg[dask]')"
            ) from exc
        client = Client(address, timeout=30, set_as_default=True)
        return lambda: client.close(timeout=30)
    if _active_client() is not None:
        return lambda: None
    cfg: dict[str, Any] = {"scheduler": "threads"}
    if threads is not None:
        cfg["num_workers"] = threads
    ctx = dask.config.set(cfg)
    return lambda: ctx.__exit__(None, None, None)


def state() -> dict[str, Any]:
    """The dask backend's scheduler, workers and input chunking, for the results."""
    import dask
    from dask.system import CPU_COUNT  # (affinity and container limits, as Dask's pool)

    client = _active_client()
    if client is None:
        return {"scheduler": str(dask.config.get("scheduler", "threads")),
                "dask_workers": dask.config.get("num_workers", None) or CPU_COUNT,
                "chunking": CHUNKING}
    workers = client.scheduler_info().get("workers", {})
    return {
        "scheduler": "distributed",
        "scheduler_address": str(client.scheduler.address),
        "dask_workers": len(workers),
        "worker_threads": sorted(int(w.get("nthreads", 0)) for w in workers.values()),
        "worker_memory_limit": sorted(int(w.get("memory_limit") or 0) for w in workers.values()),
        "chunking": CHUNKING,
    }


@contextlib.contextmanager
def local_cluster(workers: int, memory_limit: int | None, threads: int | None) -> Iterator[str]:
    """A LocalCluster on 127.0.0.1 for the run; its address in ``DASK_SCHEDULER_ADDRESS``
    (the timing processes read it) until it is closed."""
    try:
        from distributed import LocalCluster
    except ImportError as exc:
        raise RuntimeError(
            "--dask-workers needs dask.distributed (pip install 'xlinalg[dask]')"
        ) from exc
    cluster = LocalCluster(
        n_workers=workers, threads_per_worker=threads or 1, processes=True, host="127.0.0.1",
        dashboard_address=":0", memory_limit=memory_limit or "auto", timeout=120,
    )
    old = os.environ.get(ENV)
    os.environ[ENV] = cluster.scheduler_address
    try:
        yield cluster.scheduler_address
    finally:
        if old is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = old
        try:
            cluster.close(timeout=60)
        except Exception as exc:  # the run's own result (or error) must not be lost to it
            print(f"xlinalg bench: warning: closing the local Dask cluster failed: "
                  f"{type(exc).__name__}: {exc}", file=sys.stderr)
