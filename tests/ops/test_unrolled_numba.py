"""NumPy's compiled unrolled kernel (numba, issue 39), and the backends that use it.

* The generated file is the generator's output (the schedule changed: regenerate).
* The singular members are the rule's (``xlinalg._lib._singular``) and the other
  results equal the LAPACK path's (``method="native"``) on the peer matrices
  (near-singular, exactly singular, mixed batches, NaN/inf),
  float32/float64/complex, C-ordered, transposed and broadcast batches, one and
  several right-hand sides, on numpy, torch-cpu and jax-cpu (eager: the NumPy
  view route) and Dask (per block).
* ``import xlinalg`` does not import numba.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import xlinalg as xl
from conftest import kernel_input_converter, require_backend
from xlinalg import _unrolled as U
from xlinalg._kernels import _numba
from xlinalg._lib import _singular

pytest.importorskip("numba")

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_generated_file_is_current() -> None:
    text = pathlib.Path(_numba.GENERATED_FILE).read_text(encoding="utf-8")
    assert text == _numba.generated_source(U.MAX_N), "run: python -m xlinalg._kernels._numba"


def test_import_does_not_load_numba() -> None:
    code = "import sys, xlinalg, xlinalg._unrolled; assert 'numba' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def _peer_batch(n: int, dtype: str, rng: np.random.Generator) -> np.ndarray:
    """A mixed batch: well-conditioned, exactly singular (zero column, repeated row,
    rank one, zero), near-singular (cond ~1e3 float32, ~1e10 float64), a zero
    leading pivot, NaN and inf members."""
    base = rng.standard_normal((12, n, n))
    if np.dtype(dtype).kind == "c":
        base = base + 1j * rng.standard_normal((12, n, n))
    a = base + 2 * np.sqrt(n) * np.eye(n)
    # The singular members are singular in exact arithmetic AND in every rounding
    # order (entries that eliminate exactly): a repeated row of random entries, or
    # a rank one of 1..n, leaves a rounding residue near the rule's n*eps
    # tolerance, where LAPACK's sgetrf and the schedule may fall either side.
    a[1, :, 0] = 0  # zero column
    if n > 1:
        a[2, 0, 0] = a[2, 1, 0] = 64  # the pivot row, repeated: eliminates to exact zeros
        a[2, 1, 1:] = a[2, 0, 1:]
        p2 = 2.0 ** np.arange(n)
        a[3] = np.outer(p2, p2[::-1])  # rank one, powers of two
        a[4] = base[4] + 4 * np.eye(n)
        a[4, 1] = a[4, 0]
        a[4, 1, -1] += (1e-2 if dtype in ("float32", "complex64") else 1e-8) * abs(a[4, 0, -1]) + 1e-3
        a[5, 0, 0] = 0  # a zero leading pivot: pivoting handles it
    a[6, 0, 0] = np.nan
    a[7, -1, -1] = np.inf
    a[8] = 0
    return a.astype(dtype)


def _both(backend: str, a: np.ndarray, b: np.ndarray, errors: str) -> tuple[object, object]:
    """(native, unrolled) results, or the LinAlgError each raised."""
    conv = {"numpy": np.asarray}
    if backend == "torch-cpu":
        import torch

        conv[backend] = lambda v: torch.from_numpy(np.ascontiguousarray(v))
    elif backend == "jax-cpu":
        import jax.numpy as jnp

        conv[backend] = jnp.asarray
    f = conv[backend]
    out = []
    for method in ("native", "unrolled"):
        try:
            out.append(np.asarray(xl.to(xl.solve(f(a), f(b), errors=errors, method=method), "numpy")))
        except xl.LinAlgError as exc:
            out.append(exc)
    return out[0], out[1]


_COMBOS = [("numpy", d) for d in ("float32", "float64", "complex64", "complex128")] + [
    (b, d) for b in ("torch-cpu", "jax-cpu") for d in ("float32", "float64")]


@pytest.mark.parametrize(("backend", "dtype"), _COMBOS)
@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_singular_rule_and_results(backend: str, dtype: str, n: int) -> None:
    """The members named (errors="raise") and NaN (errors="nan") are the rule's
    (``xlinalg._lib._singular``, docs/semantics.md); NaN/inf in: all NaN, never
    named; the other members agree with the LAPACK path."""
    if backend != "numpy":
        require_backend(backend)
        if backend == "jax-cpu":
            import jax

            if not jax.config.read("jax_enable_x64") and dtype in ("float64", "complex128"):
                pytest.skip("JAX's 64-bit mode is off")
    rng = np.random.default_rng(n)
    a = _peer_batch(n, dtype, rng)
    b = rng.standard_normal((12, n, 2)).astype(dtype)
    b[9, 0, 1] = np.nan  # NaN in b only
    scale = _singular.column_scale(np, a)
    finite = _singular.finite_members(np, scale, b)
    rule = _singular.singular_mask(np, a) & finite
    assert rule[1]  # the peer batch has singular members,
    assert rule[8]
    assert not rule[0]  # and regular ones, near-singular included
    assert not rule[4]
    native, unrolled = _both(backend, a, b, "raise")
    assert isinstance(unrolled, xl.LinAlgError)
    assert unrolled.members == tuple(int(i) for i in np.flatnonzero(rule))
    native, unrolled = _both(backend, a, b, "nan")
    assert isinstance(unrolled, np.ndarray)
    assert isinstance(native, np.ndarray)
    allnan = np.isnan(unrolled).all(axis=(-2, -1))
    np.testing.assert_array_equal(allnan, rule | ~finite)
    assert not np.isnan(unrolled[~allnan]).any()
    ok = ~allnan & ~np.isnan(native).any(axis=(-2, -1))
    ok[4] = False  # near-singular: within cond * eps of each other, not rtol
    rtol = 1e-3 if dtype in ("float32", "complex64") else 1e-9
    np.testing.assert_allclose(unrolled[ok], native[ok], rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layouts_without_copy(dtype: str) -> None:
    """A transposed batch, a broadcast member and a vector right-hand side."""
    rng = np.random.default_rng(0)
    n = 4
    a = (rng.standard_normal((n, n, 50)) + 4 * np.eye(n)[..., None]).astype(dtype)
    at = np.moveaxis(a, -1, 0)  # (50, n, n), batch strided last
    assert not at.flags.c_contiguous
    b = rng.standard_normal((50, n, 3)).astype(dtype)
    ref = np.linalg.solve(at.astype(np.float64), b.astype(np.float64))
    tol = 1e-3 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(U.solve_unrolled(at, b), ref, rtol=tol, atol=tol)
    one = at[:1]  # broadcast against b's batch
    np.testing.assert_allclose(U.solve_unrolled(one, b), np.linalg.solve(one.astype(float), b.astype(float)),
                               rtol=tol, atol=tol)
    vec = b[0, :, 0]
    vref = np.linalg.solve(at.astype(float), np.broadcast_to(vec.astype(float)[:, None], (50, n, 1)))[..., 0]
    np.testing.assert_allclose(U.solve_unrolled(at, vec), vref, rtol=tol, atol=tol)
    multi = rng.standard_normal((2, 25, n, n)).astype(dtype) + 4 * np.eye(n, dtype=dtype)
    bm = rng.standard_normal((25, n, 1)).astype(dtype)
    np.testing.assert_allclose(U.solve_unrolled(multi, bm), np.linalg.solve(multi.astype(float), bm.astype(float)),
                               rtol=tol, atol=tol)


def test_big_endian_and_readonly() -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((20, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((20, 3, 1))
    ref = np.linalg.solve(a, b)
    ab = a.astype(">f8")
    ab.flags.writeable = False
    np.testing.assert_allclose(U.solve_unrolled(ab, b.astype(">f8")), ref, rtol=1e-12)


def test_torch_route_keeps_autograd() -> None:
    """A tensor that needs a gradient takes torch's own path (the view would drop it)."""
    torch = pytest.importorskip("torch")
    a = torch.eye(3, dtype=torch.float64).repeat(4, 1, 1).requires_grad_()
    b = torch.ones(4, 3, 1, dtype=torch.float64)
    x = U.solve_unrolled(a, b, compile=False)
    x.sum().backward()
    assert a.grad is not None
    plain = U.solve_unrolled(a.detach(), b)
    assert isinstance(plain, torch.Tensor)
    assert torch.equal(plain, x.detach())


def test_dask_blocks_use_the_kernel() -> None:
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(2)
    a = rng.standard_normal((40, 3, 3)) + 3 * np.eye(3)
    a[7] = 0
    b = rng.standard_normal((40, 3, 1))
    x = U.solve_unrolled(da.from_array(a, chunks=(10, 3, 3)), da.from_array(b, chunks=(10, 3, 1)), errors="nan")
    out = x.compute()
    assert np.isnan(out[7]).all()
    assert np.isfinite(np.delete(out, 7, axis=0)).all()
    with pytest.raises(xl.LinAlgError):
        U.solve_unrolled(da.from_array(a, chunks=(10, 3, 3)), da.from_array(b, chunks=(10, 3, 1))).compute()


def test_first_call_loads_from_disk_cache(tmp_path: pathlib.Path) -> None:
    """A second process loads the kernel numba cached on disk: no compile there.

    Deterministic: numba's own counters say whether the kernel came from the cache."""
    code = textwrap.dedent(
        """
        import numpy as np
        from xlinalg._kernels import _numba
        run = _numba.make_kernel(2, np.float64)
        run(np.eye(2)[None], np.ones((1, 2, 1)))
        d = _numba._DISPATCHERS[(2, "float64")]
        print(sum(d.stats.cache_hits.values()), sum(d.stats.cache_misses.values()))
        """
    )
    env = {**__import__("os").environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env)
            for _ in range(2)]
    hits = [tuple(int(v) for v in r.stdout.split()) for r in runs]
    assert hits[0][1] >= 1, hits  # compiled,
    assert hits[1][0] >= 1, hits  # then loaded


def test_warm_first_call_makes_the_first_call_a_disk_cache_load(tmp_path: pathlib.Path) -> None:
    """``warm_first_call`` (the study's Q4 first-call column): with numba's disk cache
    cold, a child process compiles the kernel into it and this process then *loads* it
    on its first call (numba's counters: a cache hit, no miss); a kernel already in the
    process is dropped, so the next call loads it again. Arrays that another kernel
    solves (array-api-strict) are left alone (False, no child)."""
    code = textwrap.dedent(
        """
        import numpy as np, xlinalg as xl
        from xlinalg import _unrolled as U
        from xlinalg._kernels import _numba
        a = (np.eye(2) * 3 + 1)[None].astype(np.float32)
        b = np.ones((1, 2, 1), np.float32)
        assert not _numba.cached_on_disk(2, "float32")
        assert U.warm_first_call(a, b)  # compiled in a child process
        assert not _numba.is_compiled(2, "float32")
        x = xl.solve(a, b, method="unrolled")
        np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-6)
        d = _numba._DISPATCHERS[(2, "float32")]
        print(sum(d.stats.cache_hits.values()), sum(d.stats.cache_misses.values()))
        assert U.warm_first_call(a, b)  # in the process now: dropped, loaded again next
        assert not _numba.is_compiled(2, "float32")
        xl.solve(a, b, method="unrolled")
        d = _numba._DISPATCHERS[(2, "float32")]
        print(sum(d.stats.cache_hits.values()), sum(d.stats.cache_misses.values()))
        import array_api_strict as s
        assert not U.warm_first_call(s.asarray(a), s.asarray(b))
        """
    )
    env = {**__import__("os").environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert [tuple(int(v) for v in line.split()) for line in out.stdout.split("\n") if line] == [(1, 0), (1, 0)]


@pytest.mark.parametrize("backend", ["numpy", "torch-cpu", "jax-cpu"])
def test_solve_ex_mask_without_sync(backend: str) -> None:
    """(x, singular) together; under jax.jit too (no host read possible there)."""
    from xlinalg._solve_ex import solve_ex

    rng = np.random.default_rng(4)
    a = _peer_batch(3, "float64", rng)
    b = rng.standard_normal((12, 3, 1))
    want = _singular.singular_mask(np, a) & _singular.finite_members(np, _singular.column_scale(np, a), b)
    conv = kernel_input_converter(backend, "float64")
    if backend == "jax-cpu":
        import jax

        x, sing = jax.jit(solve_ex)(conv(a), conv(b))
        np.testing.assert_array_equal(np.asarray(sing), want)
    x, sing = solve_ex(conv(a), conv(b))
    assert type(sing) is type(conv(a))
    np.testing.assert_array_equal(np.asarray(xl.to(sing, "numpy")), want)
    xn = np.asarray(xl.to(x, "numpy"))
    assert np.isnan(xn[want]).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 5])
def test_tiled_kernel_is_the_plain_one(dtype: str, n: int) -> None:
    """The tiled kernel (real dtypes' default: vectorized across a tile of systems)
    gives bitwise the results and singular verdicts of the one-system-per-iteration
    kernel, across tile and chunk boundaries and their ragged tail, with the peer
    members (singular, near-singular, NaN/inf in a or b) scattered through the
    batch, for C-ordered and transposed members and one or several columns."""
    rng = np.random.default_rng(n)
    nb = 2 * _numba.CHUNK + _numba.TILE + 7  # two full chunks, a full tile and a ragged one
    a = (rng.standard_normal((nb, n, n)) + 2 * np.sqrt(n) * np.eye(n)).astype(dtype)
    peers = _peer_batch(n, dtype, rng)
    where = rng.choice(nb, size=(40, peers.shape[0]), replace=False)
    for row in where:
        a[row] = peers
    a[-1] = peers[1]  # the last member singular (the ragged tile)
    dt = np.dtype(dtype)
    tol = np.empty(0, dt).real.dtype.type(_singular.tolerance(np, dt, n))
    tiled, plain = _numba._dispatcher(n, dt, tiled=True), _numba._dispatcher(n, dt, tiled=False)
    chunks = -(-nb // _numba.CHUNK)
    for k in (1, 3):
        b = rng.standard_normal((nb, n, k)).astype(dtype)
        b[where[0, 0], 0, -1] = np.nan
        b[where[1, 0], -1, 0] = np.inf
        for members in (a, np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)):
            out = []
            for fn, units in ((tiled, chunks), (plain, nb)):
                x, bad, st = np.empty((nb, n, k), dt), np.empty(nb, np.bool_), np.full(units, 7, np.uint8)
                fn(members, b, x, bad, st, dt.type(1), dt.type(np.nan), tol)
                out.append((x, bad, st))
            np.testing.assert_array_equal(out[0][0], out[1][0])  # NaN where NaN, bit for bit
            np.testing.assert_array_equal(out[0][1], out[1][1])
            assert out[0][1].sum() >= 40  # the singular peers were named
            assert np.isnan(out[0][0][where[0, 0]]).all()
            # the status flags: set exactly where some member's solution is not finite
            # (singular, non-finite input, overflow), per member (plain) and per chunk (tiled)
            dirty = ~np.isfinite(out[1][0]).all(axis=(-2, -1))
            np.testing.assert_array_equal(out[1][2], dirty)
            pad = np.zeros(chunks * _numba.CHUNK, bool)
            pad[:nb] = dirty
            np.testing.assert_array_equal(out[0][2], pad.reshape(chunks, -1).any(axis=1))


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_status_flags_say_clean_only_when_clean(dtype: str) -> None:
    """``make_kernel``'s `clean` (the kernel's status flags, no pass over `x`): True for
    a batch of regular members, False as soon as one member of any chunk is singular,
    has NaN or inf in `a` or `b`, or has a finite input whose solution overflows
    (which the solver then re-checks with the rule's reference: docs/unrolled.md)."""
    n, nb = 3, 3 * _numba.CHUNK + 5
    rng = np.random.default_rng(5)
    dt = np.dtype(dtype)
    a = rng.standard_normal((nb, n, n)) + 2 * np.sqrt(n) * np.eye(n)
    b = rng.standard_normal((nb, n, 2))
    run = _numba.make_kernel(n, dt)
    assert run(a.astype(dt), b.astype(dt))[2] is True
    big = 1e30 if dt in (np.float32, np.complex64) else 1e300
    spoilers = {
        "singular": lambda a, b: a.__setitem__((nb - 1, slice(None), 0), 0.0),  # a zero column
        "nan in a": lambda a, b: a.__setitem__((_numba.CHUNK + 3, 1, 2), np.nan),
        "inf in b": lambda a, b: b.__setitem__((2 * _numba.CHUNK, 2, 1), np.inf),
        "overflow": lambda a, b: (a.__setitem__(7, np.diag([1 / big, 1.0, 1.0])),
                                  b.__setitem__((7, 0, 0), big)),
    }
    for name, spoil in spoilers.items():
        a1, b1 = a.copy(), b.copy()
        spoil(a1, b1)
        x, bad, clean = run(a1.astype(dt), b1.astype(dt))
        assert clean is False, name
        assert not np.isfinite(x).all(), name
        assert bad.any() == (name == "singular"), name


def test_jax_takes_the_kernels_result_without_a_copy() -> None:
    """JAX CPU arrays solved by the numba kernel get its fresh result aliased through
    DLPack (a copy of the whole result cost as much as the solve at 1e6 systems:
    docs/performance.md); a result JAX cannot alias (not C-ordered) is copied, with
    the same values, and so is the bool mask where DLPack does not carry it."""
    require_backend("jax-cpu")
    import jax.numpy as jnp

    from xlinalg._dispatch import adapter_for

    like = jnp.ones((4, 3, 1), dtype=jnp.float32)
    ad = adapter_for((like,), ("a",))
    fresh = _numba._aligned_empty((4, 3, 1), np.dtype(np.float32))  # as the kernel's outputs
    assert fresh.ctypes.data % _numba.ALIGN == 0
    fresh[...] = np.arange(12.0).reshape(4, 3, 1)
    out = ad.from_numpy_view(fresh, like)
    assert out.unsafe_buffer_pointer() == fresh.ctypes.data  # aliased, not copied
    np.testing.assert_array_equal(np.asarray(out), fresh)
    x, bad, _ = _numba.make_kernel(3, np.float32)(np.eye(3, dtype=np.float32)[None], np.ones((1, 3, 1), np.float32))
    assert x.ctypes.data % _numba.ALIGN == 0
    assert bad.ctypes.data % _numba.ALIGN == 0
    strided = np.arange(24.0, dtype=np.float32).reshape(4, 3, 2)[..., ::2]
    np.testing.assert_array_equal(np.asarray(ad.from_numpy_view(strided, like)), strided)
    mask = np.array([True, False, True])
    m = ad.from_numpy_view(mask, like)
    assert m.dtype == jnp.bool_
    np.testing.assert_array_equal(np.asarray(m), mask)
    # and through the solver: the values are the kernel's, in a JAX array
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((3000, 4, 4)) + 4 * np.eye(4)).astype(np.float32)
    b = rng.standard_normal((3000, 4, 2)).astype(np.float32)
    x = xl.solve(jnp.asarray(a), jnp.asarray(b), method="unrolled")
    assert isinstance(x, type(like))
    np.testing.assert_array_equal(np.asarray(x), xl.solve(a, b, method="unrolled"))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_jax_default_call_reads_and_returns_in_place(monkeypatch: pytest.MonkeyPatch, dtype: str) -> None:
    """The default call ``xl.solve(a, b)`` on jax-cpu arrays, where ``method="auto"``
    takes the numba kernel: the kernel reads `a` and `b` in JAX's own buffers (read-only
    NumPy views, no copy), and the JAX array returned is the kernel's output, aliased,
    on the input's device (issue 39: it costs numpy's call plus the hand-over)."""
    require_backend("jax-cpu")
    import jax
    import jax.numpy as jnp

    from xlinalg._unrolled import _solve as S
    from xlinalg.backends._jax_adapter import JaxAdapter

    if dtype == "float64" and not jax.config.read("jax_enable_x64"):
        pytest.skip("JAX's 64-bit mode is off")
    rng = np.random.default_rng(11)
    a_np = (rng.standard_normal((3000, 5, 5)) + 5 * np.eye(5)).astype(dtype)
    b_np = rng.standard_normal((3000, 5, 2)).astype(dtype)
    a, b = jnp.asarray(a_np), jnp.asarray(b_np)
    xl.solve(a, b, method="unrolled")  # the kernel in this process: auto takes it from here
    seen: dict[str, object] = {}
    views, hand = S._numpy_views, JaxAdapter.from_numpy_view

    def spy_views(ad: object, x: object, y: object) -> object:
        got = seen["views"] = views(ad, x, y)  # type: ignore[arg-type]
        return got

    def spy_hand(self: JaxAdapter, arr: np.ndarray, like: object) -> object:
        out = hand(self, arr, like)
        seen.setdefault("hand", []).append((arr, out))  # type: ignore[union-attr]
        return out

    monkeypatch.setattr(S, "_numpy_views", spy_views)
    monkeypatch.setattr(JaxAdapter, "from_numpy_view", spy_hand)
    x = xl.solve(a, b)
    va, vb = seen["views"]  # type: ignore[misc]
    assert va.ctypes.data == a.unsafe_buffer_pointer()
    assert not va.flags.writeable
    assert vb.ctypes.data == b.unsafe_buffer_pointer()
    assert not vb.flags.writeable
    (arr, out), = seen["hand"]  # type: ignore[misc]
    assert out is x
    assert x.unsafe_buffer_pointer() == arr.ctypes.data
    assert x.devices() == a.devices()
    assert x.dtype == a.dtype
    assert x.shape == (3000, 5, 2)
    np.testing.assert_array_equal(np.asarray(x), xl.solve(a_np, b_np, method="unrolled"))
