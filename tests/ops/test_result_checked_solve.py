"""The standard-only adapter's solve (``Adapter.solve``: the singular rule's verdict,
the native solve with explicitly broadcast operands, then ``Adapter.finish``), run
on the CPU (issue 34, point 21).

CuPy takes this path in the library (``solve_broadcasts``: cuSOLVER neither
broadcasts batches nor reads ``(B, M)`` the standard's way), so no CPU backend
would reach its broadcasting branch. Here an adapter over NumPy is forced onto it,
and it must give what the NumPy backend gives for the same batch, member by
member: NaN for singular members and for every member with NaN or inf in `a` or
`b` (rule 2 of docs/semantics.md), the library's solution for the others.
"""

from __future__ import annotations

import numpy as np
import pytest

import xlinalg as xl
from xlinalg.backends._adapter import Adapter, nan_members, singular_members

INF, NAN = np.inf, np.nan


class _BroadcastingAdapter(Adapter):
    """The CuPy adapter's solve over NumPy (``solve_broadcasts``)."""

    def __init__(self) -> None:
        import array_api_compat.numpy as xc

        super().__init__(xc)
        self.solve_broadcasts = True
        self.native_shapes: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
        outer = self

        class _Linalg:
            @staticmethod
            def solve(a, b):
                outer.native_shapes.append((a.shape, b.shape))
                return xc.linalg.solve(a, b)

        class _NS:
            def __getattr__(self, name):
                return _Linalg if name == "linalg" else getattr(xc, name)

        self.xp = _NS()


# member: (a, b) of a batch of 2x2 systems
MEMBERS = {
    "regular": ([[2.0, 1.0], [1.0, 3.0]], [1.0, 2.0]),
    "singular": ([[1.0, 2.0], [2.0, 4.0]], [1.0, 1.0]),
    "near singular": ([[1.0, 1.0], [1.0, 1.0 + 2.0**-52]], [1.0, 2.0]),
    "inf in b": ([[1.0, 2.0], [3.0, 4.0]], [INF, 1.0]),
    "nan in b": ([[2.0, 0.0], [0.0, 1.0]], [NAN, 1.0]),
    "inf in b, singular a": ([[1.0, 2.0], [2.0, 4.0]], [INF, 1.0]),
    "nan in a": ([[NAN, 1.0], [1.0, 1.0]], [1.0, 1.0]),
    "inf in a": ([[INF, 1.0], [1.0, 1.0]], [1.0, 1.0]),
    "zero": ([[0.0, 0.0], [0.0, 0.0]], [0.0, 0.0]),
}
NAN_MEMBERS = {"singular", "near singular", "inf in b", "nan in b", "inf in b, singular a", "nan in a",
               "inf in a", "zero"}


def _batch(names):
    a = np.array([MEMBERS[n][0] for n in names])
    b = np.array([MEMBERS[n][1] for n in names])
    return a, b


@pytest.mark.parametrize("k", [1, 2], ids=["one column", "two columns"])
def test_standard_path_agrees_with_the_numpy_backend_member_by_member(k) -> None:
    names = list(MEMBERS)
    a, b = _batch(names)
    bb = np.repeat(b[..., None], k, axis=-1)
    ad = _BroadcastingAdapter()
    with np.errstate(all="ignore"):
        want = np.asarray(xl.solve(a, bb, errors="nan"))
        got = ad.solve(a, bb, False, "nan")
    for i, name in enumerate(names):
        np.testing.assert_array_equal(got[i], want[i], err_msg=name)
        assert np.isnan(got[i]).all() == (name in NAN_MEMBERS), name
        assert np.isfinite(got[i]).all() == (name not in NAN_MEMBERS), name


def test_standard_path_broadcasts_for_the_library() -> None:
    # one shared `a` against a batch of b, and a vector b: the library gets equal
    # batch shapes and a matrix right-hand side
    ad = _BroadcastingAdapter()
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    b = np.arange(12.0).reshape(3, 2, 2)
    x = ad.solve(a, b, False, "raise")
    assert ad.native_shapes == [((3, 2, 2), (3, 2, 2))]
    np.testing.assert_allclose(x, np.linalg.solve(a, b))
    ad.native_shapes.clear()
    a3 = np.stack([a, 2 * a])
    x = ad.solve(a3, np.array([1.0, 2.0]), True, "raise")
    assert ad.native_shapes == [((2, 2, 2), (2, 2, 1))]
    np.testing.assert_allclose(x, np.linalg.solve(a3, np.array([1.0, 2.0])[:, None])[..., 0])


def test_member_masks_read_a_and_b() -> None:
    """The masks themselves: a member is reported singular only when its `a` is
    singular and `a` AND `b` are finite; NaN for singular or non-finite members (a
    bug that ignores b, or a, changes one of these rows)."""
    sing = np.array([False, True, True, True, False, False])
    scale = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [NAN, 1.0], [1.0, INF], [1.0, 1.0]])
    b = np.ones((6, 2, 1))
    b[2, 0, 0] = INF
    b[5, 1, 0] = NAN
    assert singular_members(np, sing, scale, b).tolist() == [False, True, False, False, False, False]
    assert nan_members(np, sing, scale, b).tolist() == [False, True, True, True, True, True]


def test_standard_path_raises_for_the_singular_members_only() -> None:
    names = ["regular", "inf in b", "singular", "nan in b", "zero", "near singular"]
    a, b = _batch(names)
    with np.errstate(all="ignore"), pytest.raises(xl.LinAlgError) as info:
        _BroadcastingAdapter().solve(a, b[..., None], False, "raise")
    with np.errstate(all="ignore"), pytest.raises(xl.LinAlgError) as native:
        xl.solve(a, b[..., None])
    assert info.value.members == native.value.members == (2, 4, 5)
