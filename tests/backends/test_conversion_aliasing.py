"""xl.to never returns a writable alias of memory that must not be written through
it (issue 34, point 6): an expanded torch tensor to NumPy was a writable stride-0
array, and writing one element changed every element and the source tensor."""

from __future__ import annotations

import numpy as np
import pytest

import xlinalg as xl
from conftest import require_backend

TARGETS = ("numpy", "array-api-strict", "dask", "jax-cpu")


def _views():
    torch = pytest.importorskip("torch")
    base = torch.arange(6.0)
    return {
        "expand": torch.tensor([1.0, 2.0]).expand(3, 2),
        "expand-0d": torch.tensor(7.0).expand(4),
        "as_strided-overlap": base.as_strided((3, 3), (1, 1)),
        "broadcast_to": torch.broadcast_to(torch.tensor([[1.0], [2.0]]), (2, 3)),
    }


def _write_first(y) -> None:
    if isinstance(y, np.ndarray):
        y[(0,) * y.ndim] = -99.0
    else:  # array-api-strict
        y[(0,) * y.ndim] = -99.0


@pytest.mark.parametrize("kind", ["expand", "expand-0d", "as_strided-overlap", "broadcast_to"])
@pytest.mark.parametrize("target", TARGETS)
def test_an_overlapping_torch_view_is_never_a_writable_alias(kind: str, target: str) -> None:
    require_backend("torch-cpu")
    require_backend(target)
    t = _views()[kind]
    before = t.clone()
    y = xl.to(t, target)
    np.testing.assert_array_equal(xl.to(y, "numpy"), before.numpy())
    if target in ("numpy", "array-api-strict"):
        if xl.to(y, "numpy").flags.writeable:  # a copy: a write changes that element only
            _write_first(y)
            got = xl.to(y, "numpy")
            assert (got == -99.0).sum() == 1, got
        else:  # a read-only view: the write is refused
            with pytest.raises(ValueError, match="read-only"):
                _write_first(y)
    assert bool((t == before).all()), "the source tensor changed"
    # copy=True: a writable copy, whatever the source
    c = xl.to(t, "numpy", copy=True)
    c[(0,) * c.ndim] = -1.0
    assert (c == -1.0).sum() == 1
    assert bool((t == before).all())


def test_a_plain_tensor_is_still_shared_writable() -> None:
    torch = pytest.importorskip("torch")
    t = torch.zeros(3)
    y = xl.to(t, "numpy")
    assert y.flags.writeable
    y[0] = 5.0
    assert float(t[0]) == 5.0  # zero-copy, as documented


def test_conj_and_neg_views_are_resolved_copies() -> None:
    torch = pytest.importorskip("torch")
    z = torch.tensor([1 + 2j, 3 - 1j])
    for view, want in ((z.conj(), np.conj(z.numpy())), (z.conj().imag, -z.numpy().imag)):
        y = xl.to(view, "numpy")
        np.testing.assert_array_equal(y, want)
        if y.flags.writeable:
            y[0] = 0
        assert z.tolist() == [1 + 2j, 3 - 1j]


def test_jax_to_numpy_and_strict_is_read_only() -> None:
    require_backend("jax-cpu")
    import jax.numpy as jnp

    x = jnp.arange(3.0)
    y = xl.to(x, "numpy")
    assert not y.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        y[0] = 1.0
    s = xl.to(x, "array-api-strict")
    with pytest.raises(ValueError, match="read-only"):
        s[0] = 1.0
    assert x.tolist() == [0.0, 1.0, 2.0]


def test_negative_strides_to_torch_are_copied() -> None:
    torch = pytest.importorskip("torch")
    h = np.arange(4.0)
    t = xl.to(h[::-1], "torch-cpu")
    assert t.tolist() == [3.0, 2.0, 1.0, 0.0]
    t[0] = -1.0
    assert h.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert isinstance(t, torch.Tensor)
