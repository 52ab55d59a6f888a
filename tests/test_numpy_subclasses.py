"""NumPy array subclasses: every result keeps the subclass, empty or not (issue 34, point 7)."""

from __future__ import annotations

import numpy as np
import pytest

import xlinalg as xl


class Tagged(np.ndarray):
    pass


def _ops():
    return {
        "solve": lambda a, b: [xl.solve(a, b)],
        "svd": lambda a, b: list(xl.svd(a)),
        "svd-reduced": lambda a, b: list(xl.svd(a, full_matrices=False)),
        "svdvals": lambda a, b: [xl.svdvals(a)],
        "qr": lambda a, b: list(xl.qr(a)),
        "matmul": lambda a, b: [xl.matmul(a, b)],
        "add": lambda a, b: [xl.add(a, a)], "subtract": lambda a, b: [xl.subtract(a, 1.0)],
        "multiply": lambda a, b: [xl.multiply(2, a)], "divide": lambda a, b: [xl.divide(a, 2.0)],
        "exp": lambda a, b: [xl.exp(a)], "sigmoid": lambda a, b: [xl.sigmoid(a)],
    }


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3), (0, 0), (2, 0, 0), (0, 3, 3)])
@pytest.mark.parametrize("op", sorted(_ops()))
def test_every_result_keeps_the_subclass(op: str, shape: tuple[int, ...]) -> None:
    n = shape[-1]
    a = (np.zeros(shape) + np.eye(n) * 2).view(Tagged)
    b = np.ones((*shape[:-1], 1)).view(Tagged)
    for r in _ops()[op](a, b):
        assert type(r) is Tagged, (op, shape, type(r))


def test_a_plain_input_gives_a_plain_result() -> None:
    a = np.eye(2)
    for r in (xl.solve(np.zeros((0, 0)), np.zeros((0, 1))), xl.svdvals(a), *xl.qr(np.zeros((0, 2)))):
        assert type(r) is np.ndarray


def test_np_matrix_is_still_refused_by_name() -> None:
    with pytest.raises(TypeError, match=r"numpy\.matrix"):
        xl.solve(np.matrix(np.eye(2)), np.ones(2))
