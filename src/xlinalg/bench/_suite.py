"""The built-in benchmark cases (CASES.md). Each is one :func:`register_case` call.

Sizes are the documents' own at the ``full`` scale; ``default`` finishes in a few
minutes on a 2-core machine with every CPU backend; ``quick`` is for CI.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._cases import Case, register_case

__all__ = ["CALIBRATION_CASES"]

_NO_BF16 = ("numpy", "dask", "array-api-strict", "cupy")


def _bf16_skip(backend: str, dtype: str, size: Any) -> str | None:
    if dtype == "bfloat16" and backend in _NO_BF16:
        return f"{backend} has no bfloat16 dtype"
    return None


# ---------------------------------------------------------------------- calibration
# Run first on every backend (see RunConfig.calibrate): the peak that "% of peak"
# is measured against. A square GEMM for arithmetic (GFLOP/s) and a streaming
# add c = a + b for memory bandwidth (GB/s: 2 arrays read, 1 written), on arrays
# far larger than any cache. Both are the library's native calls, so the peak
# is what this machine and this library reach, not a vendor figure.
CALIBRATION_CASES = ("calib_gemm", "calib_stream")

register_case(
    Case(
        name="calib_gemm", section="Calibration", units="GFLOP/s",
        doc="calibration: square GEMM matmul(a, b), n x n (this machine's arithmetic peak)",
        sizes={"quick": [256], "default": [1024], "full": [2048]},
        size_names=("n",),
        setup=lambda rng, n: (rng.standard_normal((n, n)), rng.standard_normal((n, n))),
        op=lambda ctx, a, b: ctx.xp.matmul(a, b),
        reference=np.matmul,
        flops=lambda n: 2.0 * n**3,
        bytes=lambda n, itemsize: 3.0 * itemsize * n * n,
        dtypes=("float64", "float32", "float16", "bfloat16"),
        skip_if=_bf16_skip,
        rtol=lambda dtype, n: {"float64": 1e-10, "float32": 1e-4, "float16": 2e-2,
                               "bfloat16": 1e-1}[dtype],
    )
)
register_case(
    Case(
        name="calib_stream", section="Calibration", units="GB/s",
        doc="calibration: streaming add c = a + b on vectors far beyond the caches "
            "(this machine's memory bandwidth)",
        sizes={"quick": [2**21], "default": [2**23], "full": [2**24]},
        size_names=("n",),
        setup=lambda rng, n: (rng.standard_normal(n), rng.standard_normal(n)),
        op=lambda ctx, a, b: a + b,
        reference=np.add,
        flops=lambda n: 1.0 * n,
        bytes=lambda n, itemsize: 3.0 * itemsize * n,
        dtypes=("float64", "float32", "float16", "bfloat16"),
        skip_if=_bf16_skip,
    )
)


# ---------------------------------------------------------------------- solve (Q1, Q3)
def _solve_setup(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    # A well-conditioned system (diagonal shift): the check then measures the
    # backend's rounding, not the conditioning of a random matrix.
    a = rng.standard_normal((n, n)) + _shift(n) * np.eye(n)
    b = rng.standard_normal(n)
    return a, b


register_case(
    Case(
        name="solve", section="Extra", units="GFLOP/s",
        doc="extra: generic solve(A, b), A n x n, b a vector (the engine's example; the "
            "documents' loop and sweep are q1_solve_loop and q3_solve_sweep)",
        sizes={
            "quick": [5, 64],
            "default": [5, 50, 200, 500],
            "full": [5, *range(10, 501, 10)],
        },
        size_names=("n",),
        setup=_solve_setup,
        op=lambda ctx, a, b: ctx.xp.linalg.solve(a, b),
        reference=np.linalg.solve,
        # LU (2/3 n^3) + forward and back substitution for one right-hand side (2 n^2)
        flops=lambda n: 2.0 / 3.0 * n**3 + 2.0 * n**2,
        bytes=lambda n, itemsize: itemsize * (n * n + 2 * n),
    )
)


# ---------------------------------------------------------------------- matmul (A1)
def _mkn(size: Any) -> tuple[int, int, int]:
    if isinstance(size, int):
        return (size, size, size)
    if len(size) == 2:
        return (size[0], size[1], size[1])
    if len(size) != 3:
        raise ValueError(f"matmul size must be n, MxK or MxKxN, got {size!r}")
    return (size[0], size[1], size[2])


register_case(
    Case(
        name="matmul", section="Extra", units="GFLOP/s",
        doc="extra: generic GEMM a @ b, a (m, k), b (k, n), any size (the engine's example; "
            "the article's GEMM is a1_gemm)",
        sizes={
            "quick": [(64, 64, 64), (128, 256, 512)],
            "default": [(128, 256, 512), (512, 1024, 2048)],
            "full": [(128, 256, 512), (512, 1024, 2048), (2048, 4096, 8192)],
        },
        size_names=("m", "k", "n"),
        normalize_size=_mkn,
        setup=lambda rng, s: (
            rng.standard_normal((s[0], s[1])),
            rng.standard_normal((s[1], s[2])),
        ),
        op=lambda ctx, a, b: ctx.xp.matmul(a, b),
        reference=np.matmul,
        flops=lambda s: 2.0 * s[0] * s[1] * s[2],
        bytes=lambda s, itemsize: itemsize * (s[0] * s[1] + s[1] * s[2] + s[0] * s[2]),
        dtypes=("float64", "float32", "float16", "bfloat16"),
        skip_if=_bf16_skip,
        # float16/bfloat16 accumulate k products: loosen with k
        rtol=lambda dtype, s: {
            "float64": 1e-10,
            "float32": 1e-4,
            "float16": 5e-3 * max(1.0, (s[1] / 256) ** 0.5),
            "bfloat16": 4e-2 * max(1.0, (s[1] / 256) ** 0.5),
        }[dtype],
    )
)


# ---------------------------------------------------------------------- sigmoid (A4)
def _sigmoid_ref(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _shape2(size: Any) -> tuple[int, int]:
    if isinstance(size, int):
        return (size, size)
    if len(size) != 2:
        raise ValueError(f"sigmoid size must be n or RxC, got {size!r}")
    return (size[0], size[1])


register_case(
    Case(
        name="sigmoid", section="Extra", units="GB/s",
        doc="extra: xlinalg.sigmoid, stable for large |x| (the engine's example; the "
            "article's elementwise cases are a4_*)",
        sizes={
            "quick": [(256, 256)],
            "default": [(1024, 1024), (4096, 4096)],
            "full": [(4096, 4096)],
        },
        size_names=("rows", "cols"),
        normalize_size=_shape2,
        # |x| up to 40: the naive formula overflows exp in float32 there
        setup=lambda rng, s: (rng.uniform(-40.0, 40.0, size=s),),
        op=lambda ctx, x: ctx.xl.sigmoid(x),
        reference=_sigmoid_ref,
        flops=lambda s: 4.0 * s[0] * s[1],
        bytes=lambda s, itemsize: 2.0 * itemsize * s[0] * s[1],
        dtypes=("float64", "float32", "float16", "bfloat16"),
        skip_if=_bf16_skip,
    )
)


# ======================================================================
# The CASES.md cases, one name per document operation (q1..q4, a1..a15).
# ======================================================================
_DASK_LOOP = ("a Python loop of tiny lazy solves times Dask's graph building and "
              "scheduler per system, not solving")
_DASK_BATCHED = "dask.array.linalg.solve is 2-D only (no batched stacks)"
_F16_DTYPES = ("float64", "float32", "float16", "bfloat16")


def _prepared(prep: Any, run: Any) -> Any:
    """A timed callable whose inputs are prepared by ``prep(*inputs)`` once per cell.

    Used with ``build=``: the preparation (splitting a stack into per-system arrays,
    a cast, a strided view) happens in the first call, which the timer records apart
    (``first_call_s``); every later call reuses it. The inputs are compared by
    identity so a different input is prepared again.
    """
    state: dict[str, Any] = {}

    def fn(*args: Any) -> Any:
        key = state.get("key")
        if key is None or len(key) != len(args) or any(a is not k for a, k in zip(args, key)):
            state["key"] = args
            state["val"] = prep(*args)
        return run(state["val"])

    return fn


def _own(xp: Any, x: Any) -> Any:
    """`x` as an array of its own (not a view into a stack)."""
    if hasattr(x, "clone"):  # torch
        return x.clone()
    if hasattr(x, "copy"):
        return x.copy()
    return xp.asarray(x, copy=True)


def _shift(n: int) -> float:
    """Diagonal shift past the Gaussian part's largest singular value (about 2 sqrt(n)):
    a shift of n alone left 1000-member stacks of n <= 5 with condition numbers of 1e4-1e5,
    whose float32 solves then failed a check meant for rounding, not conditioning."""
    return n + 2.0 * n**0.5


def _well_conditioned(rng: np.random.Generator, count: int, n: int) -> np.ndarray:
    return rng.standard_normal((count, n, n)) + _shift(n) * np.eye(n)


def _loop_setup(rng: np.random.Generator, s: Any) -> tuple[np.ndarray, ...]:
    count, n = s
    return _well_conditioned(rng, count, n), rng.standard_normal((count, n))


def _loop_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.linalg.solve(a, b[..., None])[..., 0]


def _split_systems(ctx: Any) -> Any:
    xp = ctx.xp

    def prep(a: Any, b: Any) -> Any:
        return ([_own(xp, a[i, ...]) for i in range(a.shape[0])],
                [_own(xp, b[i, ...]) for i in range(b.shape[0])])

    return prep


def _build_solve_loop(ctx: Any) -> Any:
    xp = ctx.xp
    solve = xp.linalg.solve

    def run(p: Any) -> Any:
        return xp.stack([solve(ai, bi) for ai, bi in zip(*p)])

    return _prepared(_split_systems(ctx), run)


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


register_case(
    Case(
        name="q1_solve_loop", section="Q1", units="GFLOP/s",
        doc="Q1: Python loop of COUNT solve(A, b), A n x n, b a vector; each system its own "
            "arrays, split from the stack in the first call (recorded apart); results stacked once",
        sizes={"quick": [(100, 5)], "default": [(1000, 5)], "full": [(1000, 5)]},
        size_names=("count", "n"),
        normalize_size=_count_n,
        setup=_loop_setup,
        build=_build_solve_loop,
        reference=_loop_ref,
        flops=_solve_flops,
        bytes=_solve_bytes,
        skip={"dask": _DASK_LOOP},
    )
)


def _numba_skip(backend: str, dtype: str, size: Any) -> str | None:
    import importlib.util

    if importlib.util.find_spec("numba") is None:
        return "numba not installed"
    if backend != "numpy":
        return "numba compiles NumPy code: numpy backend only"
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


register_case(
    Case(
        name="q2_numba", section="Q2", units="GFLOP/s",
        doc="Q2: numba @njit loop of COUNT np.linalg.solve(A, b) (numpy backend); the first "
            "call's compilation is recorded apart, never timed with the solves",
        sizes={"quick": [(100, 5)], "default": [(1000, 5)], "full": [(1000, 5)]},
        size_names=("count", "n"),
        normalize_size=_count_n,
        setup=_loop_setup,
        build=_build_numba,
        reference=_loop_ref,
        flops=_solve_flops,
        bytes=_solve_bytes,
        skip_if=_numba_skip,
    )
)

register_case(
    Case(
        name="q3_solve_sweep", section="Q3", units="GFLOP/s",
        doc="Q3: solve(A, b) sweep over n (the document's n = 5, 10, ..., 500, which holds "
            "10, 20, ..., 500); inputs made outside the timed region, statistics per point",
        sizes={
            "quick": [10, 50],
            "default": [10, 50, 100, 200, 500],
            "full": list(range(5, 501, 5)),
        },
        size_names=("n",),
        setup=_solve_setup,
        op=lambda ctx, a, b: ctx.xp.linalg.solve(a, b),
        reference=np.linalg.solve,
        flops=lambda n: 2.0 / 3.0 * n**3 + 2.0 * n**2,
        bytes=lambda n, itemsize: itemsize * (n * n + 2 * n),
    )
)

_Q4_N = (2, 5, 10, 20, 50, 100)
_Q4_SIZES = {
    "quick": [(100, 5), (100, 20)],
    "default": [(1000, n) for n in (2, 5, 20, 100)],
    "full": [(1000, n) for n in _Q4_N],
}


def _batched_setup(rng: np.random.Generator, s: Any) -> tuple[np.ndarray, ...]:
    count, n = s
    return _well_conditioned(rng, count, n), rng.standard_normal((count, n, 1))


register_case(
    Case(
        name="q4_batched", section="Q4", units="GFLOP/s",
        doc="Q4: one batched solve of a (COUNT, n, n) stack, b (COUNT, n, 1), native "
            "linalg.solve (compare with q4_loop for the crossover)",
        sizes=_Q4_SIZES,
        size_names=("count", "n"),
        normalize_size=_count_n,
        setup=_batched_setup,
        op=lambda ctx, a, b: ctx.xp.linalg.solve(a, b),
        reference=np.linalg.solve,
        flops=_solve_flops,
        bytes=_solve_bytes,
        skip={"dask": _DASK_BATCHED},
    )
)

register_case(
    Case(
        name="q4_loop", section="Q4", units="GFLOP/s",
        doc="Q4: Python loop of COUNT native solve(A, b) at the q4_batched sizes; systems "
            "split from the stack in the first call (recorded apart); results stacked once",
        sizes=_Q4_SIZES,
        size_names=("count", "n"),
        normalize_size=_count_n,
        setup=_loop_setup,
        build=_build_solve_loop,
        reference=_loop_ref,
        flops=_solve_flops,
        bytes=_solve_bytes,
        skip={"dask": _DASK_LOOP},
    )
)


def _build_solve_many(ctx: Any) -> Any:
    xp, xl = ctx.xp, ctx.xl

    def run(p: Any) -> Any:
        return xp.stack(xl.solve_many(*p))

    return _prepared(_split_systems(ctx), run)


register_case(
    Case(
        name="q4_solve_many", section="Q4", units="GFLOP/s",
        doc="Q4: xlinalg.solve_many on a list of COUNT systems (own arrays, made in the first "
            "call, recorded apart); solutions stacked once",
        sizes=_Q4_SIZES,
        size_names=("count", "n"),
        normalize_size=_count_n,
        setup=_loop_setup,
        build=_build_solve_many,
        reference=_loop_ref,
        flops=_solve_flops,
        bytes=_solve_bytes,
        skip={"dask": _DASK_LOOP},
    )
)


def _unrolled_skip(backend: str, dtype: str, size: Any) -> str | None:
    if size[1] > 8:
        return "solve_unrolled handles n <= 8 only"
    return None


def _build_unrolled(ctx: Any) -> Any:
    from .. import _unrolled

    # torch: eager (compile=False); torch.compile of the unrolled code costs tens of
    # seconds per (n, dtype) on CPU, too slow for this suite. JAX: jax.jit (compiled
    # on the first call, recorded apart). Others: eager.
    compile_ = False if ctx.backend.startswith("torch") else None

    def fn(a: Any, b: Any) -> Any:
        return _unrolled.solve_unrolled(a, b, errors="nan", compile=compile_)

    return fn


register_case(
    Case(
        name="q4_unrolled", section="Q4", units="GFLOP/s",
        doc="Q4: xlinalg._unrolled.solve_unrolled on the (COUNT, n, n) stack, n <= 8 "
            "(jax.jit on JAX; torch eager: torch.compile is too slow to build here)",
        sizes={"quick": [(100, 5)], "default": [(1000, 2), (1000, 5)],
               "full": [(1000, 2), (1000, 5), (1000, 8)]},
        size_names=("count", "n"),
        normalize_size=_count_n,
        setup=_batched_setup,
        build=_build_unrolled,
        reference=np.linalg.solve,
        flops=_solve_flops,
        bytes=_solve_bytes,
        skip={"dask": "the unrolled straight-line code on Dask builds a graph of hundreds "
                      "of tiny tasks: it times the scheduler, not the solve"},
        skip_if=_unrolled_skip,
    )
)


# ---------------------------------------------------------------------- GEMM (A1, A2)
def _gemm_rtol(dtype: str, s: Any) -> float:
    return {
        "float64": 1e-10,
        "float32": 1e-4,
        "float16": 5e-3 * max(1.0, (s[1] / 256) ** 0.5),
        "bfloat16": 4e-2 * max(1.0, (s[1] / 256) ** 0.5),
    }[dtype]


def _gemm_setup(rng: np.random.Generator, s: Any) -> tuple[np.ndarray, ...]:
    return rng.standard_normal((s[0], s[1])), rng.standard_normal((s[1], s[2]))


def _gemm_flops(s: Any) -> float:
    return 2.0 * s[0] * s[1] * s[2]


def _gemm_bytes(s: Any, itemsize: int) -> float:
    return itemsize * (s[0] * s[1] + s[1] * s[2] + s[0] * s[2])


_A1 = [(128, 256, 512), (512, 1024, 2048), (2048, 4096, 8192)]
_A1_SIZES = {"quick": _A1[:1], "default": _A1[:2], "full": _A1}


def _gemm_case(name: str, doc: str, sizes: Any, **kw: Any) -> Case:
    args: dict[str, Any] = dict(
        name=name, doc=doc, sizes=sizes, size_names=("m", "k", "n"), normalize_size=_mkn,
        section=name.split("_")[0].upper(), units="GFLOP/s",
        setup=_gemm_setup, op=lambda ctx, a, b: ctx.xp.matmul(a, b), reference=np.matmul,
        flops=_gemm_flops, bytes=_gemm_bytes, dtypes=_F16_DTYPES, skip_if=_bf16_skip,
        rtol=_gemm_rtol,
    )
    args.update(kw)
    return register_case(Case(**args))


_gemm_case("a1_gemm", "A1: GEMM matmul(a, b), a (m, k), b (k, n)", _A1_SIZES)
_A2 = [(32, 128, 256), (128, 512, 1024), (512, 2048, 4096)]
_gemm_case("a2_fc", "A2: fully-connected layer shapes: x (batch m, in k) @ W (in k, out n)",
           {"quick": _A2[:2], "default": _A2, "full": _A2})


# ---------------------------------------------------------------------- attention (A3)
def _mT(xp: Any, x: Any) -> Any:
    if hasattr(x, "mT"):
        return x.mT
    return xp.swapaxes(x, -1, -2)


def _softmax(xp: Any, s: Any) -> Any:
    if hasattr(xp, "softmax"):  # torch
        return xp.softmax(s, dim=-1)
    e = xp.exp(s - xp.max(s, axis=-1, keepdims=True))
    return e / xp.sum(e, axis=-1, keepdims=True)


def _attention_op(ctx: Any, q: Any, k: Any, v: Any) -> Any:
    xp = ctx.xp
    scale = 1.0 / float(q.shape[-1]) ** 0.5
    s = xp.matmul(q, _mT(xp, k)) * scale
    return xp.matmul(_softmax(xp, s), v)


def _attention_ref(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v


_A3 = [(8, 32, 64), (16, 128, 128), (32, 512, 256)]
register_case(
    Case(
        name="a3_attention", section="A3", units="GFLOP/s",
        doc="A3: attention heads: softmax(q @ k^T / sqrt(d)) @ v, q, k, v (heads, seq, dim); "
            "the article gives heads x dim only (8x64, 16x128, 32x256), no sequence length: "
            "seq = 32, 128, 512 are this suite's choice",
        sizes={"quick": _A3[:1], "default": _A3, "full": _A3},
        size_names=("heads", "seq", "dim"),
        setup=lambda rng, s: tuple(rng.standard_normal(s) for _ in range(3)),
        op=_attention_op,
        reference=_attention_ref,
        flops=lambda s: 4.0 * s[0] * s[1] * s[1] * s[2] + 5.0 * s[0] * s[1] * s[1],
        bytes=lambda s, itemsize: itemsize * 4 * s[0] * s[1] * s[2],
        dtypes=_F16_DTYPES,
        skip_if=_bf16_skip,
        rtol=lambda dtype, s: {"float64": 1e-10, "float32": 1e-4,
                               "float16": 2e-2, "bfloat16": 1e-1}[dtype],
    )
)


# ---------------------------------------------------------------------- elementwise (A4)
_A4_SIZES = {"quick": [(256, 256)], "default": [(1024, 1024), (4096, 4096)],
             "full": [(4096, 4096)]}


def _ew2_case(name: str, doc: str, op: Any, ref: Any) -> None:
    register_case(
        Case(
            name=name, doc=doc, sizes=_A4_SIZES, size_names=("rows", "cols"),
            section="A4", units="GB/s",
            normalize_size=_shape2,
            setup=lambda rng, s: (rng.standard_normal(s), rng.standard_normal(s)),
            op=op, reference=ref,
            flops=lambda s: 1.0 * s[0] * s[1],
            bytes=lambda s, itemsize: 3.0 * itemsize * s[0] * s[1],
            dtypes=_F16_DTYPES, skip_if=_bf16_skip,
        )
    )


_ew2_case("a4_add", "A4: elementwise a + b", lambda ctx, a, b: a + b, np.add)
_ew2_case("a4_multiply", "A4: elementwise a * b", lambda ctx, a, b: a * b, np.multiply)
register_case(
    Case(
        name="a4_sigmoid", section="A4", units="GB/s",
        doc="A4: elementwise xlinalg.sigmoid (native where the library has one)",
        sizes=_A4_SIZES,
        size_names=("rows", "cols"),
        normalize_size=_shape2,
        setup=lambda rng, s: (rng.uniform(-40.0, 40.0, size=s),),
        op=lambda ctx, x: ctx.xl.sigmoid(x),
        reference=_sigmoid_ref,
        flops=lambda s: 4.0 * s[0] * s[1],
        bytes=lambda s, itemsize: 2.0 * itemsize * s[0] * s[1],
        dtypes=_F16_DTYPES,
        skip_if=_bf16_skip,
    )
)


# ---------------------------------------------------------------------- broadcast (A5, A6)
def _bcast_setup(rng: np.random.Generator, s: Any) -> tuple[np.ndarray, ...]:
    rows, cols, full = s
    other = (rows, cols) if full else (1, cols)
    return rng.standard_normal((rows, 1)), rng.standard_normal(other)


register_case(
    Case(
        name="a5_broadcast", section="A5", units="GB/s",
        doc="A5: broadcast add; full=0: (rows, 1) + (1, cols); full=1: (rows, 1) broadcast "
            "over a (rows, cols) matrix",
        sizes={s: [(128, 256, 0), (128, 1024, 1)] for s in ("quick", "default", "full")},
        size_names=("rows", "cols", "full"),
        setup=_bcast_setup,
        op=lambda ctx, a, b: a + b,
        reference=np.add,
        flops=lambda s: 1.0 * s[0] * s[1],
        bytes=lambda s, itemsize: itemsize * (s[0] + (s[0] * s[1] if s[2] else s[1])
                                              + s[0] * s[1]),
        dtypes=_F16_DTYPES,
        skip_if=_bf16_skip,
    )
)

register_case(
    Case(
        name="a6_broadcast_trap", section="A6", units="GB/s",
        doc="A6: the broadcast trap (n, 1) + (1, n): an n x n result from 2n inputs "
            "(peak memory recorded; a size that does not fit is recorded as oom)",
        sizes={"quick": [1000], "default": [1000, 4000], "full": [1000, 4000, 10000]},
        size_names=("n",),
        setup=lambda rng, n: (rng.standard_normal((n, 1)), rng.standard_normal((1, n))),
        op=lambda ctx, a, b: a + b,
        reference=np.add,
        flops=lambda n: 1.0 * n * n,
        bytes=lambda n, itemsize: itemsize * (2.0 * n + n * n),
        dtypes=_F16_DTYPES,
        skip_if=_bf16_skip,
    )
)


# ---------------------------------------------------------------------- SVD, QR (A7, A8)
def _svd_op(ctx: Any, a: Any) -> Any:
    return tuple(ctx.xp.linalg.svd(a))


register_case(
    Case(
        name="a7_svd", section="A7", units="GFLOP/s",
        doc="A7: full SVD of an n x n matrix, native linalg.svd (checked on the singular values)",
        sizes={"quick": [64], "default": [128, 512], "full": [512]},
        size_names=("n",),
        setup=lambda rng, n: (rng.standard_normal((n, n)),),
        op=_svd_op,
        reference=lambda a: np.linalg.svd(a, compute_uv=False),
        result_for_check=lambda r: r[1],
        flops=lambda n: 22.0 * n**3,
        bytes=lambda n, itemsize: itemsize * (3.0 * n * n + n),
        skip={"dask": "dask.array.linalg.svd needs a single column chunk (tall-and-skinny); "
                      "a square SVD is one NumPy task"},
    )
)

register_case(
    Case(
        name="a8_qr", section="A8", units="GFLOP/s",
        doc="A8: QR of an n x n matrix, native linalg.qr (checked as Q @ R == A)",
        sizes={"quick": [64], "default": [128, 512], "full": [512]},
        size_names=("n",),
        setup=lambda rng, n: (rng.standard_normal((n, n)),),
        op=lambda ctx, a: tuple(ctx.xp.linalg.qr(a)),
        reference=lambda a: a,
        result_for_check=lambda r: r[0] @ r[1],
        flops=lambda n: 4.0 / 3.0 * n**3,
        bytes=lambda n, itemsize: itemsize * 3.0 * n * n,
        skip={"dask": "dask.array.linalg.qr is tall-and-skinny QR (one column chunk); "
                      "a square QR is one NumPy task"},
    )
)


# ---------------------------------------------------------------------- batched matmul (A9)
register_case(
    Case(
        name="a9_batched_matmul", section="A9", units="GFLOP/s",
        doc="A9: batched matmul of (batch, n, n) stacks",
        sizes={"quick": [(16, 128)], "default": [(16, 256), (64, 256)],
               "full": [(16, 256), (64, 256), (256, 256), (1024, 256)]},
        size_names=("batch", "n"),
        setup=lambda rng, s: (rng.standard_normal((s[0], s[1], s[1])),
                              rng.standard_normal((s[0], s[1], s[1]))),
        op=lambda ctx, a, b: ctx.xp.matmul(a, b),
        reference=np.matmul,
        flops=lambda s: 2.0 * s[0] * s[1] ** 3,
        bytes=lambda s, itemsize: 3.0 * itemsize * s[0] * s[1] ** 2,
        dtypes=_F16_DTYPES,
        skip_if=_bf16_skip,
        rtol=lambda dtype, s: _gemm_rtol(dtype, (s[1], s[1], s[1])),
    )
)


# ---------------------------------------------------------------------- layout (A10)
def _contiguous(xp: Any, x: Any) -> Any:
    if hasattr(x, "contiguous"):  # torch
        return x.contiguous()
    if xp is np:
        return np.ascontiguousarray(x)
    return xp.asarray(x, copy=True)


_JAX_LAYOUT = ("JAX has no layout a user can choose: x[:, ::2] is a slice that XLA "
               "materialises as a new row-major array, so the 'strided' operand is already a "
               "contiguous copy; only the contiguous cell is run")


def _layout_skip(backend: str, dtype: str, size: Any) -> str | None:
    if backend.startswith("jax") and not size[1]:
        return _JAX_LAYOUT
    return _bf16_skip(backend, dtype, size)


def _build_layout(ctx: Any) -> Any:
    xp, contiguous = ctx.xp, bool(ctx.size[1])

    def prep(x: Any, b: Any) -> Any:
        view = x[:, ::2]
        return (_contiguous(xp, view) if contiguous else view), b

    return _prepared(prep, lambda p: xp.matmul(*p))


register_case(
    Case(
        name="a10_layout", section="A10", units="GFLOP/s",
        doc="A10: matmul of x[:, ::2] (x n x n, a strided n x n/2 view; contiguous=1: its "
            "contiguous copy) with b (n/2, n); view/copy made in the first call, recorded apart",
        sizes={"quick": [(512, 0), (512, 1)], "default": [(1024, 0), (1024, 1)],
               "full": [(1024, 0), (1024, 1)]},
        size_names=("n", "contiguous"),
        setup=lambda rng, s: (rng.standard_normal((s[0], s[0])),
                              rng.standard_normal((s[0] // 2, s[0]))),
        build=_build_layout,
        reference=lambda x, b: x[:, ::2] @ b,
        flops=lambda s: 2.0 * s[0] * (s[0] // 2) * s[0],
        bytes=lambda s, itemsize: itemsize * (2.0 * s[0] * (s[0] // 2) + s[0] * s[0]),
        dtypes=_F16_DTYPES,
        skip_if=_layout_skip,
        skip={"dask": "Dask arrays are chunked graphs: a strided view has no layout to time"},
        notes={"array-api-strict": "array-api-strict wraps a NumPy array: x[:, ::2] is a real "
                                   "strided NumPy view, so the layout difference is NumPy's",
               "jax-cpu": _JAX_LAYOUT, "jax-gpu": _JAX_LAYOUT},
    )
)


# ---------------------------------------------------------------------- transfer (A11)
_NO_TRANSFER = {
    "numpy": "NumPy arrays live on the host: there is no transfer",
    "dask": "Dask arrays are graphs over host NumPy chunks: there is no device transfer",
}
_CPU_TRANSFER = ("on a CPU backend there is no device transfer: the 'device' is host memory, "
                 "and what is timed is a host copy or a wrapper, not a PCIe transfer")
_A11_NOTES = {b: _CPU_TRANSFER for b in ("torch-cpu", "jax-cpu", "array-api-strict")}
_CPU_NOTE = (" On CPU backends the 'device' is host memory: what is timed is the real "
             "copy/wrapping cost, not a PCIe transfer.")


def _backend_of(ctx: Any) -> Any:
    from .. import backends

    return backends.get_backend(ctx.backend)


def _build_h2d(ctx: Any) -> Any:
    be = _backend_of(ctx)

    def prep(a: Any, b: Any) -> Any:
        return be.to_numpy(a), be.to_numpy(b)

    return _prepared(prep, lambda p: (be.from_numpy(p[0]), be.from_numpy(p[1])))


def _build_d2h(ctx: Any) -> Any:
    be = _backend_of(ctx)
    return lambda a, b: (be.to_numpy(a), be.to_numpy(b))


def _build_dlpack(ctx: Any) -> Any:
    be, xp = _backend_of(ctx), ctx.xp

    def prep(a: Any, b: Any) -> Any:
        # writable host copies (a read-only array cannot be exported with older DLPack)
        return np.array(be.to_numpy(a), copy=True), np.array(be.to_numpy(b), copy=True)

    return _prepared(prep, lambda p: (xp.from_dlpack(p[0]), xp.from_dlpack(p[1])))


def _build_pipeline(ctx: Any) -> Any:
    be, xp = _backend_of(ctx), ctx.xp

    def prep(a: Any, b: Any) -> Any:
        return be.to_numpy(a), be.to_numpy(b)

    return _prepared(prep, lambda p: be.to_numpy(xp.matmul(be.from_numpy(p[0]),
                                                           be.from_numpy(p[1]))))


def _transfer_case(name: str, doc: str, build: Any, *, pipeline: bool = False,
                   skip: Any = None, zero_copy: bool = False) -> None:
    register_case(
        Case(
            name=name, doc=doc + _CPU_NOTE, sizes=_A1_SIZES, size_names=("m", "k", "n"),
            section="A11", units="GFLOP/s" if pipeline else "GB/s", notes=_A11_NOTES,
            normalize_size=_mkn, setup=_gemm_setup, build=build,
            reference=np.matmul if pipeline else (lambda a, b: (a, b)),
            flops=_gemm_flops if pipeline else (lambda s: 0.0),
            # zero-copy wrapping moves no bytes: no GB/s figure (the time is the handshake)
            bytes=(_gemm_bytes if pipeline
                   else (lambda s, itemsize: 0.0) if zero_copy
                   else (lambda s, itemsize: 2.0 * itemsize * (s[0] * s[1] + s[1] * s[2]))),
            dtypes=_F16_DTYPES, skip_if=_bf16_skip, rtol=_gemm_rtol if pipeline else None,
            skip=dict(_NO_TRANSFER, **(skip or {})),
        )
    )


_transfer_case("a11_transfer_h2d", "A11: host -> device: NumPy a (m, k), b (k, n) to the "
               "backend (its from_numpy: a copy)", _build_h2d)
_ZERO_COPY_D2H = ("its arrays already live in host memory and NumPy wraps them without a copy "
                  "(a view, not a transfer); the wrapping cost is timed by a11_transfer_dlpack")
_transfer_case("a11_transfer_d2h", "A11: device -> host: backend a, b to NumPy", _build_d2h,
               skip={"torch-cpu": _ZERO_COPY_D2H, "jax-cpu": _ZERO_COPY_D2H})
_transfer_case("a11_transfer_dlpack", "A11: host -> backend with xp.from_dlpack (zero-copy "
               "where the library can)", _build_dlpack, zero_copy=True,
               skip={"torch-cuda": "from_dlpack cannot move host memory to a GPU",
                     "cupy": "from_dlpack cannot move host memory to a GPU",
                     "jax-gpu": "from_dlpack cannot move host memory to a GPU"})
_transfer_case("a11_transfer_pipeline", "A11: hybrid pipeline: NumPy -> backend -> "
               "matmul -> NumPy", _build_pipeline, pipeline=True)


# ---------------------------------------------------------------------- precision (A12)
def _precision_bytes(target: str) -> Callable[[Any, int], float]:
    """A12's bytes: the operands in `target`, whatever the run's itemsize."""
    width = 4 if target == "float32" else 2

    def count(s: Any, itemsize: int) -> float:
        return width * (s[0] * s[1] + s[1] * s[2] + s[0] * s[2])

    return count


def _precision_rtol(target: str) -> Callable[[str, Any], float]:
    """A12's tolerance: the looser of the target's and the run dtype's GEMM bound."""

    def rtol(dtype: str, s: Any) -> float:
        return max(_gemm_rtol(target, s), _gemm_rtol(dtype, s))

    return rtol


def _precision_skip(target: str) -> Any:
    def rule(backend: str, dtype: str, size: Any) -> str | None:
        if backend == "array-api-strict" and target != "float32":
            return f"the array API standard has no {target}"
        if target == "bfloat16" and backend in _NO_BF16:
            return f"{backend} has no bfloat16 dtype"
        return None

    return rule


def _build_precision(target: str) -> Any:
    def build(ctx: Any) -> Any:
        from ._cases import native_dtype

        xp = ctx.xp
        nd = native_dtype(ctx.backend, target)

        def cast(x: Any) -> Any:
            if hasattr(x, "to"):  # torch
                return x.to(nd)
            if hasattr(x, "astype"):
                return x.astype(nd)
            return xp.astype(x, nd)

        return _prepared(lambda a, b: (cast(a), cast(b)), lambda p: xp.matmul(*p))

    return build


for _target in ("float32", "float16", "bfloat16"):
    register_case(
        Case(
            name=f"a12_precision_{_target}", section="A12", units="GFLOP/s",
            compute_dtype=_target,
            doc=f"A12: the A1 GEMM with a, b cast (in the first call, recorded apart) to "
                f"{_target}, whatever the run's dtype",
            sizes=_A1_SIZES, size_names=("m", "k", "n"), normalize_size=_mkn,
            setup=_gemm_setup, build=_build_precision(_target), reference=np.matmul,
            flops=_gemm_flops,
            bytes=_precision_bytes(_target),
            dtypes=_F16_DTYPES,
            skip_if=_precision_skip(_target),
            rtol=_precision_rtol(_target),
        )
    )


# ---------------------------------------------------------------------- fusion (A13)
def _chain(xp: Any, x: Any) -> Any:
    return (x * 2.0 + 1.0) * xp.tanh(x) - xp.exp(-(x * x))


def _chain_ref(x: np.ndarray) -> np.ndarray:
    return _chain(np, x)


_A13_SIZES = {"quick": [(256, 256)], "default": [(1024, 1024), (4096, 4096)],
              "full": [(4096, 4096)]}
_A13_COMMON: dict[str, Any] = dict(
    sizes=_A13_SIZES, size_names=("rows", "cols"), normalize_size=_shape2,
    setup=lambda rng, s: (rng.standard_normal(s),), reference=_chain_ref,
    flops=lambda s: 8.0 * s[0] * s[1],
    bytes=lambda s, itemsize: 2.0 * itemsize * s[0] * s[1],
    dtypes=_F16_DTYPES, skip_if=_bf16_skip,
)

register_case(
    Case(
        name="a13_fusion_eager", section="A13", units="GB/s",
        doc="A13: elementwise chain (2x + 1) * tanh(x) - exp(-x^2), eager (one pass per op)",
        op=lambda ctx, x: _chain(ctx.xp, x),
        **_A13_COMMON,
    )
)

def _build_fused(ctx: Any) -> Any:
    if ctx.backend.startswith("jax"):
        import jax

        xp = ctx.xp
        return jax.jit(lambda x: _chain(xp, x))
    import torch

    # dynamic=False: one static kernel per shape (Dynamo keys its cache on the code
    # object, so a second size would otherwise get a dynamic-shape kernel). Inductor
    # builds C++ on CPU: seconds per shape, recorded apart as first_call_s.
    return torch.compile(lambda x: _chain(torch, x), dynamic=False)


register_case(
    Case(
        name="a13_fusion_compiled", section="A13", units="GB/s",
        doc="A13: the same chain compiled (jax.jit; torch.compile, Inductor, on CPU and CUDA); "
            "the first call (compilation) recorded apart",
        build=_build_fused,
        skip={"numpy": "NumPy has no compiler", "dask": "Dask has no kernel compiler",
              "array-api-strict": "array-api-strict has no compiler",
              "cupy": "no compiled-chain variant declared for CuPy"},
        **_A13_COMMON,
    )
)


# ---------------------------------------------------------------------- einsum (A14)
register_case(
    Case(
        name="a14_einsum", section="A14", units="GFLOP/s",
        doc="A14: einsum('ij,jk->ik', a, b) at the A1 sizes, each library's plain einsum call "
            "(NumPy's default optimize=False does not call BLAS)",
        sizes=_A1_SIZES, size_names=("m", "k", "n"), normalize_size=_mkn,
        setup=_gemm_setup,
        op=lambda ctx, a, b: ctx.xp.einsum("ij,jk->ik", a, b),
        reference=np.matmul,
        flops=_gemm_flops, bytes=_gemm_bytes, dtypes=_F16_DTYPES, skip_if=_bf16_skip,
        rtol=_gemm_rtol,
        skip={"array-api-strict": "the array API standard has no einsum"},
    )
)


# ---------------------------------------------------------------------- convolution (A15)
# The article's size table lists kernels C x H x W = 3x3x3, 3x7x7, 3x11x11 beside batch
# sizes B = 32, 128, 512 and times no convolution. Here: a batch of B images of C = 3
# channels, 32 x 32 pixels (the article gives no image size), OUT = 16 filters of C x H x W,
# stride 1, no padding ("valid"), cross-correlation as in deep-learning libraries, with each
# library's own convolution.
_CONV_IMAGE, _CONV_OUT = 32, 16
_A15 = [(32, 3, 3, 3), (128, 3, 7, 7), (512, 3, 11, 11)]


def _conv_setup(rng: np.random.Generator, s: Any) -> tuple[np.ndarray, ...]:
    b, c, kh, kw = s
    return (rng.standard_normal((b, c, _CONV_IMAGE, _CONV_IMAGE)),
            rng.standard_normal((_CONV_OUT, c, kh, kw)) / np.sqrt(c * kh * kw))


def _conv_ref(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    # a sum over the kernel's offsets, independent of the im2col code under test
    kh, kw = w.shape[2:]
    oh, ow = x.shape[2] - kh + 1, x.shape[3] - kw + 1
    out = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("bchw,oc->bohw", x[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
    return out


def _im2col_conv(xp: Any) -> Any:
    """NumPy/CuPy: sliding-window view (no copy) contracted with the filters by
    tensordot, which copies the windows into one matrix (im2col) and calls BLAS."""
    swv = xp.lib.stride_tricks.sliding_window_view

    def conv(x: Any, w: Any) -> Any:
        win = swv(x, w.shape[2:], axis=(2, 3))  # (b, c, oh, ow, kh, kw)
        out = xp.tensordot(win, w, axes=([1, 4, 5], [1, 2, 3]))  # (b, oh, ow, out)
        return xp.moveaxis(out, 3, 1)

    return conv


def _build_conv(ctx: Any) -> Any:
    if ctx.backend.startswith("torch"):
        import torch.nn.functional as tf

        return tf.conv2d
    if ctx.backend.startswith("jax"):
        import jax

        def conv(x: Any, w: Any) -> Any:
            return jax.lax.conv_general_dilated(x, w, window_strides=(1, 1), padding="VALID")

        return conv
    return _im2col_conv(ctx.xp)


def _conv_flops(s: Any) -> float:
    b, c, kh, kw = s
    return 2.0 * b * _CONV_OUT * (_CONV_IMAGE - kh + 1) * (_CONV_IMAGE - kw + 1) * c * kh * kw


def _conv_bytes(s: Any, itemsize: int) -> float:
    b, c, kh, kw = s
    out = b * _CONV_OUT * (_CONV_IMAGE - kh + 1) * (_CONV_IMAGE - kw + 1)
    return itemsize * (b * c * _CONV_IMAGE**2 + _CONV_OUT * c * kh * kw + out)


register_case(
    Case(
        name="a15_conv", section="A15", units="GFLOP/s",
        doc=f"A15: 2-D convolution of B images (C, {_CONV_IMAGE}, {_CONV_IMAGE}) with "
            f"{_CONV_OUT} filters C x H x W (the article's kernel shapes and batch sizes; "
            "image size and filter count are this suite's), stride 1, valid: "
            "torch.nn.functional.conv2d, jax.lax.conv_general_dilated, NumPy im2col + GEMM "
            "(sliding_window_view + tensordot)",
        sizes={"quick": [(8, 3, 3, 3)], "default": [(32, 3, 3, 3), (32, 3, 7, 7),
                                                   (32, 3, 11, 11)], "full": _A15},
        size_names=("batch", "c", "h", "w"),
        setup=_conv_setup,
        build=_build_conv,
        reference=_conv_ref,
        flops=_conv_flops,
        bytes=_conv_bytes,
        dtypes=("float64", "float32"),
        skip={"dask": "Dask has no convolution (dask.array.map_overlap around NumPy's would "
                      "time NumPy per chunk plus the scheduler)",
              "array-api-strict": "the array API standard has no convolution and no "
                                  "sliding-window view"},
        rtol={"float64": 1e-10, "float32": 1e-4},
    )
)
