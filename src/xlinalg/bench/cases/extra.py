"""The engine's generic cases: they repeat operations of Q3, A1 and A4 (section "Extra")."""

from __future__ import annotations

import numpy as np

from .._cases import Case, register_case
from ._common import bf16_skip, mkn, shape2, sigmoid_ref, solve_setup

__all__: list[str] = []

register_case(
    Case(
        name="solve", section="Extra", units="GFLOP/s", tags=("sweep",),
        doc="extra: generic solve(A, b), A n x n, b a vector (the engine's example; the "
            "documents' loop and sweep are q1_solve_loop and q3_solve_sweep)",
        sizes={
            "quick": [5, 64],
            "default": [5, 50, 200, 500],
            "full": [5, *range(10, 501, 10)],
        },
        size_names=("n",),
        setup=solve_setup,
        op=lambda ctx, a, b: ctx.xp.linalg.solve(a, b),
        reference=np.linalg.solve,
        # LU (2/3 n^3) + forward and back substitution for one right-hand side (2 n^2)
        flops=lambda n: 2.0 / 3.0 * n**3 + 2.0 * n**2,
        bytes=lambda n, itemsize: itemsize * (n * n + 2 * n),
    )
)



register_case(
    Case(
        name="matmul", section="Extra", units="GFLOP/s", tags=("gemm",),
        doc="extra: generic GEMM a @ b, a (m, k), b (k, n), any size (the engine's example; "
            "the article's GEMM is a1_gemm)",
        sizes={
            "quick": [(64, 64, 64), (128, 256, 512)],
            "default": [(128, 256, 512), (512, 1024, 2048)],
            "full": [(128, 256, 512), (512, 1024, 2048), (2048, 4096, 8192)],
        },
        size_names=("m", "k", "n"),
        normalize_size=mkn,
        setup=lambda rng, s: (
            rng.standard_normal((s[0], s[1])),
            rng.standard_normal((s[1], s[2])),
        ),
        op=lambda ctx, a, b: ctx.xp.matmul(a, b),
        reference=np.matmul,
        flops=lambda s: 2.0 * s[0] * s[1] * s[2],
        bytes=lambda s, itemsize: itemsize * (s[0] * s[1] + s[1] * s[2] + s[0] * s[2]),
        dtypes=("float64", "float32", "float16", "bfloat16"),
        skip_if=bf16_skip,
        # float16/bfloat16 accumulate k products: loosen with k
        rtol=lambda dtype, s: {
            "float64": 1e-10,
            "float32": 1e-4,
            "float16": 5e-3 * max(1.0, (s[1] / 256) ** 0.5),
            "bfloat16": 4e-2 * max(1.0, (s[1] / 256) ** 0.5),
        }[dtype],
    )
)


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
        normalize_size=shape2,
        # |x| up to 40: the naive formula overflows exp in float32 there
        setup=lambda rng, s: (rng.uniform(-40.0, 40.0, size=s),),
        op=lambda ctx, x: ctx.xl.sigmoid(x),
        reference=sigmoid_ref,
        flops=lambda s: 4.0 * s[0] * s[1],
        bytes=lambda s, itemsize: 2.0 * itemsize * s[0] * s[1],
        dtypes=("float64", "float32", "float16", "bfloat16"),
        skip_if=bf16_skip,
    )
)
