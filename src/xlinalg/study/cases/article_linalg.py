"""The article's decompositions and stacks: A7 SVD, A8 QR, A9 batched matmul."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...bench._cases import Case, backends_lacking, register_case
from ._common import F16_DTYPES, gemm_rtol

__all__: list[str] = []

def _svd_op(ctx: Any, a: Any) -> Any:
    return tuple(ctx.xp.linalg.svd(a))


register_case(
    Case(
        name="a7_svd", section="A7", units="GFLOP/s",
        doc="A7: full SVD of an n x n matrix, native linalg.svd (checked on the singular values)",
        sizes={"quick": [64], "default": [512], "full": [512]},
        size_names=("n",),
        setup=lambda rng, n: (rng.standard_normal((n, n)),),
        op=_svd_op,
        reference=lambda a: np.linalg.svd(a, compute_uv=False),
        result_for_check=lambda r: r[1],
        flops=lambda n: 22.0 * n**3,
        bytes=lambda n, itemsize: itemsize * (3.0 * n * n + n),
        skip=backends_lacking("square_svd"),
    )
)

register_case(
    Case(
        name="a8_qr", section="A8", units="GFLOP/s",
        doc="A8: QR of an n x n matrix, native linalg.qr (checked as Q @ R == A)",
        sizes={"quick": [64], "default": [512], "full": [512]},
        size_names=("n",),
        setup=lambda rng, n: (rng.standard_normal((n, n)),),
        op=lambda ctx, a: tuple(ctx.xp.linalg.qr(a)),
        reference=lambda a: a,
        result_for_check=lambda r: r[0] @ r[1],
        flops=lambda n: 4.0 / 3.0 * n**3,
        bytes=lambda n, itemsize: itemsize * 3.0 * n * n,
        skip=backends_lacking("square_qr"),
    )
)


# ---------------------------------------------------------------------- batched matmul (A9)
register_case(
    Case(
        name="a9_batched_matmul", section="A9", units="GFLOP/s",
        doc="A9: batched matmul of (batch, n, n) stacks",
        sizes={"quick": [(16, 128)], "default": [(16, 256)],
               "full": [(16, 256), (64, 256), (256, 256), (1024, 256)]},
        size_names=("batch", "n"),
        setup=lambda rng, s: (rng.standard_normal((s[0], s[1], s[1])),
                              rng.standard_normal((s[0], s[1], s[1]))),
        op=lambda ctx, a, b: ctx.xp.matmul(a, b),
        reference=np.matmul,
        flops=lambda s: 2.0 * s[0] * s[1] ** 3,
        bytes=lambda s, itemsize: 3.0 * itemsize * s[0] * s[1] ** 2,
        dtypes=F16_DTYPES,
        rtol=lambda dtype, s: gemm_rtol(dtype, (s[1], s[1], s[1])),
    )
)
