"""matmul: the matrix product with the standard's broadcasting rules.

NumPy's own ``matmul`` (and each library's, through :data:`FAST_OPS`) answers
operands of one dtype directly; the checked path names what is wrong (0-d
operands, contracted sizes that differ, bool, two libraries or devices) and
promotes mixed dtypes by NumPy's table on every backend.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _dispatch, _validate
from ._dispatch import adapter2 as _adapter2
from ._lib._declare import NA, BadInput, Raises, declare
from ._lib._typing import Array, Namespace
from ._matrix import common_dtype

__all__ = ["matmul"]

_NP = np.ndarray
_np_matmul = np.matmul
_NP_MATMUL_OK = frozenset(np.dtype(c) for c in "efdgFDGbBhHiIlLqQ")
_FAST_MATMUL = _dispatch.FAST_OPS["matmul"]


@declare(
    "linalg", args={"a": "operand", "b": "operand"}, reference=np.matmul, dtypes="promote",
    how="the standard's `matmul`",
    backends={
        "torch": ("`torch.matmul` directly for one dtype; mixed dtypes promoted first",
                  "torch refuses mixed dtypes; xlinalg promotes them as NumPy does"),
        "jax": "`jnp.matmul` directly for one dtype",
        "numpy": "`np.matmul`",
    },
    bad_input={
        "non-square": NA("any M×K @ K×N is valid"),
        "mismatched": BadInput(
            Raises(ValueError, r"matmul: `a` has 3 columns but `b` has 2 rows",
                   "matmul: `a` has 3 columns but `b` has 2 rows (shapes (3, 3) and (2, 1))"),
            args=(np.ones((3, 3)), np.ones((2, 1)))),
        "bool": Raises(TypeError, r"matmul: operands must be numeric, got `a` .*bool",
                       "matmul: operands must be numeric, got `a` … bool and `b` … bool"),
        "0-d": Raises(ValueError, r"matmul: operands must have at least one dimension, got `a`",
                      "matmul: operands must have at least one dimension, got `a` … shape () …"),
    },
)
def matmul(a: Array, b: Array, /, *, xp: Namespace | None = None) -> Array:
    """Matrix product with the standard's broadcasting rules.

    Parameters
    ----------
    a, b : array
        At least one dimension each; 1-D operands are promoted as in
        :func:`numpy.matmul` and the promoted axis is removed from the result.
    xp : namespace, optional
        The array namespace; inferred by default.

    Returns
    -------
    array
        ``a @ b`` in the inputs' library and device, with the standard's type
        promotion (float32 × float64 gives float64 on every backend, PyTorch
        included). Integer matrices give integer products.

    Raises
    ------
    ValueError
        If an operand is 0-D, or the contracted dimensions differ (known sizes:
        Dask's unknown, NaN, sizes are checked by Dask when blocks meet).
    TypeError
        For bool or non-numeric dtypes, or operands from two libraries.

    Examples
    --------
    >>> import xlinalg as xl
    >>> xl.to(xl.matmul(xp.eye(2), xp.asarray([1.0, 2.0])), "numpy")
    array([1., 2.])
    """
    if xp is None:
        t = type(a)
        if t is _NP:
            if type(b) is _NP and (dt := a.dtype) is b.dtype and dt in _NP_MATMUL_OK:
                try:
                    return _np_matmul(a, b)
                except ValueError:
                    pass  # diagnosed by the checked path below
        elif t is type(b) and (k := _FAST_MATMUL.get(t)) is not None and (
            k[2]  # the kernel refuses mixed dtypes itself (torch): no dtype read
            # (else each dtype read once: each shows against a small torch matmul)
            or (((dt := a.dtype) is (db := b.dtype) or dt == db) and dt not in k[1])
        ):
            try:
                r = k[0](a, b)
            except Exception:  # noqa: S110 -- any refusal is re-raised by the checked path below
                pass
            else:
                # torch skips its dtype check when a broadcast batch is empty (the
                # result then takes one operand's dtype): empty results take the
                # checked path, which promotes by the contract
                if not k[2] or r.numel():
                    return r
    return _matmul_checked(a, b, xp)


def _matmul_checked(a: Any, b: Any, xp: Any) -> Any:
    ad, a, b = _adapter2(a, b, "a", "b", xp)
    try:  # a sparse or nested tensor, or a dtype without a kernel: named (native_error)
        sa, sb = a.shape, b.shape
        if not sa or not sb:
            raise ValueError(
                f"matmul: operands must have at least one dimension, got `a` {ad.describe(a)} "
                f"and `b` {ad.describe(b)}"
            )
        ka = sa[-1]
        kb = sb[0] if len(sb) == 1 else sb[-2]
        if _validate.sizes_differ(ka, kb):
            raise ValueError(
                f"matmul: `a` has {ka} columns but `b` has {kb} rows "
                f"(shapes {tuple(sa)} and {tuple(sb)})"
            )
        da, db = ad.kind(a.dtype), ad.kind(b.dtype)
        if "b" in (da, db) or "?" in (da, db):
            raise TypeError(
                f"matmul: operands must be numeric, got `a` {ad.describe(a)} and `b` {ad.describe(b)}"
            )
        ad.check_same_device(a, b, "a", "b")
        if len(sa) > 2 and len(sb) > 2:
            _validate.batches("matmul", sa, sb)
        a, b = common_dtype(ad, a, b)
        return ad.matmul(a, b)
    except Exception as e:
        _validate.reraise(ad, "matmul", e, ("a", a), ("b", b))

