"""The article's A13 operator fusion, A14 einsum and A15 convolution shapes."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...bench._cases import Case, backend_object, backends_lacking, register_case
from ._common import (
    A1_SIZES,
    F16_DTYPES,
    gemm_bytes,
    gemm_flops,
    gemm_rtol,
    gemm_setup,
    mkn,
    shape2,
)

__all__: list[str] = []

# ---------------------------------------------------------------------- fusion (A13)
def _chain(xp: Any, x: Any) -> Any:
    return (x * 2.0 + 1.0) * xp.tanh(x) - xp.exp(-(x * x))


def _chain_ref(x: np.ndarray) -> np.ndarray:
    return _chain(np, x)


_A13_SIZES = {"quick": [(256, 256)], "default": [(4096, 4096)],
              "full": [(4096, 4096)]}
_A13_COMMON: dict[str, Any] = dict(
    sizes=_A13_SIZES, size_names=("rows", "cols"), normalize_size=shape2,
    setup=lambda rng, s: (rng.standard_normal(s),), reference=_chain_ref,
    flops=lambda s: 8.0 * s[0] * s[1],
    bytes=lambda s, itemsize: 2.0 * itemsize * s[0] * s[1],
    dtypes=F16_DTYPES,
)

register_case(
    Case(
        name="a13_fusion_eager", section="A13", units="GB/s", tags=("stream",),
        doc="A13: elementwise chain (2x + 1) * tanh(x) - exp(-x^2), eager (one pass per op)",
        op=lambda ctx, x: _chain(ctx.xp, x),
        **_A13_COMMON,
    )
)

def _build_fused(ctx: Any) -> Any:
    # the library's compiler (jax.jit, torch.compile); its first call compiles,
    # recorded apart as first_call_s
    xp = ctx.xp
    return ctx.backend_object.bench.compile_function(lambda x: _chain(xp, x))


def _no_compiler(backend: str, dtype: str, size: Any) -> str | None:
    be = backend_object(backend)
    if be is not None and not be.bench.function_compiler:
        return f"{backend} has no function compiler (as jax.jit or torch.compile)"
    return None


register_case(
    Case(
        name="a13_fusion_compiled", section="A13", units="GB/s", tags=("stream",),
        doc="A13: the same chain compiled (jax.jit; torch.compile, Inductor, on CPU and CUDA); "
            "the first call (compilation) recorded apart",
        build=_build_fused,
        skip_if=_no_compiler,
        **_A13_COMMON,
    )
)


# ---------------------------------------------------------------------- einsum (A14)
register_case(
    Case(
        name="a14_einsum", section="A14", units="GFLOP/s", tags=("gemm",),
        doc="A14: einsum('ij,jk->ik', a, b) at the A1 sizes, each library's plain einsum call "
            "(NumPy's default optimize=False does not call BLAS)",
        sizes=A1_SIZES, size_names=("m", "k", "n"), normalize_size=mkn,
        setup=gemm_setup,
        op=lambda ctx, a, b: ctx.xp.einsum("ij,jk->ik", a, b),
        reference=np.matmul,
        flops=gemm_flops, bytes=gemm_bytes, dtypes=F16_DTYPES,
        rtol=gemm_rtol,
        skip=backends_lacking("einsum"),
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


def _build_conv(ctx: Any) -> Any:
    return ctx.backend_object.bench.conv2d()


def _no_conv(backend: str, dtype: str, size: Any) -> str | None:
    be = backend_object(backend)
    if be is not None and not be.bench.conv2d_kernel:
        return f"{backend} has no 2-D convolution"
    return None


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
        sizes={"quick": [(8, 3, 3, 3)], "default": [(32, 3, 3, 3)], "full": _A15},
        size_names=("batch", "c", "h", "w"),
        setup=_conv_setup,
        build=_build_conv,
        reference=_conv_ref,
        flops=_conv_flops,
        bytes=_conv_bytes,
        dtypes=("float64", "float32"),
        skip_if=_no_conv,
        skip=backends_lacking("conv2d"),
        rtol={"float64": 1e-10, "float32": 1e-4},
    )
)
