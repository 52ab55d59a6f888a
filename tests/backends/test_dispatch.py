"""Dispatch: mixing libraries and devices, host data (scalars, lists), explicit
``xp=``, results on the input's backend, ``backend_of``, ``to``, ``synchronize``,
array-api-strict's flags and devices, ``jax.jit`` and Dask laziness."""

from __future__ import annotations

import functools
import itertools
import os
import re
import subprocess
import sys
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import xlinalg as xl
from conftest import SELECTED, BackendCase, random, require_backend, well_conditioned
from xlinalg import backends as registry
from xlinalg._capabilities import ELEMENTWISE, LINALG
from xlinalg._lib._declare import OPERATIONS


def _library_words(names: tuple[str, ...]) -> dict[str, str]:
    """backend id -> how messages name its library (the backends' own declarations)."""
    return {n: registry.get_backend(n).library_word for n in names}


LIBRARY_WORDS = _library_words(tuple(xl.BACKEND_NAMES))


def _call(name: str):
    """The call of a declared operation on its sample, on arrays made by `mk`."""
    op = OPERATIONS[name]
    sample = op.sample_args()
    fn = functools.partial(getattr(xl, name), **op.kwargs) if op.kwargs else getattr(xl, name)  # (matrix_power's n)
    return lambda mk: (fn, tuple(mk(a) for a in sample))


# one call per array function, from its declaration (xlinalg._lib._declare), on
# arrays made by `mk` (a backend's from_numpy)
CALLS = {name: _call(name) for name in (*LINALG, *ELEMENTWISE)}


def test_every_array_function_has_a_call() -> None:
    assert list(CALLS) == [*LINALG, *ELEMENTWISE]
    assert set(CALLS) <= set(xl.__all__)
    for name in CALLS:
        assert OPERATIONS[name].func is getattr(xl, name), f"{name}: the declared function is not the public one"


def test_a_new_backend_has_library_words_without_an_edit_here(monkeypatch) -> None:
    # the table comes from the backends: a backend the registry lists, with or
    # without an adapter class, has its words (collection never meets a KeyError)
    from xlinalg.backends import Backend
    from xlinalg.backends._numpy import NumPyAdapter

    class Bare(Backend):
        name = "bare"
        module = "numpy"

    class Own(Backend):
        name = "own-cpu"
        module = "numpy"
        adapter_class = type("OwnAdapter", (NumPyAdapter,), {"library": "OwnLib"})

    monkeypatch.setattr(registry, "_REGISTRY", {**registry._REGISTRY, "bare": Bare(), "own-cpu": Own()})
    words = _library_words((*xl.BACKEND_NAMES, "bare", "own-cpu"))
    assert words["bare"] == "bare"
    assert words["own-cpu"] == "OwnLib"
    assert words["torch-cpu"] == words["torch-cuda"] == "PyTorch"
    assert len(set(words.values())) == len(words) - 2  # torch and JAX: one word for two devices


@pytest.mark.parametrize("fn", list(CALLS))
def test_results_stay_on_the_input_backend(backend: BackendCase, fn) -> None:
    f, args = CALLS[fn](backend.arr)
    out = f(*args)
    for o in out if isinstance(out, tuple) else (out,):
        backend.check_owned(o)


def test_backend_of(backend: BackendCase) -> None:
    assert xl.backend_of(backend.arr(np.ones(2))) == backend.name
    assert xl.backend_of(backend.arr(np.float64(1.0))) == backend.name  # 0-d


def test_backend_of_numpy_scalars_and_unknown() -> None:
    assert xl.backend_of(np.float64(1.0)) == "numpy"
    with pytest.raises(TypeError, match=r"expected an array of one of numpy, torch-cpu"):
        xl.backend_of([1.0])


# ---------------------------------------------------------------------- mixing libraries
PAIRS = [(a, b) for a, b in itertools.permutations(SELECTED, 2) if LIBRARY_WORDS[a] != LIBRARY_WORDS[b]]


@pytest.mark.parametrize(("first", "second"), PAIRS, ids=[f"{a}+{b}" for a, b in PAIRS])
@pytest.mark.parametrize("fn", ["solve", "matmul", "add", "divide"])
def test_mixing_libraries_raises_naming_both(first, second, fn) -> None:
    b1, b2 = require_backend(first), require_backend(second)
    f = {"solve": xl.solve, "matmul": xl.matmul, "add": xl.add, "divide": xl.divide}[fn]
    x = b1.from_numpy(np.eye(2) * 2)
    y = b2.from_numpy(np.ones(2))
    with pytest.raises(TypeError) as info:
        f(x, y)
    msg = str(info.value)
    assert LIBRARY_WORDS[first] in msg, msg
    assert LIBRARY_WORDS[second] in msg, msg
    assert "xlinalg.to(" in msg
    assert ("`a`" in msg and "`b`" in msg) or ("`x1`" in msg and "`x2`" in msg)
    # the suggested conversion works
    fixed = xl.to(y, first)
    assert xl.backend_of(f(x, fixed)) == first


def test_numpy_mixed_with_torch_names_both() -> None:
    require_backend("torch-cpu")
    import torch

    with pytest.raises(TypeError, match=r"`a` is a PyTorch tensor .* but `b` is a NumPy array.*xlinalg\.to\(a, \"numpy\"\)"):
        xl.solve(torch.eye(2), np.ones(2))


def test_mixing_devices_raises_naming_both() -> None:
    # torch's "meta" device stands in for a second device on a CPU-only machine
    require_backend("torch-cpu")
    import torch

    a, b = torch.eye(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64, device="meta")
    # solve of one matrix takes a fast path that leaves a CPU/CUDA mix to torch's own
    # error, which it translates; torch.linalg.solve runs LAPACK on a meta operand's
    # missing data instead of refusing it, so the fast path leaves meta mixes alone
    cases = ((xl.solve, a[None], b, ("`a`", "`b`")), (xl.solve, a, b, ("`a`", "`b`")),
             (xl.solve, a.to("meta"), torch.ones(2, dtype=torch.float64), ("`a`", "`b`")),
             (xl.matmul, a, b, ("`a`", "`b`")), (xl.add, a, b, ("`x1`", "`x2`")))
    for f, first, second, names in cases:
        for _ in range(2):  # the first call fills the fast-path tables, the second uses them
            with pytest.raises(ValueError, match=r"is on device (cpu|meta) but .* is on device (meta|cpu)") as info:
                f(first, second)
            assert all(n in str(info.value) for n in names)
            assert "xlinalg.to(" in str(info.value)
    # both on meta: torch's shape computation, as torch.linalg.solve gives it
    assert xl.solve(a.to("meta"), b).device.type == "meta"


def test_a_0d_cpu_tensor_joins_the_other_device_on_every_path() -> None:
    # torch's rule: a 0-d CPU tensor is a scalar. The fast path (torch.add) took it and
    # the checked path refused it, so the answer depended on the call history
    require_backend("torch-cpu")
    import torch

    m = torch.ones(3, device="meta")
    for f in (xl.add, xl.subtract, xl.multiply, xl.divide):
        for _ in range(2):  # the first call fills the fast-path table, the second uses it
            for x1, x2 in ((m, torch.tensor(2.0)), (torch.tensor(2.0), m)):
                out = f(x1, x2)
                assert out.device.type == "meta", f
                assert out.shape == (3,)
    with pytest.raises(ValueError, match=r"`x1` is on device meta but `x2` is on device cpu"):
        xl.add(m, torch.ones(1))  # a 1-element 1-d tensor is no scalar
    out = xl.add(m, torch.tensor(2.0, dtype=torch.float64))  # the checked path (two dtypes) too
    assert out.device.type == "meta"
    assert out.dtype == torch.float64  # two arrays: xlinalg's promotion, as for any pair


def test_array_api_strict_devices() -> None:
    require_backend("array-api-strict")
    import array_api_strict as xps

    d1 = xps.Device("device1")
    a = xps.asarray(np.eye(3) * 2, device=d1)
    b = xps.asarray(np.ones(3), device=d1)
    for out in (xl.solve(a, b), xl.matmul(a, b), xl.svd(a).U, xl.qr(a).R, xl.svdvals(a),
                xl.add(a, 1.0), xl.exp(a), xl.sigmoid(a), xl.solve(a, [1.0, 2.0, 3.0]),
                xl.add(a, [1.0, 2.0, 3.0]), xl.svd(xps.asarray(np.zeros((0, 2)), device=d1)).U):
        assert out.device == d1
    with pytest.raises(ValueError, match=r"`a` is on device .*device1.* but `b` is on device .*CPU_DEVICE"):
        xl.solve(a, xps.asarray(np.ones(3)))
    # a device without float64: integers compute in float32 there
    nf = xps.Device("no_float64")
    x = xps.asarray(np.array([[2, 0], [0, 4]]), device=nf)
    for out in (xl.solve(x, xps.asarray([2, 2], device=nf)), xl.svdvals(x), xl.exp(x), xl.divide(x, 2)):
        assert out.dtype == xps.float32
        assert out.device == nf


@pytest.mark.parametrize(
    "flags",
    [
        {"api_version": "2022.12"},
        {"api_version": "2023.12"},
        {"api_version": "2024.12"},
        {"data_dependent_shapes": False, "boolean_indexing": False},
    ],
    ids=["2022.12", "2023.12", "2024.12", "no-data-dependent-shapes"],
)
def test_array_api_strict_flags(flags) -> None:
    # Everything xlinalg does on a strict array is standard: it passes under the
    # strictest flags (old API versions, no data-dependent shapes or boolean indexing).
    require_backend("array-api-strict")
    import array_api_strict as xps

    with xps.ArrayAPIStrictFlags(**flags):
        a = xps.asarray(np.stack([np.eye(2) * 2, [[1.0, 2.0], [2.0, 4.0]]]))
        b = xps.asarray(np.ones((2, 2, 1)))
        x = xl.solve(a, b, errors="nan")
        h = registry.strict_to_numpy(x)
        assert np.isnan(h[1]).all()
        assert np.allclose(h[0], 0.5)
        with pytest.raises(xl.LinAlgError):
            xl.solve(a, b)
        assert np.allclose(registry.strict_to_numpy(xl.solve(a[0, ...], xps.asarray([2.0, 2.0]))), [1.0, 1.0])
        for name in CALLS:
            f, args = CALLS[name](xps.asarray)
            if name in ("eig", "eigvals") and flags.get("api_version", "2025.12") < "2025.12":
                # the standard added them in 2025.12: a named error, not strict's RuntimeError
                with pytest.raises(NotImplementedError, match=rf"{name}: array-api-strict has no `linalg.{name}`.*api_version='2025.12'"):
                    f(*args)
                continue
            out = f(*args)
            for o in out if isinstance(out, tuple) else (out,):
                assert xl.backend_of(o) == "array-api-strict"
        assert xl.svd(xps.asarray(np.zeros((0, 3, 2)))).U.shape == (0, 3, 3)
        assert xl.solve(xps.asarray(np.zeros((0, 3, 3))), xps.asarray(np.zeros(3))).shape == (0, 3)
        assert xl.add(xps.asarray([1, 2]), 2.5).dtype == xps.float64
        assert xl.add(xps.asarray([1, 2]), xps.asarray([1.0, 2.0], dtype=xps.float32)).dtype == xps.float64


# ---------------------------------------------------------------------- host data
def test_python_scalars_with_arrays(backend: BackendCase) -> None:
    x = backend.arr(np.ones(3, np.float32))
    for out in (xl.add(x, 2.0), xl.add(2.0, x), xl.multiply(x, 2), xl.divide(x, 2.0), xl.subtract(1, x)):
        backend.check_owned(out)
        assert backend.np(out).dtype == np.float32


def test_numpy_scalars_next_to_other_arrays(backend: BackendCase) -> None:
    # no confusing "multiple namespaces" error: NumPy scalars are host data
    x = backend.arr(np.ones(3, np.float32))
    for s in (np.float64(2.0), np.float32(2.0), np.int64(2)):
        out = xl.multiply(x, s)
        backend.check_owned(out)
    a = backend.arr(np.eye(2))
    backend.assert_close(xl.solve(a, [np.float64(1.0), np.float64(2.0)]), [1.0, 2.0])


def test_lists_become_the_array_backend(backend: BackendCase) -> None:
    a = backend.arr(np.eye(2))
    for out in (xl.solve(a, [1.0, 2.0]), xl.solve([[1.0, 0.0], [0.0, 1.0]], backend.arr(np.ones(2))),
                xl.matmul(a, [1.0, 1.0]), xl.add([1.0, 2.0], backend.arr(np.ones(2)))):
        backend.check_owned(out)


def test_tuples_are_host_data_too(backend: BackendCase) -> None:
    backend.assert_close(xl.solve(backend.arr(np.eye(2) * 2), (2.0, 4.0)), [1.0, 2.0])


def test_non_arrays_are_refused(backend: BackendCase) -> None:
    with pytest.raises(TypeError, match=r"`a` must be an array .*got an object of type builtins.str"):
        xl.solve("abc", backend.arr(np.ones(2)))
    with pytest.raises(TypeError, match=r"`x` must be an array"):
        xl.svd({"not": "an array"})
    with pytest.raises(TypeError, match=r"`x1` could not be converted|`x1` must hold numbers"):
        xl.add([[1.0], [1.0, 2.0]], backend.arr(np.ones(2)))  # ragged


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix itself warns
def test_numpy_matrix_is_refused() -> None:
    m = np.asmatrix(np.eye(2))
    with pytest.raises(TypeError, match=r"`x` is a numpy\.matrix of shape \(2, 2\) .*`numpy\.asarray\(x\)`"):
        xl.svd(m)
    with pytest.raises(TypeError, match=r"`x` is a numpy\.matrix"):
        xl.to(m, "numpy")
    with pytest.raises(TypeError, match=r"`a` is a numpy\.matrix"):
        xl.solve(m, np.ones(2), xp=np)


@pytest.mark.parametrize("target", SELECTED)
def test_masked_arrays_are_refused_not_unmasked(target: str) -> None:
    # converting would hand the values under the mask to a library without masks
    x = np.ma.array([1.0, 2.0, 3.0], mask=[False, True, True])
    with pytest.raises(TypeError, match=r"`x` is a NumPy masked array of shape \(3,\) and dtype "
                                        r"float64 with 2 masked entries: .*`x\.filled\(value\)`"):
        xl.to(x, target)


def test_masked_arrays_are_refused_without_masked_entries() -> None:
    # the answer does not depend on the data: an all-clear mask is still a mask
    x = np.ma.array(np.eye(2))
    with pytest.raises(TypeError, match=r"`a` is a NumPy masked array .* with 0 masked entries"):
        xl.solve(x, np.ones(2))
    with pytest.raises(TypeError, match=r"`x2` is a NumPy masked array"):
        xl.add(np.eye(2), x, xp=np)
    with pytest.raises(TypeError, match=r"`b\[0\]` is a NumPy masked array"):
        xl.solve_many([np.eye(2)], [np.ma.array(np.ones(2))])


def test_host_data_that_is_not_numbers_is_named_the_same_everywhere(backend: BackendCase) -> None:
    # NumPy would make an object (or text) array; torch, JAX and CuPy each failed with
    # their own words, and jnp.asarray read [2**70, 1.0] as floats
    x = backend.arr(np.ones(2))
    cases = (
        ([2**70, 1.0], r"the Python int 1180591620717411303424 at `x2\[0\]` is beyond int64 and uint64"),
        ([1.0, 10**5000], r"the Python int about 10\*\*5000 at `x2\[1\]` is beyond int64"),
        ([[1.0], [None]], r"`x2\[1\]\[0\]` is None"),
        ((1.0, "a"), r"`x2\[1\]` is a str"),
        ([1.0, Fraction(1, 3)], r"`x2\[1\]` is a fractions\.Fraction"),
    )
    for value, message in cases:
        with pytest.raises(TypeError, match=rf"^`x2` must hold numbers: {message}"):
            xl.add(x, value)
    with pytest.raises(TypeError, match=r"^`b` must hold numbers: `b\[0\]` is None"):
        xl.solve(backend.arr(np.eye(2)), [None, 1.0])
    backend.assert_close(xl.add(x, [2**63 + 1, 0]), np.ones(2) + [2**63 + 1, 0])  # uint64: numbers


def test_a_list_of_the_backends_own_arrays_is_refused_naming_the_element(backend: BackendCase) -> None:
    # NumPy would convert each element to the host (a GPU array fails inside it) and the
    # result would belong to the other argument's library: the user stacks them first
    rows = [backend.arr(np.array([2.0, 0.0])), backend.arr(np.array([0.0, 4.0]))]
    if registry.adapter_for_type(type(rows[0])) is registry.get_backend("numpy").adapter():
        # NumPy arrays in a list are host data (NumPy owns host data), stacked as NumPy does
        backend.assert_close(xl.solve(rows, [2.0, 4.0]), [1.0, 1.0])
        backend.assert_close(xl.to(rows, "numpy"), [[2.0, 0.0], [0.0, 4.0]])
        return
    call = backend.be.adapter().stack_call
    # the message names the stack of the arrays' own library (its module or namespace)
    assert call.rpartition(".")[0] in (backend.be.module, *backend.be.namespace_names), call
    stack = re.escape(call)
    other = backend.arr(np.ones(2))
    calls = {
        "x": lambda: xl.sigmoid(rows),
        "x1": lambda: xl.add(rows, other),
        "x2": lambda: xl.multiply(other, tuple(rows)),
        "b": lambda: xl.solve(backend.arr(np.eye(2)), rows),
        "a[0]": lambda: xl.solve_many([rows], [np.ones(2)]),
    }
    for name, call in calls.items():
        at = re.escape(f"{name}[0]")
        with pytest.raises(TypeError, match=rf"`{re.escape(name)}` is a Python (list|tuple) holding .* at `{at}`: "
                                            rf".*`{stack}\({re.escape(name)}\)`"):
            call()
    nested = [[backend.arr(np.float64(2.0)), 0.0], [0.0, 1.0]]  # 0-d arrays among numbers
    with pytest.raises(TypeError, match=r"`a` is a Python list holding .* at `a\[0\]\[0\]`"):
        xl.solve(nested, [1.0, 1.0])
    for target in SELECTED:
        with pytest.raises(TypeError, match=r"`x` is a Python list holding .* at `x\[1\]`"):
            xl.to([1.0, rows[0]], target)


def test_the_host_list_scan_ends_on_hostile_lists() -> None:
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    wide: list[Any] = []
    wide.extend([wide] * 50)  # 50**64 paths if every visit descended
    deep: Any = 1.0
    for _ in range(100_000):  # past the recursion limit: the scan is iterative
        deep = [deep]
    inner: list[Any] = [1.0, 2.0]
    far = [[inner, [3.0, [4.0, inner]]]]
    inner.append(far)  # a cycle three levels down, through a shared list
    for bad, at in ((cyclic, r"x\[0\]"), (wide, r"x\[0\]"), ([[1.0, 2.0], far], r"x\[1\]\[0\]\[0\]\[2\]")):
        with pytest.raises(TypeError, match=rf"`x` is a Python list that holds itself at `{at}`: a recursive list"):
            xl.sigmoid(bad)
    with pytest.raises(TypeError, match=r"`x` is a Python list nested deeper than 64 levels"):
        xl.sigmoid(deep)
    shared = [1.0, 2.0]
    np.testing.assert_allclose(xl.add([shared, shared, (shared,)[0]], 0.0), [[1.0, 2.0]] * 3)  # shared, not cyclic
    masked = [[1.0, 2.0], [1.0, np.ma.array([1.0, 2.0], mask=[True, False])]]
    with pytest.raises(TypeError, match=r"`x\[1\]\[1\]` is a NumPy masked array .* with 1 masked entry"):
        xl.exp(masked)
    # NumPy arrays and scalars, and numbers, at any depth: host data
    ok = [[np.float32(1.0), 2], [np.array(3.0), True]]
    np.testing.assert_allclose(xl.add(ok, 1.0), [[2.0, 3.0], [4.0, 2.0]])


def test_an_unknown_array_api_array_in_a_list_is_refused() -> None:
    class Foreign:
        shape = (2,)

        def __array_namespace__(self, api_version: Any = None) -> Any:
            return np

        def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
            return np.ones(2)

    with pytest.raises(TypeError, match=r"`x` is a Python list holding an array of type .*Foreign at `x\[0\]`"):
        xl.exp([Foreign()])


# ---------------------------------------------------------------------- explicit xp
def test_explicit_namespace(backend: BackendCase) -> None:
    xp = backend.namespace()
    a = backend.arr(np.eye(2) * 2)
    backend.assert_close(xl.solve(a, backend.arr(np.ones(2)), xp=xp), [0.5, 0.5])
    backend.assert_close(xl.add(a, 1.0, xp=xp), np.eye(2) * 2 + 1)
    backend.assert_close(xl.svdvals(a, xp=xp), [2.0, 2.0])


# ---------------------------------------------------------------------- to / synchronize
@pytest.mark.parametrize("target", SELECTED)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.bool_, np.complex128])
def test_to_round_trips(backend: BackendCase, target, dtype) -> None:
    tb = require_backend(target)
    x = (np.arange(6).reshape(2, 3) % 2).astype(dtype)
    y = xl.to(backend.arr(x), target)
    assert xl.backend_of(y) == target
    back = tb.to_numpy(y)
    assert back.dtype == x.dtype
    np.testing.assert_array_equal(back, x)


def test_to_copy_semantics(backend: BackendCase) -> None:
    x = backend.arr(np.ones(3))
    assert xl.to(x, backend.name) is x
    y = xl.to(x, backend.name, copy=True)
    assert y is not x
    np.testing.assert_array_equal(backend.np(y), np.ones(3))


def test_to_errors() -> None:
    with pytest.raises(ValueError, match=r"unknown backend 'torch-gpu'; valid backends: numpy, torch-cpu"):
        xl.to(np.ones(2), "torch-gpu")
    unavailable = [n for n in xl.BACKEND_NAMES if not registry.get_backend(n).is_available()]
    if not unavailable:
        pytest.skip("every backend is available here: no unavailable one to convert to")
    with pytest.raises(registry.BackendUnavailableError, match=r"is not available: .*Install: "):
        xl.to(np.ones(2), unavailable[0])


def test_to_numpy_from_a_lazy_backend_copies(backend: BackendCase) -> None:
    if not backend.lazy:  # a lazy library's array (Dask's) has no memory to share yet
        y = xl.to(backend.arr(np.arange(3.0)), "numpy")
        np.testing.assert_array_equal(np.asarray(y), np.arange(3.0))
        return
    with pytest.raises(ValueError, match=r"needs a copy"):
        xl.to(backend.arr(np.arange(3.0)), "numpy", copy=False)


def test_synchronize(backend: BackendCase) -> None:
    x = xl.matmul(backend.arr(np.eye(3)), backend.arr(np.ones(3)))
    xl.synchronize(x)  # waits (JAX: block_until_ready; Dask: computes and discards)
    xl.synchronize(x, backend.arr(np.ones(2)))
    xl.synchronize(backend=backend.name)
    xl.synchronize()
    backend.assert_close(x, np.ones(3))


def test_synchronize_mixed_backends(monkeypatch) -> None:
    """Each group of arrays is fenced once, on its own backend, with its arrays."""
    names = [n for n in SELECTED if registry.get_backend(n).is_available()]
    if len(names) < 2:
        pytest.skip(f"needs two backends, has {names}")
    arrays = {n: require_backend(n).from_numpy(np.ones(2)) for n in names}
    calls: list[tuple[str, int]] = []
    for n in names:
        reg = registry.get_backend(n)
        real = reg.synchronize

        def spy(*group, _n=n, _real=real):
            calls.append((_n, len(group)))
            assert all(registry.backend_of(a) == _n for a in group)
            return _real(*group)

        monkeypatch.setattr(reg, "synchronize", spy)
    first = names[0]
    xl.synchronize(*arrays.values(), [arrays[first]], 1.5, None)
    assert sorted(calls) == sorted((n, 2 if n == first else 1) for n in names)


def test_synchronize_waits_for_a_jax_result() -> None:
    require_backend("jax-cpu")
    import jax.numpy as jnp

    m = jnp.ones((1500, 1500))
    for _ in range(3):  # fresh results each time: JAX dispatches asynchronously
        y = m @ m
        xl.synchronize(y)  # the single-array path: the type's cached fence
        assert y.is_ready()


def test_synchronize_fences_every_array_in_tuples_lists_and_dicts(monkeypatch) -> None:
    # xl.svd returns a tuple: synchronize(out) waited for nothing and a GPU timing
    # taken around it was wrong in silence
    fenced: list[int] = []
    numpy_backend = registry.get_backend("numpy")
    monkeypatch.setattr(registry, "_KINDS", {})
    monkeypatch.setattr(registry, "_FENCES", {})
    hooks = numpy_backend.type_hooks  # one array: its type's fence
    monkeypatch.setattr(numpy_backend, "type_hooks",
                        lambda cls: hooks(cls)._replace(fence=lambda x: fenced.append(id(x))))
    monkeypatch.setattr(numpy_backend, "synchronize", lambda *xs: fenced.extend(map(id, xs)))  # a group
    a, b, c = np.ones(2), np.ones(3), np.ones(4)
    usv = xl.svd(np.eye(3))
    for call, expect in (
        (lambda: xl.synchronize(usv), [id(x) for x in usv]),
        (lambda: xl.synchronize(usv), [id(x) for x in usv]),  # the cached path of a tuple
        (lambda: xl.synchronize([a, {"k": (b,)}]), [id(a), id(b)]),
        (lambda: xl.synchronize(a, [b, 2.0, None], {"c": c}), [id(a), id(b), id(c)]),
    ):
        fenced.clear()
        call()
        assert sorted(fenced) == sorted(expect)
    cyclic: list[Any] = [a]
    cyclic.append(cyclic)
    fenced.clear()
    xl.synchronize(cyclic)  # each container once
    assert fenced == [id(a)]


@pytest.mark.parametrize("bad", ["x", object(), ("x",), [np.ones(2), b"bytes"]])
def test_synchronize_refuses_what_it_cannot_wait_for(bad) -> None:
    for args in ((bad,), (np.ones(2), bad)):
        with pytest.raises(TypeError, match=r"^synchronize: expected arrays \(or tuples, lists or dicts of them\), got "
                                            r"builtins\.(str|object|bytes); nothing would be waited for"):
            xl.synchronize(*args)
    xl.synchronize(1.0, None, (2, 3j))  # numbers and None are ready


def test_synchronize_and_backend_of_use_one_cached_entry_per_type() -> None:
    x = np.ones(2)
    xl.synchronize(x)
    assert registry._KINDS[np.ndarray].fence is None  # NumPy: nothing to wait for
    assert xl.backend_of(np.float32(1.0)) == "numpy"
    assert np.float32 in registry._KINDS
    if registry.get_backend("torch-cpu").is_available():
        import torch

        t = torch.ones(2)
        assert xl.backend_of(t) == "torch-cpu"
        xl.synchronize(t)
        meta = torch.empty(2, device="meta")  # no registry entry: named, fenced as a no-op
        assert xl.backend_of(meta) == "torch-meta"
        xl.synchronize(meta)
        xl.synchronize(meta, t)


def test_a_tensor_subclass_defined_outside_torch_is_torchs() -> None:
    # backend_of, synchronize and the operations know a library's arrays by its base
    # classes, not by the module that defines the type (a user's subclass lives in
    # the user's module)
    require_backend("torch-cpu")
    import torch

    class Tagged(torch.Tensor):
        pass

    assert Tagged.__module__ == __name__
    t = torch.ones(3, dtype=torch.float64).as_subclass(Tagged)
    assert xl.backend_of(t) == "torch-cpu"
    xl.synchronize(t)
    xl.synchronize(t, torch.ones(2))
    assert xl.to(t, "numpy").tolist() == [1.0, 1.0, 1.0]
    out = xl.add(t, t)
    assert isinstance(out, torch.Tensor)
    assert xl.backend_of(out) == "torch-cpu"
    assert registry.get_backend("torch-cpu").owns(t)


def test_a_library_whose_arrays_subclass_numpys_is_found_wherever_it_is_listed(monkeypatch) -> None:
    # the nearest base class in the type's MRO decides, not the registry order: a
    # library listed after NumPy whose arrays are ndarrays is still found
    from xlinalg.backends import Backend

    class Sub(np.ndarray):
        pass

    class SubBackend(Backend):
        name = "sub"
        module = "numpy"

        def array_types(self) -> tuple[type, ...]:
            return (Sub,)

    sub = SubBackend()
    monkeypatch.setattr(registry, "_BACKENDS", (*registry._BACKENDS, sub))
    assert registry._owner(Sub) is sub
    assert registry._owner(np.ndarray) is registry.get_backend("numpy")
    assert registry._owner(np.float64) is registry.get_backend("numpy")


def test_a_list_holding_arrays_of_a_library_that_subclasses_numpys_is_refused() -> None:
    # an ndarray subclass in a list is host data when it is NumPy's (a user's
    # subclass), and another library's array when a backend claims its class
    from xlinalg.backends._host import foreign_in_sequence
    from xlinalg.backends._numpy import NUMPY, NumPyAdapter

    class Users(np.ndarray):
        pass

    class Libs(np.ndarray):
        pass

    class LibAdapter(NumPyAdapter):
        library = "Lib"
        stack_call = "lib.stack"

    lib = LibAdapter()
    owners = {Users: NUMPY, Libs: lib}
    users, libs = np.ones(2).view(Users), np.ones(2).view(Libs)
    assert foreign_in_sequence([users, [1.0, users]], "x", owners.get) is None
    err = foreign_in_sequence([[1.0, 2.0], [users, libs]], "x", owners.get)
    assert err is not None
    assert re.search(r"`x` is a Python list holding .* at `x\[1\]\[1\]`: .*Make one Lib array first, "
                     r"e\.g\. `lib\.stack\(x\)`", str(err)), err


# Every thread meets a type for the first time at once: the cache entry must be
# built once (a second build could differ), and every thread gets the same answer.
# The race by construction: the first fill holds the cache's lock until the 7 other
# threads have found the type missing and wait on that lock (counted by the lock).
_KINDS_RACE = """
import threading, time
import numpy as np
from xlinalg import backends

class CountingLock:
    def __init__(self):
        self.lock = threading.Lock()
        self.waiting = []  # threads that found the lock held (the fill under way)
    def __enter__(self):
        if not self.lock.acquire(blocking=False):
            self.waiting.append(threading.get_ident())
            self.lock.acquire()
        return self
    def __exit__(self, *exc):
        self.lock.release()

lock = backends._KINDS_LOCK = CountingLock()
made = []
overlap = []
real = backends._make_kind
def slow(cls):
    made.append(cls)
    deadline = time.monotonic() + 60
    while len(lock.waiting) < 7 and time.monotonic() < deadline:
        time.sleep(0.001)
    overlap.append(len(lock.waiting))
    return real(cls)
backends._make_kind = slow
barrier = threading.Barrier(8)
out = []
def work():
    barrier.wait()
    out.append(backends.backend_of(np.float16(1)))
    backends.synchronize(np.float16(1))
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join(timeout=90)
assert out == ["numpy"] * 8, out
# the 7 others met the empty cache during the first fill, each a different thread
assert overlap == [7] and len(set(lock.waiting)) == 7, (overlap, lock.waiting)
assert made == [np.float16], made
print("ok")
"""


def test_cached_type_lookup_is_filled_once_under_threads() -> None:
    for _ in range(3):  # fresh processes: the first use is what is raced
        res = subprocess.run([sys.executable, "-c", _KINDS_RACE], capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr[-2000:]
        assert "ok" in res.stdout


def test_available_backends_lists_every_cpu_backend_here() -> None:
    # In this project's test environment (and CI) every CPU backend must really run.
    from conftest import CPU_BACKENDS, _require_cpu

    missing = [n for n in CPU_BACKENDS if n in SELECTED and not registry.get_backend(n).is_available()]
    if missing and not _require_cpu():
        pytest.skip(f"CPU backends not installed here: {missing} (set XLINALG_REQUIRE_CPU_BACKENDS=1 to fail)")
    assert not missing, [f"{n}: {registry.get_backend(n).unavailable_reason()}" for n in missing]
    assert set(xl.available_backends()) <= set(xl.BACKEND_NAMES)


def test_unknown_backend_in_environment_raises() -> None:
    code = "import conftest"
    env = {**os.environ, "XLINALG_TEST_BACKENDS": "numpy,torch-gpu"}
    r = subprocess.run([sys.executable, "-c", code], cwd=os.path.dirname(os.path.dirname(__file__)), env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "unknown backend(s) ['torch-gpu']" in r.stderr


# ---------------------------------------------------------------------- jax.jit
@pytest.mark.parametrize("fn", [n for n in CALLS if OPERATIONS[n].jit])  # declare(jit=True)
def test_every_function_works_under_jax_jit(fn) -> None:
    require_backend("jax-cpu")
    import jax
    import jax.numpy as jnp

    f, args = CALLS[fn](jnp.asarray)
    eager = f(*args)
    traced = jax.jit(f)(*args)
    for e, t in zip(eager if isinstance(eager, tuple) else (eager,), traced if isinstance(traced, tuple) else (traced,)):
        np.testing.assert_allclose(np.asarray(t), np.asarray(e), rtol=1e-12)


def test_jit_nan_instead_of_errors() -> None:
    require_backend("jax-cpu")
    import jax
    import jax.numpy as jnp

    x = jnp.asarray([[1.0, jnp.nan], [0.0, 1.0]])
    assert np.isnan(np.asarray(jax.jit(xl.svdvals)(x))).all()
    with pytest.raises(xl.LinAlgError):
        xl.svdvals(x)  # eagerly, the same input raises


def test_jit_with_integer_input() -> None:
    require_backend("jax-cpu")
    import jax
    import jax.numpy as jnp

    out = jax.jit(xl.solve)(jnp.asarray([[2, 0], [0, 4]]), jnp.asarray([2, 2]))
    assert out.dtype == jnp.float64
    np.testing.assert_allclose(np.asarray(out), [1.0, 0.5])


# ---------------------------------------------------------------------- Dask laziness
def _forbid_compute(*args, **kwargs):
    raise AssertionError("xlinalg forced a Dask compute while building the graph")


@pytest.mark.parametrize("fn", [n for n in CALLS if OPERATIONS[n].lazy])  # declare(lazy=True)
def test_dask_functions_do_not_compute(fn, rng) -> None:
    require_backend("dask")
    import dask
    import dask.array as da

    def mk(a):
        a = np.asarray(a)
        return da.from_array(np.stack([a, a, a]), chunks=(1,) + a.shape) if a.ndim == 2 else da.from_array(a)

    f, args = CALLS[fn](mk)
    with dask.config.set(scheduler=_forbid_compute):
        out = f(*args)
    for o in out if isinstance(out, tuple) else (out,):
        assert xl.backend_of(o) == "dask"
        o.compute()


def test_dask_chunked_matrix_axes(rng) -> None:
    # matrices split across chunks are rechunked whole per block; batch chunks stay
    require_backend("dask")
    import dask.array as da

    a = well_conditioned(rng, (4, 6, 6))
    b = random(rng, (4, 6, 2))
    x = xl.solve(da.from_array(a, chunks=(2, 3, 3)), da.from_array(b, chunks=(1, 2, 1)))
    np.testing.assert_allclose(x.compute(), np.linalg.solve(a, b), rtol=1e-10)
    s = xl.svdvals(da.from_array(a, chunks=(2, 3, 3)))
    np.testing.assert_allclose(s.compute(), np.linalg.svd(a, compute_uv=False), rtol=1e-10)


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "matmul"])
def test_same_dtype_operands_take_the_native_kernel_directly(backend, op, rng, monkeypatch) -> None:
    """Same-library, same-dtype operands go straight to the library's own kernel.

    The checked paths are replaced by a failure: where an adapter offers a native
    kernel for `op`, the call must not reach them (the zero-cost promise of
    issue 5), and the result is still the library's and right.
    """
    import xlinalg._elementwise as E
    import xlinalg._matmul as M
    from xlinalg import _dispatch

    x = backend.arr(rng.random((4, 4)))
    y = backend.arr(rng.random((4, 4)))
    want = getattr(np, op)(backend.np(x), backend.np(y))
    xl.add(x, y)  # the first call meets the type and fills the tables
    native = _dispatch.FAST_OPS[op].get(type(x))
    ad = _dispatch._lookup(type(x))
    if type(x) is not np.ndarray and ad.fast.get(op) is None:
        assert native is None  # a library without a native kernel: the checked path
    else:
        if type(x) is np.ndarray:
            assert native is None  # NumPy's fast path calls its ufunc itself
        else:
            assert native is not None, f"{backend.name}: no entry for {op} in FAST_OPS"
            assert native[0] is ad.fast[op]

        def checked(*args, **kwargs):
            raise AssertionError(f"{op} on {backend.name} took the checked path")

        monkeypatch.setattr(E, "_binary", checked)
        monkeypatch.setattr(M, "_matmul_checked", checked)
    out = getattr(xl, op)(x, y)
    backend.check_owned(out)
    backend.assert_close(out, want)


def test_float_sigmoid_takes_the_native_kernel_directly(backend, rng, monkeypatch) -> None:
    """float32/float64 input of a library with a sigmoid kernel goes straight to it."""
    import xlinalg._elementwise as E
    from xlinalg import _dispatch

    x = backend.arr(rng.standard_normal(8))
    want = 1 / (1 + np.exp(-backend.np(x)))
    xl.sigmoid(x)  # the first call meets the type and fills the table
    ad = _dispatch._lookup(type(x))
    entry = _dispatch.FAST_SIGMOID.get(type(x))
    numpy_fast = type(x) is np.ndarray and ad.fast.get("sigmoid") is not None  # (SciPy's expit loaded)
    if type(x) is np.ndarray or ad.fast.get("sigmoid") is None:
        assert entry is None
    else:
        assert entry is not None, f"{backend.name}: no sigmoid entry in FAST_SIGMOID"
    if numpy_fast or entry is not None:

        def checked(*args, **kwargs):
            raise AssertionError(f"sigmoid on {backend.name} took the checked path")

        monkeypatch.setattr(E, "_unary_float", checked)
    out = xl.sigmoid(x)
    backend.check_owned(out)
    backend.assert_close(out, want)


@pytest.mark.parametrize("rhs", ["vector", "matrix"])
def test_one_system_with_the_defaults_takes_the_adapters_solve_fast(backend, rhs, rng, monkeypatch) -> None:
    """Where an adapter has ``solve_fast`` (torch, JAX on the CPU), a well-posed
    single system with xl.solve's defaults is answered by it alone; a singular one
    still gets the named LinAlgError of the checked path."""
    import xlinalg._solve as S
    from xlinalg import _dispatch

    a = backend.arr(well_conditioned(rng, (4, 4)))
    b = backend.arr(rng.random(4) if rhs == "vector" else rng.random((4, 2)))
    want = np.linalg.solve(backend.np(a), backend.np(b))
    xl.solve(a, b)  # the first call meets the type
    fast = _dispatch.FAST_SOLVE.get(type(a))
    # NumPy's own fast path is already below the native call (issue 5); JAX only
    # on the CPU, where the host look at the result is zero-copy
    ad = _dispatch._lookup(type(a))
    expected = backend.name in ("torch-cpu", "torch-cuda") or (backend.name == "jax-cpu" and ad.single_device)
    assert (fast is not None) == expected, f"{backend.name}: solve_fast {fast}"
    if not expected:
        return

    def checked(*args, **kwargs):
        raise AssertionError(f"solve on {backend.name} took the checked path")

    with monkeypatch.context() as m:
        m.setattr(S, "_adapter2", checked)
        x = xl.solve(a, b)
    backend.check_owned(x)
    backend.assert_close(x, want)
    singular = backend.arr(np.array([[1.0, 2.0, 0, 0], [2.0, 4.0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]))
    with pytest.raises(xl.LinAlgError, match="singular"):
        xl.solve(singular, b)


def test_a_jax_tracer_is_on_the_backend_its_trace_runs_on(monkeypatch) -> None:
    # under jax.jit an array has no device; the trace runs on JAX's default backend,
    # and method="auto" must choose by that backend's rules (not the CPU's on a GPU)
    require_backend("jax-cpu")
    import jax
    import jax.numpy as jnp

    seen = []

    def record(x):
        seen.append(xl.backend_of(x))
        return x

    jax.jit(record)(jnp.ones(2))
    assert seen == ["jax-cpu"]
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    jax.jit(lambda x: record(x) + 1)(jnp.ones(2))  # a new function: traced again
    assert seen == ["jax-cpu", "jax-gpu"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_numpy_scalar_alone_joins_the_namespace_given(backend: BackendCase, dtype) -> None:
    # xl.exp(np.float32(1), xp=torch): a 0-d array of the namespace's library, of the
    # scalar's dtype (it was left a NumPy array, and failed inside the torch adapter)
    xp = backend.namespace()
    for f, want in ((xl.exp, np.exp(dtype(0.5))), (xl.sigmoid, 1 / (1 + np.exp(-dtype(0.5))))):
        r = f(dtype(0.5), xp=xp)
        backend.check_owned(r)
        got = backend.np(r)
        assert got.shape == ()
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(ValueError, match=r"solve: `a` must be a square matrix"):
        xl.solve(dtype(1.0), [1.0], xp=xp)
