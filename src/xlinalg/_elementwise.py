"""Public elementwise functions with the standard's broadcasting and one dtype rule.

Rule (the same on every backend):

* array ⊕ array: the standard's type promotion (float32 with float64 gives
  float64, PyTorch included); shapes broadcast, else ValueError naming both.
  Mixed kinds, which the standard leaves undefined, follow NumPy's table on
  every backend: ``int64 + float32 -> float64``, ``int8 + float32 -> float32``
  (PyTorch and JAX give float32, array-api-strict raises); int64/uint64 results
  are int32/uint32 where JAX runs in its 32-bit mode.
* bool ⊕ bool: ``add`` is logical or, ``multiply`` logical and (as NumPy,
  PyTorch and JAX), ``subtract`` raises TypeError.
* Python scalars are *weak*: ``add(x_float32, 2.0)`` stays float32. A float
  scalar with an integer or bool array gives float64 (float32 where the device
  has no float64), as NumPy does; PyTorch and JAX would give float32. A Python
  int out of an integer array's range raises OverflowError (PyTorch and JAX
  would wrap around). Of two Python scalars, the wider kind (complex, float,
  int, bool) is the array, whichever side it is on; two ints are computed
  exactly, giving an int64 array (int32 in JAX's 32-bit mode) or OverflowError
  beyond it, in either order. An int beside a float array is the float it
  stands for. Complex add/subtract keep NumPy's values with inf and NaN on
  every backend (torch's kernel alone gives ``[1j] + inf == inf+nanj``).
* NumPy scalars (``np.float64(2.0)``) next to a non-NumPy array behave like
  Python scalars (next to a NumPy array, NumPy's own rule applies); alone, with
  ``xp=``, a 0-d array of that library and the scalar's dtype.
* ``divide``, ``exp`` and ``sigmoid`` of integer or bool input compute in float64
  (float32 where the device has no float64), on every backend; they emit no
  floating-point warnings (Dask included, when computed).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from . import _dispatch, _validate
from ._lib._declare import Raises, declare
from ._lib._typing import Array, Namespace
from .backends._base import Adapter
from .backends._numpy_adapter import NUMPY, int_text

__all__ = ["add", "divide", "exp", "multiply", "sigmoid", "subtract"]

_NP = np.ndarray
_FAST_SIGMOID = _dispatch.FAST_SIGMOID
_PY_SCALARS = (bool, int, float, complex)
_F = TypeVar("_F", bound=Callable[..., Any])


_F64, _F32 = np.dtype(np.float64), np.dtype(np.float32)
#: NumPy's native kernels (its adapter's ``fast``: SciPy's expit joins on the first sigmoid)
_NP_FAST = NUMPY.fast


def _float_default(ad: Adapter, x: Any) -> Any:
    return ad.float_dtypes(x)[1]


def _binary(name: str, x1: Any, x2: Any, xp: Any, to_float: bool = False) -> Any:
    ad = _dispatch.adapter_for((x1, x2), ("x1", "x2"), xp)
    try:  # a sparse or nested tensor, or a dtype without a kernel: named (native_error)
        # NumPy scalars next to another library's array are weak Python scalars; with
        # no array beside them (xp= names the library), 0-d arrays of their dtypes
        if not ad.numpy_arrays and (isinstance(x1, np.generic) or isinstance(x2, np.generic)):
            x1, x2 = _numpy_scalars(ad, x1, x2)
        s1, s2 = isinstance(x1, _PY_SCALARS), isinstance(x2, _PY_SCALARS)
        if s1 and s2:
            if (r := _exact_ints(ad, name, x1, x2)) is not None:
                return r
            x1, x2, s1, s2 = _two_scalars(ad, name, x1, x2)
        if not s1 and not hasattr(x1, "dtype"):
            x1 = _dispatch.host_array(ad, x1, None if s2 or not hasattr(x2, "dtype") else x2, "x1")
        if not s2 and not hasattr(x2, "dtype"):
            x2 = _dispatch.host_array(ad, x2, x1 if not s1 else None, "x2")
        if s1 or s2:
            arr, scal = (x2, x1) if s1 else (x1, x2)
            na = "x2" if s1 else "x1"
            k = ad.kind(arr.dtype)
            if k == "h" and isinstance(scal, complex):  # torch: float16 + 1j is complex32,
                arr = ad.astype(arr, ad.xp.complex64)  # NumPy and JAX give complex64
                k = "c"
            elif k in "ib" and (to_float or isinstance(scal, (float, complex))):
                arr = ad.astype(arr, _float_default(ad, arr))
                k = "f"
            elif k == "b":
                if isinstance(scal, bool):
                    return _bool_op(ad, name, arr, ad.asarray(scal, arr, "x1" if s1 else "x2"))
                # a bool array with a Python int: NumPy's int64 (JAX's default mode: int32)
                arr = ad.astype(arr, ad.xp.int64 if ad.has_int64(arr) else ad.xp.int32)
                k = "i"
            elif k == "?":
                raise TypeError(f"{name}: `{na}` must be numeric, got {ad.describe(arr)}")
            if isinstance(scal, bool):
                # a bool beside a numeric array is the number it stands for (NumPy's
                # ``True - x``); array-api-compat made it a bool tensor, which torch's
                # subtract refuses
                scal = int(scal)
            if k == "i" and type(scal) is int:
                info = ad.xp.iinfo(arr.dtype)
                if not info.min <= scal <= info.max:
                    raise OverflowError(
                        f"{name}: the Python int `{'x1' if s1 else 'x2'}` = {int_text(scal)} is out of the "
                        f"range of `{na}`'s dtype {ad.dtype_name(arr.dtype)} [{info.min}, {info.max}]"
                    )
            elif type(scal) is int and k in "fch":
                # the float it stands for, as NumPy converts it (inf past the dtype's
                # range): torch and JAX parse a Python int as int64 (int32 in JAX's
                # 32-bit mode) first, and refuse or wrap one beyond it
                if not _fits_a_float(scal):
                    raise OverflowError(
                        f"{name}: the Python int `{'x1' if s1 else 'x2'}` = {int_text(scal)} "
                        f"is beyond the range of every float dtype, `{na}`'s "
                        f"{ad.dtype_name(arr.dtype)} included; pass a float (inf) if that is what you mean"
                    )
                scal = float(scal)
            x1, x2 = (scal, arr) if s1 else (arr, scal)
        else:
            ad.check_same_device(x1, x2, "x1", "x2")
            try:
                np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
            except ValueError:
                raise ValueError(
                    f"{name}: the shapes of `x1` {tuple(x1.shape)} and `x2` {tuple(x2.shape)} "
                    "do not broadcast"
                ) from None
            except TypeError:  # unknown (NaN) Dask dimensions: the library checks later,
                _unknown_beside_known(ad, name, x1, x2)  # except against a known size
            k1, k2 = ad.kind(x1.dtype), ad.kind(x2.dtype)
            if "?" in (k1, k2):
                bad, nb = (x1, "x1") if k1 == "?" else (x2, "x2")
                raise TypeError(f"{name}: `{nb}` must be numeric, got {ad.describe(bad)}")
            if to_float and k1 in "ib" and k2 in "ib":
                x1 = ad.astype(x1, _float_default(ad, x1))
            elif k1 == k2 == "b":
                return _bool_op(ad, name, x1, x2)
            if x1.dtype != x2.dtype:
                dt = _validate.mixed_dtype(ad, x1, x2)
                if dt is not None:
                    x1, x2 = ad.astype(x1, dt), ad.astype(x2, dt)
        if name == "divide" and ad.deferred_blocks is not None:  # runs outside the caller's np.errstate
            return ad.deferred_blocks(_quiet_divide, x1, x2)
        fn = ad.binary(name)
        if s1 or s2:
            try:
                return fn(x1, x2)
            except (TypeError, AttributeError):
                # a namespace without Python scalar arguments (the standard before 2024.12,
                # e.g. array-api-strict's api_version flag): the scalar as a weak array
                if s1:
                    x1 = _scalar_array(ad, x1, x2)
                else:
                    x2 = _scalar_array(ad, x2, x1)
        return fn(x1, x2)
    except Exception as e:
        _validate.reraise(ad, name, e, ("x1", x1), ("x2", x2))


_INT64, _INT32 = np.iinfo(np.int64), np.iinfo(np.int32)
_EXACT: dict[str, Callable[[int, int], int]] = {
    "add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
}


def _two_scalars(ad: Adapter, name: str, x1: Any, x2: Any) -> tuple[Any, Any, bool, bool]:
    """Two Python scalars: the one of the wider kind (complex > float > int > bool;
    `x1` on a tie) becomes an array, the other stays a weak scalar beside it, so the
    answer does not depend on the order (``add(2**70, 1.5) == add(1.5, 2**70)``).

    Two integers are :func:`_exact_ints`' (divide's: the floats they stand for)."""
    r1, r2 = _scalar_rank(x1), _scalar_rank(x2)
    if r2 > r1:
        return x1, _dispatch.host_array(ad, x2, None, "x2"), True, False
    return _dispatch.host_array(ad, x1, None, "x1"), x2, False, True


def _exact_ints(ad: Adapter, name: str, x1: Any, x2: Any) -> Any:
    """Two Python integers (one may be a bool) added, subtracted or multiplied
    exactly, as a 0-d array of the library's integer; None for other operands.

    The library's own arithmetic on the two as arrays would wrap around (int64,
    or int32 in JAX's 32-bit mode, where ``add(2**31 - 1, 1)`` was ``-2**31``): a
    result out of that range raises OverflowError instead, whichever the order."""
    if max(_scalar_rank(x1), _scalar_rank(x2)) > 1:
        return None
    for x, nx in ((x1, "x1"), (x2, "x2")):
        if isinstance(x, int) and not _INT64.min <= x <= _INT64.max:
            raise OverflowError(
                f"{name}: `x1` and `x2` are both Python integers, which compute in int64, "
                f"and `{nx}` = {int_text(x)} is beyond its range [{_INT64.min}, {_INT64.max}]; "
                "pass an array of the dtype you mean (uint64), or a float"
            )
    op = _EXACT.get(name)
    if op is None or (type(x1) is bool and type(x2) is bool):
        return None
    r = op(int(x1), int(x2))
    wide = ad.has_int64(None)
    info = _INT64 if wide else _INT32
    if not info.min <= r <= info.max:
        mode = "" if wide else " (JAX's default 32-bit mode has no int64; jax_enable_x64 enables it)"
        raise OverflowError(
            f"{name}: `x1` = {int_text(x1)} and `x2` = {int_text(x2)} are Python integers, which "
            f"compute in {'int64' if wide else 'int32'}{mode}, and the result {int_text(r)} is "
            f"beyond its range [{info.min}, {info.max}]; pass a float, or an array of the dtype "
            "you mean"
        )
    return _dispatch.host_array(ad, r, None, "x1")


def _unknown_beside_known(ad: Adapter, name: str, x1: Any, x2: Any) -> None:
    """An unknown (NaN) size broadcast against a known one other than 1 (Dask refuses
    it with "could not be broadcast together with shapes (nan, 6) (12, 6)"): the
    error names the operand and ``compute_chunk_sizes()``."""
    s1, s2 = tuple(x1.shape), tuple(x2.shape)
    n = min(len(s1), len(s2))
    for i in range(1, n + 1):
        a, b = s1[-i], s2[-i]
        if (a != a) is not (b != b):
            unknown, known = (("x1", x1), b) if a != a else (("x2", x2), a)
            if known != 1:
                _validate.unknown_sizes(ad, name, (unknown[0], unknown[1], (-i,)))


def _scalar_rank(x: Any) -> int:
    """complex 3, float 2, int 1, bool 0 (subclasses such as ``np.float64`` included)."""
    if isinstance(x, complex):
        return 3
    if isinstance(x, float):
        return 2
    return 0 if isinstance(x, bool) else 1


def _fits_a_float(n: int) -> bool:
    """Whether the Python int `n` converts to a Python float (float64) at all."""
    try:
        float(n)
    except OverflowError:
        return False
    return True


def _numpy_scalars(ad: Adapter, x1: Any, x2: Any) -> tuple[Any, Any]:
    """NumPy scalars for another library's function: weak Python scalars beside an
    array; otherwise 0-d arrays of their own dtypes (``add(np.uint8(255),
    np.uint8(1), xp=torch)`` stays uint8, as NumPy computes it)."""
    def is_array(x: Any) -> bool:
        return hasattr(x, "shape") and not isinstance(x, np.generic)

    out = []
    for x, other, name in ((x1, x2, "x1"), (x2, x1, "x2")):
        if isinstance(x, np.generic):
            x = x.item() if is_array(other) else ad.asarray(np.asarray(x), None, name)
        out.append(x)
    return out[0], out[1]


def _scalar_array(ad: Adapter, scal: Any, arr: Any) -> Any:
    """A Python scalar as an array of `arr`'s dtype (complex for a complex scalar)."""
    dt = arr.dtype
    if isinstance(scal, complex) and ad.kind(dt) != "c":
        dt = ad.xp.complex64 if dt == ad.xp.float32 else ad.xp.complex128
    return ad.xp.asarray(scal, dtype=dt, device=ad.device(arr))


def _quiet_divide(x1: Any, x2: Any) -> Any:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        return np.divide(x1, x2)


def _quiet_exp(x: Any) -> Any:
    with np.errstate(over="ignore", under="ignore"):
        return np.exp(x)


def _bool_op(ad: Adapter, name: str, x1: Any, x2: Any) -> Any:
    """bool ⊕ bool as NumPy, PyTorch and JAX do it (array-api-strict refuses)."""
    if name == "add":
        return ad.xp.logical_or(x1, x2)
    if name == "multiply":
        return ad.xp.logical_and(x1, x2)
    raise TypeError(
        f"{name}: `x1` and `x2` are both bool, for which {name} is not defined; "
        "use logical_xor, or cast to an integer dtype first"
    )


def _unary_float(name: str, x: Any, xp: Any) -> tuple[Adapter, Any]:
    if xp is None and type(x) is _NP:
        ad: Adapter = NUMPY
    else:
        ad = _dispatch.adapter_for((x,), ("x",), xp)
        try:
            x = _dispatch.as_arrays(ad, (x,), ("x",))[0]
        except Exception as e:  # a nested tensor has no shape to read: named (native_error)
            _validate.reraise(ad, name, e, ("x", x))
    k = ad.kind(x.dtype)
    if k in "ib":
        x = ad.astype(x, _float_default(ad, x))
    elif k == "?":
        raise TypeError(f"{name}: `x` must be numeric, got {ad.describe(x)}")
    return ad, x


def _binary_op(name: str) -> Callable[[_F], _F]:
    """The public function ``name`` from its documented stub: fast paths, then :func:`_binary`.

    One body for add, subtract and multiply. Each gets its own closure, so the
    fast path reads its kernel table and NumPy ufunc as cells: a shared helper
    called from three thin functions would cost a call (measurable against a small
    np.add: docs/performance.md).
    """
    np_fn = getattr(np, name)
    table = _dispatch.FAST_OPS[name]

    def decorate(stub: _F) -> _F:
        @functools.wraps(stub)
        def op(x1: Any, x2: Any, /, *, xp: Any = None) -> Any:
            if xp is None:
                t = type(x1)
                if t is _NP:
                    if type(x2) is _NP:
                        try:
                            return np_fn(x1, x2)
                        except (ValueError, TypeError):
                            pass  # shapes or dtypes refused: the checked path names the argument
                elif (
                    t is type(x2)
                    and (k := table.get(t)) is not None
                    and ((d1 := x1.dtype) is (d2 := x2.dtype) or d1 == d2)
                    and d1 not in k[1]
                ):
                    try:
                        return k[0](x1, x2)
                    except Exception:  # noqa: S110 -- the checked path below re-raises, naming the argument
                        pass
            return _binary(name, x1, x2, xp)

        return op  # type: ignore[return-value]

    return decorate


_BINARY_HOW = "the standard's `{op}` after NumPy's promotion table (the checked path)"


def _binary_cells(op: str) -> dict[str, str]:
    """The capability cells of add, subtract and multiply: a native kernel for one dtype."""
    native = (f"the library's own `{op}` directly for two arrays of one dtype; else the standard's "
              f"`{op}` after NumPy's promotion table")
    return {"torch": native, "jax": native,
            "numpy": f"the ufunc `np.{op}` directly for two arrays of one dtype; else NumPy's promotion"}


@declare("elementwise", args={"x1": "any", "x2": "any"}, reference=np.add, dtypes="promote",
         how=_BINARY_HOW.format(op="add"), backends=_binary_cells("add"))
@_binary_op("add")
def add(x1: Array, x2: Array, /, *, xp: Namespace | None = None) -> Array:
    """Elementwise ``x1 + x2`` with broadcasting.

    Parameters
    ----------
    x1, x2 : array or scalar
        Operands; at least one is an array (or a list). Shapes broadcast.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array
        In the operands' library and device, dtype per the module's rule.

    Raises
    ------
    TypeError
        For operands of two libraries, or non-numeric dtypes.
    ValueError
        If the shapes do not broadcast (on every backend, naming `x1` and `x2`).

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.to(xl.add(xp.ones((2, 1)), xp.arange(3.0)), "numpy")
    array([[1., 2., 3.],
           [1., 2., 3.]])
    """


@declare(
    "elementwise", args={"x1": "any", "x2": "any"}, reference=np.subtract, dtypes="promote",
    how=_BINARY_HOW.format(op="subtract"), backends=_binary_cells("subtract"),
    bad_input={"bool": Raises(TypeError, r"subtract: `x1` and `x2` are both bool",
                              "subtract: `x1` and `x2` are both bool, for which subtract is not defined; "
                              "use logical_xor …")},
)
@_binary_op("subtract")
def subtract(x1: Array, x2: Array, /, *, xp: Namespace | None = None) -> Array:
    """Elementwise ``x1 - x2`` with broadcasting (see :func:`add`).

    Parameters
    ----------
    x1, x2 : array or scalar
        Operands; shapes broadcast.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array
        The difference.

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.to(xl.subtract(xp.asarray([3.0]), 1.0), "numpy")
    array([2.])
    """


@declare("elementwise", args={"x1": "any", "x2": "any"}, reference=np.multiply, dtypes="promote",
         how=_BINARY_HOW.format(op="multiply"), backends=_binary_cells("multiply"))
@_binary_op("multiply")
def multiply(x1: Array, x2: Array, /, *, xp: Namespace | None = None) -> Array:
    """Elementwise ``x1 * x2`` with broadcasting (see :func:`add`).

    Parameters
    ----------
    x1, x2 : array or scalar
        Operands; shapes broadcast.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array
        The product.

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.to(xl.multiply(xp.asarray([1.0, 2.0]), 3.0), "numpy")
    array([3., 6.])
    """


@declare(
    "elementwise", args={"x1": "any", "x2": "any"}, reference=np.divide, dtypes="float", silent=True,
    how="the standard's `divide` after NumPy's promotion table; integers in the default float dtype",
    backends={
        "numpy": "`np.divide` under `np.errstate` (division by zero and invalid ignored): IEEE inf/NaN, no warning",
        "dask": ("`np.divide` on each block (`elemwise`), warnings off", "lazy"),
        "array-api-strict": "the standard's `divide` under `np.errstate` (NumPy inside), no warning",
    },
)
def divide(x1: Array, x2: Array, /, *, xp: Namespace | None = None) -> Array:
    """Elementwise true division ``x1 / x2`` with broadcasting.

    Integer and bool operands are divided in float64 (float32 where the device
    has no float64) on every backend. Division by zero follows IEEE 754
    (inf or NaN), without warnings.

    Parameters
    ----------
    x1, x2 : array or scalar
        Operands; shapes broadcast.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array
        The quotient.

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.to(xl.divide(xp.asarray([1, 2]), xp.asarray([2, 2])), "numpy")
    array([0.5, 1. ])
    """
    if xp is None and type(x1) is _NP and type(x2) is _NP and x1.dtype.kind in "fc" and x2.dtype.kind in "fc":
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            try:
                return np.divide(x1, x2)
            except ValueError:
                pass  # shapes refused: the checked path names the argument
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        return _binary("divide", x1, x2, xp, to_float=True)


@declare(
    "elementwise", args={"x": "any"}, reference=np.exp, dtypes="float", silent=True,
    how="the standard's `exp`; integers and bools in the default float dtype",
    backends={
        "numpy": "`np.exp` under `np.errstate` (overflow ignored): IEEE inf, no warning",
        "dask": ("`np.exp` on each block (`map_blocks`), warnings off", "lazy"),
        "array-api-strict": "the standard's `exp` under `np.errstate` (NumPy inside), no warning",
    },
)
def exp(x: Array, /, *, xp: Namespace | None = None) -> Array:
    """Elementwise exponential; integer and bool input computes in float64.

    Parameters
    ----------
    x : array
        Input.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array
        ``e ** x``; overflow gives inf without a warning.

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.to(xl.exp(xp.asarray([0.0])), "numpy")
    array([1.])
    """
    ad, x = _unary_float("exp", x, xp)
    if ad.deferred_blocks is not None:  # runs later, outside this np.errstate: each block quiet
        return ad.deferred_blocks(_quiet_exp, x)
    with np.errstate(over="ignore", under="ignore"):
        try:
            return ad.xp.exp(x)
        except Exception as e:
            _validate.reraise(ad, "exp", e, ("x", x))


def _sigmoid_reference(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


@declare(
    "elementwise", args={"x": "any"}, reference=_sigmoid_reference, dtypes="float", silent=True,
    how="the two-branch formula on `exp(-|x|)` from the standard's operations (never overflows)",
    backends={
        "torch": "`torch.sigmoid`",
        "jax": ("`jax.nn.sigmoid`", "complex input: JAX is more careful for large negative real parts"),
        "numpy": "`scipy.special.expit` for float32 and float64 when SciPy is installed; "
                 "else the two-branch formula",
        "cupy": "`cupyx.scipy.special.expit` for real floats; else the two-branch formula",
        "dask": ("NumPy's sigmoid on each block (`map_blocks`)", "lazy"),
    },
)
def sigmoid(x: Array, /, *, xp: Namespace | None = None) -> Array:
    """The logistic function ``1 / (1 + exp(-x))``, numerically stable.

    Uses the library's native kernel where one exists (``torch.sigmoid``,
    ``jax.nn.sigmoid``, SciPy's and CuPy's ``expit``), else a two-branch formula
    from standard operations that never overflows. No warnings for any input;
    results lie in ``[0, 1]`` and are monotone in `x`.

    Parameters
    ----------
    x : array
        Input; integer and bool input computes in float64.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array
        Same shape and floating dtype as `x`.

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.to(xl.sigmoid(xp.asarray([0.0, 1000.0, -1000.0])), "numpy")
    array([0.5, 1. , 0. ])
    """
    if xp is None:
        t = type(x)  # (read once: every read shows against a small torch.sigmoid)
        if t is _NP:  # NumPy: SciPy's ufunc at once
            if (dt := x.dtype) is _F64 or dt is _F32:
                try:
                    return _NP_FAST["sigmoid"](x)
                except KeyError:  # SciPy's expit not looked for yet (or not installed)
                    pass
        elif (k := _FAST_SIGMOID.get(t)) is not None and x.dtype in k[1]:
            try:
                return k[0](x)
            except Exception:  # noqa: S110 -- the checked path below re-raises, naming `x`
                pass
    ad, x = _unary_float("sigmoid", x, xp)
    try:
        with np.errstate(all="ignore"):  # complex on a NumPy-backed library (array-api-strict): quiet
            out = ad.sigmoid(x)
    except Exception as e:
        _validate.reraise(ad, "sigmoid", e, ("x", x))
    return out
