"""The cache of unrolled kernels: one per (backend, n, dtype, device, layout, compiled).

What a backend compiles with and how its kernel is built are the backend's
hooks (the backend's ``unrolled`` facet: ``compiler``, ``compile_problem``,
``kernel``, in ``xlinalg.backends``); a backend without a kernel of its
own runs the schedule eagerly over the standard's functions.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from .._kernels._build import Kernel, make_generic
from .._kernels._schedule import GENERATED_PREFIX
from ..backends import BACKEND_NAMES, get_backend
from ..backends._adapter import Adapter

#: guards the kernel caches (here, in ``_solve`` and in ``_selection``)
_LOCK = threading.RLock()

_KERNELS: dict[tuple[Any, ...], Kernel] = {}
#: solve_adapter's arguments -> kernel (see there)
_RESOLVED: dict[tuple[Any, ...], Kernel] = {}


def clear_cache() -> None:
    """Forget every generated and compiled solver (the backends' own caches stay),
    and the modules their generated code was registered under (one per kernel,
    ``xlinalg._unrolled_generated_N``: without this each clear and rebuild left
    one more in ``sys.modules``)."""
    with _LOCK:
        _KERNELS.clear()
        _RESOLVED.clear()
        for name in [m for m in sys.modules if m.startswith(GENERATED_PREFIX)]:
            sys.modules.pop(name, None)


def compiled_cache_info() -> list[dict[str, Any]]:
    """One entry per cached solver: its key, calls and first-call (compile) seconds.

    The first call is timed as the caller sees it, unfenced: compile plus launch.
    On an asynchronous device (CUDA, JAX) the run itself may not be in it; fencing
    it would make the caller's first call wait for the device.
    """
    with _LOCK:
        items = list(_KERNELS.values())
    return [
        {
            "backend": k.key[0],
            "n": k.key[1],
            "dtype": k.key[2],
            "device": k.key[3],
            "layout": k.key[4],
            "compiled": k.key[5],
            "calls": k.calls,
            "first_call_s": {str(s): round(t, 4) for s, t in k.first_call_s.items()},
        }
        for k in items
    ]


def _resolve_compile(backend: str, compile: bool | None, complex_: bool) -> bool:
    """Whether to compile on `backend` (an id), given ``compile=`` and the dtype's kind."""
    if compile is not None and compile not in (True, False):
        raise TypeError(f"`compile` must be None, True or False, got {compile!r}")
    b = get_backend(backend)
    compiler = b.unrolled.compiler(complex_)
    if compiler is None:
        if compile:
            compiled = [name for name in BACKEND_NAMES if get_backend(name).unrolled.compiler(False)]
            raise ValueError(
                f"solve_unrolled: no compiler for the {backend} backend"
                + (" with complex dtypes" if b.unrolled.compiler(False) else "")
                + f"; compiled backends: {', '.join(sorted(compiled))}. Pass compile=None or False"
            )
        return False
    if compile is False:
        return False
    reason = b.unrolled.compile_problem()
    if reason is not None:
        if compile:
            raise RuntimeError(f"solve_unrolled: compile=True needs {compiler}, but {reason}")
        return False
    return True


def _kernel(ad: Adapter, backend: str, n: int, a: Any, layout: str, compiled: bool) -> Kernel:
    dtype = a.dtype
    dname = ad.dtype_name(dtype)
    device = ad.device(a)
    # (and NumPy's byte order: a kernel bakes its dtype into the arrays it makes)
    key = (backend, n, dname, str(device), layout, compiled, getattr(dtype, "byteorder", ""))
    kern = _KERNELS.get(key)
    if kern is not None:
        return kern
    run = get_backend(backend).unrolled.kernel(n, layout, dtype, device, compiled)
    if run is None:  # the standard's functions, eagerly
        run = make_generic(ad, n, layout, dtype, device)
    with _LOCK:
        return _KERNELS.setdefault(key, Kernel(key, run))


def is_warm(backend: str, n: int, dtype_name: str, batch: int | None = None) -> bool:
    """Whether a compiled solver for (backend, n, dtype) has run (JAX: for `batch` systems).

    torch compiles with dynamic shapes (one program for every batch size); JAX
    compiles per input shape (its kernels say so: ``per_shape``), so there `batch`
    (number of systems) must match.
    """
    with _LOCK:
        kernels = [k for k in _KERNELS.values() if k.key[:3] == (backend, n, dtype_name) and k.key[5]]
    return any(batch in k.batches if batch is not None and k.per_shape else k.calls for k in kernels)
