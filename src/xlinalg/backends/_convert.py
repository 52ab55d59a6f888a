"""The rules of :func:`xlinalg.to`: a conversion keeps every value and the dtype, or raises.

``backends.to`` finds the source and target backends; the functions here decide
what a conversion may do (docs/semantics.md, "Devices and conversion"), asking
each backend what its library does (``ConvertFacet.dtype_refusal``, ``numpy_host``,
``read_only``, ``from_dlpack``, ...):

* :func:`check_dtype_fits` refuses, with a :class:`TypeError` naming the dtype and
  the fix, a dtype the target cannot hold as it is (JAX in its default 32-bit mode
  would make int64 int32 and float64 float32; array-api-strict has no float16;
  NumPy, Dask and array-api-strict have no bfloat16 without ``ml_dtypes``; only
  NumPy and Dask hold extended precision).
* ``Backend.plain`` resolves PyTorch's lazy conjugate and negative bits (a view
  with ``is_conj()`` or ``is_neg()`` set is exported by DLPack without them).
* :func:`zero_copy` shares memory through DLPack only where that is safe: never
  a writable tensor (PyTorch, CuPy) over memory its owner treats as read-only (a
  read-only NumPy array or ``np.memmap``, a JAX array, which is immutable), and
  never negative strides or a non-native byte order into a library that cannot
  take them (``torch.from_dlpack`` aborts the process on negative strides).
  Memory that must not be written through the result (a JAX buffer, an expanded
  or overlapping torch view) is shared read-only with NumPy and
  array-api-strict (``Backend.seal``).

Nothing here imports an array library unless an array of it is passed in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ._base import Backend

__all__ = ["check_dtype_fits", "dtype_name", "native_order", "zero_copy"]

#: extended precision: NumPy's ``longdouble``/``clongdouble`` on x86 (only the
#: backends whose arrays are NumPy's hold it: ``Backend.numpy_host``)
_EXTENDED = ("float128", "float96", "complex256", "complex192", "longdouble", "clongdouble")


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


def _has_ml_dtypes() -> bool:
    try:
        import ml_dtypes  # noqa: F401  (JAX's dependency: NumPy's bfloat16)
    except ImportError:
        return False
    return True


def check_dtype_fits(x: Any, source: str, target: Backend) -> None:
    """Raise :class:`TypeError` if `target` cannot hold `x`'s dtype as it is.

    `source` names where `x` comes from, for the message.
    """
    name = dtype_name(x)
    fix = target.convert.dtype_refusal(name)
    if fix:
        pass
    elif name in _EXTENDED and not target.convert.numpy_host:
        fix = (
            f"extended precision ({name}) is NumPy's only: {target.name} has no such dtype. "
            "Cast to float64/complex128 first if its values allow"
        )
    elif name not in NUMBERS and name not in _EXTENDED and not target.convert.numpy_host and not target.convert.holds(name):
        fix = _not_numbers(x, name, target)
    elif name == "bfloat16" and target.convert.numpy_host and not _has_ml_dtypes():
        fix = (
            "NumPy has no bfloat16 without the ml_dtypes package (pip install ml-dtypes). "
            "Or cast to float32 first (exact: it holds every bfloat16)"
        )
    if fix:
        dt = x.dtype
        if isinstance(dt, np.dtype) and (dt.names or dt.kind in "USV"):
            name = str(dt)  # the fields or the length ([('a', '<f8')], <U5), not void96 or str160
        raise TypeError(
            f"xlinalg.to: cannot convert an array of dtype {name} from {source} to "
            f"{target.name}: {fix}."
        )


#: the dtypes every backend holds (JAX's 64-bit ones in its x64 mode; array-api-strict
#: has no float16 or bfloat16: ``ConvertFacet.dtype_refusal`` says so)
NUMBERS = frozenset((
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
))


def _not_numbers(x: Any, name: str, target: Backend) -> str:
    """Why `target` cannot hold dtype `name` (not one of :data:`NUMBERS`), with the fix."""
    kind = getattr(x.dtype, "kind", "")
    hint = {
        "O": "`x` is an object array: convert its elements to numbers first, e.g. np.asarray(x, dtype=np.float64)",
        "M": "`x` holds datetimes: convert them to numbers first, e.g. x.astype('int64') (units since the epoch)",
        "m": "`x` holds durations: convert them to numbers first, e.g. x / np.timedelta64(1, 's')",
        "U": "`x` holds strings: parse them to numbers first", "S": "`x` holds bytes: parse them to numbers first",
    }.get(kind)
    if hint is None and getattr(x.dtype, "names", None):
        hint = f"`x` is a structured array: convert one field at a time, e.g. x[{x.dtype.names[0]!r}]"
    if hint is None:
        hint = "cast `x` to one of those first (float32 holds every float8 and float4 value exactly)"
    half = "".join(f"{h}, " for h in ("float16", "bfloat16") if not target.convert.dtype_refusal(h))
    return (
        f"{target.name} holds only the dtypes bool, int8-int64, uint8-uint64, {half}"
        f"float32, float64, complex64 and complex128{target.convert.holds_also()}; {hint}"
    )


def native_order(host: np.ndarray, target: Backend) -> np.ndarray:
    """`host` in the machine's byte order where `target` takes no other (same values)."""
    if host.dtype.isnative or target.convert.numpy_host:
        return host
    return host.astype(host.dtype.newbyteorder("="))


def zero_copy(x: Any, source: Backend, target: Backend) -> tuple[Any, bool] | None:
    """`x` on `target` through DLPack: ``(array, shared)``, or None where no route applies.

    `shared` is False where a copy was made on the device because the zero-copy
    view would be a writable alias of read-only memory.
    """
    if source.convert.unsafe_layout(x):
        return None
    protect = target.convert.writable_arrays and source.convert.read_only(x)
    if protect and source.convert.host_view(x) is not None:
        return None  # host memory: the host copy is the one copy
    try:
        routed = target.convert.from_dlpack(x, protect)
    except (BufferError, TypeError, RuntimeError, ValueError, AttributeError):
        return None
    if routed is not None and routed[1] and not protect and source.convert.read_only(x):
        # shared, and the source must not be written through it: read-only where
        # the target has such arrays (NumPy, array-api-strict; JAX's are immutable)
        return target.convert.seal(routed[0]), True
    return routed
