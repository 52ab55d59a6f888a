"""The standard-only adapter's result check (``Adapter._check_nonfinite`` and its
``_bad_members``), run on the CPU (issue 34, point 21).

Only CuPy reaches this path in the library (cuSOLVER returns inf/NaN for a singular
matrix instead of raising), so no CPU backend would catch a bug in it. Here an
adapter over NumPy is forced onto it: its native solve returns inf/NaN for a
singular member, as cuSOLVER's does, and the result check must then give what
the NumPy backend gives for the same batch, member by member.
"""

from __future__ import annotations

import numpy as np
import pytest

import xlinalg as xl
from xlinalg.backends._adapter import Adapter

INF, NAN = np.inf, np.nan


class _ResultCheckedAdapter(Adapter):
    """The CuPy adapter's solve over NumPy: no exception for a singular member, its
    solution is whatever the elimination gives (inf/NaN), then the result check."""

    def __init__(self) -> None:
        import array_api_compat.numpy as xc

        super().__init__(xc)

    def solve(self, a, b, vector, errors):
        bm = b[..., None] if vector else b
        batch = np.broadcast_shapes(a.shape[:-2], bm.shape[:-2])
        a_b = np.broadcast_to(a, (*batch, *a.shape[-2:]))
        b_b = np.broadcast_to(bm, (*batch, *bm.shape[-2:]))
        x = np.empty(np.broadcast_shapes(a_b.shape[:-1] + (1,), b_b.shape), dtype=a.dtype)
        with np.errstate(all="ignore"):
            for i in np.ndindex(*batch):
                try:
                    x[i] = np.linalg.solve(a_b[i], b_b[i])
                except np.linalg.LinAlgError:  # what cuSOLVER hands back instead
                    x[i] = NAN
            x = self._check_nonfinite(a_b, b_b, x, errors, tuple(a.shape[:-2]))
        return x[..., 0] if vector else x


# member: (a, b) of a batch of 2x2 systems
MEMBERS = {
    "regular": ([[2.0, 1.0], [1.0, 3.0]], [1.0, 2.0]),
    "singular": ([[1.0, 2.0], [2.0, 4.0]], [1.0, 1.0]),
    "inf in b": ([[1.0, 2.0], [3.0, 4.0]], [INF, 1.0]),
    "nan in b": ([[2.0, 0.0], [0.0, 1.0]], [NAN, 1.0]),
    "inf in b, singular a": ([[1.0, 2.0], [2.0, 4.0]], [INF, 1.0]),
    "nan in a": ([[NAN, 1.0], [1.0, 1.0]], [1.0, 1.0]),
    "zero": ([[0.0, 0.0], [0.0, 0.0]], [0.0, 0.0]),
}


def _batch(names):
    a = np.array([MEMBERS[n][0] for n in names])
    b = np.array([MEMBERS[n][1] for n in names])
    return a, b


@pytest.mark.parametrize("k", [1, 2], ids=["one column", "two columns"])
def test_result_check_agrees_with_the_numpy_backend_member_by_member(k) -> None:
    names = list(MEMBERS)
    a, b = _batch(names)
    bb = np.repeat(b[..., None], k, axis=-1)
    with np.errstate(all="ignore"):
        want = np.asarray(xl.solve(a, bb, errors="nan"))
        got = _ResultCheckedAdapter().solve(a, bb, False, "nan")
    for i, name in enumerate(names):
        np.testing.assert_array_equal(got[i], want[i], err_msg=name)
    # what the rule means: finite input that is singular gives all NaN; non-finite b
    # keeps the library's own non-finite solution (not replaced by NaN: not singular)
    assert np.isnan(got[names.index("singular")]).all()
    assert np.isnan(got[names.index("zero")]).all()
    inf_b = got[names.index("inf in b")]
    assert np.isinf(inf_b).any(), inf_b  # the library's inf, kept
    assert np.isfinite(got[names.index("regular")]).all()


def test_bad_members_reads_a_b_and_x() -> None:
    """The mask itself: a member is reported only when x is not finite while a AND b
    are finite (a bug that ignores b, or a, or x, changes one of these rows)."""
    ad = _ResultCheckedAdapter()
    a_ok, a_bad = np.eye(2), np.array([[NAN, 0.0], [0.0, 1.0]])
    b_ok, b_bad = np.ones((2, 1)), np.array([[INF], [1.0]])
    x_ok, x_bad = np.ones((2, 1)), np.array([[NAN], [1.0]])
    cases = [  # (a, b, x, reported)
        (a_ok, b_ok, x_ok, False),
        (a_ok, b_ok, x_bad, True),
        (a_ok, b_bad, x_bad, False),
        (a_bad, b_ok, x_bad, False),
        (a_bad, b_bad, x_bad, False),
        (a_ok, b_bad, x_ok, False),
    ]
    a = np.stack([c[0] for c in cases])
    b = np.stack([c[1] for c in cases])
    x = np.stack([c[2] for c in cases])
    assert ad._bad_members(a, b, x).tolist() == [c[3] for c in cases]


def test_result_check_raises_for_the_singular_members_only() -> None:
    names = ["regular", "inf in b", "singular", "nan in b", "zero"]
    a, b = _batch(names)
    with np.errstate(all="ignore"), pytest.raises(xl.LinAlgError) as info:
        _ResultCheckedAdapter().solve(a, b[..., None], False, "raise")
    with np.errstate(all="ignore"), pytest.raises(xl.LinAlgError) as native:
        xl.solve(a, b[..., None])
    assert info.value.members == native.value.members == (2, 4)
