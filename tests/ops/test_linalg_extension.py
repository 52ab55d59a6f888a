"""The linalg extension's functions as a whole: trace-safe under jax.jit, lazy on
Dask (no compute while the graph is built), differentiable with torch and JAX,
numpy.matrix refused with the fix, every result in the input's library."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import xlinalg as xl
from conftest import BackendCase, require_backend

SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
B3 = np.array([[1.0, 2.0], [0.5, -1.0], [2.0, 0.0]])
V3 = np.array([1.0, -2.0, 0.5])

#: name -> (the call on arrays (x, y, v), a NumPy reference on the same arrays)
CALLS: dict[str, tuple[Any, Any]] = {
    "inv": (lambda x, y, v: xl.inv(x), lambda x, y, v: np.linalg.inv(x)),
    "cholesky": (lambda x, y, v: xl.cholesky(x), lambda x, y, v: np.linalg.cholesky(x)),
    "det": (lambda x, y, v: xl.det(x), lambda x, y, v: np.linalg.det(x)),
    "slogdet": (lambda x, y, v: xl.slogdet(x).logabsdet, lambda x, y, v: np.linalg.slogdet(x)[1]),
    "eigh": (lambda x, y, v: xl.eigh(x).eigenvalues, lambda x, y, v: np.linalg.eigvalsh(x)),
    "eigvalsh": (lambda x, y, v: xl.eigvalsh(x), lambda x, y, v: np.linalg.eigvalsh(x)),
    "eig": (lambda x, y, v: xl.matrix_norm(xl.eig(x).eigenvalues[..., None], ord="fro"),
            lambda x, y, v: np.linalg.norm(np.linalg.eigvals(x))),
    "eigvals": (lambda x, y, v: xl.vector_norm(xl.eigvals(x)), lambda x, y, v: np.linalg.norm(np.linalg.eigvals(x))),
    "lstsq": (lambda x, y, v: xl.lstsq(y, v).solution, lambda x, y, v: np.linalg.lstsq(y, v, rcond=None)[0]),
    "pinv": (lambda x, y, v: xl.pinv(y), lambda x, y, v: np.linalg.pinv(y)),
    "matrix_rank": (lambda x, y, v: xl.matrix_rank(y), lambda x, y, v: np.linalg.matrix_rank(y)),
    "matrix_norm": (lambda x, y, v: xl.matrix_norm(x, ord=2), lambda x, y, v: np.linalg.norm(x, 2)),
    "vector_norm": (lambda x, y, v: xl.vector_norm(v, ord=3), lambda x, y, v: np.linalg.norm(v, 3)),
    "matrix_power": (lambda x, y, v: xl.matrix_power(x, -2), lambda x, y, v: np.linalg.matrix_power(x, -2)),
    "matrix_transpose": (lambda x, y, v: xl.matrix_transpose(y), lambda x, y, v: y.T),
    "diagonal": (lambda x, y, v: xl.diagonal(x, offset=1), lambda x, y, v: np.diagonal(x, 1)),
    "trace": (lambda x, y, v: xl.trace(x), lambda x, y, v: np.trace(x)),
    "outer": (lambda x, y, v: xl.outer(v, v), lambda x, y, v: np.outer(v, v)),
    "tensordot": (lambda x, y, v: xl.tensordot(x, y, axes=1), lambda x, y, v: np.tensordot(x, y, axes=1)),
    "vecdot": (lambda x, y, v: xl.vecdot(x, v), lambda x, y, v: x @ v),
    "cross": (lambda x, y, v: xl.cross(x, v), lambda x, y, v: np.cross(x, v)),
}


#: issue 38's functions: the 2025.12 linalg extension's but the five xlinalg had, and lstsq
ISSUE_38 = {"cholesky", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv",
            "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv",
            "slogdet", "tensordot", "trace", "vecdot", "vector_norm", "lstsq"}


def test_every_new_function_is_listed() -> None:
    """Each of issue 38's functions has a call here; a later operation needs none (its
    declaration gives the derived tests, torch.compile's below included: the
    add-an-operation recipe of docs/contributing.md names no test file)."""
    from xlinalg._capabilities import OPERATIONS

    assert set(CALLS) == ISSUE_38
    assert set(CALLS) <= set(OPERATIONS)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_results_on_every_backend(backend: BackendCase, name) -> None:
    call, ref = CALLS[name]
    out = call(backend.arr(SPD), backend.arr(B3), backend.arr(V3))
    backend.assert_close(out, ref(SPD, B3, V3), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_jax_jit(name) -> None:
    require_backend("jax-cpu")
    import jax
    import jax.numpy as jnp

    call, ref = CALLS[name]
    f = jax.jit(call)
    np.testing.assert_allclose(np.asarray(f(jnp.asarray(SPD), jnp.asarray(B3), jnp.asarray(V3))),
                               ref(SPD, B3, V3), rtol=1e-9, atol=1e-9)


def test_jax_jit_failing_members_are_nan() -> None:
    require_backend("jax-cpu")
    import jax
    import jax.numpy as jnp

    a = jnp.asarray(np.stack([np.eye(2), np.ones((2, 2))]))
    inv = np.asarray(jax.jit(xl.inv)(a))  # errors="raise" cannot raise under a trace
    np.testing.assert_allclose(inv[0], np.eye(2))
    assert np.isnan(inv[1]).all()
    low = np.asarray(jax.jit(xl.cholesky)(a))
    np.testing.assert_allclose(low[0], np.eye(2))
    assert np.isnan(low[1]).all()
    w = np.asarray(jax.jit(xl.eigvalsh)(jnp.asarray([[np.nan, 0.0], [0.0, 1.0]])))  # no error: NaN
    assert np.isnan(w).any()


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("xlinalg computed while building the graph")


@pytest.mark.parametrize("name", sorted(CALLS))
def test_dask_is_lazy(name) -> None:
    be = require_backend("dask")
    import dask

    call, ref = CALLS[name]
    with dask.config.set(scheduler=_refuse):
        out = call(be.from_numpy(SPD), be.from_numpy(B3), be.from_numpy(V3))
    assert hasattr(out, "dask"), type(out)
    np.testing.assert_allclose(be.to_numpy(out), ref(SPD, B3, V3), rtol=1e-9, atol=1e-9)


def test_dask_errors_at_compute() -> None:
    be = require_backend("dask")
    import dask

    a = be.from_numpy(np.stack([np.eye(2)] * 3 + [np.ones((2, 2))]))
    with dask.config.set(scheduler=_refuse):
        x = xl.inv(a)
        low = xl.cholesky(a)
    with pytest.raises(xl.LinAlgError, match=r"inv: `x` has 1 singular matrix .* at batch index 3"):
        be.to_numpy(x)
    with pytest.raises(xl.LinAlgError, match=r"cholesky: `x` has 1 not positive definite matrix .* at batch index 3"):
        be.to_numpy(low)
    np.testing.assert_allclose(be.to_numpy(x[:3]), np.stack([np.eye(2)] * 3))  # other chunks compute


#: functions with a gradient to check: name -> scalar function of (x, y, v)
GRADS = {
    "inv": lambda x, y, v: xl.inv(x)[0, 1],
    "cholesky": lambda x, y, v: xl.cholesky(x)[2, 1],
    "det": lambda x, y, v: xl.det(x),
    "slogdet": lambda x, y, v: xl.slogdet(x).logabsdet,
    "eigvalsh": lambda x, y, v: xl.eigvalsh(x)[-1],
    "lstsq": lambda x, y, v: xl.lstsq(y, v).solution[1],
    "pinv": lambda x, y, v: xl.pinv(y)[1, 2],
    "matrix_norm": lambda x, y, v: xl.matrix_norm(y),
    "vector_norm": lambda x, y, v: xl.vector_norm(v),
}


def _numeric_grad(f: Any, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    g = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


def _which(name: str) -> int:
    return {"lstsq": 1, "pinv": 1, "matrix_norm": 1, "vector_norm": 2}.get(name, 0)


@pytest.mark.parametrize("name", sorted(GRADS))
@pytest.mark.parametrize("library", ["torch-cpu", "jax-cpu"])
def test_autodiff(name, library) -> None:
    require_backend(library)
    args = [SPD, B3, V3]
    i = _which(name)

    def f_np(xi: np.ndarray) -> float:
        a = list(args)
        a[i] = xi
        return float(np.asarray(GRADS[name](*(np.asarray(t) for t in a))))

    expected = _numeric_grad(f_np, args[i])
    if library == "torch-cpu":
        import torch

        ts = [torch.tensor(t, requires_grad=(k == i)) for k, t in enumerate(args)]
        GRADS[name](*ts).backward()
        got = ts[i].grad.numpy()
    else:
        import jax
        import jax.numpy as jnp

        def f(xi: Any) -> Any:
            a = [jnp.asarray(t) for t in args]
            a[i] = xi
            return GRADS[name](*a)

        got = np.asarray(jax.grad(f)(jnp.asarray(args[i])))
    if name == "cholesky":  # only the lower triangle is read: compare the symmetric part
        got, expected = np.tril(got + got.T - np.diag(np.diag(got))), np.tril(expected + expected.T - np.diag(np.diag(expected)))
    if name == "eigvalsh":
        got, expected = np.tril(got + got.T - np.diag(np.diag(got))), np.tril(expected + expected.T - np.diag(np.diag(expected)))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # (NumPy's, on making a matrix)
@pytest.mark.parametrize("name", sorted(CALLS))
def test_numpy_matrix_is_refused_with_the_fix(name) -> None:
    call, _ = CALLS[name]
    m = np.asmatrix(SPD)
    # each argument the function reads is a numpy.matrix (a vector: a 1×3 one)
    with pytest.raises(TypeError, match=r"is a numpy.matrix .* pass `numpy.asarray\("):
        call(m, np.asmatrix(B3), np.asmatrix(V3))


def test_results_keep_the_device(backend: BackendCase) -> None:
    x, y, v = backend.arr(SPD), backend.arr(B3), backend.arr(V3)
    for name, (call, _) in CALLS.items():
        out = call(x, y, v)
        assert xl.backend_of(out) == backend.name, name


def test_matrix_rank_default_rtol_everywhere(backend: BackendCase) -> None:
    # 2 * eps * 1.5 relative: kept under the standard's max(M, N) * eps = 2 * eps? no:
    # 3e-16 < 4.4e-16 is dropped; 6e-16 kept; JAX's native default (10x) would drop it
    s = backend.np(xl.matrix_rank(backend.arr(np.stack([np.diag([1.0, 3e-16]), np.diag([1.0, 6e-16])]))))
    np.testing.assert_array_equal(s, [1, 2])
    assert math.isclose(2 * np.finfo(float).eps, 4.440892098500626e-16)


# ---------------------------------------------------------------------- torch.compile
# Dynamo's whole-graph capture (fullgraph=True: any graph break fails) with the
# aot_eager backend: what trace safety means for torch.compile, at ~0.1 s a function.
# Inductor's C++ code generation costs seconds per function on CPU (about 6 s for
# inv here), so it runs on one function of each kind of call below.
def _torch_args() -> tuple[Any, ...]:
    be = require_backend("torch-cpu")
    return tuple(be.from_numpy(a) for a in (SPD, B3, V3))


def _declared_traceable() -> list[str]:
    from xlinalg._lib._declare import operations

    # the linear algebra (elementwise `divide` and `exp` enter `np.errstate`, which
    # Dynamo cannot trace: a graph break, compiled around without fullgraph=True)
    return [op.name for op in operations("linalg") if op.jit]


@pytest.mark.parametrize("name", _declared_traceable())
def test_torch_compile_fullgraph(name) -> None:
    """Every declared linear-algebra function that is trace-safe (``declare(jit=True)``), on its
    declared sample: compiled whole, as eager, and the NumPy reference's values."""
    import functools

    import torch

    from xlinalg._lib._declare import OPERATIONS

    be = require_backend("torch-cpu")
    op = OPERATIONS[name]
    host = tuple(np.ascontiguousarray(a) for a in op.sample_args())
    args = tuple(be.from_numpy(a) for a in host)
    fn = functools.partial(op.func, **op.kwargs)
    eager = fn(*args)  # xlinalg has met torch tensors (see the first-sight test below)
    torch._dynamo.reset()
    compiled = torch.compile(lambda *a: fn(*a), fullgraph=True, backend="aot_eager")(*args)
    outs = tuple(compiled) if isinstance(compiled, tuple) else (compiled,)
    for e, c in zip(tuple(eager) if isinstance(eager, tuple) else (eager,), outs, strict=True):
        np.testing.assert_allclose(c.numpy(), e.numpy(), rtol=1e-12, atol=1e-12)
    op.check(tuple(c.numpy() for c in outs), host)


@pytest.mark.parametrize("name", ["inv", "eigh", "lstsq", "matrix_norm", "vecdot"])
def test_torch_compile_inductor(name) -> None:
    """A factorization with an error rule, an eigensolver, least squares, a norm and a
    product: compiled by Inductor (torch.compile's default backend), as eager."""
    import torch

    call, ref = CALLS[name]
    args = _torch_args()
    eager = call(*args)
    torch._dynamo.reset()
    compiled = torch.compile(call, fullgraph=True)(*args)
    np.testing.assert_allclose(compiled.numpy(), eager.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(compiled.numpy(), ref(SPD, B3, V3), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", ["inv", "cholesky", "solve", "matrix_power"])
def test_torch_compile_failing_members_are_nan(name) -> None:
    """As under jax.jit: a compiled graph cannot raise xlinalg's LinAlgError (a failing
    kernel would raise torch's own, with its wording, past xlinalg): NaN for just the
    failing members, whatever `errors`."""
    import torch

    be = require_backend("torch-cpu")
    a = be.from_numpy(np.stack([np.eye(2), np.ones((2, 2))]))
    b = be.from_numpy(np.ones((2, 2)))
    fn = {"inv": xl.inv, "cholesky": xl.cholesky, "solve": lambda x: xl.solve(x, b),
          "matrix_power": lambda x: xl.matrix_power(x, -1)}[name]
    with pytest.raises(xl.LinAlgError, match="at batch index 1"):
        fn(a)  # eager: the error naming the member
    torch._dynamo.reset()
    out = torch.compile(fn, fullgraph=True, backend="aot_eager")(a).numpy()
    np.testing.assert_allclose(out[0], np.linalg.solve(np.eye(2), np.ones((2, 2))) if name == "solve"
                               else np.eye(2))
    assert np.isnan(out[1]).all()


def test_torch_compile_at_first_sight() -> None:
    """The first call xlinalg sees with torch tensors may be inside torch.compile: the
    type's lookup takes a lock, a graph break (fullgraph=True refuses it; the default
    compiles around it), and the results match eager ones. A fresh process, so that
    xlinalg has not met torch tensors before."""
    import subprocess
    import sys

    require_backend("torch-cpu")
    code = (
        "import numpy as np, torch, xlinalg as xl\n"
        "x = torch.from_numpy(np.array([[4.0, 1.0], [1.0, 3.0]]))\n"
        "out = torch.compile(lambda a: xl.inv(a) + xl.eigvalsh(a)[..., None], backend='aot_eager')(x)\n"
        "np.testing.assert_allclose(out.numpy(), np.linalg.inv(x.numpy()) + np.linalg.eigvalsh(x.numpy())[:, None])\n"
        "print('ok')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().endswith("ok")
