"""Lazy caches under concurrent first use: one adapter per library, whatever the threads.

Each run is a fresh process (the caches start empty) in which threads, released
together by a ``threading.Barrier``, make their first xlinalg calls with arrays of
every installed library and of their subclasses (``torch.nn.Parameter``, a Tensor
subclass, a NumPy subclass, JAX tracers under ``jax.jit``). Afterwards the
process checks that mixing a subclass with its base class works (before the fix,
two threads could create two adapters for one library, and then
``xl.add(parameter, tensor)`` raised "does not mix array libraries" for the rest
of the process). The switch interval is made tiny so that threads interleave
inside the first calls. Every wait is bounded (barrier and process time-outs).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

RUNS = 10
HERE = Path(__file__).resolve()

CHILD = r"""
import sys, threading
import numpy as np
import xlinalg as xl
from xlinalg import _dispatch

libs = set(sys.argv[1].split(","))
calls = []
if "torch" in libs:
    import torch

    class MyTensor(torch.Tensor):
        pass

    t = torch.eye(2, dtype=torch.float64)
    p = torch.nn.Parameter(torch.eye(2, dtype=torch.float64))
    m = torch.ones(2, 2, dtype=torch.float64).as_subclass(MyTensor)
    calls += [lambda: xl.add(t, t), lambda: xl.add(p, p), lambda: xl.multiply(m, m),
              lambda: xl.solve(t, t), lambda: xl.sigmoid(p), lambda: xl.matmul(m, m)]
if "jax" in libs:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    j = jnp.eye(2)
    calls += [lambda: xl.add(j, j), lambda: jax.jit(lambda x: xl.add(x, x))(j),
              lambda: xl.solve(j, j), lambda: jax.jit(lambda x: xl.sigmoid(x))(j)]
if "dask" in libs:
    import dask.array as da

    d = da.ones((2, 2))
    calls += [lambda: xl.add(d, d), lambda: xl.matmul(d, d)]
if "strict" in libs:
    import array_api_strict as xps

    s = xps.eye(2)
    calls += [lambda: xl.add(s, s), lambda: xl.solve(s, s)]

class Sub(np.ndarray):
    pass

n = np.eye(2).view(Sub)
calls += [lambda: xl.add(n, n), lambda: xl.add(np.eye(2), np.eye(2))]

barrier = threading.Barrier(len(calls), timeout=60)
errors = []

def run(fn):
    barrier.wait()
    try:
        fn()
    except Exception as exc:
        errors.append(f"first call: {type(exc).__name__}: {exc}")

threads = [threading.Thread(target=run, args=(fn,), daemon=True) for fn in calls]
sys.setswitchinterval(1e-5)  # interleave the threads inside the first calls
for th in threads:
    th.start()
for th in threads:
    th.join(timeout=120)
    if th.is_alive():
        errors.append("a thread did not finish within 120 s")
sys.setswitchinterval(0.005)

# afterwards: subclasses and base classes are one library
after = []
if "torch" in libs:
    after += [lambda: xl.add(p, t), lambda: xl.add(t, m), lambda: xl.solve(p, t)]
if "jax" in libs:
    after += [lambda: jax.jit(lambda x: xl.add(x, j))(j), lambda: jax.jit(lambda x: xl.solve(j, x))(j)]
after += [lambda: xl.add(n, np.eye(2))]
for fn in after:
    try:
        fn()
    except Exception as exc:
        errors.append(f"afterwards: {type(exc).__name__}: {exc}")
adapters = {}
for cls, ad in list(_dispatch._TYPE_CACHE.items()):
    if ad is not None:
        adapters.setdefault(ad.library, set()).add(id(ad))
errors += [f"{lib}: {len(ids)} adapters" for lib, ids in adapters.items() if len(ids) > 1]
print("\n".join(errors) if errors else "ok")
"""


def _libraries() -> str:
    import importlib.util

    found = [lib for lib, mod in (("torch", "torch"), ("jax", "jax"), ("dask", "dask.array"), ("strict", "array_api_strict"))
             if importlib.util.find_spec(mod.split(".")[0]) is not None]
    return ",".join(found)


def test_concurrent_first_calls_make_one_adapter_per_library() -> None:
    libs = _libraries()
    env = dict(os.environ, JAX_ENABLE_X64="1")
    failures = []
    for batch in range(0, RUNS, 5):  # five processes at a time (memory on a shared machine)
        procs = [
            subprocess.Popen([sys.executable, "-c", CHILD, libs], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
            for _ in range(batch, min(batch + 5, RUNS))
        ]
        for proc in procs:
            try:
                out, err = proc.communicate(timeout=300)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
                failures.append("a process did not finish within 300 s")
                continue
            if proc.returncode != 0 or out.strip() != "ok":
                failures.append(f"rc {proc.returncode}: {out.strip()[-1500:]} {err.strip()[-1500:]}")
    assert not failures, f"{len(failures)} of {RUNS} fresh processes failed (libraries: {libs}):\n" + "\n".join(failures)


def test_subclasses_map_to_their_library() -> None:
    import numpy as np

    import xlinalg as xl

    class Sub(np.ndarray):
        pass

    assert isinstance(xl.add(np.ones(2).view(Sub), np.ones(2)), np.ndarray)
    torch = pytest.importorskip("torch")

    class MyTensor(torch.Tensor):
        pass

    t = torch.ones(2)
    np.testing.assert_array_equal(xl.add(torch.nn.Parameter(torch.ones(2)), t).detach().numpy(), [2, 2])
    np.testing.assert_array_equal(xl.add(t.as_subclass(MyTensor), t).numpy(), [2, 2])
