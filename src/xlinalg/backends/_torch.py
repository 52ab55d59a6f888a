"""PyTorch: the ``"torch-cpu"`` and ``"torch-cuda"`` backends (the adapter is in :mod:`._torch_adapter`)."""

from __future__ import annotations

import contextlib
import functools
import threading
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from ._base import Adapter, Backend, TypeHooks
from ._facets import BenchFacet, ConvertFacet, TestingFacet, UnrolledFacet, facet
from ._torch_adapter import TorchAdapter, torch_dense_error

__all__ = ["TorchAdapter", "TorchBackend"]

#: float8 dtypes torch and ml_dtypes (NumPy's) both have, converted bit for bit
_FLOAT8 = frozenset(("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu"))


def _overlaps(t: Any) -> bool:
    """Whether elements of the strided tensor `t` share memory (``expand``,
    overlapping ``as_strided``): a zero stride on an axis longer than 1, or what
    torch's own overlap check finds (it answers 0 for "no", 1 "yes", 2 "too hard")."""
    import torch

    if t.layout != torch.strided or t.numel() < 2:
        return False
    if any(st == 0 and n > 1 for st, n in zip(t.stride(), t.shape)):
        return True
    check = getattr(torch, "_debug_has_internal_overlap", None)
    return check is not None and int(check(t)) != 0


class TorchBench(BenchFacet):
    backend: TorchBackend
    distributions = (("torch", ("torch",)),)
    env_flags = ("XLINALG_TORCH_COMPILE",)  # whether the unrolled solver may torch.compile
    extra_float_dtypes = ("float16", "bfloat16")
    function_compiler = "torch.compile (Inductor)"
    # Inductor builds C++ (CPU) or Triton (CUDA) kernels: seconds per shape and dtype
    slow_compiler = True
    conv2d_kernel = "torch.nn.functional.conv2d"

    def __init__(self, backend: TorchBackend) -> None:
        super().__init__(backend)
        self.numpy_wraps = not backend.gpu  # (a CPU tensor's .numpy() is a view)

    def device_name(self) -> str:
        if self.backend.gpu:
            import torch

            return str(torch.cuda.get_device_name(0))
        return super().device_name()

    def native_namespace(self) -> Any:
        import torch

        return torch

    def layout(self, x: Any) -> dict[str, Any]:
        return {"shape": [int(s) for s in x.shape], "c_contiguous": bool(x.is_contiguous())}

    def compile_function(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        import torch

        # dynamic=False: one static kernel per shape (Dynamo keys its cache on the code
        # object, so a second size would otherwise get a dynamic-shape kernel)
        return torch.compile(fn, dynamic=False)

    def conv2d(self) -> Callable[[Any, Any], Any]:
        import torch.nn.functional as tf

        return tf.conv2d

    def processor_class(self) -> str:
        return "gpu" if self.backend.gpu else "cpu"

    def cast(self, x: Any, dtype: Any) -> Any:
        return x.to(dtype)

    def copy(self, x: Any) -> Any:
        return x.clone()

    def softmax(self) -> Callable[[Any], Any]:
        import torch

        return functools.partial(torch.softmax, dim=-1)

    def contiguous(self, x: Any) -> Any:
        return x.contiguous()

    def host_result(self, x: Any) -> np.ndarray:
        import torch

        if x.dtype in (torch.bfloat16, torch.float16):
            x = x.float()
        return np.asarray(self.backend.to_numpy(x))

    def fence_description(self) -> str:
        if self.backend.gpu:
            return "per block: torch.cuda.synchronize (+ CUDA events for device time)"
        return super().fence_description()

    def device_clock(self) -> Any:
        if not self.backend.gpu:
            return None
        import torch  # pragma: no cover - needs a CUDA device

        class _TorchEvents:  # pragma: no cover - needs a CUDA device
            def start(self) -> None:
                self._a = torch.cuda.Event(enable_timing=True)
                self._b = torch.cuda.Event(enable_timing=True)
                self._a.record()

            def stop(self) -> float:
                self._b.record()
                self._b.synchronize()
                return float(self._a.elapsed_time(self._b)) / 1e3

        return _TorchEvents()  # pragma: no cover - needs a CUDA device

    def memory_reset(self) -> Any:
        if not self.backend.gpu:
            return None
        import torch  # pragma: no cover - needs CUDA

        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        return torch.cuda.memory_allocated()

    def memory_peaks(self, token: Any) -> dict[str, int]:
        if not self.backend.gpu:
            return {}
        import torch  # pragma: no cover - needs CUDA

        torch.cuda.synchronize()
        return {"cuda_max_allocated_bytes": int(torch.cuda.max_memory_allocated() - (token or 0))}

    def release_memory(self) -> None:
        if self.backend.gpu:  # pragma: no cover - needs CUDA
            import torch

            torch.cuda.synchronize()
            torch.cuda.empty_cache()

    def configure(self, *, threads: int | None, allow_tf32: bool) -> Callable[[], None]:
        import torch

        undo: list[Callable[[], None]] = []
        old_tprec = torch.get_float32_matmul_precision()
        old_threads = torch.get_num_threads()
        torch.set_float32_matmul_precision("high" if allow_tf32 else "highest")
        undo.append(lambda: torch.set_float32_matmul_precision(old_tprec))
        if self.backend.gpu:  # pragma: no cover - needs CUDA
            # matmul and cuDNN (the A15 convolution) have a TF32 switch each; cuDNN's
            # is on by default
            old_tf32 = torch.backends.cuda.matmul.allow_tf32
            old_cudnn_tf32 = torch.backends.cudnn.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = allow_tf32
            torch.backends.cudnn.allow_tf32 = allow_tf32

            def _undo_tf32() -> None:
                torch.backends.cuda.matmul.allow_tf32 = old_tf32
                torch.backends.cudnn.allow_tf32 = old_cudnn_tf32

            undo.append(_undo_tf32)
        if threads is not None:
            torch.set_num_threads(threads)
            undo.append(lambda: torch.set_num_threads(old_threads))

        def restore() -> None:
            for f in reversed(undo):
                f()

        return restore

    def settings(self, state: dict[str, Any]) -> None:
        import torch

        state["threads"]["torch"] = torch.get_num_threads()
        state["threads"]["torch_interop"] = torch.get_num_interop_threads()
        state["matmul_precision"] = {"float32": torch.get_float32_matmul_precision()}
        if self.backend.gpu:  # pragma: no cover - needs CUDA
            state["matmul_precision"]["allow_tf32"] = bool(torch.backends.cuda.matmul.allow_tf32)
            state["matmul_precision"]["cudnn_allow_tf32"] = bool(torch.backends.cudnn.allow_tf32)
            state["cuda"] = torch.version.cuda

    def thread_info(self) -> dict[str, Any]:
        import torch

        return {"torch": torch.get_num_threads(),
                "torch_float32_matmul_precision": torch.get_float32_matmul_precision()}


class TorchConvert(ConvertFacet):
    backend: TorchBackend
    writable_arrays = True

    def plain(self, x: Any) -> Any:
        if x.is_conj() or x.is_neg():
            return x.resolve_conj().resolve_neg()
        return x

    def read_only(self, x: Any) -> bool:
        # an expanded (stride-0) or overlapping view: torch refuses in-place writes to
        # it ("more than one element ... refers to a single memory location"); a
        # writable alias elsewhere would write one element into many
        return _overlaps(x)

    def holds(self, name: str) -> bool:
        return name in _FLOAT8

    def holds_also(self) -> str:
        return f" (and {', '.join(sorted(_FLOAT8))})"

    def from_dlpack(self, x: Any, protect: bool) -> tuple[Any, bool] | None:
        import torch

        out = torch.from_dlpack(x)
        if out.device.type != self.backend.device_type:
            return None
        return (out.clone(), False) if protect else (out, True)


class TorchUnrolled(UnrolledFacet):
    backend: TorchBackend

    def __init__(self, backend: TorchBackend) -> None:
        super().__init__(backend)
        self.layout = "batch-last" if backend.gpu else "batch-first"

    def compiler(self, complex_: bool) -> str | None:
        return "torch.compile"

    def compile_problem(self) -> str | None:
        return torch_compile_reason(self.backend.device_type)

    def kernel(self, n: int, layout: str, dtype: Any, device: Any,
               compiled: bool) -> Callable[..., tuple[Any, Any]] | None:
        return make_unrolled_kernel(n, layout, dtype, device, compiled)


class TorchTesting(TestingFacet):
    backend: TorchBackend

    def default_device(self) -> contextlib.AbstractContextManager[Any]:
        if not self.backend.gpu:
            return contextlib.nullcontext()
        import torch

        return torch.device(self.backend.device_type)


class TorchBackend(Backend):
    module = "torch"
    install = "pip install torch"  # each instance says more (__init__: CPU or CUDA build)
    library = "torch"
    adapter_class = TorchAdapter
    namespace_names = ("array_api_compat.torch", "torch")
    bench = facet(TorchBench)
    convert = facet(TorchConvert)
    unrolled = facet(TorchUnrolled)
    testing = facet(TorchTesting)

    def __init__(self, device_type: str) -> None:
        self.device_type = device_type
        self.name = f"torch-{device_type}"
        self.gpu = device_type == "cuda"
        self.install = (
            "pip install torch, a CUDA build (PyPI's Linux wheels are; others: "
            "https://pytorch.org/get-started/locally/), on a machine with an NVIDIA GPU"
            if self.gpu else
            'pip install torch (a CPU build: pip install torch==2.13.0 on this project\'s '
            'machines), or pip install "xlinalg[torch]"')

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

    def from_numpy(self, arr: np.ndarray) -> Any:
        import torch

        # native byte order, C order, a copy (np.array keeps 0-d arrays 0-d)
        host = np.array(arr, dtype=arr.dtype.newbyteorder("="), order="C", copy=True)
        name = host.dtype.name
        if name == "bfloat16" or name in _FLOAT8:  # ml_dtypes' arrays: torch reads their bits
            bits = np.uint16 if name == "bfloat16" else np.uint8
            return torch.from_numpy(host.view(bits)).view(getattr(torch, name)).to(self.device_type)
        return torch.from_numpy(host).to(self.device_type)

    def to_numpy(self, x: Any) -> np.ndarray:
        import torch

        x = x.detach().cpu().resolve_conj().resolve_neg()
        name = str(x.dtype).rpartition(".")[2]
        if name == "bfloat16" or name in _FLOAT8:  # NumPy's are ml_dtypes' (JAX's dependency)
            import ml_dtypes

            bits = torch.uint16 if name == "bfloat16" else torch.uint8
            return x.view(bits).numpy().view(getattr(ml_dtypes, name))
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

    def type_hooks(self, cls: type) -> TypeHooks:
        return TypeHooks(_torch_name, _torch_fence, torch_dense_error)


def _torch_name(x: Any) -> str:
    return f"torch-{x.device.type}"  # "torch-cpu", "torch-cuda", or another device type


def _torch_fence(x: Any) -> None:
    if x.is_cuda:
        import torch

        torch.cuda.synchronize(x.device)
    elif x.device.type not in ("cpu", "meta"):  # (rare: the checks cost the CPU nothing)
        _fence_other(x)


def _fence_other(x: Any) -> None:
    """Wait for a tensor on another accelerator (MPS, XPU): its module's synchronize."""
    import torch

    kind = x.device.type
    mod = getattr(torch, kind, None)
    sync = getattr(mod, "synchronize", None)
    if sync is None and getattr(getattr(torch, "accelerator", None), "synchronize", None) is not None:
        torch.accelerator.synchronize(x.device)  # (torch >= 2.6: any accelerator)
        return
    if sync is None:
        raise TypeError(
            f"synchronize: a torch tensor on device {x.device}, which has no "
            f"torch.{kind}.synchronize(); a fence that waits for nothing would make a "
            "timing wrong in silence"
        )
    if kind == "mps":
        sync()  # (torch.mps.synchronize takes no device)
    else:
        sync(x.device)


# ---------------------------------------------------------------------- the unrolled solver
#: torch.compile's options for the unrolled program: Inductor's scheduler stops
#: fusing at 64 nodes by default, so the program (hundreds of elementwise nodes)
#: became a dozen loops over the batch, every intermediate written to memory; one
#: loop keeps them in registers (measured: docs/unrolled.md)
UNROLLED_OPTIONS = {"max_fusion_size": 4096}

_COMPILE_OK: dict[str, str | None] = {}
_COMPILE_LOCK = threading.Lock()


def torch_compile_reason(device_type: str = "cpu") -> str | None:
    """Why ``torch.compile`` cannot be used on `device_type` here, or None if it works.

    Tried once per process and device type with a one-line function (a few
    seconds the first time): Inductor needs a working C++ compiler on the CPU
    and Triton on CUDA. ``XLINALG_TORCH_COMPILE=0`` disables it.
    """
    if device_type in _COMPILE_OK:
        return _COMPILE_OK[device_type]
    with _COMPILE_LOCK:  # the self-test runs once, whichever threads ask first
        if device_type not in _COMPILE_OK:
            _COMPILE_OK[device_type] = _compile_self_test(device_type)
    return _COMPILE_OK[device_type]


def _compile_self_test(device_type: str) -> str | None:
    from .._lib import _env

    reason: str | None = None
    if not _env.env_flag("XLINALG_TORCH_COMPILE", True):
        reason = "disabled by XLINALG_TORCH_COMPILE"
    else:
        try:
            import torch

            fn = torch.compile(lambda x: x * 2.0 + 1.0, fullgraph=True, dynamic=False)
            out = fn(torch.ones(3, device=device_type))
            if not bool((out == 3.0).all()):  # pragma: no cover - a broken toolchain
                reason = "torch.compile gave a wrong result in a self-test"
        except Exception as exc:  # no compiler, no Triton, an old torch...
            reason = f"torch.compile does not work here: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    return reason


def torch_compile_available(device_type: str = "cpu") -> bool:
    """Whether ``torch.compile`` works on `device_type` (``"cpu"`` or ``"cuda"``) here.

    The first call compiles a one-line function (a few seconds); the answer is
    cached for the process.

    Parameters
    ----------
    device_type : str, optional
        The torch device type.

    Returns
    -------
    bool

    Examples
    --------
    >>> from xlinalg._unrolled import torch_compile_available
    >>> isinstance(torch_compile_available.__doc__, str)
    True
    """
    return torch_compile_reason(device_type) is None


def _unrolled_namespace() -> Any:
    import types

    import torch

    return types.SimpleNamespace(
        abs=torch.abs,
        where=torch.where,
        stack=lambda xs, axis=0: torch.stack(xs, dim=axis),
        reshape=torch.reshape,
        permute_dims=torch.permute,
        broadcast_to=torch.broadcast_to,
        concat=lambda xs, axis=0: torch.cat(xs, dim=axis),
    )


def make_unrolled_kernel(n: int, layout: str, dtype: Any, device: Any, compiled: bool) -> Callable[..., tuple[Any, Any]]:
    """The unrolled solve on torch: the Python rendering, through ``torch.compile``
    (one compile for every batch size: dynamic shapes) where `compiled`."""
    import torch

    from .._kernels._build import eager_run
    from .._kernels._schedule import assemble, python_function

    ns = _unrolled_namespace()
    one = torch.tensor(1, dtype=dtype, device=device)
    nan = torch.tensor(float("nan"), dtype=dtype, device=device)
    tol = one.abs() * (n * torch.finfo(dtype).eps)  # the singular rule's (_lib/_singular.py), real
    consts = lambda a: (one, nan, tol)  # noqa: E731
    core = python_function(n, layout, ns)
    plain = eager_run(ns, core, n, layout, consts, False)
    traced = lambda x: bool(torch.compiler.is_compiling())  # noqa: E731
    if not compiled:
        plain.traced = traced  # type: ignore[attr-defined]
        return plain

    def whole(a3: Any, b3: Any, one: Any, nan: Any, tol: Any) -> tuple[Any, Any]:
        rows, bad = core(a3, b3, one, nan, tol)
        return assemble(ns, rows, layout), bad

    # a code object of its own per kernel: torch.compile keeps its caches and
    # recompile limit per code object, and every kernel (n, dtype, layout) would
    # otherwise count against the one of this function's `whole`
    whole = types.FunctionType(whole.__code__.replace(), whole.__globals__, whole.__name__,
                               whole.__defaults__, whole.__closure__)
    # dynamic=True: one compile serves every batch size (measured as fast as static)
    fast = eager_run(ns, torch.compile(whole, fullgraph=True, dynamic=True,
                                        options=dict(UNROLLED_OPTIONS)), n, layout, consts, True)

    def run(a: Any, bm: Any) -> tuple[Any, Any]:
        if torch.compiler.is_compiling():  # inside the caller's torch.compile: inline
            return plain(a, bm)
        return fast(a, bm)

    run.traced = traced  # type: ignore[attr-defined]
    return run


BACKENDS = (TorchBackend("cpu"), TorchBackend("cuda"))
