"""The built-in benchmark cases (CASES.md). Each is one :func:`register_case` call.

Sizes are the documents' own at the ``full`` scale; ``default`` finishes in a few
minutes on a 2-core machine with every CPU backend; ``quick`` is for CI.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._cases import Case, register_case

__all__: list[str] = []

_NO_BF16 = ("numpy", "dask", "array-api-strict", "cupy")


def _bf16_skip(backend: str, dtype: str, size: Any) -> str | None:
    if dtype == "bfloat16" and backend in _NO_BF16:
        return f"{backend} has no bfloat16 dtype"
    return None


# ---------------------------------------------------------------------- solve (Q1, Q3)
def _solve_setup(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    # A well-conditioned system (diagonal shift): the check then measures the
    # backend's rounding, not the conditioning of a random matrix.
    a = rng.standard_normal((n, n)) + n * np.eye(n)
    b = rng.standard_normal(n)
    return a, b


register_case(
    Case(
        name="solve",
        doc="Q1/Q3: solve(A, b), A n x n, b a vector (the standard's rule: b.ndim == 1)",
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
        name="matmul",
        doc="A1: GEMM a @ b, a (m, k), b (k, n)",
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
        name="sigmoid",
        doc="A4: elementwise xlinalg.sigmoid (native where the library has one), stable for large |x|",
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
