"""Calibration (run first on every backend): the peaks that "% of peak" is measured against."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._cases import DTYPES, Case, backends_noting, register_case

__all__ = ["CALIBRATION_CASES"]

# Run first on every backend (see RunConfig.calibrate): the peak that "% of peak"
# is measured against. A square GEMM for arithmetic (GFLOP/s) and a streaming
# add c = a + b for memory bandwidth (GB/s: 2 arrays read, 1 written), on arrays
# far larger than any cache. Both are the library's native calls, so the peak
# is what this machine and this library reach, not a vendor figure.
CALIBRATION_CASES = ("calib_gemm", "calib_stream")

register_case(
    Case(
        name="calib_gemm", section="Calibration", units="GFLOP/s",
        tags=("calibration", "gemm"),
        doc="calibration: square GEMM matmul(a, b), n x n (this machine's arithmetic peak)",
        sizes={"quick": [256], "default": [1024], "full": [2048]},
        size_names=("n",),
        setup=lambda rng, n: (rng.standard_normal((n, n)), rng.standard_normal((n, n))),
        op=lambda ctx, a, b: ctx.xp.matmul(a, b),
        reference=np.matmul,
        flops=lambda n: 2.0 * n**3,
        bytes=lambda n, itemsize: 3.0 * itemsize * n * n,
        dtypes=DTYPES,
        rtol=lambda dtype, n: {"float64": 1e-10, "float32": 1e-4, "float16": 2e-2,
                               "bfloat16": 1e-1}[dtype],
    )
)
def _build_stream(ctx: Any) -> Any:
    """STREAM's add: ``c = a + b`` into an output allocated once (``add(a, b,
    out=c)``), so the figure is the memory traffic and not the page faults of a
    fresh 16-128 MiB array at every call (those cost about 1.7x here). A library
    without ``out=`` (JAX's arrays are immutable, array-api-strict has none,
    Dask's graph allocates) keeps its allocating add: its own best."""
    xp = ctx.xp
    out: list[Any] = []  # once tried: [the output], or [None] where `out=` failed

    def add(a: Any, b: Any) -> Any:
        if not out:
            try:
                c = xp.empty_like(a)
                xp.add(a, b, out=c)
                out.append(c)
            except (TypeError, NotImplementedError, ValueError, AttributeError):
                out.append(None)
        return a + b if out[0] is None else xp.add(a, b, out=out[0])

    return add


register_case(
    Case(
        name="calib_stream", section="Calibration", units="GB/s",
        tags=("calibration", "stream"),
        doc="calibration: STREAM add c = a + b into a preallocated output (add(a, b, out=c); "
            "the allocating add where the library has no out=), on vectors far beyond "
            "the caches; the rate of the best sample (this machine's memory bandwidth)",
        sizes={"quick": [2**21], "default": [2**23], "full": [2**24]},
        size_names=("n",),
        setup=lambda rng, n: (rng.standard_normal(n), rng.standard_normal(n)),
        build=_build_stream,
        reference=np.add,
        flops=lambda n: 1.0 * n,
        bytes=lambda n, itemsize: 3.0 * itemsize * n,
        dtypes=DTYPES,
        notes=backends_noting("out"),  # (no out=: the allocating add),
    )
)
