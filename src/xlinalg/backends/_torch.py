"""PyTorch: its adapter and the ``"torch-cpu"`` and ``"torch-cuda"`` backends."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._base import Adapter, Backend, make_solve_fast

__all__ = ["TorchAdapter", "TorchBackend"]


class TorchAdapter(Adapter):
    library = "PyTorch"

    def __init__(self) -> None:
        import array_api_compat.torch as xt
        import torch

        super().__init__(xt)
        self.torch = torch
        self._linalg_error = torch.linalg.LinAlgError
        self._tsolve = torch.linalg.solve  # bound once: two attribute reads per call saved
        self._below_ad = getattr(torch._C, "_AutoDispatchBelowADInplaceOrView", None)
        self.fast_device_check = False  # torch refuses mixed devices; solve translates it
        self.solve_dtypes = frozenset((torch.float32, torch.float64, torch.complex64, torch.complex128))
        self.fast = {n: getattr(torch, n) for n in ("add", "subtract", "multiply", "matmul", "sigmoid")}
        self.sigmoid_dtypes = frozenset((torch.float32, torch.float64))
        self.solve_fast = make_solve_fast(torch.linalg.solve, self.solve_dtypes)
        # torch.matmul raises for float32 @ float64, int64 @ float32, bool, ...: the
        # checked path then promotes by the standard or names the argument
        self.fast_refuses_mixed = frozenset({"matmul"})

    def describe(self, x: Any) -> str:
        return f"a PyTorch tensor of shape {tuple(x.shape)} and dtype {self.dtype_name(x.dtype)} on {x.device}"

    def backend(self, x: Any) -> str:
        t = x.device.type
        return f"torch-{t}"

    def kind(self, dtype: Any) -> str:
        t = self.torch
        if dtype.is_floating_point:
            return "f" if dtype in (t.float32, t.float64) else "h"
        if dtype.is_complex:
            return "c" if dtype in (t.complex64, t.complex128) else "?"
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
        if a.device != b.device:
            raise ValueError(
                f"`{na}` is on device {a.device} but `{nb}` is on device {b.device}: "
                f"move one of them first, e.g. `xlinalg.to({nb}, {self.backend(a)!r})` "
                f"or `{nb}.to({na}.device)`"
            )

    def asarray(self, obj: Any, like: Any | None, name: str) -> Any:
        t = self.torch
        try:
            arr = np.asarray(obj)
            return t.as_tensor(arr, device=None if like is None else like.device)
        except Exception as exc:
            raise TypeError(f"`{name}` could not be converted to a PyTorch tensor: {exc}") from exc

    def to_host(self, x: Any) -> np.ndarray:
        return np.asarray(x.detach().cpu().numpy())

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
        if not vector and b.ndim == a.ndim - 1:
            # torch reads b of shape a.shape[:-1] as a batch of vectors; the standard
            # reads it as one matrix broadcast over the batch. A leading unit axis
            # makes torch read it the standard's way (no copy).
            b = b.unsqueeze(0)
        if errors == "raise":
            try:
                return self._tsolve(a, b)
            except self._linalg_error as exc:
                self.check_same_device(a, b, "a", "b")  # (a "meta" operand fails this way)
                bm = b.unsqueeze(-1) if vector else b
                x = self._solve_after_failure(a, bm, errors, exc)
                return x[..., 0] if vector else x
            except RuntimeError:
                self.check_same_device(a, b, "a", "b")  # torch's own message names no argument
                raise
        # errors="nan": the info array flags singular members without a device sync
        self.check_same_device(a, b, "a", "b")
        x, info = self.torch.linalg.solve_ex(a, b, check_errors=False)
        bad = info != 0
        nan = self.torch.tensor(float("nan"), dtype=x.dtype, device=x.device)
        return self.torch.where(bad[..., None] if vector else bad[..., None, None], nan, x)

    def _is_singular_error(self, exc: BaseException) -> bool:
        return isinstance(exc, self._linalg_error)

    def svdvals(self, a: Any) -> Any:
        try:
            s = self.torch.linalg.svdvals(a)
        except self._linalg_error as exc:
            raise self._svd_error(a, "svdvals") from exc
        self._check_svd(a, s, "svdvals")
        return s

    def sigmoid(self, x: Any) -> Any:
        return self.torch.sigmoid(x)


class TorchBackend(Backend):
    module = "torch"
    install = "pip install torch  (CPU build: pip install torch==2.13.0)"
    library = "torch"
    namespace_names = ("array_api_compat.torch", "torch")
    extra_float_dtypes = ("float16", "bfloat16")
    function_compiler = "torch.compile (Inductor)"
    # Inductor builds C++ (CPU) or Triton (CUDA) kernels: seconds per shape and dtype
    slow_compiler = True
    conv2d_kernel = "torch.nn.functional.conv2d"

    def native_namespace(self) -> Any:
        import torch

        return torch

    def compile_function(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        import torch

        # dynamic=False: one static kernel per shape (Dynamo keys its cache on the code
        # object, so a second size would otherwise get a dynamic-shape kernel)
        return torch.compile(fn, dynamic=False)

    def conv2d(self) -> Callable[[Any, Any], Any]:
        import torch.nn.functional as tf

        return tf.conv2d

    def __init__(self, device_type: str) -> None:
        self.device_type = device_type
        self.name = f"torch-{device_type}"
        self.gpu = device_type == "cuda"

    def _probe(self) -> str | None:
        reason = super()._probe()
        if reason is None and self.gpu:
            import torch

            if not torch.cuda.is_available():
                built = getattr(torch.version, "cuda", None)
                if built is None:
                    return "this torch build has no CUDA support (a CPU build)"
                return "no CUDA device is visible (torch.cuda.is_available() is False)"
        return reason

    def device_name(self) -> str:
        if self.gpu:
            import torch

            return str(torch.cuda.get_device_name(0))
        return super().device_name()

    def from_numpy(self, arr: np.ndarray) -> Any:
        import torch

        # native byte order, C order, a copy (np.array keeps 0-d arrays 0-d)
        host = np.array(arr, dtype=arr.dtype.newbyteorder("="), order="C", copy=True)
        if host.dtype.name == "bfloat16":  # ml_dtypes' bfloat16: torch reads its bits
            return torch.from_numpy(host.view(np.uint16)).view(torch.bfloat16).to(self.device_type)
        return torch.from_numpy(host).to(self.device_type)

    def to_numpy(self, x: Any) -> np.ndarray:
        import torch

        x = x.detach().cpu().resolve_conj().resolve_neg()
        if x.dtype == torch.bfloat16:  # NumPy's bfloat16 is ml_dtypes' (JAX's dependency)
            import ml_dtypes

            return x.view(torch.uint16).numpy().view(ml_dtypes.bfloat16)
        return np.asarray(x.numpy())

    def owns(self, x: Any) -> bool:
        import torch

        return isinstance(x, torch.Tensor) and x.device.type == self.device_type

    def synchronize(self, *arrays: Any) -> None:
        if self.gpu:
            import torch

            devices = {a.device for a in arrays if hasattr(a, "device")}
            if not devices:
                torch.cuda.synchronize()
            for d in devices:
                torch.cuda.synchronize(d)

    def array_types(self) -> tuple[type, ...]:
        import torch

        return (torch.Tensor,)

    def make_adapter(self) -> Adapter:
        return TorchAdapter()

    def type_name(self, cls: type) -> Callable[[Any], str]:
        return _torch_name

    def type_fence(self, cls: type) -> Callable[[Any], Any] | None:
        return _torch_fence


def _torch_name(x: Any) -> str:
    return f"torch-{x.device.type}"  # "torch-cpu", "torch-cuda", or another device type


def _torch_fence(x: Any) -> None:
    if x.is_cuda:
        import torch

        torch.cuda.synchronize(x.device)


BACKENDS = (TorchBackend("cpu"), TorchBackend("cuda"))
