"""Comparing NumPy arrays with a tolerance, and saying where they differ.

The comparison of :func:`xlinalg.testing.assert_close` (which adds the checks of
library, device, dtype and shape), and of the operations' declared references
(``_declare``): NumPy only.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

__all__ = ["check_tolerance", "compare_values", "default_tolerance"]


def default_tolerance(dtype: Any) -> tuple[float, float]:
    """The default ``(rtol, atol)`` of :func:`assert_close` for results in `dtype`.

    ``rtol`` is ``4 * sqrt(eps)`` of the dtype (array-api-extra's rule): 6e-8 for
    float64 and complex128, 1.4e-3 for float32 and complex64, 0.13 for float16
    (and torch's complex32). bfloat16 and the other ml_dtypes floats (float8_*)
    take ``2 * eps``: 1.6e-2 for bfloat16, torch.testing's default (values one
    unit in the last place apart are close). Integers and booleans compare
    exactly. ``atol`` equals ``rtol``; :func:`assert_close` scales it by the
    largest finite ``|expected|`` (at least 1).

    Parameters
    ----------
    dtype : dtype or str
        A NumPy dtype, or anything ``numpy.dtype`` accepts (``"float32"``).

    Returns
    -------
    tuple of float
        ``(rtol, atol)``.

    Examples
    --------
    >>> from xlinalg.testing import default_tolerance
    >>> default_tolerance("float32")
    (0.0013810679...)
    >>> default_tolerance("int64")
    (0.0, 0.0)
    """
    dt = _np_dtype(dtype)
    if _low_float(dt):
        import ml_dtypes

        rtol = 2 * float(ml_dtypes.finfo(dt).eps)
        return rtol, rtol
    if dt.kind not in "fc":
        return 0.0, 0.0
    rtol = 4 * float(np.finfo(dt).eps) ** 0.5
    return rtol, rtol


def _np_dtype(dtype: Any) -> np.dtype:
    """The NumPy dtype of `dtype`, also another library's (``torch.bfloat16``):
    ml_dtypes' for bfloat16 and float8, float16 for torch's complex32 (its parts)."""
    if isinstance(dtype, np.dtype):
        return dtype
    name = dtype if isinstance(dtype, str) else str(dtype).rsplit(".", 1)[-1]
    if name == "complex32":
        return np.dtype(np.float16)
    for candidate in (dtype, name):
        try:
            return np.dtype(candidate)
        except TypeError:
            pass
    import ml_dtypes  # bfloat16, float8_e4m3fn, ...: NumPy knows them from ml_dtypes

    return np.dtype(getattr(ml_dtypes, name))


def _ml_dtype(dt: np.dtype) -> str:
    """``"f"`` for ml_dtypes' floats (bfloat16, float8_*), ``"i"`` for its integers
    (int4, ...), else ``""``: NumPy stores them as kind "V" and has no finfo of them."""
    if dt.kind != "V" or dt.names is not None or dt.type.__module__.partition(".")[0] != "ml_dtypes":
        return ""
    return "f" if "float" in dt.name else "i"


def _low_float(dt: np.dtype) -> bool:
    return _ml_dtype(dt) == "f"


def check_tolerance(value: float | None, name: str) -> float | None:
    if value is None:
        return None
    if not isinstance(value, numbers.Real):
        raise TypeError(f"assert_close: `{name}` must be a number >= 0, got {type(value).__name__} {value!r}")
    v = float(value)
    if not v >= 0:  # (NaN fails this too)
        raise ValueError(
            f"assert_close: `{name}` must be a number >= 0, got {value!r}: a negative or NaN "
            "tolerance would make every comparison fail, or pass unchecked"
        )
    return v


def _fmt_index(idx: tuple[int, ...]) -> str:
    return "()" if not idx else "(" + ", ".join(str(int(i)) for i in idx) + ("," if len(idx) == 1 else "") + ")"


def compare_values(
    got: np.ndarray,
    exp: np.ndarray,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = True,
    scale: float | None = None,
    header: str = "values differ",
) -> None:
    """Assert two NumPy arrays of one shape are close; the message says where not.

    `rtol` and `atol` default to :func:`default_tolerance` of ``got.dtype``; with
    `rtol` given and `atol` not, ``atol = rtol``. ``atol`` is multiplied by
    `scale`, by default the largest finite ``|exp|`` (at least 1). Integers
    compare exactly (as integers, never through float64) where both arrays hold
    integers and both tolerances are 0. A complex NaN equals only a complex NaN
    with its NaNs in the same parts and its other part close: ``nan+1j`` is not
    ``nan+5j`` (``numpy.isclose`` would call them equal).
    """
    r0, _ = default_tolerance(got.dtype)
    rtol = r0 if (rtol := check_tolerance(rtol, "rtol")) is None else rtol
    atol = rtol if (atol := check_tolerance(atol, "atol")) is None else atol
    # ml_dtypes' arrays as NumPy's own ufuncs take them: float32, int64 (values exact)
    got, exp = (x.astype({"f": np.float32, "i": np.int64}[k]) if (k := _ml_dtype(x.dtype)) else x
                for x in (got, exp))
    if got.dtype.kind in "biu" and exp.dtype.kind in "biu" and rtol == 0 and atol == 0:
        _compare_exact(got, exp, header)
        return
    if scale is None:
        finite = np.abs(exp[np.isfinite(exp)]) if exp.size else exp
        scale = float(np.max(finite)) if finite.size else 1.0
    bound = atol * max(scale, 1.0)
    with np.errstate(invalid="ignore", over="ignore"):
        ok = np.isclose(got, exp, rtol=rtol, atol=bound, equal_nan=equal_nan)
        # isclose calls inf == inf close, and so do we; it needs the values to be exact
        if got.dtype.kind == "c" or exp.dtype.kind == "c":
            ok &= _same_nan_parts(got, exp, rtol, bound)
    if bool(np.all(ok)):
        return
    bad = np.argwhere(~ok) if got.ndim else np.zeros((1, 0), dtype=np.intp)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(got.astype(np.complex128 if got.dtype.kind == "c" else np.float64) - exp)
    diff = np.where(ok, 0.0, np.nan_to_num(diff, nan=np.inf))
    worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), got.shape)) if got.ndim else ()
    g, e = got[worst].item(), exp[worst].item()
    lines = [
        f"{header} at {len(bad)} of {max(got.size, 1)} position(s) "
        f"(rtol={rtol:.3g}, atol={atol:.3g} x {max(scale, 1.0):.3g} = {bound:.3g})",
        f"  worst at index {_fmt_index(worst)}: actual {g!r}, expected {e!r}, |difference| {diff[worst]:.3g}",
    ]
    if len(bad) > 1:
        shown = ", ".join(_fmt_index(tuple(b)) for b in bad[:5])
        lines.append(f"  first differing indices: {shown}{', ...' if len(bad) > 5 else ''}")
    raise AssertionError("\n".join(lines))


def _same_nan_parts(got: np.ndarray, exp: np.ndarray, rtol: float, bound: float) -> np.ndarray:
    """Where either complex value holds a NaN: its NaNs in the same parts, its other
    parts close (isclose calls every complex NaN equal: nan+1j and nan+5j)."""
    gr, gi, er, ei = np.real(got), np.imag(got), np.real(exp), np.imag(exp)
    nan = np.isnan(gr) | np.isnan(gi) | np.isnan(er) | np.isnan(ei)
    same = (np.isnan(gr) == np.isnan(er)) & (np.isnan(gi) == np.isnan(ei))
    parts = np.isclose(gr, er, rtol=rtol, atol=bound, equal_nan=True) & np.isclose(
        gi, ei, rtol=rtol, atol=bound, equal_nan=True)
    return np.asarray(~nan | (same & parts))


def _compare_exact(got: np.ndarray, exp: np.ndarray, header: str) -> None:
    """Integers (and booleans) equal as integers: int64 ``2**62 + 1`` is not ``2**62``
    (through float64 they were), uint64 and int64 compared by value."""
    g, e = np.broadcast_arrays(got.astype(object), exp.astype(object))
    ok = np.asarray(g == e, dtype=bool) if g.size else np.ones(g.shape, bool)
    if bool(np.all(ok)):
        return
    bad = np.argwhere(~ok) if g.ndim else np.zeros((1, 0), dtype=np.intp)
    first = tuple(int(i) for i in bad[0])
    lines = [
        f"{header} at {len(bad)} of {max(g.size, 1)} position(s) (rtol=0, atol=0: integers compare exactly)",
        f"  first at index {_fmt_index(first)}: actual {g[first]!r}, expected {e[first]!r}, "
        f"|difference| {abs(int(g[first]) - int(e[first]))}",
    ]
    if len(bad) > 1:
        shown = ", ".join(_fmt_index(tuple(b)) for b in bad[:5])
        lines.append(f"  first differing indices: {shown}{', ...' if len(bad) > 5 else ''}")
    raise AssertionError("\n".join(lines))
