"""The article's dense products: A1 GEMM, A2 fully-connected shapes, A3 attention heads."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...bench._cases import Case, register_case
from ._common import (
    A1_SIZES,
    F16_DTYPES,
    gemm_bytes,
    gemm_flops,
    gemm_rtol,
    gemm_setup,
    mkn,
)

__all__: list[str] = []

def _gemm_case(name: str, section: str, doc: str, sizes: Any, **kw: Any) -> Case:
    args: dict[str, Any] = dict(
        name=name, doc=doc, sizes=sizes, size_names=("m", "k", "n"), normalize_size=mkn,
        section=section, units="GFLOP/s", tags=("gemm",),
        setup=gemm_setup, op=lambda ctx, a, b: ctx.xp.matmul(a, b), reference=np.matmul,
        flops=gemm_flops, bytes=gemm_bytes, dtypes=F16_DTYPES,
        rtol=gemm_rtol,
    )
    args.update(kw)
    return register_case(Case(**args))


_gemm_case("a1_gemm", "A1", "A1: GEMM matmul(a, b), a (m, k), b (k, n)", A1_SIZES)
_A2 = [(32, 128, 256), (128, 512, 1024), (512, 2048, 4096)]
_gemm_case("a2_fc", "A2", "A2: fully-connected layer shapes: x (batch m, in k) @ W (in k, out n)",
           {"quick": _A2[:2], "default": _A2[:1], "full": _A2})


# ---------------------------------------------------------------------- attention (A3)
def _mT(xp: Any, x: Any) -> Any:
    if hasattr(x, "mT"):
        return x.mT
    return xp.swapaxes(x, -1, -2)


#: backend id -> its softmax (``Backend.bench.softmax()``), asked on its first call
_SOFTMAX: dict[str, Any] = {}


def _softmax(ctx: Any, s: Any) -> Any:
    f = _SOFTMAX.get(ctx.backend)
    if f is None:
        f = _SOFTMAX[ctx.backend] = ctx.backend_object.bench.softmax()
    return f(s)


def _attention_op(ctx: Any, q: Any, k: Any, v: Any) -> Any:
    xp = ctx.xp
    scale = 1.0 / float(q.shape[-1]) ** 0.5
    s = xp.matmul(q, _mT(xp, k)) * scale
    return xp.matmul(_softmax(ctx, s), v)


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
        sizes={"quick": _A3[:1], "default": _A3[:1], "full": _A3},
        size_names=("heads", "seq", "dim"),
        setup=lambda rng, s: tuple(rng.standard_normal(s) for _ in range(3)),
        op=_attention_op,
        reference=_attention_ref,
        flops=lambda s: 4.0 * s[0] * s[1] * s[1] * s[2] + 5.0 * s[0] * s[1] * s[1],
        bytes=lambda s, itemsize: itemsize * 4 * s[0] * s[1] * s[2],
        dtypes=F16_DTYPES,
        rtol=lambda dtype, s: {"float64": 1e-10, "float32": 1e-4,
                               "float16": 2e-2, "bfloat16": 1e-1}[dtype],
    )
)
