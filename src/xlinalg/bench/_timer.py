"""Timing one operation: warm-up, calibrated blocks, a fence inside every block.

The model is ``torch.utils.benchmark.Timer.blocked_autorange`` with a first call
reported apart (``first_call_s``), a warm-up, the calls per sample grown until a
sample lasts ``min_sample_time``, and samples closed by the fence inside the timed
region (docs/benchmark.md, "How a cell is timed"). Statistics are over per-call
times (block time / ``number``); the garbage collector is off inside timed blocks
(as :mod:`timeit` does). A :class:`DeviceClock` (CUDA events,
``Backend.bench.device_clock()``) can time each block on the device as well; the
host time stays the primary figure.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

__all__ = [
    "DeviceClock",
    "Measurement",
    "Preparation",
    "Stats",
    "Timer",
    "TimerConfig",
    "calibrate",
    "first_call",
    "interleaved",
    "rotation",
    "time_block",
]

NOISE_THRESHOLD = 0.10
GROSS_NOISE_THRESHOLD = 0.25


@dataclass(frozen=True)
class TimerConfig:
    """How long and how often to time.

    Attributes
    ----------
    warmup_time : float
        Seconds of warm-up calls after the first call.
    min_warmup_calls : int
        Warm-up calls after the first, at least.
    min_sample_time : float
        A sample (one block of ``number`` calls) lasts at least this long.
    min_run_time : float
        Seconds of samples to collect, at least (unless ``max_run_time`` stops it).
    min_samples, max_samples : int
        Bounds on the number of samples.
    max_run_time : float
        Stop adding samples after this many seconds of samples, once
        ``hard_min_samples`` exist (slow operations).
    hard_min_samples : int
        Samples collected whatever the time.
    max_number : int
        Upper bound on calls per sample.
    noise_threshold : float
        ``IQR/median`` above which a measurement is flagged noisy.
    number : int or None
        Fix the calls per sample (no calibration).
    min_passes, max_passes : int
        Side by side: every group is measured in at least ``min_passes``
        passes, each in fresh worker processes (the first as the run goes, the
        others at its end); a group whose passes disagree gets more, up to
        ``max_passes``. The intervals come from the spread between passes.
    pass_rounds : int or None
        Side by side: rounds of each later pass (:meth:`later_pass`). None:
        the first pass's rules (``min_samples`` rounds, more while a backend
        has sampled less than ``min_run_time``); a number: exactly that many
        (more passes of fewer rounds are more independent evidence for the same
        time, as pyperf's 20 processes). ``max_run_time`` per backend is the
        time budget of a pass either way.
    blocks_per_round : int
        Side by side: blocks each backend runs back to back in a round; the
        round's value is the fastest of them (a block the scheduler interrupted
        only ever takes longer: on a loaded machine about half the blocks are).
    """

    warmup_time: float = 0.05
    min_warmup_calls: int = 1
    min_sample_time: float = 0.01
    min_run_time: float = 0.2
    min_samples: int = 7
    max_samples: int = 100
    max_run_time: float = 10.0
    hard_min_samples: int = 3
    max_number: int = 1_000_000
    noise_threshold: float = NOISE_THRESHOLD
    number: int | None = None
    min_passes: int = 4
    max_passes: int = 6
    pass_rounds: int | None = None
    blocks_per_round: int = 3

    @classmethod
    def for_scale(cls, scale: str) -> TimerConfig:
        """Defaults for the ``quick``, ``default`` and ``full`` scales."""
        if scale == "quick":
            return cls(warmup_time=0.02, min_sample_time=0.005, min_run_time=0.05,
                       min_samples=7, max_samples=50, max_run_time=3.0)
        if scale == "full":
            # the documents' sizes measured as the default run measures a cell (its
            # rounds and budget; longer warm-up and blocks for the larger sizes), later
            # passes of 4 rounds, up to 6 passes (docs/benchmark.md, "What a full run
            # costs"); a case may change its cells' timer at a scale (Case.timing)
            return cls(warmup_time=0.2, min_sample_time=0.02, max_samples=40,
                       max_run_time=3.0, pass_rounds=4)
        # the default run (the README's main job) must end in a coffee break: the rounds
        # and budget of --quick, whose run-to-run stability docs/benchmark.md measures,
        # and 4 passes for every group (no extra pass for disagreeing ones: 25 of 34
        # groups took 6, 19 minutes in all; docs/benchmark.md, "Passes")
        return cls(max_samples=40, max_run_time=3.0, max_passes=4)

    def later_pass(self) -> TimerConfig:
        """The timer of a later pass: a short warm-up, and ``pass_rounds`` rounds
        when set (the time budget may stop it after ``hard_min_samples``), else the
        first pass's round rules."""
        short = replace(self, warmup_time=min(self.warmup_time, 0.02))
        if self.pass_rounds is None:
            return short
        n = max(int(self.pass_rounds), 1)
        return replace(short, min_samples=n, max_samples=n, min_run_time=0.0,
                       hard_min_samples=min(n, self.hard_min_samples))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Stats:
    """Order statistics of per-call times, in seconds."""

    median: float
    q1: float
    q3: float
    iqr: float
    min: float
    max: float
    mean: float
    stdev: float
    n: int

    @classmethod
    def from_samples(cls, samples: Sequence[float]) -> Stats:
        """Statistics of `samples` (quartiles by linear interpolation, as NumPy's default)."""
        xs = sorted(float(s) for s in samples)
        if not xs:
            raise ValueError("no samples")
        q1, med, q3 = (statistics.quantiles(xs, n=4, method="inclusive") if len(xs) > 1
                       else (xs[0],) * 3)
        return cls(
            median=med,
            q1=q1,
            q3=q3,
            iqr=q3 - q1,
            min=xs[0],
            max=xs[-1],
            mean=statistics.fmean(xs),
            stdev=statistics.stdev(xs) if len(xs) > 1 else 0.0,
            n=len(xs),
        )

    @property
    def relative_iqr(self) -> float:
        return self.iqr / self.median if self.median > 0 else 0.0

    def to_dict(self) -> dict[str, float]:
        """The statistics as a record's ``time`` holds them (``median_s`` ...)."""
        return {"median_s": self.median, "iqr_s": self.iqr, "q1_s": self.q1, "q3_s": self.q3,
                "min_s": self.min, "max_s": self.max, "mean_s": self.mean,
                "stdev_s": self.stdev, "iqr_over_median": self.relative_iqr}


@dataclass
class Measurement:
    """The result of timing one operation.

    ``times`` are per-call seconds, one per sample (block time / ``number``).
    ``device_times`` are the same from a device clock (CUDA events) when one was used.
    """

    times: list[float]
    number: int
    first_call_s: float
    warmup_calls: int
    warmup_s: float
    calibration_blocks: int
    total_s: float
    noise_threshold: float = NOISE_THRESHOLD
    device_times: list[float] | None = None
    clock: str = "time.perf_counter"
    stats: Stats = field(init=False)

    def __post_init__(self) -> None:
        self.stats = Stats.from_samples(self.times)

    @property
    def total_calls(self) -> int:
        return self.number * len(self.times)

    @property
    def noisy(self) -> bool:
        return self.stats.relative_iqr > self.noise_threshold

    @property
    def warnings(self) -> list[str]:
        out = []
        r = self.stats.relative_iqr
        if r > GROSS_NOISE_THRESHOLD:
            out.append(f"IQR is {r:.0%} of the median: significant environmental influence")
        elif r > self.noise_threshold:
            out.append(f"IQR is {r:.0%} of the median: the machine may be noisy")
        if len(self.times) < 3:
            out.append(f"only {len(self.times)} samples")
        return out

    def to_dict(self) -> dict[str, Any]:
        """The JSON form stored in a result record's ``time`` field."""
        d: dict[str, Any] = {
            **self.stats.to_dict(),
            "noisy": self.noisy,
            "warnings": self.warnings,
            "samples": self.stats.n,
            "number": self.number,
            "total_calls": self.total_calls,
            "first_call_s": self.first_call_s,
            "warmup_calls": self.warmup_calls,
            "warmup_s": self.warmup_s,
            "calibration_blocks": self.calibration_blocks,
            "total_s": self.total_s,
            "clock": self.clock,
            "raw_s": list(self.times),
        }
        if self.device_times:
            ds = Stats.from_samples(self.device_times)
            d["device"] = {
                "median_s": ds.median,
                "iqr_s": ds.iqr,
                "min_s": ds.min,
                "clock": "cuda-events",
                "raw_s": list(self.device_times),
            }
        return d


@dataclass(frozen=True)
class Preparation:
    """What :meth:`Timer.prepare` found: calls per sample and the warm-up figures."""

    number: int
    first_call_s: float
    warmup_calls: int
    warmup_s: float
    calibration_blocks: int
    start: float


class DeviceClock(Protocol):
    """Times a block on the device: ``start()`` before it, ``stop()`` after it
    (after the fence) returns the device-side seconds."""

    def start(self) -> None: ...

    def stop(self) -> float: ...


class Timer:
    """Time ``stmt()`` with a fence on its results inside every timed block.

    Parameters
    ----------
    stmt : callable
        The operation, called with no arguments; its inputs must already be
        created and on the device (the caller does that outside the timing).
    fence : callable, optional
        Called inside the timed region at the end of each block with the
        block's results (``fence(*results)``); it must return only when the work
        producing them has finished (``Backend.synchronize``).
    fence_all : bool
        Pass every result of the block to the fence (JAX: independent
        computations may finish out of order). Otherwise only the last one
        (the fence waits for the whole device queue, or there is nothing to wait for).
    config : TimerConfig
    clock : callable
        Host clock in seconds (``time.perf_counter``); injectable for tests.
    device_clock : DeviceClock, optional
        Also time each block on the device (CUDA events).
    """

    def __init__(
        self,
        stmt: Callable[[], Any],
        *,
        fence: Callable[..., Any] | None = None,
        fence_all: bool = False,
        config: TimerConfig | None = None,
        clock: Callable[[], float] = time.perf_counter,
        device_clock: DeviceClock | None = None,
    ) -> None:
        self.stmt = stmt
        self.fence = fence or (lambda *_: None)
        self.fence_all = fence_all
        self.config = config or TimerConfig()
        self.clock = clock
        self.device_clock = device_clock
        #: the result of the last call of the last block (for a correctness check)
        self.last_result: Any = None

    def _block(self, number: int) -> tuple[float, float | None]:
        """Run `number` calls and the fence; return (host seconds, device seconds)."""
        stmt, fence, clock, dev = self.stmt, self.fence, self.clock, self.device_clock
        outs: list[Any] = [None] * number if self.fence_all else []
        last = None
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            if dev is not None:
                dev.start()
            t0 = clock()
            if outs:  # fence_all: every result goes to the fence
                for i in range(number):
                    outs[i] = stmt()
                fence(*outs)
            else:
                for _ in range(number):
                    last = stmt()
                fence(last)
            t1 = clock()
            device_s = dev.stop() if dev is not None else None
        finally:
            if gc_was_enabled:
                gc.enable()
        self.last_result = outs[-1] if outs else last
        return t1 - t0, device_s

    def run(self) -> Measurement:
        """Warm up, calibrate and collect samples (see the module docstring)."""
        cfg = self.config
        prep = self.prepare()
        number = prep.number
        times: list[float] = []
        dev_times: list[float] = []
        t_run0 = self.clock()
        spent = 0.0
        while True:
            t, d = self._block(number)
            times.append(t / number)
            if d is not None:
                dev_times.append(d / number)
            spent += t
            n = len(times)
            if n >= cfg.max_samples:
                break
            if n >= cfg.min_samples and spent >= cfg.min_run_time:
                break
            if n >= cfg.hard_min_samples and self.clock() - t_run0 >= cfg.max_run_time:
                break
        return self.measurement(prep, times, dev_times or None)

    def prepare(self) -> Preparation:
        """Steps 1-3: the first call, the warm-up and the calibration of ``number``.

        A caller that schedules the samples itself (the side-by-side runner)
        calls this once, then :meth:`sample` per round, then :meth:`measurement`.
        """
        cfg = self.config
        start = self.clock()
        first, _ = self._block(1)

        # warm-up: at least min_warmup_calls, until warmup_time has passed
        warm_times: list[float] = []
        t_warm0 = self.clock()
        while len(warm_times) < cfg.min_warmup_calls or (
            self.clock() - t_warm0 < cfg.warmup_time and len(warm_times) < 10_000
        ):
            warm_times.append(self._block(1)[0])
        warmup_s = self.clock() - t_warm0
        per_call = max(min(warm_times), 1e-9)

        # calibration: number of calls so that a sample lasts >= min_sample_time
        calibration_blocks = 0
        if cfg.number is not None:
            number = max(1, int(cfg.number))
        else:
            # number == 1: the warm-up calls were already samples of >= min_sample_time
            number = max(1, min(cfg.max_number, math.ceil(cfg.min_sample_time / per_call)))
            while 1 < number < cfg.max_number:
                t, _ = self._block(number)
                calibration_blocks += 1
                if t >= cfg.min_sample_time:
                    break
                per_call = max(t / number, 1e-9)
                # grow at least x2, at most x10 per step (asv: x1.1 .. x10)
                target = math.ceil(cfg.min_sample_time * 1.1 / per_call)
                number = min(cfg.max_number, max(2 * number, min(10 * number, target)))
        return Preparation(number=number, first_call_s=first, warmup_calls=len(warm_times),
                           warmup_s=warmup_s, calibration_blocks=calibration_blocks,
                           start=start)

    def sample(self, number: int) -> tuple[float, float | None]:
        """One sample: a block of `number` calls closed by the fence; per-call
        (host seconds, device seconds or None)."""
        t, d = self._block(number)
        return t / number, (d / number if d is not None else None)

    def measurement(self, prep: Preparation, times: list[float],
                    device_times: list[float] | None = None) -> Measurement:
        """The :class:`Measurement` of per-call `times` collected after `prep`."""
        found = asdict(prep)  # the warm-up's figures, which the measurement records
        start = found.pop("start")
        return Measurement(times=times, **found, total_s=self.clock() - start,
                           noise_threshold=self.config.noise_threshold,
                           device_times=device_times or None,
                           clock=getattr(self.clock, "__qualname__", "clock"))


def calibrate(fn: Callable[[], Any], min_time: float) -> int:
    """Calls of `fn` per block so that one block lasts at least `min_time` seconds
    (doubling from 1): the plain timer of ``xlinalg bench --tune`` and of
    ``benchmarks/*.py``, for calls that need no fence of their own."""
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        if time.perf_counter() - t0 >= min_time:
            return number
        number *= 2


def time_block(fn: Callable[[], Any], number: int) -> float:
    """Seconds per call of `fn`, over one block of `number` calls."""
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def rotation(backends: Sequence[str], round_index: int) -> list[str]:
    """The order of `backends` in round `round_index` (0-based): rotated left by it."""
    k = round_index % len(backends) if backends else 0
    return list(backends[k:]) + list(backends[:k])


def interleaved(fns: dict[str, Callable[[], Any]], repeats: int, min_time: float) -> dict[str, list[float]]:
    """Per round, seconds per call of each fenced callable (all warm).

    One calibrated block of each per round, the order rotated every round (A B C,
    B C A, ...), so that a drift or a burst of load on a shared machine hits
    every callable alike.
    """
    numbers = {k: calibrate(f, min_time) for k, f in fns.items()}
    keys = list(fns)
    samples: dict[str, list[float]] = {k: [] for k in keys}
    for r in range(repeats):
        for k in rotation(keys, r):
            samples[k].append(time_block(fns[k], numbers[k]))
    return samples


def first_call(fn: Callable[[], Any]) -> float:
    """Seconds of one call of `fn` (its first: compilation and caches included)."""
    return time_block(fn, 1)
