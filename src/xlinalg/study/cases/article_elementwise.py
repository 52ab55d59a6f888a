"""The article's elementwise cases: A4 add, multiply, sigmoid; A5 broadcast; A6 the trap."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...bench._cases import Case, register_case
from ._common import F16_DTYPES, shape2, sigmoid_ref

__all__: list[str] = []

_A4_SIZES = {"quick": [(256, 256)], "default": [(4096, 4096)],
             "full": [(4096, 4096)]}


def _ew2_case(name: str, doc: str, op: Any, ref: Any) -> None:
    register_case(
        Case(
            name=name, doc=doc, sizes=_A4_SIZES, size_names=("rows", "cols"),
            section="A4", units="GB/s", tags=("stream",),
            normalize_size=shape2,
            setup=lambda rng, s: (rng.standard_normal(s), rng.standard_normal(s)),
            op=op, reference=ref,
            flops=lambda s: 1.0 * s[0] * s[1],
            bytes=lambda s, itemsize: 3.0 * itemsize * s[0] * s[1],
            dtypes=F16_DTYPES,
        )
    )


_ew2_case("a4_add", "A4: elementwise a + b", lambda ctx, a, b: a + b, np.add)
_ew2_case("a4_multiply", "A4: elementwise a * b", lambda ctx, a, b: a * b, np.multiply)
register_case(
    Case(
        name="a4_sigmoid", section="A4", units="GB/s", tags=("stream",),
        doc="A4: elementwise xlinalg.sigmoid (native where the library has one)",
        sizes=_A4_SIZES,
        size_names=("rows", "cols"),
        normalize_size=shape2,
        setup=lambda rng, s: (rng.uniform(-40.0, 40.0, size=s),),
        op=lambda ctx, x: ctx.xl.sigmoid(x),
        reference=sigmoid_ref,
        flops=lambda s: 4.0 * s[0] * s[1],
        bytes=lambda s, itemsize: 2.0 * itemsize * s[0] * s[1],
        dtypes=F16_DTYPES,
    )
)


# ---------------------------------------------------------------------- broadcast (A5, A6)
def _bcast_setup(rng: np.random.Generator, s: Any) -> tuple[np.ndarray, ...]:
    rows, cols, full = s
    other = (rows, cols) if full else (1, cols)
    return rng.standard_normal((rows, 1)), rng.standard_normal(other)


register_case(
    Case(
        name="a5_broadcast", section="A5", units="GB/s", tags=("stream",),
        doc="A5: broadcast add; full=0: (rows, 1) + (1, cols); full=1: (rows, 1) broadcast "
            "over a (rows, cols) matrix",
        sizes={"quick": [(128, 256, 0), (128, 1024, 1)], "default": [(128, 1024, 1)],
               "full": [(128, 256, 0), (128, 1024, 1)]},
        size_names=("rows", "cols", "full"),
        setup=_bcast_setup,
        op=lambda ctx, a, b: a + b,
        reference=np.add,
        flops=lambda s: 1.0 * s[0] * s[1],
        bytes=lambda s, itemsize: itemsize * (s[0] + (s[0] * s[1] if s[2] else s[1])
                                              + s[0] * s[1]),
        dtypes=F16_DTYPES,
    )
)

register_case(
    Case(
        name="a6_broadcast_trap", section="A6", units="GB/s", tags=("stream",),
        doc="A6: the broadcast trap (n, 1) + (1, n): an n x n result from 2n inputs "
            "(peak memory recorded; a size that does not fit is recorded as oom)",
        sizes={"quick": [1000], "default": [4000], "full": [1000, 4000, 10000]},
        size_names=("n",),
        setup=lambda rng, n: (rng.standard_normal((n, 1)), rng.standard_normal((1, n))),
        op=lambda ctx, a, b: a + b,
        reference=np.add,
        flops=lambda n: 1.0 * n * n,
        bytes=lambda n, itemsize: itemsize * (2.0 * n + n * n),
        dtypes=F16_DTYPES,
    )
)
