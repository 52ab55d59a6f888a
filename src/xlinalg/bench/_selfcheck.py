"""The fence self-check: an operation's time must grow with its work.

A fence that does not wait times only the dispatch, the same at every size. The
fastest samples of a small and a large matmul must differ by the work; a short
ratio is measured once more with 8x the work before the fence is called broken
(a loaded machine's thread-pool wake-ups can make the small size as slow as the
large one). docs/benchmark.md, "Side by side", step 10.
"""

from __future__ import annotations

from typing import Any

from ._cell import execute_cell, make_cell
from ._fairness import backend_state, configure_backend
from ._timer import TimerConfig

__all__ = ["checked_selfcheck", "fence_selfcheck"]

#: the timer of both attempts (short: the check runs at the start of every bench)
_TIMER = TimerConfig(warmup_time=0.01, min_sample_time=0.002, min_run_time=0.02,
                     min_samples=5, max_samples=20, max_run_time=2.0)


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
    """Time a square ``matmul`` (the calibration case ``calib_gemm``) at two sizes on
    `backend` in this process.

    Returns ``{"backend", "sizes", "median_s", "min_s", "ratio", "work_ratio",
    "ok", "attempts"}``: ``ratio`` is the large size's fastest sample over the
    small one's (``min_s``) and ``ok`` says whether it is at least `min_ratio`
    (the work ratio is ``(n1/n0)**3``, 32768 for the defaults, so any working
    fence passes by far). When the first attempt's ratio falls short, a second
    one times the large size doubled; ``attempts`` lists every attempt's figures
    and the top-level ones are the last attempt's.

    ``configure=False`` keeps the settings already applied in this process (a
    bench worker, which passes its `state`); otherwise the backend is
    configured with its defaults and restored afterwards.
    """
    restore = configure_backend(backend) if configure else (lambda: None)
    cfg = timer or _TIMER
    attempts: list[dict[str, Any]] = []
    try:
        state = state if state is not None else backend_state(backend)
        for pair in (sizes, (sizes[0], 2 * sizes[1])):
            times = [_time_matmul(backend, n, dtype, cfg, state) for n in pair]
            best = [t["min_s"] for t in times]
            ratio = best[1] / best[0] if best[0] > 0 else float("inf")
            attempts.append({
                "sizes": list(pair),
                "median_s": [t["median_s"] for t in times],
                "min_s": best,
                "ratio": ratio,
                "work_ratio": (pair[1] / pair[0]) ** 3,
                "ok": ratio >= min_ratio,
            })
            if ratio >= min_ratio:
                break
    finally:
        restore()
    return {"backend": backend, **attempts[-1], "attempts": attempts}


def checked_selfcheck(backend: str, **options: Any) -> dict[str, Any]:
    """:func:`fence_selfcheck` (with its `options`), or, when it raises, the result of
    a check that could not run: ``ok`` False and the error's first line."""
    try:
        return fence_selfcheck(backend, **options)
    except Exception as exc:
        return {"backend": backend, "ok": False,
                "error": f"{type(exc).__name__}: {exc}".splitlines()[0][:300]}


def _time_matmul(backend: str, n: int, dtype: str, cfg: TimerConfig,
                 state: dict[str, Any]) -> dict[str, Any]:
    """The ``time`` of a cell of ``calib_gemm`` at size `n`; a cell that fails raises."""
    rec = execute_cell(make_cell("calib_gemm", backend, n, dtype=dtype, timer=cfg, memory=False),
                       backend_state=state)
    if rec["status"] not in ("ok", "unchecked"):
        raise RuntimeError(
            f"fence self-check on {backend}: matmul n={n} did not run cleanly: "
            f"{rec.get('error') or rec.get('check')}"
        )
    return dict(rec["time"])
