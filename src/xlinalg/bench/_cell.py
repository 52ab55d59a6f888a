"""One cell of a benchmark (case x backend x dtype x size), run in this process.

:func:`execute_cell` is what a worker process runs for each request, and what
the runner runs directly when isolation is off. It never raises for a failing
cell: the failure becomes the record (``status="failed"`` with an ``error``
of kind ``"oom"``, ``"error"`` or ``"timeout"``), and memory is released.

Order of work inside a cell (only step 5 is timed):

1. inputs made in float64 from a seeded generator (the seed depends on the
   case and size only, so every backend and dtype gets the same numbers);
2. cast to the run's dtype on the host; SHA-256 of the inputs recorded;
3. float64 NumPy reference from the cast values;
4. inputs moved to the backend and fenced;
5. :class:`~xlinalg.bench.Timer` with the backend's fence inside every block;
6. the last timed result compared with the reference;
7. peak memory in one more, separate call.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import signal
import threading
import time
import traceback
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import xlinalg

from ..backends import Backend, get_backend
from ._cases import Case, Ctx, format_size, get_case
from ._findings._fields import rates_at
from ._memory import measure_memory, release_memory
from ._resultsfile import cell_key
from ._timer import Measurement, Timer, TimerConfig

__all__ = ["CellTimeout", "ExitCalled", "check_result", "classify_error", "execute_cell",
           "exit_guard", "make_cell", "record_head"]


class CellTimeout(Exception):
    """A cell ran past its time limit."""


_OOM_TYPES = ("OutOfMemoryError", "_ArrayMemoryError", "MemoryError", "CUDAOutOfMemoryError")
_OOM_TEXT = ("out of memory", "resource_exhausted", "cannot allocate memory",
             "failed to allocate", "unable to allocate")


def classify_error(exc: BaseException) -> dict[str, str]:
    """``{"kind", "type", "message"}`` of a failure; kind is "oom", "timeout" or "error"."""
    name = type(exc).__name__
    msg = str(exc).strip()
    first = msg.splitlines()[0] if msg else name
    if isinstance(exc, CellTimeout):
        kind = "timeout"
    elif isinstance(exc, MemoryError) or name in _OOM_TYPES or any(
        t in msg.lower() for t in _OOM_TEXT
    ):
        kind = "oom"
    else:
        kind = "error"
    return {
        "kind": kind,
        "type": f"{type(exc).__module__}.{type(exc).__qualname__}".removeprefix("builtins."),
        "message": first[:500],
    }


def cell_seed(seed: int, case: str, size_label: str) -> int:
    """Seed of a cell's inputs: the same for every backend and dtype."""
    return zlib.crc32(f"{seed}|{case}|{size_label}".encode()) ^ (seed & 0xFFFFFFFF)


def make_cell(
    case: str | Case,
    backend: str,
    size: Any,
    *,
    dtype: str = "float64",
    seed: int = 0,
    timer: TimerConfig | None = None,
    check: bool = True,
    memory: bool = True,
    threads: int | None = None,
    allow_tf32: bool = False,
) -> dict[str, Any]:
    """The JSON-able description of one cell (what a worker is sent)."""
    c = get_case(case) if isinstance(case, str) else case
    return {
        **_identity(c, backend, dtype, c.normalize(size)),
        "seed": seed,
        "timer": (timer or TimerConfig()).to_dict(),
        "check": check,
        "memory": memory,
        "threads": threads,
        "allow_tf32": allow_tf32,
    }


def record_head(cell: dict[str, Any]) -> tuple[Case, Any, dict[str, Any]]:
    """A cell's case, its size, and the head of its record: the cell's identity, its
    size's named parameters and what its case declares (every record starts so, a
    failed or skipped one too)."""
    case = get_case(cell["case"])
    size = case.normalize(cell["size"])
    return case, size, {**_identity(case, cell["backend"], cell["dtype"], size),
                        "params": case.params(size), **case.describe(cell["dtype"])}


def _identity(case: Case, backend: str, dtype: str, size: Any) -> dict[str, Any]:
    """A cell's identity as its description and its record start with it."""
    label = format_size(size)
    return {"key": cell_key(case.name, backend, dtype, label), "case": case.name,
            "backend": backend, "dtype": dtype,
            "size": list(size) if isinstance(size, tuple) else size, "size_label": label}


def _host_cast(arr: np.ndarray, dtype: str) -> np.ndarray:
    """`arr` rounded to `dtype` on the host (bfloat16 via ml_dtypes, held as float32)."""
    if dtype == "bfloat16":
        import ml_dtypes

        return np.asarray(arr, dtype=np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)
    return np.ascontiguousarray(arr, dtype=np.dtype(dtype))


def _to_backend(backend: Any, host: np.ndarray, dtype: str) -> Any:
    x = backend.from_numpy(host)
    if dtype == "bfloat16":  # host holds bf16-exact float32 values: cast on the backend
        x = backend.bench.cast(x, backend.bench.native_dtype(dtype))
    return x


def _materialize(backend: Any, out: Any) -> Any:
    """A lazy backend's result evaluated (each member of a tuple result)."""
    if isinstance(out, (tuple, list)):
        return backend.bench.materialize_all(out)
    return backend.bench.materialize(out)


def _result_to_numpy(backend: Any, x: Any) -> Any:
    """The host form of a result; a tuple result (e.g. ``SVDResult``) becomes a tuple."""
    if isinstance(x, (tuple, list)):
        return tuple(_result_to_numpy(backend, v) for v in x)
    if isinstance(x, np.ndarray):
        return x
    return backend.bench.host_result(x)


def _nonfinite_mismatch(r: np.ndarray, ref: np.ndarray) -> int:
    """How many positions of real arrays `r` and `ref` differ in their non-finite
    values: NaN must meet NaN, +inf +inf, -inf -inf, and a finite value a finite one."""
    same = (np.isnan(r) == np.isnan(ref)) & (np.isposinf(r) == np.isposinf(ref)) \
        & (np.isneginf(r) == np.isneginf(ref))
    return int((~same).sum())


def check_result(result: Any, reference: Any, rtol: float) -> dict[str, Any]:
    """Compare `result` with a float64 (or complex128) `reference`: norm-wise relative error.

    ``max_rel_err = max|r - ref| / max|ref|`` over the positions where the
    reference is finite (``|.|`` is the complex modulus: the real and the
    imaginary parts both count); the verdict is "ok" when it is at most `rtol`,
    "wrong" otherwise. Also "wrong": a shape mismatch, and any position where
    the non-finite values differ, compared part by part (real, imaginary) and
    by kind (NaN, +inf, -inf) — a finite value where the reference is NaN or
    inf is as wrong as the reverse. Tuples (several outputs) are compared member
    by member; the worst member decides.
    """
    if isinstance(reference, (tuple, list)):
        if not isinstance(result, (tuple, list)) or len(result) != len(reference):
            n = len(result) if isinstance(result, (tuple, list)) else 1
            return {"rtol": float(rtol), "reference": "numpy float64", "verdict": "wrong",
                    "max_rel_err": None, "max_abs_err": None,
                    "message": f"{n} outputs, the reference has {len(reference)}"}
        parts = [check_result(r, f, rtol) for r, f in zip(result, reference)]
        failing = [p for p in parts if p["verdict"] != "ok"]
        worst = failing[0] if failing else max(parts, key=lambda p: p["max_rel_err"] or 0.0)
        combined = dict(worst)
        combined["members"] = parts
        return combined
    ref = np.asarray(reference)
    r = np.asarray(result)
    complex_ = np.iscomplexobj(ref) or np.iscomplexobj(r)
    work = np.complex128 if complex_ else np.float64
    out: dict[str, Any] = {"rtol": float(rtol),
                           "reference": "numpy complex128" if complex_ else "numpy float64"}
    if r.shape != ref.shape:
        out.update(verdict="wrong", max_rel_err=None, max_abs_err=None,
                   message=f"shape {tuple(r.shape)} != reference shape {tuple(ref.shape)}")
        return out
    ref = ref.astype(work)
    r = r.astype(work)
    pairs = [(r.real, ref.real), (r.imag, ref.imag)] if complex_ else [(r, ref)]
    bad = sum(_nonfinite_mismatch(a, b) for a, b in pairs)
    if bad:
        out.update(verdict="wrong", max_rel_err=None, max_abs_err=None,
                   message=f"{bad} non-finite value(s) (NaN, +inf, -inf) not matching the "
                           "reference by position and sign" + (" (real and imaginary parts "
                                                               "compared)" if complex_ else ""))
        return out
    finite = np.isfinite(ref)  # complex: both parts finite (and so are the result's there)
    if not finite.any():  # an empty reference too
        out.update(verdict="ok", max_rel_err=0.0, max_abs_err=0.0)
        return out
    with np.errstate(over="ignore", invalid="ignore"):
        diff = np.abs(r[finite] - ref[finite])
        scale = float(np.abs(ref[finite]).max())
    abs_err = float(diff.max())
    rel = abs_err / scale if scale > 0 else abs_err
    ok = rel <= rtol  # False for NaN (an overflowing difference)
    out.update(verdict="ok" if ok else "wrong", max_abs_err=abs_err, max_rel_err=rel)
    if not ok:
        out["message"] = f"max relative error {rel:.3g} > tolerance {rtol:.3g}"
    return out


@contextlib.contextmanager
def alarm(seconds: float | None) -> Iterator[None]:
    """Raise :class:`CellTimeout` after `seconds` (main thread, POSIX; best effort).

    A Python signal handler runs only between bytecodes: a long C call (a LAPACK
    routine) is interrupted only when it returns. Worker processes, killed by the
    runner, are the robust limit; this is the in-process fallback.
    """
    if (seconds is None or seconds <= 0 or not hasattr(signal, "setitimer")
            or threading.current_thread() is not threading.main_thread()):
        yield
        return

    def _handler(signum: int, frame: Any) -> None:
        raise CellTimeout(f"cell ran past the time limit of {seconds:g} s")

    old = signal.signal(signal.SIGALRM, _handler)
    signal.setitimer(signal.ITIMER_REAL, float(seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class ExitCalled(SystemExit):
    """A case (or a case file being imported) called ``os._exit(code)`` in a process
    that runs cells: raised in its place by :func:`exit_guard`. A SystemExit, so that
    what lets ``sys.exit`` through lets this through too; ``str()`` says what happened."""

    def __str__(self) -> str:
        return f"called os._exit({self.code!r})"


@contextlib.contextmanager
def exit_guard() -> Iterator[None]:
    """While user code (a case, a case file) runs, ``os._exit`` in this process raises
    :class:`ExitCalled` instead of ending it without a word: the runner records the
    cell as failed with the reason (in-process), or the worker reports it. A process
    forked meanwhile (multiprocessing) exits as asked. A worker process that ends in
    a way no Python code sees (``SIGKILL``, a C ``_exit``) is a failed cell all the
    same: its runner sees the worker gone (``_workerproc``)."""
    real = os._exit
    pid = os.getpid()

    def _exit(code: int) -> Any:
        if os.getpid() != pid:
            real(code)
        raise ExitCalled(code)

    os._exit = _exit  # type: ignore[assignment]
    try:
        yield
    finally:
        os._exit = real


def execute_cell(
    cell: dict[str, Any],
    *,
    backend_state: dict[str, Any] | None = None,
    time_limit: float | None = None,
    sampler: Callable[[Timer], Measurement] | None = None,
) -> dict[str, Any]:
    """Run one cell in this process and return its result record (never raises
    for a failure of the cell; KeyboardInterrupt and SystemExit propagate).

    Parameters
    ----------
    cell : dict
        From :func:`make_cell`.
    backend_state : dict, optional
        The fairness state of the backend in this process (``_fairness.backend_state``),
        merged into the record.
    time_limit : float, optional
        In-process best-effort limit (see :func:`alarm`).
    sampler : callable, optional
        ``sampler(timer) -> Measurement`` replaces ``timer.run()`` in step 5: the
        worker's side-by-side protocol, where the runner decides when each
        sample is taken (:mod:`._worker`).
    """
    t_start = time.perf_counter()
    case, size, rec = record_head(cell)
    backend_name, dtype, label = rec["backend"], rec["dtype"], rec["size_label"]
    state = backend_state or {}
    rec["backend_info"] = {k: state.get(k) for k in ("version", "device")}
    reason = cell.get("skip_reason") or case.skip_reason(backend_name, dtype, size)
    if reason is not None:
        rec.update(status="skipped", skip_reason=reason, cell_wall_s=0.0)
        return rec

    seed = cell_seed(int(cell.get("seed", 0)), case.name, label)
    rec["seed"] = seed
    cfg = TimerConfig(**cell.get("timer", {}))
    inputs: list[Any] = []
    host: list[np.ndarray] = []
    ref: Any = None
    timer: Timer | None = None
    backend: Backend | None = None
    try:
        with alarm(time_limit), exit_guard():
            backend = get_backend(backend_name)
            backend.require()
            # 1-3: identical inputs, cast once, reference from the cast values
            rng = np.random.default_rng(seed)
            host = [_host_cast(np.asarray(a, dtype=np.float64), dtype)
                    for a in case.setup(rng, size)]
            digest = hashlib.sha256()
            for h in host:
                digest.update(str(h.shape).encode())
                digest.update(np.ascontiguousarray(h).tobytes())
            if cell.get("check", True) and case.reference is not None:
                ref = case.reference(*[h.astype(np.float64) for h in host])
            # 4: on the backend, fenced, outside the timed region
            ctx = Ctx(backend=backend_name, xp=backend.bench.native_namespace(), xl=xlinalg,
                      dtype=dtype, native_dtype=backend.bench.native_dtype(dtype), size=size)
            inputs = [_to_backend(backend, h, dtype) for h in host]
            if not backend.lazy:
                backend.synchronize(*inputs)
            # The timed callable adds as few Python frames as possible around the
            # operation (functools.partial calls in C): a 5x5 solve lasts microseconds.
            if case.build is not None:
                fn: Callable[..., Any] = case.build(ctx)
            else:
                assert case.op is not None
                fn = functools.partial(case.op, ctx)
            args = tuple(inputs)
            stmt: Callable[[], Any]
            if backend.lazy:  # the fence of a lazy backend is evaluating the graph
                def stmt() -> Any:
                    return _materialize(backend, fn(*args))

                fence = None
            else:
                stmt = functools.partial(fn, *args)
                fence = backend.synchronize
            # 5: timing
            timer = Timer(
                stmt,
                fence=fence,
                fence_all=backend.bench.fence_every_result,
                config=cfg,
                device_clock=backend.bench.device_clock(),
            )
            m = sampler(timer) if sampler is not None else timer.run()
            rec["time"] = m.to_dict()
            thr: dict[str, Any] = {}
            if "calibration" in case.tags:
                # a peak is the best the machine does (STREAM and LINPACK report the
                # best of their repetitions): the rate of the fastest sample
                thr["rate_of"] = "best sample"
            if case.flops is not None:
                thr["flops"] = float(case.flops(size))
            if case.bytes is not None:
                itemsize = 2 if dtype in ("float16", "bfloat16") else np.dtype(dtype).itemsize
                thr["bytes"] = float(case.bytes(size, itemsize))
            rec["throughput"] = rates_at(thr, rec["time"])
            # 6: correctness of the last timed result
            if ref is not None:
                res = _result_to_numpy(backend, timer.last_result)
                if case.result_for_check is not None:
                    res = case.result_for_check(res)
                rec["check"] = check_result(res, ref, case.tolerance(dtype, size))
                status = "ok" if rec["check"]["verdict"] == "ok" else "wrong"
            else:
                rec["check"] = {"verdict": "unchecked"}
                status = "unchecked"
            timer.last_result = None
            # 7: memory, in a separate untimed call
            if cell.get("memory", True):
                def _once() -> None:
                    out = stmt()
                    if fence is not None:
                        fence(out)

                try:
                    rec["memory"] = measure_memory(backend, _once)
                except (KeyboardInterrupt, SystemExit, CellTimeout):
                    raise
                except Exception as exc:  # keep the timing; say why memory is missing
                    rec["memory"] = {"measured": [], "error": classify_error(exc)}
                    release_memory(backend)
            rec["fairness"] = {
                "dtype": dtype,
                "threads": state.get("threads"),
                "matmul_precision": state.get("matmul_precision"),
                "x64": state.get("x64"),
                "dask": state.get("dask"),  # the dask backend's scheduler and workers
                "allow_tf32": bool(cell.get("allow_tf32", False)),
                "inputs_sha256": digest.hexdigest(),
                "inputs_from": "numpy.random.default_rng(seed), float64, cast on the host",
                "layout": [backend.bench.layout(x) for x in inputs],
                "fence": backend.bench.fence_description(),
                "regime": "throughput: blocks of `number` back-to-back calls, one fence per block",
            }
            rec["status"] = status
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit too: a case that calls sys.exit failed
        if isinstance(exc, SystemExit):
            how = "os._exit" if isinstance(exc, ExitCalled) else "sys.exit"
            exc = RuntimeError(f"the case called {how}({exc.code!r})").with_traceback(
                exc.__traceback__)
        err = classify_error(exc)
        tb = traceback.extract_tb(exc.__traceback__)
        if tb:
            last = tb[-1]
            err["where"] = f"{last.filename.rsplit('/', 1)[-1]}:{last.lineno} in {last.name}"
        rec["status"] = "failed"
        rec["error"] = err
        for k in ("time", "throughput", "check", "memory"):
            rec.pop(k, None)
        del exc
    finally:
        if timer is not None:
            timer.last_result = None
        inputs.clear()
        host.clear()
        ref = None
        release_memory(backend)
    rec["cell_wall_s"] = time.perf_counter() - t_start
    return rec

