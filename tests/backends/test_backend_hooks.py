"""The Backend hooks: defaults for a host library, no silent default for a GPU one.

Everything outside ``xlinalg.backends`` asks a backend object (tests/architecture/test_library_names.py);
a hook left to its default must then be right, or refuse. A host library may leave
the device hooks alone (nothing to wait for, no device allocator, the CPU's peak);
a GPU library that leaves one alone gets an error naming the hook, never the
host's answer (a fence that does not wait, a throughput divided by the CPU peak).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from conftest import require_backend
from xlinalg import backends
from xlinalg.backends import Backend
from xlinalg.backends._facets import BenchFacet, facet

#: the benchmark facet's hooks whose host default would be wrong for a GPU library
#: (and the core's fence, ``synchronize``)
GPU_HOOKS = ("fence_description", "device_clock", "memory_reset", "memory_peaks",
             "processor_class")


class _Host(Backend):
    name = "fake-host"
    module = "numpy"

    def from_numpy(self, arr: np.ndarray) -> Any:
        return np.array(arr)


class _Gpu(_Host):
    name = "fake-gpu"
    gpu = True


def test_a_host_backend_gets_the_host_defaults() -> None:
    b = _Host()
    b.synchronize(np.ones(2))  # nothing to wait for
    assert b.type_hooks(np.ndarray).fence is None
    assert b.bench.fence_description() == "none needed (synchronous backend)"
    assert b.bench.device_clock() is None
    assert b.bench.memory_peaks(b.bench.memory_reset()) == {}
    assert b.bench.processor_class() == "cpu"
    assert b.convert.dtype_refusal("float64") is None
    assert b.convert.from_dlpack(np.ones(2), False) is None  # no route: xl.to copies on the host


@pytest.mark.parametrize("hook", GPU_HOOKS)
def test_a_gpu_backend_must_define_each_device_hook(hook: str) -> None:
    b = _Gpu()
    args: tuple[Any, ...] = (None,) if hook == "memory_peaks" else ()
    with pytest.raises(NotImplementedError, match=f"fake-gpu.*{hook}"):
        getattr(b.bench, hook)(*args)
    with pytest.raises(NotImplementedError, match=r"fake-gpu.*synchronize"):
        b.synchronize()
    assert b.type_hooks(np.ndarray).fence == b.synchronize  # the fence is asked, never skipped


def test_a_gpu_backend_that_declares_its_processor_class_gets_its_peak() -> None:
    class _DeclaredBench(BenchFacet):
        def processor_class(self) -> str:
            return "gpu"

    class _Declared(_Gpu):
        bench = facet(_DeclaredBench)

    assert _Declared().bench.processor_class() == "gpu"
    assert _Gpu.bench is BenchFacet  # (read on the class: the facet's class)


@pytest.mark.parametrize("name", [n for n in backends.BACKEND_NAMES if backends.get_backend(n).gpu])
def test_every_registered_gpu_backend_defines_its_device_hooks(name: str) -> None:
    # read from the classes: runs without the GPU (the calls themselves need one)
    b = backends.get_backend(name)
    assert type(b).synchronize is not Backend.synchronize, name
    for hook in GPU_HOOKS:
        assert getattr(type(b.bench), hook) is not getattr(BenchFacet, hook), (name, hook)
    assert b.bench.processor_class() == "gpu"


@pytest.mark.parametrize("name", backends.BACKEND_NAMES)
def test_every_registered_backend_answers_the_host_hooks(name: str) -> None:
    b = backends.get_backend(name)
    assert b.bench.processor_class() in ("cpu", "gpu")
    assert isinstance(b.bench.fence_description(), str)
    assert b.library, name
    assert type(b).array_types is not Backend.array_types, name
    assert type(b).make_adapter is not Backend.make_adapter, name


@pytest.mark.parametrize("name", backends.BACKEND_NAMES)
def test_transfer_to_host_copies_the_values_each_call(name: str) -> None:
    # what the transfer case (A11) times: a NumPy array of the values, every call
    b = require_backend(name)
    host = np.arange(6.0).reshape(2, 3)
    x = b.from_numpy(host)
    for _ in range(2):
        got = b.bench.transfer_to_host(x)
        assert isinstance(got, np.ndarray)
        np.testing.assert_array_equal(got, host)


def test_jax_transfer_to_host_asks_for_a_put_each_call() -> None:
    # np.asarray(jax_array) keeps its host copy on the array: timing it again times a
    # cache read. The transfer asks JAX for a put to the CPU device on every call: a new
    # copy from a GPU; on the CPU (here) the array itself, where there is no transfer
    b = require_backend("jax-cpu")
    import jax

    calls = []
    real = jax.device_put

    def spy(x, device=None, **kw):
        calls.append(device)
        return real(x, device, **kw)

    x = b.from_numpy(np.ones(3))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(jax, "device_put", spy)
        b.bench.transfer_to_host(x)
        b.bench.transfer_to_host(x)
    assert [d.platform for d in calls] == ["cpu", "cpu"]


def test_default_backend_is_the_library_on_its_default_device(monkeypatch) -> None:
    # what the testing kit's assert_trace_safe moves arrays to: JAX's GPU where JAX
    # defaults to one, else its CPU (the registry decides, never the caller)
    assert backends.default_backend("numpy") is backends.get_backend("numpy")
    assert backends.default_backend("strict") is backends.get_backend("array-api-strict")
    for bad in ("nope", "torch-cpu", None):
        with pytest.raises(ValueError, match="default_backend: unknown library"):
            backends.default_backend(bad)  # type: ignore[arg-type]
    jax = pytest.importorskip("jax")
    expected = "jax-cpu" if jax.default_backend() == "cpu" else "jax-gpu"
    assert backends.default_backend("jax").name == expected
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert backends.default_backend("jax") is backends.get_backend("jax-gpu")
    monkeypatch.setattr(jax, "default_backend", lambda: "tpu")
    with pytest.raises(ValueError, match="jax's default device is 'tpu' here"):
        backends.default_backend("jax")


def test_a_lazy_librarys_elementwise_work_is_quiet_in_each_block() -> None:
    # divide and exp on Dask run later, outside the caller's np.errstate: the adapter's
    # deferred_blocks runs NumPy's quiet function in each block (no warning at compute)
    import warnings

    import xlinalg as xl

    b = require_backend("dask")
    assert b.adapter().deferred_blocks is not None
    assert backends.get_backend("numpy").adapter().deferred_blocks is None
    x = b.from_numpy(np.array([1.0, 0.0, -1.0, 1000.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q = b.to_numpy(xl.divide(x, b.from_numpy(np.zeros(4))))
        e = b.to_numpy(xl.exp(x))
    np.testing.assert_array_equal(q, [np.inf, np.nan, -np.inf, np.inf])
    assert e[-1] == np.inf
