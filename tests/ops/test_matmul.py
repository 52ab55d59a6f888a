"""xlinalg.matmul on every backend: the standard's shape rules and dtype promotion."""

from __future__ import annotations

import numpy as np
import pytest

import xlinalg as xl
from conftest import BackendCase, random

SHAPES = [
    ((3, 4), (4, 2)),
    ((4,), (4,)),  # vector . vector -> 0-d
    ((3, 4), (4,)),  # matrix . vector
    ((4,), (4, 2)),  # vector . matrix
    ((2, 3, 4), (4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),  # batch broadcast
    ((2, 3, 4), (4,)),
    ((1, 1), (1, 1)),
]


@pytest.mark.parametrize(("sa", "sb"), SHAPES, ids=[f"{a}@{b}" for a, b in SHAPES])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128], ids=lambda d: np.dtype(d).name)
def test_matmul_matches_numpy(backend: BackendCase, rng, sa, sb, dtype) -> None:
    a, b = random(rng, sa, dtype), random(rng, sb, dtype)
    ref = np.matmul(a.astype(np.complex128), b.astype(np.complex128))
    ref = ref if np.dtype(dtype).kind == "c" else ref.real
    backend.assert_close(xl.matmul(backend.arr(a), backend.arr(b)), ref, dtype=dtype)


@pytest.mark.parametrize(
    ("da_", "db", "expected"),
    [
        (np.float32, np.float64, np.float64),  # torch.matmul alone raises here
        (np.float64, np.float32, np.float64),
        (np.int64, np.int64, np.int64),
        (np.int32, np.int64, np.int64),
        (np.int64, np.float32, np.float64),  # NumPy's table for mixed kinds, everywhere
        (np.int8, np.float32, np.float32),
        (np.float32, np.complex64, np.complex64),
        (np.float64, np.complex64, np.complex128),
    ],
)
def test_dtype_promotion(backend: BackendCase, da_, db, expected) -> None:
    a = np.array([[1, 2], [3, 4]]).astype(da_)
    b = np.array([[1, 0], [1, 1]]).astype(db)
    out = xl.matmul(backend.arr(a), backend.arr(b))
    backend.assert_close(out, np.matmul(a, b).astype(expected), dtype=expected)


def test_float16_is_native(backend: BackendCase) -> None:
    if not backend.has_dtype(np.float16):
        pytest.skip(f"{backend.name} has no float16 arrays")
    out = xl.matmul(backend.arr(np.eye(2), np.float16), backend.arr([1.0, 2.0], np.float16))
    backend.assert_close(out, [1.0, 2.0], dtype=np.float16)


def test_bool_is_refused(backend: BackendCase) -> None:
    with pytest.raises(TypeError, match=r"matmul: operands must be numeric, got `a` .*bool"):
        xl.matmul(backend.arr(np.eye(2, dtype=bool)), backend.arr(np.ones(2, dtype=bool)))
    with pytest.raises(TypeError, match=r"matmul: operands must be numeric"):
        xl.matmul(backend.arr(np.eye(2)), backend.arr(np.ones(2, dtype=bool)))


def test_zero_dim_is_refused(backend: BackendCase) -> None:
    with pytest.raises(ValueError, match=r"matmul: operands must have at least one dimension"):
        xl.matmul(backend.arr(np.float64(2.0)), backend.arr(np.ones(2)))


def test_contracted_dimensions_must_match(backend: BackendCase) -> None:
    with pytest.raises(ValueError, match=r"matmul: `a` has 3 columns but `b` has 2 rows"):
        xl.matmul(backend.arr(np.ones((3, 3))), backend.arr(np.ones((2, 1))))
    with pytest.raises(ValueError, match=r"matmul: `a` has 3 columns but `b` has 2 rows"):
        xl.matmul(backend.arr(np.ones(3)), backend.arr(np.ones(2)))


def test_batches_must_broadcast(backend: BackendCase) -> None:
    with pytest.raises(ValueError, match=r"matmul: the batch shapes of `a` \(2,\) and `b` \(3,\) do not broadcast"):
        xl.matmul(backend.arr(np.ones((2, 3, 3))), backend.arr(np.ones((3, 3, 1))))


@pytest.mark.parametrize(("sa", "sb"), [((0, 3), (3, 2)), ((3, 0), (0, 2)), ((0, 2, 2), (2, 2)), ((0, 0), (0, 0))])
def test_empty(backend: BackendCase, sa, sb) -> None:
    out = xl.matmul(backend.arr(np.ones(sa)), backend.arr(np.ones(sb)))
    backend.assert_close(out, np.matmul(np.ones(sa), np.ones(sb)), dtype=np.float64)


def test_lists_follow_the_array(backend: BackendCase) -> None:
    backend.assert_close(xl.matmul(backend.arr(np.eye(2)), [1.0, 2.0]), [1.0, 2.0])
    backend.assert_close(xl.matmul([[0.0, 1.0], [1.0, 0.0]], backend.arr([1.0, 2.0])), [2.0, 1.0])


def test_nonfinite_propagates(backend: BackendCase) -> None:
    a = np.array([[1.0, np.inf], [np.nan, 1.0]])
    backend.assert_close(xl.matmul(backend.arr(a), backend.arr([1.0, 1.0])), [np.inf, np.nan], equal_nan=True)


@pytest.mark.parametrize(
    ("sa", "sb"),
    [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((4, 2, 3), (3, 2)), ((2, 3), (4, 3, 2)),
     ((2, 2), (0, 2, 2)), ((0, 2, 2), (2, 2)), ((1, 2, 2), (0, 2, 2)), ((2,), (0, 2, 3))],
    ids=["vec-vec", "mat-vec", "vec-mat", "batch-mat", "mat-batch",
         "mat-emptybatch", "emptybatch-mat", "batch-emptybatch", "vec-emptybatch"],
)
@pytest.mark.parametrize(
    ("da_", "db", "expected"),
    [(np.float32, np.float64, np.float64), (np.int64, np.float32, np.float64), (np.float32, np.complex128, np.complex128)],
)
def test_mixed_dtypes_promote_for_every_operand_rank(backend: BackendCase, rng, sa, sb, da_, db, expected) -> None:
    """Mixed dtypes follow the contract's promotion whatever the ranks.

    The fast path of a library whose kernel is trusted to refuse mixed dtypes
    (torch.matmul) reads no dtype: were the kernel to accept a pair in any of
    its rank-specific paths (dot, mv, mm, bmm), the result dtype would be its own.
    torch does accept any pair when a broadcast batch is empty.
    """
    if not (backend.has_dtype(da_) and backend.has_dtype(db)):
        pytest.skip(f"{backend.name} has no {np.dtype(da_).name} or {np.dtype(db).name}")
    a = (rng.random(sa) * 4).astype(da_)
    b = (rng.random(sb) * 4).astype(db)
    out = xl.matmul(backend.arr(a), backend.arr(b))
    backend.check_owned(out)
    backend.assert_close(out, np.matmul(a.astype(expected), b.astype(expected)), dtype=expected)
