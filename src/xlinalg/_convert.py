"""The rules of :func:`xlinalg.to`: a conversion keeps every value and the dtype, or raises.

``backends.to`` finds the source and target backends; the functions here decide
what a conversion may do (docs/semantics.md, "Devices and conversion"):

* :func:`check_dtype_fits` refuses, with a :class:`TypeError` naming the dtype and
  the fix, a dtype the target cannot hold as it is (JAX in its default 32-bit mode
  would make int64 int32 and float64 float32; array-api-strict has no float16;
  NumPy, Dask and array-api-strict have no bfloat16 without ``ml_dtypes``; only
  NumPy and Dask hold extended precision).
* :func:`plain` resolves PyTorch's lazy conjugate and negative bits (a view with
  ``is_conj()`` or ``is_neg()`` set is exported by DLPack without them).
* :func:`zero_copy` shares memory through DLPack only where that is safe: never
  a writable tensor (PyTorch, CuPy) over memory its owner treats as read-only (a
  read-only NumPy array or ``np.memmap``, a JAX array, which is immutable), and
  never negative strides or a non-native byte order into a library that cannot
  take them (``torch.from_dlpack`` aborts the process on negative strides).

Nothing here imports an array library unless an array of it is passed in.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["check_dtype_fits", "dtype_name", "native_order", "plain", "shares_read_only", "zero_copy"]

#: dtypes JAX holds only with ``jax_enable_x64`` (it would silently narrow them)
_X64 = {"int64": "int32", "uint64": "uint32", "float64": "float32", "complex128": "complex64"}
#: extended precision: NumPy's ``longdouble``/``clongdouble`` on x86 (only NumPy and Dask hold it)
_EXTENDED = ("float128", "float96", "complex256", "complex192", "longdouble", "clongdouble")
#: targets that take ml_dtypes' bfloat16 as a NumPy dtype
_HOST_TARGETS = ("numpy", "dask")


def dtype_name(x: Any) -> str:
    """The dtype of `x` by its NumPy-style name (``torch.float64`` -> ``"float64"``;
    a big-endian NumPy ``>f8`` -> ``"float64"``)."""
    dt = x.dtype
    # keyed on (type, dtype): array-api-strict's float64 hashes like NumPy's, and
    # comparing the two warns (UserWarning); the types differ first, so never compared
    key = (type(dt), dt)
    name = _NAMES.get(key)
    if name is None:  # (np.dtype.name is a Python property: docs/performance.md; dtypes are few)
        name = _NAMES[key] = dt.name if isinstance(dt, np.dtype) else str(dt).rsplit(".", 1)[-1]
    return name


#: (dtype's type, dtype) -> its name (filled on first sight; the same value whichever
#: thread fills it)
_NAMES: dict[Any, str] = {}


def _jax_x64() -> bool:
    import jax

    return bool(jax.config.read("jax_enable_x64"))


def _has_ml_dtypes() -> bool:
    try:
        import ml_dtypes  # noqa: F401  (JAX's dependency: NumPy's bfloat16)
    except ImportError:
        return False
    return True


def check_dtype_fits(x: Any, source: str, target: str) -> None:
    """Raise :class:`TypeError` if `target` cannot hold `x`'s dtype as it is."""
    name = dtype_name(x)
    fix = ""
    if target.startswith("jax") and name in _X64 and not _jax_x64():
        fix = (
            f"JAX is in its default 32-bit mode and would make it {_X64[name]}, changing "
            'values. Call jax.config.update("jax_enable_x64", True) at start-up (or set '
            f"JAX_ENABLE_X64=1), or cast to {_X64[name]} first if its values allow"
        )
    elif name in _EXTENDED and target not in _HOST_TARGETS:
        fix = (
            f"extended precision ({name}) is NumPy's only: {target} has no such dtype. "
            "Cast to float64/complex128 first if its values allow"
        )
    elif name == "bfloat16" and target == "array-api-strict":
        fix = "array-api-strict has no bfloat16. Cast to float32 first (exact: it holds every bfloat16)"
    elif name == "float16" and target == "array-api-strict":
        fix = "array-api-strict has no float16. Cast to float32 first (exact: it holds every float16)"
    elif name == "bfloat16" and target in _HOST_TARGETS and not _has_ml_dtypes():
        fix = (
            "NumPy has no bfloat16 without the ml_dtypes package (pip install ml-dtypes). "
            "Or cast to float32 first (exact: it holds every bfloat16)"
        )
    if fix:
        raise TypeError(f"xlinalg.to: cannot convert an array of dtype {name} from {source} to {target}: {fix}.")


def native_order(host: np.ndarray, target: str) -> np.ndarray:
    """`host` in the machine's byte order where `target` takes no other (same values)."""
    if host.dtype.isnative or target in _HOST_TARGETS:
        return host
    return host.astype(host.dtype.newbyteorder("="))


def plain(x: Any, source: str) -> Any:
    """`x` without lazy bits the other libraries cannot see (a copy only where set)."""
    if source.startswith("torch") and (x.is_conj() or x.is_neg()):
        return x.resolve_conj().resolve_neg()
    return x


def _host_view(x: Any, source: str) -> np.ndarray | None:
    """The NumPy view of a host array (NumPy, array-api-strict), else None."""
    if source == "numpy":
        return x
    if source == "array-api-strict":
        try:
            return np.from_dlpack(x)
        except Exception:
            return None
    return None


def shares_read_only(x: Any, source: str) -> bool:
    """Whether `x`'s memory is read-only to its owner (no writable alias may be made)."""
    if source.startswith("jax"):
        return True  # JAX arrays are immutable; XLA may share and reuse their buffers
    h = _host_view(x, source)
    return h is not None and not h.flags.writeable


def _unsafe_layout(x: Any, source: str) -> bool:
    """Negative strides or a non-native byte order: no DLPack route takes them."""
    h = _host_view(x, source)
    if h is None:
        if source == "cupy":
            return any(s < 0 for s in x.strides)
        return False
    return any(s < 0 for s in h.strides) or not h.dtype.isnative


def zero_copy(x: Any, source: str, target: Any) -> tuple[Any, bool] | None:
    """`x` on `target` through DLPack: ``(array, shared)``, or None where no route applies.

    `shared` is False where a copy was made on the device because the zero-copy
    view would be a writable alias of read-only memory.
    """
    name = target.name
    if _unsafe_layout(x, source):
        return None
    writable_target = name.startswith("torch") or name == "cupy"
    protect = writable_target and shares_read_only(x, source)
    if protect and _host_view(x, source) is not None:
        return None  # host memory: the host copy is the one copy
    try:
        if name == "numpy":
            return np.from_dlpack(x), True
        if name.startswith("torch"):
            import torch

            out = torch.from_dlpack(x)
            if out.device.type != target.device_type:
                return None
            return (out.clone(), False) if protect else (out, True)
        if name == "cupy":
            import cupy

            out = cupy.from_dlpack(x)
            return (out.copy(), False) if protect else (out, True)
        if name.startswith("jax"):
            import jax

            out = jax.dlpack.from_dlpack(x)
            return (out, True) if target.owns(out) else None
        if name == "array-api-strict":
            import array_api_strict

            return array_api_strict.from_dlpack(x), True
    except (BufferError, TypeError, RuntimeError, ValueError, AttributeError):
        return None
    return None
