"""The fence self-check: an operation's time must grow with its work.

A fence that does not wait (a missing ``block_until_ready``, a CUDA launch timed
without a synchronize, a Dask graph that is built but never computed) makes the
time of a matmul the same at every size: only the dispatch is measured. Timing
the same operation at a small and a large size and requiring the large one to
take clearly longer catches that (the research notes' "scaling probe").
"""

from __future__ import annotations

from typing import Any

from ._timer import TimerConfig

__all__ = ["fence_selfcheck"]


def fence_selfcheck(
    backend: str,
    *,
    sizes: tuple[int, int] = (32, 1024),
    dtype: str = "float64",
    min_ratio: float = 3.0,
    timer: TimerConfig | None = None,
    configure: bool = True,
    state: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Time a square ``matmul`` (case ``a1_gemm``) at two sizes on `backend` in this process.

    Returns ``{"backend", "sizes", "median_s", "ratio", "work_ratio", "ok"}``
    where ``ratio`` is the large size's median over the small one's and ``ok``
    says whether it is at least `min_ratio` (the work ratio is ``(n1/n0)**3``,
    32768 for the defaults, so any working fence passes by far).

    ``configure=False`` keeps the settings already applied in this process (a
    bench worker, which passes its `state`); otherwise the backend is
    configured with its defaults and restored afterwards.
    """
    from ._cell import execute_cell, make_cell
    from ._env import backend_state, configure_backend

    cfg = timer or TimerConfig(warmup_time=0.01, min_sample_time=0.002, min_run_time=0.02,
                               min_samples=5, max_samples=20, max_run_time=2.0)
    restore = configure_backend(backend) if configure else (lambda: None)
    try:
        state = state if state is not None else backend_state(backend)
        medians = []
        for n in sizes:
            rec = execute_cell(
                make_cell("a1_gemm", backend, n, dtype=dtype, timer=cfg, memory=False),
                backend_state=state,
            )
            if rec["status"] not in ("ok", "unchecked"):
                raise RuntimeError(
                    f"fence self-check on {backend}: matmul n={n} did not run cleanly: "
                    f"{rec.get('error') or rec.get('check')}"
                )
            medians.append(rec["time"]["median_s"])
    finally:
        restore()
    ratio = medians[1] / medians[0] if medians[0] > 0 else float("inf")
    return {
        "backend": backend,
        "sizes": list(sizes),
        "median_s": medians,
        "ratio": ratio,
        "work_ratio": (sizes[1] / sizes[0]) ** 3,
        "ok": ratio >= min_ratio,
    }
