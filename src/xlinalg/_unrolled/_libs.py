"""The library-specific parts of the unrolled solver (to move into ``xlinalg.backends``).

Per backend: the layout measured fastest, the compiler, and the kernel builder
(NumPy's own functions, ``torch.compile``, ``jax.jit``, a CuPy elementwise
kernel). Array libraries are imported inside the builders only.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np

from .._lib import _env
from ._build import _chunks, _eager_run, _flatten
from ._inplace import inplace_function
from ._schedule import (
    _LOCK,
    _assemble,
    _assemble_select,
    _c_source,
    _python_function,
    _std_namespace,
)


def _numpy_namespace() -> Any:
    # NumPy's own functions (no array-api-compat wrappers: 200 calls per solve)
    return types.SimpleNamespace(
        abs=np.abs, where=np.where, stack=np.stack, reshape=np.reshape,
        permute_dims=np.transpose, broadcast_to=np.broadcast_to, concat=np.concatenate,
    )


def _torch_namespace() -> Any:
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


def _jax_namespace() -> Any:
    import jax.numpy as jnp

    return _std_namespace(jnp)


# ====================================================================== compilers
_TORCH_COMPILE_OK: dict[str, str | None] = {}


def _torch_compile_reason(device_type: str = "cpu") -> str | None:
    """Why ``torch.compile`` cannot be used on `device_type` here, or None if it works.

    Tried once per process and device type with a one-line function (a few
    seconds the first time): Inductor needs a working C++ compiler on the CPU
    and Triton on CUDA. ``XLINALG_TORCH_COMPILE=0`` disables it.
    """
    if device_type in _TORCH_COMPILE_OK:
        return _TORCH_COMPILE_OK[device_type]
    with _LOCK:  # the self-test runs once, whichever threads ask first
        if device_type not in _TORCH_COMPILE_OK:
            _TORCH_COMPILE_OK[device_type] = _torch_compile_self_test(device_type)
    return _TORCH_COMPILE_OK[device_type]


def _torch_compile_self_test(device_type: str) -> str | None:
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
    return _torch_compile_reason(device_type) is None


#: torch.compile: Inductor's scheduler stops fusing at 64 nodes by default, so
#: the unrolled program (hundreds of elementwise nodes) became a dozen loops
#: over the batch with every intermediate written to memory; one loop keeps
#: them in registers. Measured on torch-cpu, 100000 systems of 5x5: 2.0x ->
#: 2.9x torch.linalg.solve (benchmarks/results/unrolled-cpu.json).
_TORCH_OPTIONS = {"max_fusion_size": 4096}
#: JAX on the CPU: options for XLA. Its new fusion emitters duplicate the cheap
#: producers of the unrolled program into many kernels (10× slower, measured);
#: the classic emitters fuse it into a few loops.
_JAX_CPU_OPTIONS = {"xla_cpu_use_fusion_emitters": False}
#: JAX on the CPU: systems per chunk (a ``lax.map`` over chunks keeps every
#: intermediate in the cache; see docs/unrolled.md for the measurement)
_JAX_CPU_CHUNK = 10000



#: NumPy, batch-last: systems per chunk of the in-place program (its buffers
#: stay in the cache; see docs/unrolled.md)
_NUMPY_CHUNK = 4096


def _make_numpy(n: int, layout: str, dtype: Any) -> Callable[[Any, Any], tuple[Any, Any]]:
    """NumPy's own functions, eagerly; batch-last runs the in-place program by chunks."""
    ns = _numpy_namespace()
    one, nan = np.asarray(1, dtype=dtype), np.asarray(np.nan, dtype=dtype)
    if layout == "batch-last":
        run = _numpy_chunked(ns, n, dtype, one, nan)
    else:
        run = _eager_run(ns, _python_function(n, layout, ns), n, layout, lambda a: (one, nan), False)

    def quiet(a: Any, bm: Any) -> tuple[Any, Any]:
        with np.errstate(all="ignore"):  # inf/NaN inputs: IEEE results, no warnings
            return run(a, bm)

    return quiet


def _numpy_chunked(ns: Any, n: int, dtype: Any, one: Any, nan: Any) -> Callable[[Any, Any], tuple[Any, Any]]:
    """The in-place program (:mod:`._inplace`) over chunks of :data:`_NUMPY_CHUNK` systems."""
    fn, kinds = inplace_function(n, np)
    types_ = {"T": np.dtype(dtype), "R": np.empty(0, dtype).real.dtype, "B": np.dtype(bool)}

    def run(a: Any, bm: Any) -> tuple[Any, Any]:
        a3, b3, batch, nb, k = _flatten(ns, a, bm, n)
        c = max(1, min(nb, _NUMPY_CHUNK))
        x = np.empty((nb, n, k), dtype)
        bad = np.empty(nb, bool)
        at, bt = np.empty((n * n, c), dtype), np.empty((n, k, c), dtype)
        xt, bc = np.empty((n, k, c), dtype), np.empty(c, bool)
        buf = [np.empty((c,) if s == "e" else (k, c), types_[t]) for t, s in kinds]
        for s0 in range(0, nb, c):
            m = min(c, nb - s0)
            if m < c:  # the last chunk: views of the first m columns
                at, bt, xt, bc = at[:, :m], bt[..., :m], xt[..., :m], bc[:m]
                buf = [v[..., :m] for v in buf]
            np.copyto(at, np.reshape(a3[s0:s0 + m], (m, n * n)).T)
            np.copyto(bt, np.transpose(b3[s0:s0 + m], (1, 2, 0)))
            fn(at, bt, xt, bc, one, nan, buf)
            np.copyto(x[s0:s0 + m], np.transpose(xt, (2, 0, 1)))
            bad[s0:s0 + m] = bc
        return np.reshape(x, (*batch, n, k)), np.reshape(bad, batch)

    return run


def _make_torch(n: int, layout: str, dtype: Any, device: Any, compiled: bool) -> Callable[[Any, Any], tuple[Any, Any]]:
    import torch

    ns = _torch_namespace()
    one = torch.tensor(1, dtype=dtype, device=device)
    nan = torch.tensor(float("nan"), dtype=dtype, device=device)
    consts = lambda a: (one, nan)  # noqa: E731
    core = _python_function(n, layout, ns)
    plain = _eager_run(ns, core, n, layout, consts, False)
    if not compiled:
        return plain

    def whole(a3: Any, b3: Any, one: Any, nan: Any) -> tuple[Any, Any]:
        rows, bad = core(a3, b3, one, nan)
        return _assemble(ns, rows, layout), bad

    # dynamic=True: one compile serves every batch size (measured as fast as static)
    fast = _eager_run(ns, torch.compile(whole, fullgraph=True, dynamic=True,
                                            options=dict(_TORCH_OPTIONS)), n, layout, consts, True)

    def run(a: Any, bm: Any) -> tuple[Any, Any]:
        if torch.compiler.is_compiling():  # inside the caller's torch.compile: inline
            return plain(a, bm)
        return fast(a, bm)

    return run


def _make_jax(n: int, layout: str, compiled: bool, cpu: bool) -> Callable[[Any, Any], tuple[Any, Any]]:
    """JAX: one jitted program; returns ``(x, flag)``: singular members are NaN in `x`,
    and `flag` (0-d) says whether any entry of `x` is NaN.

    On the CPU the batch is cut into chunks of about :data:`_JAX_CPU_CHUNK`
    systems solved by a ``lax.map`` (the intermediates stay in the cache), and
    XLA's classic fusion emitters are asked for (:data:`_JAX_CPU_OPTIONS`).
    The singular mask is not an output: a second output would be a second fusion
    recomputing the program; NaN rows mark the candidates instead, confirmed on
    the host only when there are any (:func:`_check_singular`). Whether there are
    any is the flag, reduced inside the program from the written `x` (an
    optimization barrier keeps XLA from fusing the solve into the reduction a
    second time): ``errors="raise"`` reads one bool, not the solution.
    """
    import jax
    import jax.numpy as jnp

    ns = _jax_namespace()
    ns.arange = jnp.arange
    core = _python_function(n, layout, ns)
    chunk = _JAX_CPU_CHUNK if cpu else 0

    def solve3(a3: Any, b3: Any) -> Any:
        one = jnp.asarray(1, dtype=a3.dtype)
        nan = jnp.asarray(float("nan"), dtype=a3.dtype)
        rows, _ = core(a3, b3, one, nan)
        return _assemble_select(ns, rows, layout)

    def solve_flat(a3: Any, b3: Any, nb: int, k: int) -> Any:
        if not chunk or nb <= chunk:
            return solve3(a3, b3)
        m, c = _chunks(nb, chunk)
        head = m * c
        ac = jnp.reshape(a3[:head], (m, c, n, n))
        bc = jnp.reshape(b3[:head], (m, c, n, k))
        x = jax.lax.map(lambda ab: solve3(ab[0], ab[1]), (ac, bc))
        x = jnp.reshape(x, (head, n, k))
        if head < nb:
            x = jnp.concat([x, solve3(a3[head:], b3[head:])], axis=0)
        return x

    def whole(a: Any, bm: Any, vector: bool = False) -> tuple[Any, Any]:
        if vector:  # inside the program: eager JAX indexing costs a dispatch a call
            bm = bm[..., None]
        a3, b3, batch, nb, k = _flatten(ns, a, bm, n)
        x = jnp.reshape(solve_flat(a3, b3, nb, k), (*batch, n, k))
        flag = jnp.any(jnp.isnan(jax.lax.optimization_barrier(x)))  # (dropped when unused)
        return (x[..., 0] if vector else x), flag

    whole.takes_vector = True  # type: ignore[attr-defined]
    whole.flag_only = True  # type: ignore[attr-defined]
    if not compiled:
        return whole
    top = jax.jit(whole, static_argnums=2, compiler_options=dict(_JAX_CPU_OPTIONS) if cpu else None)
    plain_jit = jax.jit(whole, static_argnums=2)
    tracer = jax.core.Tracer
    state = {"options_ok": cpu}

    def run(a: Any, bm: Any, vector: bool = False) -> tuple[Any, Any]:
        if isinstance(a, tracer) or isinstance(bm, tracer):
            return whole(a, bm, vector)  # inside the caller's trace: inlined into its program
        if state["options_ok"]:
            try:
                return top(a, bm, vector)
            except Exception as exc:  # an XLA without these options
                if "xla_cpu" not in str(exc):
                    raise
                state["options_ok"] = False
        return plain_jit(a, bm, vector)

    run.jitted = top  # type: ignore[attr-defined]  # (for inspection: .lower(...).compile())
    run.takes_vector = True  # type: ignore[attr-defined]
    run.flag_only = True  # type: ignore[attr-defined]
    return run


def _make_cupy(n: int, layout: str, dtype: Any) -> Callable[[Any, Any], tuple[Any, Any]]:
    """The schedule as one CUDA elementwise kernel (float32/float64): one thread per system."""
    import cupy as cp

    kernel = cp.ElementwiseKernel(
        "raw T a, raw T b, raw T nanv, int64 nb, int64 k",
        "raw T x, raw bool bad",
        _c_source(n, layout),
        f"xlinalg_unrolled_solve_n{n}_{layout.replace('-', '_')}",
        preamble="",
    )
    ns = _std_namespace(cp)

    def run(a: Any, bm: Any) -> tuple[Any, Any]:
        with a.device:
            a3, b3, batch, nb, k = _flatten(ns, a, bm, n)
            nanv = cp.full((1,), float("nan"), dtype=dtype)
            if layout == "batch-first":
                a3 = cp.ascontiguousarray(a3)
                b3 = cp.ascontiguousarray(b3)
                x = cp.empty((nb, n, k), dtype=dtype)
            else:
                a3 = cp.ascontiguousarray(cp.transpose(a3, (1, 2, 0)))
                b3 = cp.ascontiguousarray(cp.transpose(b3, (1, 2, 0)))
                x = cp.empty((n, k, nb), dtype=dtype)
            bad = cp.empty((nb,), dtype=cp.bool_)
            # 1-D views: a raw CArray of more dimensions unravels every flat index
            # with integer divisions
            kernel(a3.reshape(-1), b3.reshape(-1), nanv, nb, k, x.reshape(-1), bad, size=nb)
            if layout == "batch-last":
                x = cp.transpose(x, (2, 0, 1))
            return cp.reshape(x, (*batch, n, k)), cp.reshape(bad, batch)

    return run


#: backend id -> the layout measured fastest there (GPU entries: see docs/unrolled.md)
DEFAULT_LAYOUT: dict[str, str] = {
    "numpy": "batch-last",
    "torch-cpu": "batch-first",
    "jax-cpu": "batch-first",
    "torch-cuda": "batch-last",
    "jax-gpu": "batch-last",
    "cupy": "batch-first",
    "dask": "batch-last",
    "array-api-strict": "batch-first",
}

_COMPILERS = {
    "jax-cpu": "jax.jit",
    "jax-gpu": "jax.jit",
    "torch-cpu": "torch.compile",
    "torch-cuda": "torch.compile",
    "cupy": "cupy.ElementwiseKernel",
}
