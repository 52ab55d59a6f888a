"""The question's cases, Q1-Q4 (docs/sources.md: "The two source documents")."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...bench._cases import Case, backend_object, backends_lacking, register_case
from ._common import diagonal_shift, prepared, solve_setup, when_lazy

__all__: list[str] = []


_LAZY_LOOP = when_lazy(
    "{backend} is lazy: a Python loop of tiny lazy solves times its graph building and "
    "scheduler per system, not solving")


def _well_conditioned(rng: np.random.Generator, count: int, n: int) -> np.ndarray:
    return rng.standard_normal((count, n, n)) + diagonal_shift(n) * np.eye(n)


def _loop_setup(rng: np.random.Generator, s: Any) -> tuple[np.ndarray, ...]:
    count, n = s
    return _well_conditioned(rng, count, n), rng.standard_normal((count, n))


def _loop_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.linalg.solve(a, b[..., None])[..., 0]


def _split_systems(ctx: Any) -> Any:
    own = ctx.backend_object.bench.copy  # each system an array of its own, not a view

    def prep(a: Any, b: Any) -> Any:
        return ([own(a[i, ...]) for i in range(a.shape[0])],
                [own(b[i, ...]) for i in range(b.shape[0])])

    return prep


def _build_solve_loop(ctx: Any) -> Any:
    xp = ctx.xp
    solve = xp.linalg.solve

    def run(p: Any) -> Any:
        return xp.stack([solve(ai, bi) for ai, bi in zip(*p)])

    return prepared(_split_systems(ctx), run)


def _count_n(size: Any) -> tuple[int, int]:
    if isinstance(size, int):
        return (1000, size)
    if len(size) != 2:
        raise ValueError(f"size must be n or COUNTxN, got {size!r}")
    return (size[0], size[1])


def _solve_flops(s: Any) -> float:
    count, n = s
    return count * (2.0 / 3.0 * n**3 + 2.0 * n**2)


def _solve_bytes(s: Any, itemsize: int) -> float:
    count, n = s
    return itemsize * count * (n * n + 2 * n)


def _systems_case(name: str, section: str, doc: str, sizes: Any, **kw: Any) -> None:
    """A case on COUNT systems of side n (Q1, Q2, Q4): sizes (count, n), the solves' flop
    and byte counts; by default the per-system inputs and reference of the loops."""
    args: dict[str, Any] = dict(
        name=name, section=section, units="GFLOP/s", doc=doc, sizes=sizes,
        size_names=("count", "n"), normalize_size=_count_n, setup=_loop_setup,
        reference=_loop_ref, flops=_solve_flops, bytes=_solve_bytes)
    args.update(kw)
    register_case(Case(**args))


_systems_case(
    "q1_solve_loop", "Q1",
    "Q1: Python loop of COUNT solve(A, b), A n x n, b a vector; each system its own "
    "arrays, split from the stack in the first call (recorded apart); results stacked once",
    {"quick": [(100, 5)], "default": [(1000, 5)], "full": [(1000, 5)]},
    tags=("loop",),
    build=_build_solve_loop,
    skip_if=_LAZY_LOOP,
)


def _numba_skip(backend: str, dtype: str, size: Any) -> str | None:
    import importlib.util

    if importlib.util.find_spec("numba") is None:
        return "numba not installed (pip install numba, or xlinalg[bench])"
    if importlib.util.find_spec("scipy") is None:
        # numba's np.linalg.solve calls SciPy's LAPACK bindings (scipy.linalg.cython_lapack)
        return ("numba's np.linalg.solve needs SciPy, which is not installed (pip install "
                "scipy, or xlinalg[bench])")
    be = backend_object(backend)
    if be is None or not be.bench.numpy_arrays:
        return "numba compiles NumPy code: backends whose arrays are NumPy arrays only"
    if dtype not in ("float64", "float32"):
        return f"numba's np.linalg.solve supports float32/float64, not {dtype}"
    return None


def _build_numba(ctx: Any) -> Any:
    import numba

    @numba.njit(cache=False)
    def loop(a: Any, b: Any) -> Any:  # pragma: no cover - needs numba
        out = np.empty_like(b)
        for i in range(a.shape[0]):
            out[i] = np.linalg.solve(a[i], b[i])
        return out

    # the first call compiles; the timer records it apart (first_call_s)
    return loop


_systems_case(
    "q2_numba", "Q2",
    "Q2: numba @njit loop of COUNT np.linalg.solve(A, b) (numpy backend); the first "
    "call's compilation is recorded apart, never timed with the solves",
    {"quick": [(100, 5)], "default": [(1000, 5)], "full": [(1000, 5)]},
    build=_build_numba,
    skip_if=_numba_skip,
)

#: The sweep's points where the backends the documents do not choose between are timed
#: at the full scale: its ends and every 50 (12 of its 100 points; the quick, default
#: and earlier default sizes, 10, 50, 100, 200 and 500, are all among them).
def _sweep_anchor(n: int) -> bool:
    return n in (5, 10) or n % 50 == 0


def _sweep_subset(backend: str, dtype: str, n: Any) -> str | None:
    """At the full scale, a backend that declares itself outside the documents'
    choice (``Backend.bench.opt_in``: Dask, NumPy plus a scheduler; array-api-strict,
    NumPy underneath) is timed at the sweep's anchor points only: it was never the
    fastest at any of the 100 points in either committed full run."""
    be = backend_object(backend)
    why = be.bench.opt_in if be is not None else ""
    if not why or _sweep_anchor(int(n)):
        return None
    return (f"{backend} is timed at n = 5, 10 and every 50 of the full sweep only: {why}; "
            "it was never the fastest at any point of the committed full runs")


#: The sweep's points at the full scale: one point of a curve that its neighbours check
#: (the question's "one run per point", docs/sources.md), not a verdict each: a first
#: pass of 5 rounds (0.1 s sampled per backend at least), 3 later passes of 3 rounds,
#: no extra passes (the passes of 93-95 of the 100 points disagreed in the committed
#: full runs: the rule that adds passes cannot tell the points apart). Cost:
#: docs/benchmark.md, "What a full run costs".
_SWEEP_FULL_TIMING = {"min_samples": 5, "min_run_time": 0.1, "pass_rounds": 3, "max_passes": 4}

register_case(
    Case(
        name="q3_solve_sweep", section="Q3", units="GFLOP/s", tags=("sweep",),
        doc="Q3: solve(A, b) sweep over n (the document's n = 5, 10, ..., 500, which holds "
            "10, 20, ..., 500); inputs made outside the timed region, statistics per point",
        sizes={
            "quick": [10, 50],
            "default": [10, 100, 500],
            "full": list(range(5, 501, 5)),
        },
        size_names=("n",),
        setup=solve_setup,
        op=lambda ctx, a, b: ctx.xp.linalg.solve(a, b),
        reference=np.linalg.solve,
        flops=lambda n: 2.0 / 3.0 * n**3 + 2.0 * n**2,
        bytes=lambda n, itemsize: itemsize * (n * n + 2 * n),
        timing={"full": _SWEEP_FULL_TIMING},
        skip_at={"full": _sweep_subset},
    )
)

_Q4_N = (2, 5, 10, 20, 50, 100)
_Q4_SIZES = {
    "quick": [(100, 5), (100, 20)],
    "default": [(1000, 5)],
    "full": [(1000, n) for n in _Q4_N],
}
#: the memory wall's size (issue 39, docs/performance.md): 100,000 systems of 5x5,
#: for the batched small-solve cases (not the Python loops)
_Q4_WALL = (100_000, 5)


def _batched_setup(rng: np.random.Generator, s: Any) -> tuple[np.ndarray, ...]:
    count, n = s
    return _well_conditioned(rng, count, n), rng.standard_normal((count, n, 1))


_systems_case(
    "q4_batched", "Q4",
    "Q4: one batched solve of a (COUNT, n, n) stack, b (COUNT, n, 1), native "
    "linalg.solve (compare with q4_loop for the crossover)",
    {**_Q4_SIZES, "full": [*_Q4_SIZES["full"], _Q4_WALL]},
    setup=_batched_setup,
    op=lambda ctx, a, b: ctx.xp.linalg.solve(a, b),
    reference=np.linalg.solve,
    skip=backends_lacking("batched_solve"),
)

_systems_case(
    "q4_loop", "Q4",
    "Q4: Python loop of COUNT native solve(A, b) at the q4_batched sizes; systems "
    "split from the stack in the first call (recorded apart); results stacked once",
    _Q4_SIZES,
    tags=("loop",),
    build=_build_solve_loop,
    skip_if=_LAZY_LOOP,
)


def _build_solve_many(ctx: Any) -> Any:
    xp, xl = ctx.xp, ctx.xl

    def run(p: Any) -> Any:
        return xp.stack(xl.solve_many(*p))

    return prepared(_split_systems(ctx), run)


_systems_case(
    "q4_solve_many", "Q4",
    "Q4: xlinalg.solve_many on a list of COUNT systems (own arrays, made in the first "
    "call, recorded apart); solutions stacked once",
    _Q4_SIZES,
    build=_build_solve_many,
    skip_if=_LAZY_LOOP,
)


_LAZY_UNROLLED = when_lazy("{backend} is lazy: the unrolled straight-line code builds a "
                           "graph of hundreds of tiny tasks: it times the scheduler, not the "
                           "solve")


def _unrolled_skip(backend: str, dtype: str, size: Any) -> str | None:
    lazy = _LAZY_UNROLLED(backend, dtype, size)
    if lazy is not None:
        return lazy
    if size[1] > 8:
        return "solve_unrolled handles n <= 8 only"
    return None


def _build_unrolled(ctx: Any) -> Any:
    from ... import _unrolled

    xl = ctx.xl
    n = ctx.size[1]
    # What a user's first call is, the same on every run: where numba's kernel solves
    # these arrays (NumPy; torch and JAX CPU arrays), numba's disk cache is warmed
    # (compiled in a child process where it is cold) and the kernel dropped from this
    # worker, so that the first call loads it from the warm disk cache.
    # (a probe made as the cell's inputs are: the backend's device and dtype)
    if ctx.dtype in ("float32", "float64"):  # (numba's kernel: no float16, no bfloat16)
        probe = ctx.backend_object.from_numpy(np.zeros((1, n, n), dtype=ctx.dtype))
        _unrolled.warm_first_call(probe, probe[..., :1])

    def fn(a: Any, b: Any) -> Any:
        return xl.solve(a, b, method="unrolled")

    return fn


_systems_case(
    "q4_unrolled", "Q4",
    "Q4: xlinalg.solve(a, b, method=\"unrolled\") on the (COUNT, n, n) stack, n <= 8: "
    "what a user gets: numba's compiled kernel on NumPy arrays and on torch and JAX "
    "CPU arrays; jax.jit on JAX accelerators; torch.compile (Triton) on torch-cuda; "
    "the eager schedule elsewhere. First call recorded apart: numba's kernel loaded "
    "from its warm disk cache (warmed before timing, in a child process where it was "
    "cold); torch.compile and jax.jit compile in it",
    {"quick": [(100, 5)], "default": [(1000, 5)],
     "full": [(1000, 2), (1000, 5), (1000, 8), _Q4_WALL]},
    setup=_batched_setup,
    build=_build_unrolled,
    reference=np.linalg.solve,
    skip_if=_unrolled_skip,
)
