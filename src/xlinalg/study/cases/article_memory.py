"""The article's memory cases: A10 layout, A11 host-device transfer, A12 precision."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...backends import BACKEND_NAMES, get_backend
from ...bench._cases import (
    Case,
    backend_object,
    backends_lacking,
    backends_noting,
    register_case,
)
from ._common import (
    A1_SIZES,
    F16_DTYPES,
    gemm_bytes,
    gemm_flops,
    gemm_rtol,
    gemm_setup,
    mkn,
    prepared,
    when_lazy,
)

__all__: list[str] = []

# ---------------------------------------------------------------------- layout (A10)
#: backend -> why it has no strided view to time (its hook), shown next to its cells
_NO_VIEWS = {b: get_backend(b).bench.no_strided_views for b in BACKEND_NAMES
             if get_backend(b).bench.no_strided_views}


_LAZY_LAYOUT = when_lazy("{backend} is lazy: its arrays are chunked task graphs, so a strided "
                         "view has no layout to time")


def _layout_skip(backend: str, dtype: str, size: Any) -> str | None:
    lazy = _LAZY_LAYOUT(backend, dtype, size)
    if lazy is not None:
        return lazy
    be = backend_object(backend)
    if be is not None and be.bench.no_strided_views and not size[1]:
        return str(be.bench.no_strided_views)
    return None


def _build_layout(ctx: Any) -> Any:
    xp, contiguous = ctx.xp, bool(ctx.size[1])
    dense = ctx.backend_object.bench.contiguous

    def prep(x: Any, b: Any) -> Any:
        view = x[:, ::2]
        return (dense(view) if contiguous else view), b

    return prepared(prep, lambda p: xp.matmul(*p))


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
        dtypes=F16_DTYPES,
        skip_if=_layout_skip,
        notes={**backends_noting("strided_view"), **_NO_VIEWS},
    )
)


# ---------------------------------------------------------------------- transfer (A11)
_NO_TRANSFER = backends_lacking("device_transfer")
_CPU_TRANSFER = ("on a CPU backend there is no device transfer: the 'device' is host memory, "
                 "and what is timed is a host copy or a wrapper, not a PCIe transfer")
#: every CPU backend that has a "device" to move to (its processor class, asked)
_A11_NOTES = {b: _CPU_TRANSFER for b in BACKEND_NAMES
              if get_backend(b).bench.processor_class() == "cpu" and b not in _NO_TRANSFER}
_CPU_NOTE = (" On CPU backends the 'device' is host memory: what is timed is the real "
             "copy/wrapping cost, not a PCIe transfer.")


def _build_h2d(ctx: Any) -> Any:
    be = ctx.backend_object

    def prep(a: Any, b: Any) -> Any:
        return be.to_numpy(a), be.to_numpy(b)

    return prepared(prep, lambda p: (be.from_numpy(p[0]), be.from_numpy(p[1])))


def _build_d2h(ctx: Any) -> Any:
    be = ctx.backend_object
    return lambda a, b: (be.bench.transfer_to_host(a), be.bench.transfer_to_host(b))


def _build_dlpack(ctx: Any) -> Any:
    be, xp = ctx.backend_object, ctx.xp

    def prep(a: Any, b: Any) -> Any:
        # writable host copies (a read-only array cannot be exported with older DLPack)
        return np.array(be.to_numpy(a), copy=True), np.array(be.to_numpy(b), copy=True)

    return prepared(prep, lambda p: (xp.from_dlpack(p[0]), xp.from_dlpack(p[1])))


def _build_pipeline(ctx: Any) -> Any:
    be, xp = ctx.backend_object, ctx.xp

    def prep(a: Any, b: Any) -> Any:
        return be.to_numpy(a), be.to_numpy(b)

    return prepared(prep, lambda p: be.bench.transfer_to_host(xp.matmul(be.from_numpy(p[0]),
                                                                   be.from_numpy(p[1]))))


def _host_to_gpu(backend: str, dtype: str, size: Any) -> str | None:
    be = backend_object(backend)
    if be is not None and be.bench.processor_class() == "gpu":
        return "from_dlpack cannot move host memory to a GPU"
    return None


def _transfer_case(name: str, doc: str, build: Any, *, pipeline: bool = False,
                   skip: Any = None, zero_copy: bool = False, skip_if: Any = None) -> None:
    register_case(
        Case(
            name=name, doc=doc + _CPU_NOTE, sizes=A1_SIZES, size_names=("m", "k", "n"),
            section="A11", units="GFLOP/s" if pipeline else "GB/s", tags=("stream",),
            notes=_A11_NOTES,
            normalize_size=mkn, setup=gemm_setup, build=build,
            reference=np.matmul if pipeline else (lambda a, b: (a, b)),
            flops=gemm_flops if pipeline else (lambda s: 0.0),
            # zero-copy wrapping moves no bytes: no GB/s figure (the time is the handshake)
            bytes=(gemm_bytes if pipeline
                   else (lambda s, itemsize: 0.0) if zero_copy
                   else (lambda s, itemsize: 2.0 * itemsize * (s[0] * s[1] + s[1] * s[2]))),
            dtypes=F16_DTYPES, rtol=gemm_rtol if pipeline else None,
            skip=dict(_NO_TRANSFER, **(skip or {})), skip_if=skip_if,
        )
    )


_transfer_case("a11_transfer_h2d", "A11: host -> device: NumPy a (m, k), b (k, n) to the "
               "backend (its from_numpy: a copy)", _build_h2d)
_ZERO_COPY_D2H = ("its arrays already live in host memory and NumPy wraps them without a copy "
                  "(a view, not a transfer); the wrapping cost is timed by a11_transfer_dlpack")
_transfer_case("a11_transfer_d2h", "A11: device -> host: backend a, b to NumPy", _build_d2h,
               skip={b: _ZERO_COPY_D2H for b in BACKEND_NAMES
                     if get_backend(b).bench.numpy_wraps and b not in _NO_TRANSFER})
_transfer_case("a11_transfer_dlpack", "A11: host -> backend with xp.from_dlpack (zero-copy "
               "where the library can)", _build_dlpack, zero_copy=True, skip_if=_host_to_gpu)
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
        return max(gemm_rtol(target, s), gemm_rtol(dtype, s))

    return rtol


def _precision_skip(target: str) -> Any:
    def rule(backend: str, dtype: str, size: Any) -> str | None:
        be = backend_object(backend)
        return be.bench.missing_dtype(target) if be is not None else None

    return rule


def _build_precision(target: str) -> Any:
    def build(ctx: Any) -> Any:
        xp = ctx.xp
        nd = ctx.backend_object.bench.native_dtype(target)
        to = ctx.backend_object.bench.cast

        def cast(x: Any) -> Any:
            return to(x, nd)

        return prepared(lambda a, b: (cast(a), cast(b)), lambda p: xp.matmul(*p))

    return build


for _target in ("float32", "float16", "bfloat16"):
    register_case(
        Case(
            name=f"a12_precision_{_target}", section="A12", units="GFLOP/s", tags=("gemm",),
            compute_dtype=_target,
            doc=f"A12: the A1 GEMM with a, b cast (in the first call, recorded apart) to "
                f"{_target}, whatever the run's dtype",
            sizes=A1_SIZES, size_names=("m", "k", "n"), normalize_size=mkn,
            setup=gemm_setup, build=_build_precision(_target), reference=np.matmul,
            flops=gemm_flops,
            bytes=_precision_bytes(_target),
            dtypes=F16_DTYPES,
            skip_if=_precision_skip(_target),
            rtol=_precision_rtol(_target),
        )
    )
