"""lstsq, pinv, matrix_rank and solve_ex on the library's own call (issue 38).

NumPy (and torch-cpu through zero-copy NumPy views) run NumPy's ``gelsd`` for
lstsq and NumPy's SVD for pinv/matrix_rank; torch tensors NumPy cannot view
(autograd) run torch's ``gelsd`` on the CPU; solve_ex of one system takes the
singular verdict from the factorization that solved it. Three things must hold:

* the fast path (no ``xp=``) and the checked path (``xp=`` given) give the same
  result bit for bit, or the same error, on hostile inputs (``test_fast_paths``'s
  comparison, its helpers reused);
* the library's call is xlinalg's answer: it matches the SVD written once (run on
  array-api-strict, which has no own call) within the ops tests' tolerances, the
  rank exactly, on rank-deficient, zero, tall, wide, complex and float32 input;
* what must not take the own call does not: NaN/inf, CUDA tensors, traces; and
  autodiff and ``jax.jit`` still work.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import xlinalg as xl
from conftest import BackendCase
from test_fast_paths import _outcome, _same
from xlinalg._dispatch import FAST_LINALG
from xlinalg._fastpath import MISSING
from xlinalg._lib._declare import OPERATIONS

_RNG = np.random.default_rng(381)
_A = _RNG.standard_normal((3, 3))
_TALL = _RNG.standard_normal((5, 3))
_WIDE = _RNG.standard_normal((2, 4))
_DEF = np.outer(_RNG.standard_normal(4), _RNG.standard_normal(3))  # rank 1, 4×3
_DEF2 = np.stack([_DEF @ np.diag([1.0, 2.0, 3.0]), _TALL[:4]])  # a rank-1 member beside a full one


def _with(a: np.ndarray, i: int, v: float) -> np.ndarray:
    out = np.array(a, dtype=np.result_type(a, float))
    out.flat[i] = v
    return out


#: one-array inputs of pinv and matrix_rank
ONE: dict[str, Any] = {
    "square": _A,
    "tall": _TALL,
    "wide": _WIDE,
    "rank-deficient": _DEF,
    "zero": np.zeros((3, 3)),
    "float32": _TALL.astype(np.float32),
    "complex128": _TALL + 1j * _TALL[::-1],
    "complex64": (_TALL + 1j * _TALL[::-1]).astype(np.complex64),
    "stack": _DEF2,
    "int": np.array([[1, 2], [2, 4], [0, 1]]),
    "bool": np.eye(3, dtype=bool),
    "nan": _with(_A, 4, np.nan),
    "inf": _with(_A, 0, np.inf),
    "nan-member": np.stack([_A, _with(_A, 2, np.nan)]),
    "huge": _A * 1e200,
    "tiny": _A * 1e-300,
    "empty": np.zeros((0, 3)),
    "empty-batch": np.zeros((0, 3, 3)),
    "vector": _A[0],
}

#: (a, b) inputs of lstsq
LSTSQ: dict[str, Any] = {
    "square-vector": (_A, _A[1]),
    "tall-vector": (_TALL, _TALL[:, 0] + 1.0),
    "tall-matrix": (_TALL, _RNG.standard_normal((5, 2))),
    "wide-vector": (_WIDE, np.array([1.0, -1.0])),
    "rank-deficient": (_DEF, np.arange(4.0)),
    "rank-deficient-matrix": (_DEF, _RNG.standard_normal((4, 3))),
    "zero": (np.zeros((3, 2)), np.ones(3)),
    "float32": (_TALL.astype(np.float32), np.ones(5, np.float32)),
    "complex": (_TALL + 1j * _TALL[::-1], np.ones(5) - 2j),
    "complex64": ((_TALL + 1j * _TALL[::-1]).astype(np.complex64), (np.ones(5) - 2j).astype(np.complex64)),
    "stack": (_DEF2, _RNG.standard_normal((2, 4, 2))),
    "stack-vector-b": (_DEF2, np.ones(4)),
    "stack-broadcast-b": (_DEF2, _RNG.standard_normal((4, 2))),
    "b-more-batch": (_TALL, _RNG.standard_normal((2, 5, 1))),
    "mixed": (_TALL.astype(np.float32), np.ones(5)),
    "int": (np.array([[1, 2], [2, 4], [0, 1]]), np.array([1, 2, 3])),
    "nan-a": (_with(_TALL, 3, np.nan), np.ones(5)),
    "inf-a": (_with(_TALL, 0, np.inf), np.ones(5)),
    "nan-b": (_TALL, _with(np.ones(5), 2, np.nan)),
    "huge": (_TALL * 1e200, np.ones(5)),
    "mismatched": (_TALL, np.ones(4)),
    "empty-rows": (np.zeros((0, 3)), np.zeros(0)),
    "empty-k": (_TALL, np.zeros((5, 0))),
    "scalar-b": (_A, np.asarray(1.0)),
}

#: lstsq's rcond variants
RCONDS = [None, 1e-3, -1, 0, 0.5]

#: (a, b) inputs of solve_ex
SOLVE_EX: dict[str, Any] = {
    "vector": (_A, _A[0]),
    "matrix": (_A, _RNG.standard_normal((3, 2))),
    "singular": (np.ones((3, 3)), np.ones(3)),
    "near-singular": (np.array([[1.0, 1.0], [1.0, 1.0 + 3e-16]]), np.ones(2)),  # |u_22| <= 2 eps
    "zero": (np.zeros((2, 2)), np.ones(2)),
    "nan-a": (_with(_A, 4, np.nan), np.ones(3)),
    "inf-a": (_with(_A, 0, np.inf), np.ones(3)),
    "nan-b": (_A, _with(np.ones(3), 1, np.nan)),
    "singular-nan-b": (np.ones((3, 3)), _with(np.ones(3), 1, np.nan)),
    "float32": (_A.astype(np.float32), np.ones(3, np.float32)),
    "complex": (_A + 1j * _A.T, np.ones(3) + 0j),
    "tiny": (_A * 1e-310, np.ones(3)),
    "huge": (_A * 1e300, np.ones(3)),
    "stack": (np.stack([_A, np.ones((3, 3))]), np.ones(3)),
    "int": (np.array([[2, 1], [1, 3]]), np.array([1, 2])),
    "mixed": (_A.astype(np.float32), np.ones(3)),
    "0x0": (np.zeros((0, 0)), np.zeros(0)),
    "k0": (_A, np.zeros((3, 0))),
    "mismatched": (_A, np.ones(2)),
    "not-square": (_TALL, np.ones(5)),
}


def _agree(backend: BackendCase, fast: Any, checked: Any, what: str) -> None:
    """:func:`test_fast_paths._same`; on JAX, whose fast path runs the checked path's
    operations inside one ``jax.jit`` (XLA fuses a reduction in another order than
    the eager calls), the values within a few ulps instead of bit for bit."""
    if backend.library != "jax" or fast[0] != "ok" or checked[0] != "ok":
        _same(backend, fast, checked, what)
        return
    try:
        _same(backend, fast, checked, what)
    except AssertionError:
        fs, cs = fast[2], checked[2]
        for i, (u, v) in enumerate(zip(fs, cs, strict=True)):
            assert u.dtype == v.dtype, (what, i)
            assert u.shape == v.shape, (what, i)
            tol = 1e-5 if u.dtype in (np.float32, np.complex64) else 1e-13
            np.testing.assert_allclose(u, v, rtol=tol, atol=tol * max(1.0, float(np.max(np.abs(v), initial=0))),
                                       err_msg=f"{what}, output {i}")


def _arr(backend: BackendCase, host: Any) -> Any | None:
    host = np.asarray(host)
    return backend.arr(host) if backend.has_dtype(host.dtype) else None


@pytest.mark.parametrize("name", ["pinv", "matrix_rank"])
def test_one_array_fast_path_is_the_checked_answer(backend: BackendCase, name: str) -> None:
    fn = getattr(xl, name)
    xp = backend.namespace()
    for case, host in ONE.items():
        if (x := _arr(backend, host)) is None:
            continue
        _agree(backend, _outcome(backend, fn, x), _outcome(backend, fn, x, xp=xp), f"{name}({case}) on {backend.name}")


def test_lstsq_fast_path_is_the_checked_answer(backend: BackendCase) -> None:
    xp = backend.namespace()
    for rcond in RCONDS:
        for case, (ha, hb) in LSTSQ.items():
            if (a := _arr(backend, ha)) is None or (b := _arr(backend, hb)) is None:
                continue
            what = f"lstsq({case}, rcond={rcond}) on {backend.name}"
            _agree(backend, _outcome(backend, xl.lstsq, a, b, rcond=rcond),
                  _outcome(backend, xl.lstsq, a, b, rcond=rcond, xp=xp), what)


def test_solve_ex_fast_path_is_the_checked_answer(backend: BackendCase) -> None:
    xp = backend.namespace()
    for case, (ha, hb) in SOLVE_EX.items():
        if (a := _arr(backend, ha)) is None or (b := _arr(backend, hb)) is None:
            continue
        _agree(backend, _outcome(backend, xl.solve_ex, a, b), _outcome(backend, xl.solve_ex, a, b, xp=xp),
              f"solve_ex({case}) on {backend.name}")


def test_solve_ex_fast_path_mask_is_the_rule() -> None:
    """The fast path's verdict is the rule's (the reference's LU), not LAPACK's info:
    singular, near-singular by the tolerance, and NaN members never singular."""
    from xlinalg._solve_ex import _solve_ex_reference

    for case in ("vector", "singular", "near-singular", "zero", "nan-a", "nan-b", "singular-nan-b", "tiny", "huge"):
        a, b = SOLVE_EX[case]
        x, sing = xl.solve_ex(a, b)
        rx, rsing = _solve_ex_reference(a, b)
        assert bool(sing) == bool(rsing), case
        if case != "tiny":  # (an overflowing solution: xlinalg's scaled gesv gives inf where NumPy's gives NaN)
            np.testing.assert_allclose(x, rx, rtol=1e-10, atol=0, err_msg=case)
    assert bool(xl.solve_ex(*SOLVE_EX["near-singular"]).singular)
    assert not bool(xl.solve_ex(*SOLVE_EX["nan-a"]).singular)


def _libraries() -> list[tuple[str, Any, Any]]:
    """(name, host -> array, array -> host) of the libraries with an own call."""
    out: list[tuple[str, Any, Any]] = [("numpy", np.asarray, np.asarray)]
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a test dependency
        return out
    out.append(("torch", torch.from_numpy, lambda t: t.detach().numpy()))
    out.append(("torch-grad", lambda h: torch.from_numpy(h).requires_grad_(h.dtype.kind in "fc"),
                lambda t: t.detach().numpy()))
    return out


def _strict(host: np.ndarray) -> Any:
    import array_api_strict

    return array_api_strict.asarray(host)


def _close(got: np.ndarray, want: np.ndarray, dtype: np.dtype, what: str) -> None:
    tol = 2e-3 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-8
    scale = max(float(np.max(np.abs(want), initial=0.0)), 1.0)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale, err_msg=what)


@pytest.mark.parametrize("lib", [lib[0] for lib in _libraries()])
def test_own_call_is_the_svd_answer(lib: str) -> None:
    """The library's gelsd/SVD is xlinalg's answer: the SVD written once (on
    array-api-strict) within tolerance, the rank exactly."""
    pytest.importorskip("array_api_strict")
    _, make, host = next(t for t in _libraries() if t[0] == lib)
    for case, (ha, hb) in LSTSQ.items():
        if case in ("mismatched", "mixed", "int", "nan-a", "inf-a", "empty-rows", "empty-k", "scalar-b", "huge",
                    "b-more-batch") or (lib == "torch-grad" and case == "nan-b"):
            continue
        for rcond in (None, 1e-3):
            got = xl.lstsq(make(ha), make(hb), rcond=rcond)
            want = xl.lstsq(_strict(ha), _strict(hb), rcond=rcond)
            what = f"lstsq({case}, rcond={rcond}) on {lib}"
            np.testing.assert_array_equal(host(got.rank), np.asarray(want.rank), err_msg=what)
            for field in ("solution", "residuals", "singular_values"):
                g, w = host(getattr(got, field)), np.asarray(getattr(want, field))
                assert g.dtype == w.dtype, (what, field, g.dtype, w.dtype)
                assert g.shape == w.shape, (what, field, g.shape, w.shape)
                if field == "residuals":  # a residual of ~0 is rounding: absolute, against |b|²
                    np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-10 * max(1.0, float(np.sum(np.abs(hb) ** 2))),
                                               err_msg=f"{what} {field}")
                else:
                    _close(g, w, ha.dtype, f"{what} {field}")
    for case, h in ONE.items():
        if case in ("int", "bool", "nan", "inf", "nan-member", "huge", "tiny", "empty", "empty-batch", "vector"):
            continue
        what = f"{case} on {lib}"
        np.testing.assert_array_equal(host(xl.matrix_rank(make(h))), np.asarray(xl.matrix_rank(_strict(h))), what)
        _close(host(xl.pinv(make(h))), np.asarray(xl.pinv(_strict(h))), h.dtype, f"pinv {what}")


def test_torch_autograd_through_lstsq() -> None:
    """A tensor that requires grad runs torch's gelsd (gradients defined) and gets the
    gradient of the min-norm solution (pinv(a) @ b for full column rank)."""
    torch = pytest.importorskip("torch")
    a = torch.tensor(_TALL, requires_grad=True)
    b = torch.tensor(_TALL[:, 0] + 1.0, requires_grad=True)
    out = xl.lstsq(a, b)
    (out.solution.sum() + out.residuals).backward()
    ref_a = torch.tensor(_TALL, requires_grad=True)
    ref_b = torch.tensor(_TALL[:, 0] + 1.0, requires_grad=True)
    sol = torch.linalg.pinv(ref_a) @ ref_b
    (sol.sum() + ((ref_b - ref_a @ sol) ** 2).sum()).backward()
    assert a.grad is not None
    assert b.grad is not None
    torch.testing.assert_close(a.grad, ref_a.grad)
    torch.testing.assert_close(b.grad, ref_b.grad)
    for fn in (xl.pinv, xl.matrix_rank):
        x = torch.tensor(_TALL, requires_grad=True)
        r = fn(x)
        if r.dtype.is_floating_point:
            r.sum().backward()
            assert x.grad is not None
            assert torch.isfinite(x.grad).all()


def test_torch_cuda_keeps_the_svd() -> None:
    """On CUDA torch's lstsq has "gels" only (no rank deficiency): the fast path
    refuses any tensor off the CPU, so the checked path's SVD runs there (tested
    without a GPU: a stand-in with torch's attributes on a "cuda" device)."""
    torch = pytest.importorskip("torch")
    xl.lstsq(torch.ones(2, 2, dtype=torch.float64), torch.ones(2, dtype=torch.float64))  # the type is met
    fast = FAST_LINALG["lstsq"][torch.Tensor]

    class OnCuda:
        dtype = torch.float64
        ndim = 2
        shape = (3, 3)
        is_meta = False
        is_nested = False
        requires_grad = False
        layout = torch.strided
        device = torch.device("cuda")

        def numel(self) -> int:
            return 9

    assert fast(OnCuda(), OnCuda(), None) is MISSING
    real = torch.ones(3, 3, dtype=torch.float64)
    assert fast(real, OnCuda(), None) is MISSING
    assert fast(real, torch.ones(3, dtype=torch.float64), None) is not MISSING
    meta = torch.ones(3, 3, dtype=torch.float64, device="meta")
    assert fast(meta, meta[0], None) is MISSING


def test_jax_under_jit() -> None:
    """Under jax.jit the checked path runs (no fast path for tracers): same answers
    as the eager call, within rounding; solve_ex's mask the same."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    a, b = jnp.asarray(_TALL), jnp.asarray(_TALL[:, 0] + 1.0)
    eager = xl.lstsq(a, b)
    traced = jax.jit(xl.lstsq)(a, b)
    for u, v in zip(eager, traced, strict=True):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-10, atol=1e-12)
    for case in ("vector", "singular", "nan-a"):
        ha, hb = SOLVE_EX[case]
        ja, jb = jnp.asarray(ha), jnp.asarray(hb)
        x0, s0 = xl.solve_ex(ja, jb)
        x1, s1 = jax.jit(xl.solve_ex)(ja, jb)
        assert bool(s0) == bool(s1), case
        np.testing.assert_allclose(np.asarray(x0), np.asarray(x1), rtol=1e-12, err_msg=case)


def test_numpy_and_torch_special_layouts() -> None:
    """Views, Fortran order, negative strides (NumPy), transposed and strided tensors:
    fast and checked paths agree for every function of this file."""
    layouts: dict[str, np.ndarray] = {"transposed": _TALL.T, "fortran": np.asfortranarray(_TALL),
                                      "strided": np.repeat(_TALL, 2, axis=1)[:, ::2], "reversed": _TALL[::-1, ::-1],
                                      "big-endian": _TALL.astype(">f8")}
    case = BackendCase("numpy", xl.backends.get_backend("numpy"))
    cases = [case]
    try:
        import torch

        tcase = BackendCase("torch-cpu", xl.backends.get_backend("torch-cpu"))
        cases.append(tcase)
    except (ImportError, LookupError):  # pragma: no cover - torch is a test dependency
        torch = None
    for c in cases:
        xp = c.namespace()
        for layout, h in layouts.items():
            if c.library == "torch":
                if layout in ("reversed", "big-endian"):
                    continue
                x: Any = torch.from_numpy(np.ascontiguousarray(h)) if layout != "transposed" else torch.from_numpy(
                    np.ascontiguousarray(_TALL)).mT
                if layout == "strided":
                    x = torch.from_numpy(np.repeat(_TALL, 2, axis=1))[:, ::2]
            else:
                x = h
            m = x.shape[0]
            b = np.ones(m) if c.library == "numpy" else torch.ones(m, dtype=torch.float64)
            for fn, args in ((xl.pinv, (x,)), (xl.matrix_rank, (x,)), (xl.lstsq, (x, b))):
                _same(c, _outcome(c, fn, *args), _outcome(c, fn, *args, xp=xp), f"{fn.__name__}({layout}) on {c.name}")
            sq = x[:3, :3] if x.shape[0] >= 3 else x
            _same(c, _outcome(c, xl.solve_ex, sq, b[:3]), _outcome(c, xl.solve_ex, sq, b[:3], xp=xp),
                  f"solve_ex({layout}) on {c.name}")


@pytest.mark.parametrize("name", ["lstsq", "pinv", "matrix_rank", "solve_ex"])
def test_own_call_is_taken(backend: BackendCase, name: str) -> None:
    """The common small case takes the fast path on NumPy, torch-cpu and JAX-cpu."""
    if backend.library not in ("numpy", "torch", "jax") or backend.gpu:
        pytest.skip("no CPU fast path for this backend")
    fn = getattr(xl, name)
    args = (_A, _A[0]) if name in ("lstsq", "solve_ex") else (_TALL,)
    arrays = tuple(backend.arr(h) for h in args)
    fn(*arrays)
    fast = FAST_LINALG[name][type(arrays[0])]
    extra = (None,) if name == "lstsq" else ()
    assert fast(*arrays, *extra) is not MISSING, f"{name} on {backend.name}"


def _torch_layouts(torch: Any) -> dict[str, Any]:
    """Tensors whose layout makes some attribute raise (a nested tensor's shape and
    strides, a compressed sparse one's strides) or has no values (meta): beyond
    ``test_fast_paths``'s hostile tensors, nested tensors of vectors (two dimensions,
    as one matrix has), ragged ones and the jagged layout, every sparse layout."""
    import warnings

    a = torch.eye(3, dtype=torch.float64) * 2 + 1
    v = a[0].clone()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (nested and sparse tensors are "beta")
        return {
            "nested-matrices": torch.nested.nested_tensor([a, a]),
            "nested-vectors": torch.nested.nested_tensor([v, v]),
            "nested-ragged": torch.nested.nested_tensor([v, v[:2]]),
            "jagged": torch.nested.nested_tensor([a, a], layout=torch.jagged),
            "jagged-ragged": torch.nested.nested_tensor([v, v[:2]], layout=torch.jagged),
            "sparse-coo": a.to_sparse(),
            "sparse-coo-vector": v.to_sparse(),
            "sparse-csr": a.to_sparse_csr(),
            "sparse-csc": a.to_sparse_csc(),
            "sparse-bsr": a.to_sparse_bsr((1, 1)),
            "mkldnn": a.float().to_mkldnn(),
            "meta": torch.empty((3, 3), dtype=torch.float64, device="meta"),
        }


@pytest.mark.parametrize("name", sorted(FAST_LINALG))
def test_torch_fast_paths_read_no_attribute_a_layout_refuses(name: str) -> None:
    """No fast path reads what a tensor's layout refuses (a nested tensor's shape)
    before it knows the layout is dense: on each such tensor, as either operand,
    every fast path gives the checked path's result or its error naming the
    argument (the fast path out of its table: ``test_fast_paths._CheckedOnly``),
    never torch's own error."""
    torch = pytest.importorskip("torch")
    from test_fast_paths import _CheckedOnly, _torch_outcome, _torch_same

    op = OPERATIONS[name]
    dense = tuple(torch.tensor(h) for h in op.sample_args())
    op.func(*dense, **op.kwargs)  # the type is met: its fast path made
    assert torch.Tensor in FAST_LINALG[name], name
    for case, x in _torch_layouts(torch).items():
        for args in ([(x,)] if op.arity == 1 else [(x, dense[1]), (dense[0], x), (x, x)]):
            fast = _torch_outcome(op.func, *args, **op.kwargs)
            with _CheckedOnly(name, torch.Tensor):
                checked = _torch_outcome(op.func, *args, **op.kwargs)
            _torch_same(fast, checked, f"{name}({case}, {len(args)} operands)")
            assert fast[0] == "ok" or not str(fast[2]).startswith("Internal error"), (name, case, fast)


@pytest.mark.parametrize("name", ["lstsq", "pinv", "matrix_rank", "solve_ex"])
def test_torch_views_that_need_gradients(name: str) -> None:
    """Transposed, strided, offset and conjugated views that require grad (torch's
    gelsd/SVD route, not NumPy's views), beside plain ones, under grad mode,
    ``no_grad`` and inference mode: the fast path gives the checked path's answer
    bit for bit with the fast path out of its table, because the checked path makes
    the same own call (``_lstsq_fast.OwnCall``), not the SVD written once."""
    torch = pytest.importorskip("torch")
    from test_fast_paths import _CheckedOnly, _torch_outcome, _torch_same

    fn = getattr(xl, name)
    base = {"transposed": lambda: torch.tensor(_TALL).mT, "strided": lambda: torch.tensor(np.repeat(_A, 2, 1))[:, ::2],
            "offset": lambda: torch.tensor(np.vstack([_A, _A]))[1:4], "conj": lambda: torch.tensor(_A + 1j * _A.T).conj(),
            "rank-deficient": lambda: torch.tensor(_DEF).mT, "stack": lambda: torch.tensor(_DEF2).mT}
    fn(torch.tensor(_A), torch.tensor(_A[0])) if name in ("lstsq", "solve_ex") else fn(torch.tensor(_A))
    for mode, ctx in (("grad", torch.enable_grad), ("no_grad", torch.no_grad), ("inference", torch.inference_mode)):
        for case, make in base.items():
            for grad in (False, True):
                if grad and mode == "inference":
                    continue  # (an inference tensor cannot require grad)
                with ctx():
                    x = make()
                    x = x.detach().requires_grad_() if grad else x
                    if name in ("lstsq", "solve_ex"):
                        if name == "solve_ex":  # (a square corner: a view as well)
                            k = min(x.shape[-2:])
                            x = x[..., :k, :k]
                        args: tuple[Any, ...] = (x, torch.ones(x.shape[-2], dtype=x.dtype))
                    else:
                        args = (x,)
                    fast = _torch_outcome(fn, *args)
                    with _CheckedOnly(name, torch.Tensor):
                        checked = _torch_outcome(fn, *args)
                _torch_same(fast, checked, f"{name}({case}, requires_grad={grad}) under {mode}")
                assert fast[0] == "ok", (name, case, mode, fast)
