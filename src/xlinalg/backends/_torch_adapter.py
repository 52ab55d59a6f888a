"""PyTorch's adapter: its paths of the operations (the ``"torch-*"`` backends are in :mod:`._torch`).

Small CPU solves run NumPy's path on zero-copy views; others ``lu_factor_ex`` and
``lu_solve`` with the singular rule on the pivots; mixed dtypes promoted as NumPy
does (torch refuses them); sparse and nested tensors refused with the conversion
to make.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ._adapter import nan_members, singular_members
from ._base import Adapter, make_solve_fast
from ._numpy_adapter import NUMPY
from ._speed import FastPaths

__all__ = ["HOST_SOLVE_MAX_BATCH", "HOST_SOLVE_MAX_N", "TorchAdapter", "torch_dense_error"]

#: the largest n, and the most matrices, that a CPU solve runs on NumPy's path
#: through zero-copy views (measured: docs/performance.md, "singular rule")
HOST_SOLVE_MAX_N = 64
HOST_SOLVE_MAX_BATCH = 16
_INF = float("inf")


def _cpu_scalar(t: Any) -> bool:
    return t.ndim == 0 and t.device.type == "cpu"


#: torch's complex dtypes
_COMPLEX = ("complex32", "complex64", "complex128")


class TorchAdapter(Adapter):
    library = "PyTorch"
    stack_call = "torch.stack"
    speed = FastPaths(
        ops={n: f"torch.{n}" for n in ("add", "subtract", "multiply", "matmul", "sigmoid")},
        dtypes_from="torch",
        device_check=False,  # torch refuses mixed devices; solve translates it
        # torch computes add/subtract as ``x1 + alpha * x2``, and ``1 * (inf+0j)`` is
        # ``inf+nanj``: complex operands take binary() below, which adds the parts
        excluded_ops={"add": _COMPLEX, "subtract": _COMPLEX},
        # torch.matmul raises for float32 @ float64, int64 @ float32, bool, ...: the
        # checked path then promotes by the standard or names the argument
        refuses_mixed=frozenset({"matmul"}),
    )

    def __init__(self) -> None:
        import array_api_compat.torch as xt
        import torch

        super().__init__(xt)
        self.torch = torch
        self._linalg_error = torch.linalg.LinAlgError
        self._below_ad = getattr(torch._C, "_AutoDispatchBelowADInplaceOrView", None)
        # one matrix with xl.solve's defaults: this adapter's solve (the rule included)
        # without the checked path's shape reads; any refusal goes to the checked path
        self.solve_fast = make_solve_fast(lambda a, b: self.solve(a, b, b.ndim == 1, "raise"),
                                          self.solve_dtypes, meta=True)
        self._parts_ops = {"add": torch.add, "subtract": torch.subtract}

    # ---------------------------------------------------------------- torch's own linalg
    def native_matrix_norm(self) -> Callable[[Any, Any, bool], Any] | None:
        tl = self.torch.linalg
        return lambda x, o, keep: tl.matrix_norm(x, ord=o, keepdim=keep)

    def native_vector_norm(self, x: Any, ord: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
        # every axis: dim=None, as the fast path passes it (the same reduction, bit for bit)
        dim = None if len(axes) == x.ndim else axes
        return self.torch.linalg.vector_norm(x, ord=ord, dim=dim, keepdim=keepdims)

    def native_matrix_power(self, x: Any, k: int) -> Any:
        return self.torch.linalg.matrix_power(x, k)

    def native_vecdot(self, x1: Any, x2: Any, axis: int) -> Any:
        if self.kind(x1.dtype) not in "fc":  # (torch's has no integer kernel)
            return None
        return self.torch.linalg.vecdot(x1, x2, dim=axis)

    def cholesky_ex(self, x: Any) -> tuple[Any, Any] | None:
        low, info = self.torch.linalg.cholesky_ex(x)
        return low, info != 0

    def binary(self, name: str) -> Callable[[Any, Any], Any]:
        fn = self._parts_ops.get(name)
        if fn is None:
            return super().binary(name)
        return lambda x1, x2: self._by_parts(fn, x1, x2)

    def _by_parts(self, fn: Any, x1: Any, x2: Any) -> Any:
        """``fn(x1, x2)`` (torch.add/subtract) with a complex result computed on the
        real and imaginary parts apart, as NumPy, JAX and the standard do: torch's
        own kernel multiplies `x2` by ``alpha = 1``, and ``1 * (inf+0j)`` is
        ``inf+nanj`` (``[1j] + inf`` would be ``inf+nanj``, not ``inf+1j``)."""
        t = self.torch
        dt = t.result_type(x1, x2)  # Python scalars weak, as torch.add reads them
        if not dt.is_complex:
            return fn(x1, x2)
        tensors = [x for x in (x1, x2) if isinstance(x, t.Tensor)]
        # a 0-d CPU tensor joins the other operand's device, as in torch.add
        dev = next((x.device for x in tensors if not _cpu_scalar(x)), tensors[0].device)
        parts = []
        for x in (x1, x2):
            x = x.to(device=dev, dtype=dt) if isinstance(x, t.Tensor) else t.as_tensor(x, dtype=dt, device=dev)
            parts.append(t.view_as_real(x.resolve_conj().resolve_neg()))
        return t.view_as_complex(fn(parts[0], parts[1]))

    def describe(self, x: Any) -> str:
        return f"a PyTorch tensor of shape {tuple(x.shape)} and dtype {self.dtype_name(x.dtype)} on {x.device}"

    def dense_error(self, x: Any, name: str, fn: str) -> TypeError | None:
        return torch_dense_error(x, name, fn)

    def backend(self, x: Any) -> str:
        t = x.device.type
        return f"torch-{t}"

    def kind(self, dtype: Any) -> str:
        t = self.torch
        if dtype.is_floating_point:
            return "f" if dtype in (t.float32, t.float64) else "h"
        if dtype.is_complex:  # (complex32: low precision, computed where torch has kernels)
            return "c" if dtype in (t.complex64, t.complex128) else "h"
        if dtype == t.bool:
            return "b"
        return "i"

    def float_dtypes(self, x: Any) -> tuple[Any, Any]:
        t = self.torch
        f64 = t.float32 if x.device.type == "mps" else t.float64
        return t.float32, f64

    def astype(self, x: Any, dtype: Any) -> Any:
        return x if x.dtype == dtype else x.to(dtype)

    def check_same_device(self, a: Any, b: Any, na: str, nb: str) -> None:
        # torch's own rule: a 0-d CPU tensor is a scalar and joins the other operand's
        # device (its kernels take one; the fast path hands them such pairs)
        if a.device != b.device and not (_cpu_scalar(a) or _cpu_scalar(b)):
            raise ValueError(
                f"`{na}` is on device {a.device} but `{nb}` is on device {b.device}: "
                f"move one of them first, e.g. `xlinalg.to({nb}, {self.backend(a)!r})` "
                f"or `{nb}.to({na}.device)`"
            )

    def asarray(self, obj: Any, like: Any | None, name: str) -> Any:
        t = self.torch
        arr = NUMPY.asarray(obj, None, name)  # numbers only, named where not (the same everywhere)
        try:
            return t.as_tensor(arr, device=None if like is None else like.device)
        except Exception as exc:
            raise TypeError(f"`{name}` could not be converted to a PyTorch tensor: {exc}") from exc

    def to_host(self, x: Any) -> np.ndarray:
        return np.asarray(x.detach().cpu().numpy())

    def numpy_view(self, x: Any) -> np.ndarray | None:
        # a CPU tensor outside autograd, torch.func and torch.compile, without the
        # lazy conjugate/negative bits: .numpy() shares its memory
        t = self.torch
        if (self.traced(x) or x.device.type != "cpu" or x.layout is not t.strided
                or (x.requires_grad and t.is_grad_enabled()) or x.is_conj() or x.is_neg()):
            return None
        try:
            return x.detach().numpy()
        except (RuntimeError, TypeError):  # a dtype NumPy has not
            return None

    def small_numpy_view(self, x: Any) -> np.ndarray | None:
        # up to 16 matrices of sides up to 64 (as solve): a decomposition's dispatch
        # costs torch more there than NumPy's gufunc and the views cost together
        s = x.shape
        if len(s) < 2 or max(s[-2:]) > HOST_SOLVE_MAX_N or math.prod(s[:-2]) > HOST_SOLVE_MAX_BATCH:
            return None
        return self.numpy_view(x)

    def from_numpy_view(self, arr: np.ndarray, like: Any) -> Any:
        return self.torch.from_numpy(arr)

    def traced(self, x: Any) -> bool:
        # inside torch.func's transforms (vmap, grad, jacrev) or a torch.compile trace,
        # Python cannot branch on a tensor's values (bool(tensor) raises or breaks the
        # graph): the value checks step aside there, as under jax.jit
        # (a meta tensor has no values either)
        t = self.torch
        return bool(x.is_meta or t.compiler.is_compiling() or t._C._are_functorch_transforms_active())

    def unstack(self, x: Any) -> list[Any]:
        # unbind makes every member a view that autograd tracks (a shared version
        # counter, view metadata): most of the cost of each member. A result that
        # needs no gradient needs none of it, and its members do not overlap, so
        # they are unbound below autograd's view tracking (as torch's own Python
        # does): plain tensors over the same storage, each with its own version
        # counter. Anything autograd or a compiler must see takes plain unbind.
        t = self.torch
        if (self._below_ad is not None and not x.requires_grad
                and not t.compiler.is_compiling() and not t._C._are_functorch_transforms_active()):
            with self._below_ad():
                return list(x.unbind(0))
        return list(x.unbind(0))

    def solve(self, a: Any, b: Any, vector: bool, errors: str) -> Any:
        # the singular rule (_lib/_singular.py) on the pivots of torch's own LU, and
        # the solve with those factors: what torch.linalg.solve does inside
        t = self.torch
        if a.shape[-1] <= HOST_SOLVE_MAX_N and (a.ndim == 2 or math.prod(a.shape[:-2]) <= HOST_SOLVE_MAX_BATCH):
            # Small CPU tensors outside autograd and traces: NumPy's path on zero-copy
            # views (LAPACK's gesv and the rule on its pivots), several times cheaper
            # than torch's own dispatch of a small solve (docs/performance.md)
            an = self.numpy_view(a)
            bn = None if an is None else self.numpy_view(b)
            if an is not None and bn is not None and an.dtype == bn.dtype:
                return self.torch.from_numpy(NUMPY.solve(an, bn, vector, errors))
        if a.is_meta is not b.is_meta:  # torch reads a meta operand's missing data
            self.check_same_device(a, b, "a", "b")
        if not vector and b.ndim == a.ndim - 1:
            # torch reads b of shape a.shape[:-1] as a batch of vectors; the standard
            # reads it as one matrix broadcast over the batch. A leading unit axis
            # makes torch read it the standard's way (no copy).
            b = b.unsqueeze(0)
        bm = b.unsqueeze(-1) if vector else b
        try:
            lu, piv, _ = t.linalg.lu_factor_ex(a)
            x = t.linalg.lu_solve(lu, piv, bm)
        except RuntimeError:
            self.check_same_device(a, b, "a", "b")  # torch's own message names no argument
            raise
        n = a.shape[-1]
        tol = n * t.finfo(a.dtype).eps
        if errors == "raise" and not self.traced(x):
            # A screen over the whole stack first, one read (a sync on CUDA, as
            # torch.linalg.solve's own check): with m = max|a| finite, every pivot
            # |u_kk| > n·eps·m and a finite solution, no member fails the rule
            # (c_k <= m) and b is finite; otherwise the rule member by member.
            # (max |a| as the inf-norm: a reduction, where a.abs() is a copy of `a`)
            d, m, s = t.stack((lu.diagonal(dim1=-2, dim2=-1).abs().amin(),
                               t.linalg.vector_norm(a, _INF), x.sum().abs())).tolist()
            if m < _INF and d > tol * m and s < _INF:
                return x[..., 0] if vector else x
        scale = t.linalg.vector_norm(a, _INF, dim=-2)  # max |a_ik| per column, no copy of `a`
        fin_a = scale.isfinite().all(-1)
        sing = ((lu.diagonal(dim1=-2, dim2=-1).abs() <= tol * scale).any(-1)) & fin_a
        if errors == "raise" and not self.traced(x):
            # one bool read (a sync on CUDA, as torch.linalg.solve's own check): only
            # when it is set are the members looked at
            if bool(sing.any() | ~fin_a.all() | ~x.isfinite().all()):
                if bool(sing.any()):
                    rep = singular_members(t, sing, scale, bm)
                    if bool(rep.any()):
                        self._raise_singular(rep, tuple(a.shape[:-2]))
                x = self.fill_nan(nan_members(t, sing, scale, bm)[..., None, None], x)
        else:  # no sync: the mask stays on the device
            x = self.fill_nan(nan_members(t, sing, scale, bm)[..., None, None], x)
        return x[..., 0] if vector else x

    def fill_nan(self, mask: Any, x: Any) -> Any:
        # masked_fill takes the NaN as a kernel argument: a tensor made from it on a
        # CUDA device would be a blocking host-to-device copy (a device sync)
        return x.masked_fill(mask, float("nan"))

    def _is_singular_error(self, exc: BaseException) -> bool:
        return isinstance(exc, self._linalg_error)

    def svdvals(self, a: Any) -> Any:
        if (an := self.small_numpy_view(a)) is not None:  # NumPy's gufunc on the view
            return self.torch.from_numpy(NUMPY.svdvals(an))
        try:
            s = self.torch.linalg.svdvals(a)
        except self._linalg_error as exc:
            raise self._svd_error(a, "svdvals") from exc
        self._check_svd(a, s, "svdvals")
        return s

    def sigmoid(self, x: Any) -> Any:
        return self.torch.sigmoid(x)


_STRIDED: Any = None  # torch.strided, once a tensor has been met


def torch_dense_error(x: Any, name: str, fn: str) -> TypeError | None:
    """The error for a sparse or nested tensor (torch takes them in some kernels and
    not others), naming `name` and the conversion to make; None for a dense one."""
    global _STRIDED
    if _STRIDED is None:  # (torch is loaded: `x` is a tensor)
        import torch

        _STRIDED = torch.strided
    if x.layout is _STRIDED and not x.is_nested:
        return None
    if x.is_nested:  # (its shape cannot be read)
        what = "nested PyTorch tensor of"
        fix = f"`{name}.to_padded_tensor(0.0)`, or `torch.stack({name}.unbind())` where its members share a shape"
    else:
        what = f"{str(x.layout).removeprefix('torch.')} PyTorch tensor of shape {tuple(x.shape)} and"
        fix = f"`{name}.to_dense()`"
    return TypeError(
        f"{fn}: `{name}` is a {what} dtype {str(x.dtype).removeprefix('torch.')} on {x.device}, "
        f"which {fn} does not take: xlinalg computes on dense (strided) tensors; pass {fix}"
    )
