"""The fast paths of the linalg extension (``_fastpath.py``) are the checked paths' answers.

A call with ``xp=`` given always takes the checked path; the same call without it
takes the fast path where one is registered for the array type. On every backend,
for the sample inputs and for hostile ones (NaN, inf, integers, bool, float16,
empty, too few dimensions, not square, stacks, mixed dtypes, strided views,
big-endian data, failing factorizations, overflow), both calls must give the same
result bit for bit (type, dtype, shape, values) or raise the same error with the
same message. And the fast path must be taken for the common case.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import xlinalg as xl
from conftest import BackendCase
from xlinalg._dispatch import FAST_LINALG
from xlinalg._fastpath import MISSING
from xlinalg._lib._declare import OPERATIONS

_RNG = np.random.default_rng(38)
_M = _RNG.standard_normal((3, 3))
_SPD = _M @ _M.T + 3 * np.eye(3)
_STACK = np.stack([_SPD, 2 * _SPD])
_V = np.array([1.0, -2.0, 0.5])
_B = _RNG.standard_normal((3, 2))


def _with(a: np.ndarray, i: int, v: float) -> np.ndarray:
    out = np.array(a, dtype=float)
    out.flat[i] = v
    return out


#: one-array inputs: name -> host array
ONE: dict[str, Any] = {
    "sample": _SPD,
    "float32": _SPD.astype(np.float32),
    "complex128": _SPD + 0.5j * (_M - _M.T),
    "complex64": (_SPD + 0.5j * (_M - _M.T)).astype(np.complex64),
    "stack": _STACK,
    "stack-float32": _STACK.astype(np.float32),
    "nan": _with(_SPD, 4, np.nan),
    "nan-lower": _with(_SPD, 3, np.nan),
    "inf": _with(_SPD, 4, np.inf),
    "nan-member": np.stack([_SPD, _with(_SPD, 4, np.nan)]),
    "huge": _SPD * 1e200,
    "tiny": _SPD * 1e-300,
    "int": np.array([[2, 1, 0], [1, 3, 1], [0, 1, 4]]),
    "bool": np.eye(3, dtype=bool),
    "float16": _SPD.astype(np.float16),
    "singular": np.ones((3, 3)),
    "not-pd": -_SPD,
    "rect": _RNG.standard_normal((3, 4)),
    "tall": _RNG.standard_normal((4, 2)),
    "vector": _V,
    "scalar": np.asarray(2.0),
    "0x0": np.zeros((0, 0)),
    "empty-batch": np.zeros((0, 3, 3)),
    "empty-matrices": np.zeros((2, 0, 0)),
}

#: two-array inputs: name -> (host x1, host x2)
TWO: dict[str, Any] = {
    "sample": None,  # the operation's declared sample
    "float32": (_V.astype(np.float32), _V[::-1].astype(np.float32)),
    "vectors": (_V, _V[::-1].copy()),
    "mixed": (_V.astype(np.float32), _V),
    "int": (np.array([1, 2, 3]), np.array([3, 1, 2])),
    "bool": (np.ones(3, bool), np.ones(3, bool)),
    "nan": (_with(_V, 1, np.nan), _V),
    "mismatched": (_V, np.ones(2)),
    "size-one": (_SPD, np.ones(1)),  # (torch contracts an axis of size 1 with any size)
    "size-one-first": (np.ones(1), _V),
    "stacks": (np.stack([_V, 2 * _V]), np.stack([_V, _V, _V])),
    "broadcast": (np.stack([_V, 2 * _V]), _V),
    "batch-broadcast": (np.stack([_V, 2 * _V])[:, None, :], np.stack([_V, _V, -_V, _V])[None]),
    "matrix-vector": (_SPD, _V),
    "matrix-matrix": (_SPD, _B),
    "tall-vector": (_RNG.standard_normal((4, 2)), np.ones(4)),
    "rect-bad-rows": (_B, np.ones(2)),
    "scalars": (np.asarray(1.0), np.asarray(2.0)),
    "empty": (np.zeros((0,)), np.zeros((0,))),
}

#: keyword variants per operation (besides its declared kwargs)
VARIANTS: dict[str, list[dict[str, Any]]] = {
    "cholesky": [{"upper": True}],
    "svd": [{"full_matrices": False}],
    "qr": [{"mode": "complete"}, {"mode": "r"}],
    "matrix_norm": [{"ord": 1}, {"ord": -np.inf}, {"ord": "fro", "keepdims": True}, {"ord": 2}],
    "vector_norm": [{"ord": 1}, {"ord": np.inf}, {"ord": 0.5}, {"keepdims": True}],
    "diagonal": [{"offset": 1}, {"offset": -2}],
    "trace": [{"offset": 1}],
    "matrix_power": [{"n": 1}, {"n": 2}, {"n": 5}],
    "tensordot": [{"axes": 0}, {"axes": 2}],
}


def _names() -> list[str]:
    return sorted(FAST_LINALG)


def _outcome(backend: BackendCase, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """("ok", result, host outputs) or ("raises", type, message); a lazy result is
    computed here (Dask raises when computed)."""
    try:
        out = fn(*args, **kwargs)
        host = [backend.np(u) for u in (tuple(out) if isinstance(out, tuple) else (out,))]
    except Exception as exc:  # compared below: type and message
        return ("raises", type(exc), str(exc))
    return ("ok", out, host)


def _same(backend: BackendCase, fast: Any, checked: Any, what: str) -> None:
    assert fast[0] == checked[0], f"{what}: fast path {fast[:3]} but checked path {checked[:3]}"
    if fast[0] == "raises":
        assert fast[1:] == checked[1:], f"{what}: {fast[1:]} != {checked[1:]}"
        return
    f, c = fast[1], checked[1]
    assert type(f) is type(c), f"{what}: result type {type(f)} != {type(c)}"
    fs, cs = (tuple(f), tuple(c)) if isinstance(f, tuple) else ((f,), (c,))
    for i, (u, v) in enumerate(zip(fs, cs, strict=True)):
        assert type(u) is type(v), f"{what}, output {i}: {type(u)} != {type(v)}"
        assert str(u.dtype) == str(v.dtype), f"{what}, output {i}: dtype {u.dtype} != {v.dtype}"
        assert tuple(u.shape) == tuple(v.shape), f"{what}, output {i}: shape {u.shape} != {v.shape}"
        np.testing.assert_array_equal(fast[2][i], checked[2][i], err_msg=f"{what}, output {i}")


def _args(backend: BackendCase, name: str, case: str) -> tuple[Any, ...] | None:
    op = OPERATIONS[name]
    if op.arity == 1:
        host = ONE[case]
        if not backend.has_dtype(host.dtype):
            return None
        return (backend.arr(host),)
    pair = TWO[case]
    if pair is None:
        return tuple(backend.arr(a) for a in op.sample_args())
    return tuple(backend.arr(a) for a in pair)


@pytest.mark.parametrize("name", _names())
def test_fast_path_gives_the_checked_answer(backend: BackendCase, name: str) -> None:
    op = OPERATIONS[name]
    xp = backend.namespace()
    cases = ONE if op.arity == 1 else TWO
    for kwargs in [dict(op.kwargs), *({**op.kwargs, **v} for v in VARIANTS.get(name, []))]:
        for case in cases:
            args = _args(backend, name, case)
            if args is None:
                continue
            what = f"{name}({case}, {kwargs}) on {backend.name}"
            fast = _outcome(backend, op.func, *args, **kwargs)
            checked = _outcome(backend, op.func, *args, xp=xp, **kwargs)
            _same(backend, fast, checked, what)


def test_numpy_special_layouts() -> None:
    """Views, Fortran order, big-endian data, read-only memory: NumPy only."""
    ro = _SPD.copy()
    ro.flags.writeable = False
    layouts = {"transposed": _SPD.T, "strided": np.repeat(_SPD, 2, axis=1)[:, ::2],
               "big-endian": _SPD.astype(">f8"), "read-only": ro, "fortran": np.asfortranarray(_SPD)}
    case = BackendCase("numpy", xl.backends.get_backend("numpy"))
    for name in _names():
        op = OPERATIONS[name]
        for layout, x in layouts.items():
            args = (x,) if op.arity == 1 else (x, _V)
            fast = _outcome(case, op.func, *args, **op.kwargs)
            checked = _outcome(case, op.func, *args, xp=np, **op.kwargs)
            _same(case, fast, checked, f"{name}({layout})")


@pytest.mark.parametrize("name", _names())
def test_fast_path_is_taken(backend: BackendCase, name: str) -> None:
    """The common case (the declared sample) takes the fast path where the backend
    has one: NumPy, PyTorch, JAX on the CPU."""
    op = OPERATIONS[name]
    args = tuple(backend.arr(a) for a in op.sample_args())
    op.func(*args, **op.kwargs)  # the type is met (its fast paths made)
    fast = FAST_LINALG[name].get(type(args[0]))
    if backend.library not in ("numpy", "torch", "jax") or backend.gpu:
        assert fast is None or backend.library in ("torch", "jax")  # (a GPU's torch/JAX may have one)
        return
    assert fast is not None, f"{name}: no fast path for {type(args[0])}"
    # the fast path's own arguments: the keywords the function hands it
    extra = {"matrix_power": (op.kwargs.get("n"),), "tensordot": (op.kwargs.get("axes"),), "diagonal": (0,),
             "trace": (0,), "matrix_norm": ("fro", False), "vector_norm": (False, 2),
             "cholesky": (False,), "svd": (True,), "qr": ("reduced",)}.get(name, ())
    out = fast(*args, *extra)
    assert out is not MISSING, f"{name}: the fast path refused its declared sample on {backend.name}"


def test_torch_autograd_through_the_fast_path() -> None:
    """A tensor that requires grad: the fast path's result carries the graph."""
    torch = pytest.importorskip("torch")
    for name in ("eigvalsh", "det", "svdvals", "pinv", "matrix_norm", "trace"):
        x = torch.tensor(_SPD, requires_grad=True)
        out = OPERATIONS[name].func(x)
        out.sum().backward()
        assert x.grad is not None, name
        assert torch.isfinite(x.grad).all(), name


def test_numpy_svd_never_hands_lapack_an_inf_it_loops_on() -> None:
    """OpenBLAS's gesdd loops forever on this matrix (numpy.linalg.svd hangs): every
    NumPy path of the SVD family raises "did not converge" before LAPACK sees it."""
    x = _with(_SPD, 0, np.inf)
    for fn in (xl.svd, xl.svdvals, xl.pinv, xl.matrix_rank, lambda a, xp=None: xl.lstsq(a, _V, xp=xp),
               lambda a, xp=None: xl.matrix_norm(a, ord=2, xp=xp)):
        for xp in (None, np):
            with pytest.raises(xl.LinAlgError, match="did not converge"):
                fn(x, xp=xp)


_NO_LOOP_SCRIPT = r"""
import json, sys
import numpy as np
import xlinalg as xl
from xlinalg.backends import get_backend

be = get_backend(sys.argv[1])
be.testing.configure()
spd = np.array(json.loads(sys.argv[2]))
v = be.from_numpy(np.array([1.0, -2.0, 0.5]))
calls = {
    "svd": lambda a: xl.svd(a), "svd_reduced": lambda a: xl.svd(a, full_matrices=False),
    "svdvals": xl.svdvals, "pinv": xl.pinv, "matrix_rank": xl.matrix_rank,
    "lstsq": lambda a: xl.lstsq(a, v), "matrix_norm_2": lambda a: xl.matrix_norm(a, ord=2),
}
tri = np.array([[1.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]])
bads = {}
for where, val in (((0, 0), np.inf), ((1, 2), -np.inf), ((2, 2), np.nan)):
    for base_name, base in (("spd", spd), ("tri", tri)):
        m = base.copy()
        m[where] = val
        bads[f"{base_name}{where}={val}"] = m
bads["stack"] = np.stack([spd, bads["tri(0, 0)=inf"]])
bads["float32"] = bads["spd(0, 0)=inf"].astype(np.float32)
out = {}
for label, m in bads.items():
    x = be.from_numpy(m)
    for name, fn in calls.items():
        if name == "lstsq" and m.ndim > 2:
            continue
        try:
            r = fn(x)
            if be.lazy:
                be.bench.materialize(r if not isinstance(r, tuple) else r[0])
            out[f"{label} {name}"] = "returned"
        except xl.LinAlgError as exc:
            out[f"{label} {name}"] = "LinAlgError: " + str(exc)
bad = bads["tri(0, 0)=inf"]
if be.bench.function_compiler == "jax.jit":
    # under the compiler: NaN for the non-finite member, the right factors for the other
    import jax
    stack = be.from_numpy(np.stack([bad, spd]))
    u, s, vh = jax.jit(xl.svd)(stack)
    s = np.asarray(s)
    ref = np.linalg.svd(spd, compute_uv=False)
    out["jit"] = [bool(np.isnan(s[0]).all()), bool(np.allclose(s[1], ref)),
                  bool(np.isnan(np.asarray(jax.jit(xl.pinv)(stack))[0]).all())]
print("RESULT " + json.dumps(out))
"""


def test_no_svd_path_hands_lapack_an_input_it_loops_on(backend: BackendCase) -> None:
    """Some non-finite matrices make LAPACK's gesdd loop forever (NumPy's, so
    array-api-strict's, and jaxlib's full SVD, eagerly and under jax.jit): on
    every backend, for NaN, inf and -inf at several places, a stack and float32, each
    function of the SVD family raises "did not converge" and returns, and under
    jax.jit the member is NaN while its finite neighbour is right. Run in a child
    process, so that a regression is a failure with a timeout, not a hung suite."""
    import json
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", _NO_LOOP_SCRIPT, backend.name, json.dumps(_SPD.tolist())],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))
    out = json.loads(line[len("RESULT "):])
    for name, got in out.items():
        if name == "jit":
            assert got == [True, True, True], got
            continue
        assert got.startswith("LinAlgError"), (name, got)
        assert "did not converge" in got, (name, got)



class _CheckedOnly:
    """Within: `name`'s fast path for arrays of type `cls` is out of its table, so a
    call takes the checked path with exactly the same arguments (no ``xp=``)."""

    def __init__(self, name: str, cls: type) -> None:
        self.table, self.cls = FAST_LINALG[name], cls

    def __enter__(self) -> None:
        self.saved = self.table.pop(self.cls, None)

    def __exit__(self, *exc: object) -> None:
        if self.saved is not None:
            self.table[self.cls] = self.saved


def _torch_outcome(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """("ok", result type, outputs as (type, dtype, shape, layout, requires_grad,
    conj bit, neg bit, values) tuples) or ("raises", type, message)."""
    try:
        out = fn(*args, **kwargs)
    except Exception as exc:  # compared: type and message
        return ("raises", type(exc), str(exc))
    outs = tuple(out) if isinstance(out, tuple) else (out,)
    return ("ok", type(out), [(type(u), u.dtype, tuple(u.shape), u.layout, u.requires_grad, u.is_conj(), u.is_neg(),
                               None if u.is_meta else
                               u.detach().resolve_conj().resolve_neg().cpu().to_dense().double().numpy().copy()
                               if not u.is_complex() else
                               u.detach().resolve_conj().resolve_neg().cpu().to_dense().numpy().copy())
                              for u in outs])


def _torch_same(fast: Any, checked: Any, what: str) -> None:
    assert fast[0] == checked[0], f"{what}: fast path {fast} but checked path {checked}"
    if fast[0] == "raises":
        assert fast[1:] == checked[1:], f"{what}: {fast[1:]} != {checked[1:]}"
        return
    assert fast[1] is checked[1], f"{what}: {fast[1]} != {checked[1]}"
    for i, (u, v) in enumerate(zip(fast[2], checked[2], strict=True)):
        assert u[:7] == v[:7], f"{what}, output {i}: {u[:7]} != {v[:7]}"
        if u[7] is not None or v[7] is not None:
            np.testing.assert_array_equal(u[7], v[7], err_msg=f"{what}, output {i}")


def _torch_hostile(torch: Any) -> dict[str, Any]:
    """Tensors of exactly ``torch.Tensor`` that a fast path must refuse or take as
    the checked path does: views, lazy conjugate/negative bits, autograd, non-dense
    layouts, other devices and dtypes."""
    import warnings

    spd = torch.tensor(_SPD)
    c = torch.tensor(ONE["complex128"])
    out = {
        "transposed": spd.mT,
        "strided": torch.tensor(np.repeat(_SPD, 2, axis=1))[:, ::2],
        "offset-view": torch.tensor(np.vstack([np.ones((1, 3)), _SPD]))[1:],
        "conj-bit": c.conj(),
        "neg-bit": torch._neg_view(spd),
        "requires-grad": spd.clone().requires_grad_(),
        "bfloat16": spd.to(torch.bfloat16),
        "float16": spd.to(torch.float16),
        "int": torch.tensor(ONE["int"]),
        "bool": torch.eye(3, dtype=torch.bool),
        "meta": torch.empty((3, 3), dtype=torch.float64, device="meta"),
        "singular": torch.ones((3, 3), dtype=torch.float64),
        "nan": torch.tensor(ONE["nan"]),
        "inf": torch.tensor(ONE["inf"]),
        "big": torch.tensor(_RNG.standard_normal((70, 70)) + 70 * np.eye(70)),
        "stack": torch.tensor(_STACK),
        "rect": torch.tensor(ONE["rect"]),
        "vector": torch.tensor(_V),
        "scalar": torch.tensor(2.0, dtype=torch.float64),
        "empty": torch.zeros((0, 3), dtype=torch.float64),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch's sparse and nested tensors are "beta")
        out["sparse-coo"] = spd.to_sparse()
        out["sparse-coo-vector"] = torch.tensor(_V).to_sparse()
        out["sparse-csr"] = spd.to_sparse_csr()
        out["nested"] = torch.nested.nested_tensor([spd, 2 * spd])
        out["mkldnn"] = spd.float().to_mkldnn()
    return out


#: second operands for the two-operand ops: the case's tensor beside itself, a
#: float64 vector, and a vector of one element (broadcasting the contracted axis)
def _torch_seconds(torch: Any, x: Any) -> list[Any]:
    return [x, torch.tensor(_V), torch.ones(1, dtype=torch.float64), torch.tensor(_V, dtype=torch.float32)]


@pytest.mark.parametrize("name", _names())
def test_torch_hostile_tensors(name: str) -> None:
    """Every fast path on torch's hostile tensors (views, conj/neg bits, autograd,
    sparse, nested, mkldnn, meta, low precision, integer, a 70×70 matrix, a stack,
    wrong ranks), also under ``torch.no_grad`` and inference mode: the checked
    path's answer (the same call with the fast path out of the table) bit for bit,
    layout, requires_grad and the lazy bits included, or its error."""
    torch = pytest.importorskip("torch")
    op = OPERATIONS[name]
    variants = [dict(op.kwargs), *({**op.kwargs, **v} for v in VARIANTS.get(name, []))]
    for mode, ctx in (("grad", torch.enable_grad), ("no_grad", torch.no_grad), ("inference", torch.inference_mode)):
        for case, x in _torch_hostile(torch).items():
            for args in ([(x,)] if op.arity == 1 else
                         [(x, y) for y in _torch_seconds(torch, x)] + [(y, x) for y in _torch_seconds(torch, x)[1:]]):
                for kwargs in variants:
                    what = f"{name}({case}, {[tuple(a.shape) if a.layout == torch.strided and not a.is_nested else a.layout for a in args]}, {kwargs}) under {mode}"
                    with ctx():
                        fast = _torch_outcome(op.func, *args, **kwargs)
                        with _CheckedOnly(name, torch.Tensor):
                            checked = _torch_outcome(op.func, *args, **kwargs)
                    _torch_same(fast, checked, what)


def test_torch_fast_paths_under_vmap() -> None:
    """Inside torch.func's transforms the fast paths step aside (no value checks
    there): the result is the checked path's, bit for bit."""
    torch = pytest.importorskip("torch")
    from torch.func import vmap

    stack = torch.tensor(_STACK)
    for name in _names():
        op = OPERATIONS[name]
        if op.arity != 1:
            continue
        fn = lambda m, f=op.func, kw=dict(op.kwargs): f(m, **kw)  # noqa: E731
        fast = _torch_outcome(vmap(fn), stack)
        with _CheckedOnly(name, torch.Tensor):
            checked = _torch_outcome(vmap(fn), stack)
        _torch_same(fast, checked, f"vmap({name})")


#: the torch functions whose small CPU matrices run NumPy's gufunc on a zero-copy
#: view (``Adapter.small_numpy_view``: sides up to 64, up to 16 matrices), on both paths
_TORCH_ON_NUMPY = ("det", "slogdet", "eigvalsh", "eig", "eigvals", "svdvals", "inv")


@pytest.mark.parametrize("name", _TORCH_ON_NUMPY)
def test_torch_small_matrices_take_numpys_routine(name: str) -> None:
    """Up to 64×64 (one matrix, or a stack of up to 16), a plain CPU tensor's result
    is NumPy's for the same values, bit for bit, on the fast and the checked path;
    beyond (65×65, 17 matrices), autograd and the lazy bits: torch's own kernel,
    the fast path stepping aside. The result never shares memory with `x`."""
    torch = pytest.importorskip("torch")
    op = OPERATIONS[name]
    rng = np.random.default_rng(64)

    def spd(*shape: int) -> np.ndarray:
        m = rng.standard_normal(shape)
        return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])

    cases = {"1x1": spd(1, 1), "64": spd(64, 64), "stack-16": spd(16, 3, 3), "float32": spd(4, 4).astype(np.float32),
             "complex64": (spd(4, 4) + 1j * np.triu(spd(4, 4), 1)).astype(np.complex64),
             "fortran": np.asfortranarray(spd(5, 5)), "65": spd(65, 65), "stack-17": spd(17, 3, 3)}
    def numpy_result(t: Any) -> Any:  # NumPy's backend on the same values, as tensors
        r = op.func(t.numpy())
        if isinstance(r, tuple):
            return type(r)(*(torch.from_numpy(np.asarray(v)) for v in r))
        return torch.from_numpy(np.asarray(r))

    for case, host in cases.items():
        x = torch.from_numpy(host)
        fast = _torch_outcome(op.func, x)
        with _CheckedOnly(name, torch.Tensor):
            checked = _torch_outcome(op.func, x)
        _torch_same(fast, checked, f"{name}({case})")
        assert fast[0] == "ok", (name, case, fast)
        via_numpy = _torch_outcome(numpy_result, x)
        small = max(host.shape[-2:]) <= 64 and int(np.prod(host.shape[:-2])) <= 16
        if small:  # NumPy's routine: NumPy's bits
            _torch_same(fast, via_numpy, f"{name}({case}) against NumPy's")
        out = op.func(x)
        for t in (tuple(out) if isinstance(out, tuple) else (out,)):
            assert t.data_ptr() != x.data_ptr() or not t.numel(), (name, case)
    # autograd, the conjugate bit: torch's own kernel (x.numpy() refuses them)
    x = torch.tensor(spd(3, 3), requires_grad=True)
    out = op.func(x)
    assert (out[0] if isinstance(out, tuple) else out).requires_grad, name
